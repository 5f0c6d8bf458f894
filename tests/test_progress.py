"""The progress rule: progress only when training itself is slow, on stderr, and an early
stop ends it as complete (jaxboost.callbacks.Progress, train(verbose=...)).

Time is a fake clock (``callbacks._now``) that only the test moves: no sleeps, no timing
thresholds.
"""

import io
import sys

import pytest
from conftest import noisy_binary
from jaxboost.callbacks import AUTO_SECONDS, CallbackEnv, Progress

import jaxboost
from jaxboost import callbacks

CHUNK = jaxboost.training.loop.ROUNDS_PER_DISPATCH
# one compiled configuration for every training run of this file (n_rounds is not
# compiled in); the same as tests/test_training_control.py's progress test
KW = dict(max_depth=4, learning_rate=0.3)


class Clock:
    """A clock that stands still unless the test moves it."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self):
        return True


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(callbacks, "_now", c)
    return c


@pytest.fixture
def no_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import tqdm.auto fails


@pytest.fixture(scope="module")
def noisy():
    return noisy_binary()


def env(r, total, logloss=0.5):
    return CallbackEnv(r, total, 0, {"valid": {"logloss": [logloss] * (r + 1)}}, {}, lambda n: None)


def replay(progress, clock, total, compile_s, chunk_s):
    """Report ``total`` rounds to ``progress`` as the training loop does: the rounds of
    a chunk arrive together, the first chunk after ``compile_s`` of compilation plus its
    own ``chunk_s``, each later chunk ``chunk_s`` later."""
    for r in range(total):
        clock.t = compile_s + (r // CHUNK + 1) * chunk_s
        progress(env(r, total))


# --- the rule, on Progress itself --------------------------------------------------------


@pytest.mark.parametrize("use_tqdm", [False, True])
def test_a_slow_compile_before_fast_rounds_shows_nothing(clock, use_tqdm):
    """60 s of compilation, then 1,000 rounds at 1,000 rounds/s: compilation does not
    count, and the rounds take 1 s, so nothing appears (the old rule, 5 s of wall time
    since the start, showed a bar)."""
    out = io.StringIO()
    p = Progress(1000, min_seconds=AUTO_SECONDS, stream=out, plain=True, use_tqdm=use_tqdm)
    replay(p, clock, 1000, compile_s=60.0, chunk_s=CHUNK / 1000)
    p.close()
    assert out.getvalue() == "" and p._bar is None


def test_slow_rounds_show_once_the_speed_is_known(clock):
    """0.2 s per round: after the second chunk the 89 rounds left are expected to take
    17.8 s > 5 s, so the line appears at round 11 (not before: the first chunk's time
    holds the compilation) and ends at 100/100."""
    out = io.StringIO()
    p = Progress(100, min_seconds=AUTO_SECONDS, stream=out, plain=True, use_tqdm=False)
    for r in range(100):
        clock.t = 0.5 + (r // CHUNK + 1) * 2.0
        p(env(r, 100))
        if r == CHUNK - 1:  # the first chunk reported: no speed known yet
            assert out.getvalue() == ""
    # off a terminal: one full line when it appears (4.5 s), then at most every 10 s
    # (the chunk reported at 14.5 s), and the last
    assert out.getvalue().splitlines() == [f"[{k}/100] valid-logloss: 0.5" for k in (11, 61, 100)]


def test_a_run_that_ends_before_it_is_slow_enough_shows_nothing(clock):
    """0.2 s per round over 30 rounds: after the second chunk only 19 rounds (3.8 s)
    remain, below 5 s."""
    out = io.StringIO()
    p = Progress(30, min_seconds=AUTO_SECONDS, stream=out, plain=True, use_tqdm=False)
    replay(p, clock, 30, compile_s=20.0, chunk_s=2.0)
    assert out.getvalue() == ""


def test_without_tqdm_auto_writes_plain_lines_only_to_a_terminal(clock):
    for stream, shown in ((io.StringIO(), False), (Terminal(), True)):
        p = Progress(100, min_seconds=AUTO_SECONDS, stream=stream, plain=None, use_tqdm=False)
        replay(p, clock, 100, compile_s=1.0, chunk_s=5.0)
        text = stream.getvalue()
        if shown:  # rewritten in place, ended by a newline
            assert text.startswith("\r[11/100] ") and text.endswith(
                "[100/100] valid-logloss: 0.5\n"
            )
            assert text.count("\n") == 1
        else:
            assert text == ""


def test_progress_arguments_are_checked():
    with pytest.raises(ValueError, match="min_seconds"):
        Progress(10, min_seconds=-1)
    with pytest.raises(ValueError, match="plain"):
        Progress(10, plain="auto")


# --- through train ---------------------------------------------------------------------------


def one_second_per_round(clock):
    """A callback that moves the fake clock: each round takes a second."""

    def tick(env):
        clock.t += 1.0
        return False

    return tick


def test_fast_training_shows_nothing(noisy, capsys):
    X, y, _, Xv, yv, _ = noisy
    bst = jaxboost.train("logistic", X, y, n_rounds=40, eval_set=[(Xv, yv)], **KW, verbose="auto")
    assert len(bst) == 40
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("tqdm_installed", [True, False])
def test_slow_training_shows_progress_on_stderr_only(
    noisy, capsys, clock, monkeypatch, tqdm_installed
):
    if tqdm_installed:
        pytest.importorskip("tqdm")
    else:
        monkeypatch.setitem(sys.modules, "tqdm.auto", None)
        monkeypatch.setattr(sys, "stderr", Terminal())  # a plain line needs a terminal
    X, y, _, Xv, yv, _ = noisy
    jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=40,
        eval_set=[(Xv, yv)],
        **KW,
        verbose="auto",
        callbacks=[one_second_per_round(clock)],
    )
    out, err = capsys.readouterr()
    assert out == ""
    if not tqdm_installed:
        err = sys.stderr.getvalue()
        assert err.startswith("\r[2/40] validation_0-logloss: ")  # speed known at round 1
    assert "40/40" in err and "validation_0-logloss" in err
    # verbose=False: nothing, however slow
    jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=40,
        eval_set=[(Xv, yv)],
        **KW,
        verbose=False,
        callbacks=[one_second_per_round(clock)],
    )
    assert capsys.readouterr() == ("", "")
    if not tqdm_installed:
        assert sys.stderr.getvalue() == err


def test_an_early_stopped_bar_ends_complete(noisy, capsys, monkeypatch):
    """The bar (verbose=True) of a run early stopping ends: n == total == the rounds
    run, so a notebook bar turns green rather than red (tqdm.notebook colours a bar
    closed with n < total as failed), and it says where it stopped."""
    tqdm_auto = pytest.importorskip("tqdm.auto")
    closed = []

    class Recording(tqdm_auto.tqdm):
        def close(self):
            if not self.disable:
                closed.append((self.n, self.total))
            super().close()

    monkeypatch.setattr(tqdm_auto, "tqdm", Recording)
    X, y, _, Xv, yv, _ = noisy
    bst = jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=200,
        eval_set=[(Xv, yv)],
        **KW,
        early_stopping_rounds=5,
        verbose=True,
    )
    ran = bst.best_iteration + 1 + 5
    assert ran < 200
    assert closed[0] == (ran, ran)
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{ran}/{ran}" in err and f"stopped early at round {ran - 1}" in err


def test_an_early_stopped_plain_line_says_so(noisy, capsys, no_tqdm):
    X, y, _, Xv, yv, _ = noisy
    bst = jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=200,
        eval_set=[(Xv, yv)],
        **KW,
        early_stopping_rounds=5,
        verbose=True,
    )
    ran = bst.best_iteration + 1 + 5
    out, err = capsys.readouterr()
    assert out == ""
    last = err.splitlines()[-1]
    assert last.startswith(f"[{ran}/200] validation_0-logloss: ")
    assert last.endswith(f"  stopped early at round {ran - 1}")
