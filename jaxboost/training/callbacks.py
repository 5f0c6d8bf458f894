"""Callbacks: one record in, ``True`` to stop.

A callback is any callable ``callback(env) -> bool``. ``train`` calls it after every
round with a ``CallbackEnv`` (the round just finished, the evaluation history so far and
the model so far); a true return stops training after that round. Early stopping,
progress and checkpointing are callbacks themselves, and user callbacks get the same
record.

Rounds run on the device in chunks; the host hears of them one chunk later, so a
callback sees every round in order, just in batches, and a stop discards the rounds the
device had already run past it.

>>> import numpy as np, jaxboost
>>> X = np.random.default_rng(0).normal(size=(200, 2)).astype(np.float32)
>>> seen = []
>>> def stop_after_three(env):
...     seen.append(env.round)
...     return env.round == 2
>>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=10, callbacks=[stop_after_three])
>>> len(bst), seen
(3, [0, 1, 2])
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from typing import Any, Callable, Optional

from ..errors import CheckpointWarning, EarlyStoppingWarning
from ..inputs.numbers import is_int, is_real


class CallbackEnv:
    """What a callback sees after a round.

    Attributes:
      round: index of the round just finished (0-based, counting this ``train`` call's
        rounds; ``start_round + round`` counts from the model's first round when
        training continues an ``init_model``).
      n_rounds: rounds requested in this call.
      start_round: rounds the ``init_model`` already had (0 without one).
      history: ``{data_name: {metric_name: [value per round so far]}}``.
      metrics: ``{metric_name: jaxboost.metrics.Metric}`` (``maximize`` and friends).
      booster: the model of every round up to this one (built on first access).
    """

    def __init__(
        self,
        round: int,
        n_rounds: int,
        start_round: int,
        history: dict,
        metrics: dict,
        make_booster: Callable,
    ):
        self.round = round
        self.n_rounds = n_rounds
        self.start_round = start_round
        self.history = history
        self.metrics = metrics
        self._make_booster = make_booster
        self._booster = None

    @property
    def booster(self):
        if self._booster is None:
            self._booster = self._make_booster(self.round + 1)
        return self._booster


class EarlyStopping:
    """Stop when a metric has not improved for ``rounds`` rounds.

    Improvement means better than the best value so far by more than ``min_delta``, in
    the direction the metric's definition gives (``Metric.maximize``; e.g. AUC is
    maximised, log loss minimised). The best round is kept in ``best_iteration`` and
    ``best_score``; ``train`` returns the model cut to it.

    Args:
      rounds: patience, in rounds (>= 1).
      metric: metric name to watch (default: the last metric).
      data: evaluation set name to watch (default: the last evaluation set).
      min_delta: minimum improvement (>= 0).
    """

    def __init__(
        self,
        rounds: int,
        metric: Optional[str] = None,
        data: Optional[str] = None,
        min_delta: float = 0.0,
    ):
        if not is_int(rounds) or rounds < 1:
            raise ValueError(f"early_stopping_rounds must be an integer >= 1, got {rounds!r}")
        if not (is_real(min_delta) and math.isfinite(min_delta) and min_delta >= 0):
            raise ValueError(f"min_delta must be a finite number >= 0, got {min_delta!r}")
        self.rounds = int(rounds)
        self.metric = metric
        self.data = data
        self.min_delta = float(min_delta)
        self.best_iteration: Optional[int] = None
        self.best_score: Optional[float] = None
        self.maximize: Optional[bool] = None
        self._stale = 0  # rounds since the best one
        self._warned = False

    def check(self, data_names, metric_names) -> None:
        """Validate the watched names against the evaluation set-up (before training)."""
        if not data_names:
            raise ValueError("early stopping needs an evaluation set: pass eval_set=[(X, y)]")
        if self.data is None:
            self.data = data_names[-1]
        elif self.data not in data_names:
            raise ValueError(
                f"early stopping watches eval set {self.data!r}, but the eval "
                f"sets are {list(data_names)}"
            )
        if self.metric is None:
            self.metric = metric_names[-1]
        elif self.metric not in metric_names:
            raise ValueError(
                f"early stopping watches metric {self.metric!r}, but the "
                f"metrics are {list(metric_names)}"
            )

    def __call__(self, env: CallbackEnv) -> bool:
        if self.data is None or self.metric is None:
            self.check(list(env.history), list(env.metrics))
        self.maximize = env.metrics[self.metric].maximize
        value = env.history[self.data][self.metric][-1]
        if not math.isfinite(value):
            # an undefined or infinite value is never the best round, and while no round
            # has a finite one there is nothing to stop at: training goes on (before,
            # a NaN AUC stopped it after `rounds` rounds with best_iteration None)
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"early stopping watches {self.metric} on {self.data!r}, which is "
                    f"{value} at round {env.round} (undefined or infinite: e.g. AUC of a "
                    f"one-class evaluation set, r2 of constant labels); such rounds are "
                    f"never the best, and until a round has a finite value training is "
                    f"not stopped",
                    EarlyStoppingWarning,
                    stacklevel=2,
                )
            self._stale += self.best_iteration is not None
            return self.best_iteration is not None and self._stale >= self.rounds
        if self.best_score is None or (
            value > self.best_score + self.min_delta
            if self.maximize
            else value < self.best_score - self.min_delta
        ):
            self.best_score = float(value)
            self.best_iteration = env.round
            self._stale = 0
        else:
            self._stale += 1
        return self._stale >= self.rounds


AUTO_SECONDS = 5.0
"""``train(verbose="auto")`` shows progress when the rounds still to run are expected to
take longer than this many seconds (compilation not counted)."""

PLAIN_LINE_SECONDS = 10.0
"""Off a terminal, the plain progress line is written at most this often (and at the
end), one full line each time."""

_now = time.perf_counter  # the clock Progress reads (a test may replace it)


class Progress:
    """Training progress on stderr: a tqdm bar when tqdm is installed, else a plain line.

    Shows the rounds done of ``total`` and the latest value of every metric on the last
    evaluation set. Nothing is ever written to stdout.

    **When it appears.** With ``min_seconds=0`` from the first round. Otherwise only
    when training itself is slow: the speed is measured from the first round reported
    onwards, and the progress appears once the rounds still to run are expected to take
    longer than ``min_seconds`` at that speed. Rounds reach the host in chunks of
    ``jaxboost.training.loop.ROUNDS_PER_DISPATCH`` (fewer when a round grows more than
    10 trees: ``loop.rounds_per_dispatch``), the first after its program was
    compiled and run, so compilation never counts: a run whose compilation takes
    10 s and whose 1,000 rounds take 1 s shows nothing. ``train(verbose="auto")`` uses
    ``AUTO_SECONDS``; a run of a single chunk never shows.

    **How.** A tqdm bar (``tqdm.auto``: a widget in a notebook where ipywidgets is
    installed, else text on stderr) when tqdm is installed. Without tqdm, a plain line
    ``[k/n] metrics`` on stderr: rewritten in place (``\\r``) on a terminal, else one
    full line at most every ``PLAIN_LINE_SECONDS`` and one at the end. ``plain=None``
    writes the plain line only when ``stream`` is a terminal (``train(verbose="auto")``:
    logs and captured output stay clean); ``plain=True`` (``verbose=True``) always.

    **How it ends.** Full after the last round. When a callback stopped training
    (early stopping or one of yours) the loop calls ``close(stopped_at=round)``: the bar
    ends as a success at the rounds run (its total becomes them; a notebook bar turns
    green, not red), with ``stopped early at round r``. An exception leaves the bar as
    it was (a notebook bar turns red).

    Args:
      total: rounds expected.
      min_seconds: show only when the remaining rounds are expected to take longer
        than this (0: at once).
      stream: where the progress goes (default ``sys.stderr`` at the time of writing).
      plain: without tqdm, whether to write the plain line: ``True`` always, ``False``
        never, ``None`` only when ``stream`` is a terminal.

    Example:
      >>> import io
      >>> from jaxboost.callbacks import CallbackEnv, Progress
      >>> out = io.StringIO()
      >>> p = Progress(2, stream=out, plain=True, use_tqdm=False)
      >>> for r in range(2):
      ...     _ = p(CallbackEnv(r, 2, 0, {"valid": {"rmse": [0.5, 0.25][:r + 1]}}, {},
      ...                       lambda n: None))
      >>> out.getvalue().splitlines()[-1]
      '[2/2] valid-rmse: 0.25'
    """

    def __init__(
        self,
        total: int,
        min_seconds: float = 0.0,
        stream=None,
        *,
        plain: Optional[bool] = True,
        use_tqdm: bool = True,
    ):
        if not (is_real(min_seconds) and min_seconds >= 0):
            raise ValueError(f"min_seconds must be a number >= 0, got {min_seconds!r}")
        if plain not in (True, False, None):
            raise ValueError(f"plain must be True, False or None, got {plain!r}")
        self.total = int(total)
        self.min_seconds = float(min_seconds)
        self.stream = stream
        self.plain = plain
        self.use_tqdm = bool(use_tqdm)
        self._first: Optional[tuple[float, int]] = None  # (clock, rounds done) at the
        # first round reported
        self._bar: Any = None  # a tqdm bar
        self._mode: Optional[str] = None  # None: not shown yet; "bar", "line" or "off"
        self._shown = 0
        self._last_line: Optional[float] = None  # clock of the last full line (off a
        # terminal)
        self._tty = False
        self._text = ""

    def _stream(self):
        return self.stream if self.stream is not None else sys.stderr

    @staticmethod
    def _metrics_text(env: CallbackEnv) -> str:
        if not env.history:
            return ""
        name = list(env.history)[-1]
        vals = env.history[name]
        return "  ".join(f"{name}-{m}: {v[-1]:.5g}" for m, v in vals.items() if v)

    def _due(self, now: float, done: int) -> bool:
        """Whether the progress should appear now (``done`` rounds at clock ``now``)."""
        if self.min_seconds <= 0:
            return True
        t1, d1 = self._first or (now, done)  # (None: nothing measured yet)
        if done <= d1 or now <= t1 or done >= self.total:
            return False  # no speed measured yet, or nothing left
        per_round = (now - t1) / (done - d1)
        return (self.total - done) * per_round > self.min_seconds

    def _open(self, done: int, now: float) -> None:
        stream = self._stream()
        if self.use_tqdm:
            try:
                with warnings.catch_warnings():  # tqdm.auto's notice without ipywidgets
                    warnings.simplefilter("ignore")
                    from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                self._bar = tqdm(
                    total=self.total, initial=done - 1, unit="round", leave=True, file=stream
                )
                self._shown = done - 1
                self._mode = "bar"
                return
        isatty = getattr(stream, "isatty", None)
        try:
            self._tty = bool(isatty()) if callable(isatty) else False
        except (ValueError, OSError):  # a closed or odd stream
            self._tty = False
        if self.plain is True or (self.plain is None and self._tty):
            self._mode = "line"
            self._last_line = None
        else:
            self._mode = "off"

    def __call__(self, env: CallbackEnv) -> bool:
        done = env.round + 1
        now = _now()
        if self._first is None:
            self._first = (now, done)
        if self._mode is None:
            if not self._due(now, done):
                return False
            self._open(done, now)
        self._text = self._metrics_text(env)
        if self._mode == "bar":
            if self._text:
                self._bar.set_postfix_str(self._text, refresh=False)
            self._bar.update(done - self._shown)
            if done >= self.total:
                self._bar.close()
        elif self._mode == "line":
            self._line(done, now, done >= self.total)
        self._shown = done
        return False

    def _line(self, done: int, now: float, last: bool, note: str = "") -> None:
        stream = self._stream()
        text = f"[{done}/{self.total}] {self._text}{note}".rstrip()
        if self._tty:
            stream.write(f"\r{text}" + ("\n" if last else ""))
        elif last or self._last_line is None or now - self._last_line >= PLAIN_LINE_SECONDS:
            stream.write(text + "\n")
            self._last_line = now
        else:
            return
        stream.flush()

    def close(self, stopped_at: Optional[int] = None) -> None:
        """End the progress. ``stopped_at``: the round (0-based) at which a callback
        stopped training; the bar or line then ends as complete at the rounds run."""
        note = "" if stopped_at is None else f"stopped early at round {stopped_at}"
        if self._bar is not None:
            bar, self._bar = self._bar, None
            if stopped_at is not None and bar.n < bar.total:
                bar.total = bar.n
                container = getattr(bar, "container", None)  # tqdm.notebook's widget
                if container is not None:
                    try:
                        container.children[1].max = bar.n
                    except (AttributeError, IndexError, TypeError):
                        pass
                bar.set_postfix_str(f"{self._text}  {note}".strip(), refresh=False)
                bar.refresh()
            bar.close()
        elif self._mode == "line" and self._shown < self.total:
            if note:
                self._line(self._shown, _now(), True, f"  {note}" if self._text else note)
            elif self._tty:  # an exception: what follows starts on a line of its own
                self._stream().write("\n")
            self._mode = "off"


class Checkpoint:
    """Write the model every ``every`` rounds (and after the last), atomically.

    The file is a ``jaxboost.io`` model file with the training state (seed and rounds),
    so ``train(..., init_model=jaxboost.load(path), n_rounds=remaining, seed=...)``
    continues exactly where it stopped: the result equals an uninterrupted run, bit for
    bit. A crash while writing leaves the previous checkpoint intact. In a multi-process
    job (``jaxboost.distributed``) only process 0 writes.

    A write that fails (full disk, the directory removed, no permission) does not end
    training: it gives a ``jaxboost.errors.CheckpointWarning`` naming the round and the
    reason, leaves the previous file as it was, and the next write tries again; the
    model ``train`` returns is complete either way. A directory that does not exist when
    the ``Checkpoint`` is made is a ``ValueError`` at once, before any training.

    Args:
      path: file to write; its directory must exist (on every process of a
        multi-process job, although only process 0 writes).
      every: rounds between writes (>= 1).

    Attributes:
      last_round: the rounds of the model in the last file written (None: none yet).
      failures: ``[(round, error), ...]``: the writes that failed.
    """

    def __init__(self, path, every: int = 10):
        if not is_int(every) or every < 1:
            raise ValueError(f"Checkpoint every must be an integer >= 1, got {every!r}")
        self.path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise ValueError(
                f"Checkpoint path {self.path!r}: its directory {directory!r} "
                f"does not exist; create it first"
            )
        self.every = int(every)
        self.last_round: Optional[int] = None  # rounds in the last file written (None:
        # none yet)
        self.failures: list = []

    def __call__(self, env: CallbackEnv) -> bool:
        done = env.round + 1
        if done % self.every == 0 or done == env.n_rounds:
            rounds = env.start_round + done
            try:
                env.booster.save(self.path)  # in a multi-process job, process 0 writes
            except Exception as e:  # OSError (disk full, ...) and anything save raises
                self.failures.append((rounds, e))
                kept = (
                    f"the last checkpoint written holds {self.last_round} round(s)"
                    if self.last_round is not None
                    else "no checkpoint was written yet"
                )
                warnings.warn(
                    f"Checkpoint: writing {self.path!r} after {rounds} round(s) "
                    f"failed ({type(e).__name__}: {e}); training goes on and the "
                    f"next write tries again; {kept}.",
                    CheckpointWarning,
                    stacklevel=2,
                )
                return False
            self.last_round = rounds
        return False
