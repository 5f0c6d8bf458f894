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
from typing import Callable, Optional

from ._validation import is_int, is_real
from .errors import CheckpointWarning


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

    def __init__(self, round: int, n_rounds: int, start_round: int, history: dict,
                 metrics: dict, make_booster: Callable):
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

    def __init__(self, rounds: int, metric: Optional[str] = None, data: Optional[str] = None,
                 min_delta: float = 0.0):
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

    def check(self, data_names, metric_names) -> None:
        """Validate the watched names against the evaluation set-up (before training)."""
        if not data_names:
            raise ValueError("early stopping needs an evaluation set: pass eval_set=[(X, y)]")
        if self.data is None:
            self.data = data_names[-1]
        elif self.data not in data_names:
            raise ValueError(f"early stopping watches eval set {self.data!r}, but the eval "
                             f"sets are {list(data_names)}")
        if self.metric is None:
            self.metric = metric_names[-1]
        elif self.metric not in metric_names:
            raise ValueError(f"early stopping watches metric {self.metric!r}, but the "
                             f"metrics are {list(metric_names)}")

    def __call__(self, env: CallbackEnv) -> bool:
        if self.data is None or self.metric is None:
            self.check(list(env.history), list(env.metrics))
        self.maximize = env.metrics[self.metric].maximize
        value = env.history[self.data][self.metric][-1]
        if not math.isnan(value) and (
                self.best_score is None or
                (value > self.best_score + self.min_delta if self.maximize
                 else value < self.best_score - self.min_delta)):
            self.best_score = float(value)
            self.best_iteration = env.round
        best = -1 if self.best_iteration is None else self.best_iteration
        return env.round - best >= self.rounds


class Progress:
    """A progress bar (tqdm when installed, otherwise a plain line on stderr).

    Shows the round and the latest value of every metric on the last evaluation set.

    Args:
      total: rounds expected.
      after_seconds: start showing only once training has run this long (0: at once);
        ``train(verbose="auto")`` uses 5 s, so short runs stay quiet.
      stream: where the plain line goes (default ``sys.stderr``).
    """

    def __init__(self, total: int, after_seconds: float = 0.0, stream=None):
        self.total = total
        self.after = after_seconds
        self.stream = stream
        self.t0 = time.perf_counter()
        self._bar = None
        self._plain = False
        self._shown = 0

    def _text(self, env: CallbackEnv) -> str:
        if not env.history:
            return ""
        name = list(env.history)[-1]
        vals = env.history[name]
        return "  ".join(f"{name}-{m}: {v[-1]:.5g}" for m, v in vals.items())

    def __call__(self, env: CallbackEnv) -> bool:
        done = env.round + 1
        if self._bar is None and not self._plain:
            if self.after > 0 and time.perf_counter() - self.t0 < self.after:
                return False
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=self.total, unit="round", leave=True,
                                 file=self.stream or sys.stderr)
            except ImportError:
                self._plain = True
        text = self._text(env)
        if self._bar is not None:
            self._bar.update(done - self._shown)
            if text:
                self._bar.set_postfix_str(text, refresh=False)
            if done >= self.total:
                self._bar.close()
        else:
            stream = self.stream or sys.stderr
            end = "\n" if done >= self.total else ""
            stream.write(f"\r[{done}/{self.total}] {text}{end}")
            stream.flush()
        self._shown = done
        return False

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


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
            raise ValueError(f"Checkpoint path {self.path!r}: its directory {directory!r} "
                             f"does not exist; create it first")
        self.every = int(every)
        self.last_round = None  # rounds in the last file written (None: none yet)
        self.failures = []

    def __call__(self, env: CallbackEnv) -> bool:
        done = env.round + 1
        if done % self.every == 0 or done == env.n_rounds:
            rounds = env.start_round + done
            try:
                env.booster.save(self.path)  # in a multi-process job, process 0 writes
            except Exception as e:  # OSError (disk full, ...) and anything save raises
                self.failures.append((rounds, e))
                kept = (f"the last checkpoint written holds {self.last_round} round(s)"
                        if self.last_round is not None else "no checkpoint was written yet")
                warnings.warn(f"Checkpoint: writing {self.path!r} after {rounds} round(s) "
                              f"failed ({type(e).__name__}: {e}); training goes on and the "
                              f"next write tries again; {kept}.", CheckpointWarning,
                              stacklevel=2)
                return False
            self.last_round = rounds
        return False
