"""Dtypes and the shape glossary, in one place.

Shape names used in docstrings across the package:

* ``N`` rows, ``F`` features, ``B`` bins per feature of the compiled programs
  (``BinEdges.n_bins``: the data's bucket, at most the ``max_bin`` parameter; the last
  one, ``B - 1``, is reserved for missing values), ``D`` ``max_depth``,
  ``M = 2 ** (D + 1) - 1`` nodes of one tree in heap layout (node ``i`` has children
  ``2 i + 1`` and ``2 i + 2``), ``T`` trees in an ensemble.

Storage and arithmetic (the engine's modules spell array dtypes with these names;
scalar constants such as ``jnp.float32(0.5)`` keep their literal type):

* ``BIN_DTYPE``: bins are ``uint8`` when the programs' ``B <= 256`` (always at the default
  ``max_bin = 256``), ``uint16`` above (``bin_dtype(B)``; ``max_bin <= MAX_BIN_LIMIT =
  65536``), stored feature-major ``(F, N)`` (row-major for the native kernel);
* ``FLOAT_DTYPE``: gradients, Hessians, margins and leaf values are ``float32``;
* ``INDEX_DTYPE``: node, feature, bin and row indices (and other integers computed in
  compiled code) are ``int32``;
* ``ACC_DTYPE``: histogram sums and the other sums over rows accumulate in ``float64``
  (a scoped x64 trace, never the global flag), because float32 accumulation of
  millions of rows in one bin drifts by percents;
* split scores and gains are rounded to ``float32`` before they are compared, as
  XGBoost does, so exact ties break the same way.

These dtypes hold whatever JAX's global ``jax_enable_x64`` flag says: the engine spells
every dtype (random draws, ``arange``, ``one_hot``), and the public entry points that
trace programs (``train``, ``train_many``, ``Booster.predict`` and friends) run under
``float32_programs``, so a user's loss and learning-rate schedule are traced as they
are without the flag too: the same inputs give the same model bit for bit with and
without ``JAX_ENABLE_X64=1``.
"""

import functools
import os

import jax
import numpy as np

# The most classes (outputs K) a model may have, in training and in files: defined once,
# beside objectives.softmax (the catalogue cannot import jaxboost).
from objectives.classification import MAX_CLASSES  # noqa: F401  (re-exported)

BIN_DTYPE = np.uint8
WIDE_BIN_DTYPE = np.uint16
NARROW_BIN_LIMIT = 256
"""The most bins per feature ``BIN_DTYPE`` (uint8) holds; the native CPU kernel's
categorical, leaf-wise, sparse and vector-leaf paths read uint8 bins only."""
NATIVE_WIDE_BIN_LIMIT = 4096
"""The most bins per feature the native CPU kernels take as uint16 bins: data whose
programs need ``256 < B <= 4096`` bins grows numeric level-wise trees in the native
whole-tree kernel, other trees in the XLA level loop over the native histogram
(``B`` above: the XLA histogram)."""
MAX_BIN_LIMIT = 65536


def bin_dtype(n_bins: int):
    """The dtype of bins for programs of ``n_bins`` bins per feature: ``uint8`` up to
    ``NARROW_BIN_LIMIT`` (256), ``uint16`` above.

    >>> bin_dtype(256).__name__, bin_dtype(257).__name__
    ('uint8', 'uint16')
    """
    return BIN_DTYPE if int(n_bins) <= NARROW_BIN_LIMIT else WIDE_BIN_DTYPE


# Rounds are counted in int32 (random streams, flags, a chunk's skipped rounds past the
# end): a model has at most this many.
MAX_ROUNDS = 2**30
FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT_DTYPE = np.float32
INDEX_DTYPE = np.int32
ACC_DTYPE = np.float64
# XGBoost's kRtEps: a split is made only when its gain exceeds this.
MIN_SPLIT_GAIN = 1e-6


_FORKED_AFTER_JAX = False
"""Set in a child process forked (``os.fork``, multiprocessing's ``"fork"`` start
method) after JAX had started its backends in the parent (``_mark_fork``)."""


def _mark_fork() -> None:
    global _FORKED_AFTER_JAX
    try:
        from jax._src import xla_bridge

        _FORKED_AFTER_JAX = bool(xla_bridge.backends_are_initialized())
    except Exception:  # a JAX without this private function: do not guess
        _FORKED_AFTER_JAX = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_fork)


class ForkedProcessError(RuntimeError):
    """JAX work asked of a process forked after JAX started in its parent: JAX's runtime
    threads do not survive ``fork``, and the work would hang (issue 28, item 3)."""


def check_not_forked() -> None:
    """Refuse JAX work in a child forked after JAX started (``ForkedProcessError``)."""
    if _FORKED_AFTER_JAX:
        raise ForkedProcessError(
            "this process was forked (os.fork, or multiprocessing's 'fork' start method) "
            "after JAX had started in its parent; JAX's runtime does not survive a fork, "
            "so training or predicting here would hang. Start the worker processes with "
            "multiprocessing.get_context('spawn') (or 'forkserver'), or fork before the "
            "parent first uses jaxboost or JAX"
        )


def float32_programs(fn):
    """``fn`` run with JAX's 64-bit mode off, scoped to the call (``jax.enable_x64``;
    the global setting is untouched and restored after): every program traced inside
    (the round, the intercept fit, evaluation, prediction, the user's loss, link and
    schedule) is the one traced without ``JAX_ENABLE_X64``, so the global flag never
    changes a model. The engine's float64 sums open their own scoped x64 regions.
    Every public entry point that runs JAX work passes here, so it is also where a
    process forked after JAX started is refused (``check_not_forked``).

    >>> import jax.numpy as jnp
    >>> float32_programs(lambda: jnp.arange(3.0).dtype)()
    dtype('float32')
    """

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        check_not_forked()
        with jax.enable_x64(False):
            return fn(*args, **kwargs)

    return scoped


def bucket_rows(n: int, minimum: int = 64, pow2_up_to: int = 0) -> int:
    """Rows padded to a size bucket: at most 12.5-25 % more, at least ``minimum``; up to
    ``pow2_up_to`` rows the next power of two (one bucket per octave, for programs whose
    work is too small for the padding to matter).

    Prediction and evaluation pad their rows to these sizes, so data sets of similar
    sizes (cross-validation folds, a growing validation set, predict calls on batches)
    share one compiled program instead of compiling one per row count.

    >>> [bucket_rows(n) for n in (1, 100, 101, 150, 1000, 1234)]
    [64, 112, 112, 160, 1024, 1280]
    >>> [bucket_rows(n, pow2_up_to=4096) for n in (1, 100, 150, 1000, 5000)]
    [64, 128, 256, 1024, 5120]
    """
    n = max(int(n), minimum)
    if n <= pow2_up_to:
        return 1 << (n - 1).bit_length()
    step = max(8, 1 << max(n.bit_length() - 3, 0))
    return -(-n // step) * step


def pad_rows(X: np.ndarray) -> np.ndarray:
    """``X`` with rows appended (copies of row 0, or zeros) up to ``bucket_rows``."""
    n = X.shape[0]
    out = np.zeros((bucket_rows(n),) + X.shape[1:], X.dtype)
    out[:n] = X
    if n:
        out[n:] = X[0]
    return out
