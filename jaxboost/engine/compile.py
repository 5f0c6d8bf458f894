"""XLA compile options per backend for the training round.

``backend_jit(fun, cpu_options=CPU_COMPILE, **jit_kwargs)`` is ``jax.jit(fun,
**jit_kwargs)`` that, when JAX's default backend is the CPU, compiles with
``cpu_options`` added. ``CPU_COMPILE`` turns off XLA's CPU fusion emitters (the newer
code generator for fused loops). On the training round (``round.run_chunk``) that takes a
cold fit's compile CPU time down by about a quarter (sklearn's digits, softmax, 100
rounds: 2.66 -> 2.01 CPU s; a 100-tree forest on digits 3.81 -> 3.02) and leaves warm fits
as they were (1,000,000 x 28 logistic, 20 rounds: 3.26 vs 3.29 CPU s), with models
equal bit for bit (logistic with sampling, softmax, Poisson, a log-cosh loss, a forest,
Gaussian NLL): the tree's heavy work is in the native kernel on the CPU. Rounds of any
size take them (until 26 Nov 2026 only those of up to 262,144 rows): on W1 (1,000,000
x 28, logistic, 100 rounds; ``benchmarks/run.py``, medians of 3) the first fit's compile
went from 1.04 to 0.42 s, together with the base-margin fit's ``QUICK_COMPILE``, and
the warm fit stayed as it was (6.13 -> 6.06 s; peak memory 544 -> 565 MiB, within the
runs' spread of 45 MiB); the models are equal bit for bit (300,000 rows: logistic with
sampling, squared, softmax, Poisson). Prediction is
left to the emitters: its row-by-tree traversal ran about 25 % slower without them
(1,000,000 x 28 rows, 100 trees of depth 6: 4.6 -> 5.8 s).

On the other backends (GPU, TPU) the programs compile with ``ACCELERATOR_COMPILE``:
XLA's excess precision off, so that a value rounded to float32 on purpose stays
rounded (see there).

The CPU options only tune compile time. XLA renames and retires them between releases
(jaxlib 0.11 has no ``xla_cpu_use_fusion_emitters``): an option the installed XLA
rejects is dropped for the rest of the process and the call made again
(``known_options``), so a newer jax compiles with XLA's defaults instead of failing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import sys
import threading
from typing import Any

import jax
from jax.stages import Wrapped

CPU_COMPILE = {"xla_cpu_use_fusion_emitters": False}
"""XLA options added on the CPU backend (see the module docstring)."""


def _unless_flagged(options: dict) -> dict:
    """``options`` less those that ``XLA_FLAGS`` in the environment sets already (the
    user's, or the test suite's, choice is kept)."""
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in options.items() if f"--{k}=" not in flags}


SMALL_CPU_COMPILE = {
    **CPU_COMPILE,
    "xla_llvm_disable_expensive_passes": True,
    **_unless_flagged({"xla_backend_optimization_level": 1}),
}
"""XLA options for the CPU round program on small data (``round.run_chunk`` below
``round.SMALL_ROUND_ROWS`` rows): LLVM's costlier passes off as well, and its
optimisation level 1 instead of 2 (unless ``XLA_FLAGS`` sets a level). On small data
the native kernel does the tree's work, and the program's own loops are short, so only
the compile is changed: sklearn's digits (softmax, 100 rounds) cold fit 1.77 -> 1.42 s, a
100-tree forest on digits 2.27 -> 1.85 s, warm fits and models the same (bit for bit:
softmax, a forest, logistic with sampling and an eval set, squared, Poisson, a
log-cosh loss, quantile). On 1,000,000 rows (W1) its warm fit ran 5-8 % slower, so large
data keeps ``CPU_COMPILE``. Level 1 (29 Nov 2026) takes 2-8 % off the round program's
compile (one process, the same lowered program compiled six times each way, alternating,
medians: digits softmax 0.790 -> 0.723 s, a 30-tree forest on digits with row and column
sampling 1.135 -> 1.109 s, breast cancer 0.416 -> 0.406 s); warm fits as before
(friedman1, 200,000 rows, 100 rounds, alternating processes: 0.91-1.16 s either way);
models the same bit for bit (72 of 72 arrays: softmax, a forest, logistic with sampling
and an eval set, squared, Poisson, quantile, Gaussian NLL, vector leaves). Level 0
compiles in about half the time but its programs ran slower, and some ``exp`` / ``log``
evaluations round differently there."""

ACCELERATOR_COMPILE = {"xla_allow_excess_precision": False}
"""XLA options on every backend but the CPU. With excess precision allowed (XLA's
default) the GPU compiler drops a float64 -> float32 -> float64 round trip and keeps the
float64 value, so a score that XGBoost computes from a float32 leaf weight
(``split.calc_score`` with ``max_delta_step``) came out of the float64 weight: on an
H200, logistic with ``reg_alpha`` 0.2 and ``max_delta_step`` 0.3 grew other trees than
XGBoost's exact method from round 3 on (training margins off by up to 0.59); with the
option off they match to 1.2e-7, as on the CPU (``benchmarks/gpu_parity_probe.py``,
28 Nov 2026). The CPU backend keeps such round trips either way."""


_UNKNOWN: set[str] = set()
"""Compile options that this process's XLA rejected ("No such compile option"): XLA
renames and retires its debug options between releases (``xla_cpu_use_fusion_emitters``
is gone from the XLA of jaxlib 0.11), and an option that only tunes compile time must not
stop a fit."""

_NO_SUCH_OPTION = re.compile(r"No such compile option: '([A-Za-z0-9_]+)'")


def known_options(options: dict | None) -> dict:
    """``options`` less those this XLA rejected (``_UNKNOWN``).

    >>> known_options({"xla_backend_optimization_level": 0})
    {'xla_backend_optimization_level': 0}
    """
    return {k: v for k, v in (options or {}).items() if k not in _UNKNOWN}


def _forget_unknown_option(error: Exception) -> bool:
    """Whether ``error`` is XLA's "No such compile option" for an option not yet known to
    be missing; if so, it is added to ``_UNKNOWN``. Nothing is shown: the models are the
    same without it (``tests/test_compile_options.py`` checks that the pinned jax knows
    every option jaxboost asks for)."""
    m = _NO_SUCH_OPTION.search(str(error))
    if m is None or m.group(1) in _UNKNOWN:
        return False
    _UNKNOWN.add(m.group(1))
    return True


class BackendJit(Wrapped):
    """A function jitted three or four times: with ``cpu_options`` on the CPU backend
    (with ``small_options`` for calls where ``small(*args, **kwargs)`` holds), with
    ``ACCELERATOR_COMPILE`` elsewhere (the choice follows ``jax.default_backend()`` at
    each call), and plainly for ``trace`` (what ``jax.export`` calls, for any
    platform). ``_cache_size()`` counts the compiled programs of all, as
    ``jax.jit``'s does."""

    def __init__(self, fun, cpu_options, jit_kwargs, small=None, small_options=None, release=True):
        self._fun, self._jit_kwargs, self._release = fun, jit_kwargs, release
        self._options, self._small_options = dict(cpu_options), small_options
        self._plain: Any = jax.jit(fun, **jit_kwargs)
        self._small = small
        self._build()
        functools.update_wrapper(self, fun)

    def _build(self):
        """The CPU programs, with the options this XLA knows (``known_options``)."""
        self._known_at = len(_UNKNOWN)
        self._cpu: Any = jax.jit(
            self._fun, compiler_options=known_options(self._options), **self._jit_kwargs
        )
        self._accel: Any = jax.jit(
            self._fun, compiler_options=known_options(ACCELERATOR_COMPILE), **self._jit_kwargs
        )
        self._cpu_small: Any = (
            None
            if self._small is None
            else jax.jit(
                self._fun,
                compiler_options=known_options(self._small_options),
                **self._jit_kwargs,
            )
        )

    def _pick(self, args, kwargs):
        if self._known_at != len(_UNKNOWN):
            self._build()
        if jax.default_backend() != "cpu":
            return self._accel
        if self._small is not None and self._small(*args, **kwargs):
            return self._cpu_small
        return self._cpu

    def __call__(self, *args, **kwargs):
        fn = self._pick(args, kwargs)
        before = fn._cache_size()
        try:
            out = fn(*args, **kwargs)
        except jax.errors.JaxRuntimeError as e:
            # XLA checks compile options when it compiles, before anything runs (no
            # donated buffer is consumed): an option this XLA does not have is dropped
            # and the call made again.
            if not _forget_unknown_option(e):
                raise
            return self(*args, **kwargs)
        if self._release and fn._cache_size() != before:
            release_free_memory()  # compiled just now: the compiler's memory is free
        return out

    def lower(self, *args, **kwargs):
        return self._pick(args, kwargs).lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        return self._plain.trace(*args, **kwargs)

    def _cache_size(self) -> int:
        small = 0 if self._cpu_small is None else self._cpu_small._cache_size()
        return (
            self._plain._cache_size() + self._cpu._cache_size() + self._accel._cache_size() + small
        )


def backend_jit(
    fun=None, *, cpu_options=None, small=None, small_options=None, release=True, **jit_kwargs
):
    """``jax.jit`` with ``cpu_options`` (default ``CPU_COMPILE``) on the CPU backend, and
    ``small_options`` (default ``SMALL_CPU_COMPILE``) instead for calls where
    ``small(*args, **kwargs)`` is true, when given; used as
    ``@backend_jit(static_argnames=...)`` or ``backend_jit(fun, ...)``. A call that
    compiled hands the compiler's freed memory back (``release_free_memory``) unless
    ``release=False`` (the base-margin fit: a small compile, not worth the trim). An
    option the installed XLA rejects is dropped for the rest of the process
    (``known_options``).

    >>> import jax.numpy as jnp
    >>> f = backend_jit(lambda x: jnp.exp(x) + 1, small=lambda x: x.size < 4)
    >>> float(f(jnp.float32(0.0))), f(jnp.zeros(8)).shape, f._cache_size()
    (2.0, (8,), 2)
    """
    options = CPU_COMPILE if cpu_options is None else cpu_options
    if small is not None and small_options is None:
        small_options = SMALL_CPU_COMPILE

    def make(f):
        return BackendJit(f, options, jit_kwargs, small, small_options, release)

    return make if fun is None else make(fun)


_TRIM: list = []


TRIM_AFTER_BYTES = 16 << 20
"""A training call that held at least this much native scratch also trims malloc's
heap when it ends (``frees_memory``); below it, ``malloc_trim``'s walk of the heap (about
1 ms) would cost a small fit more than it gives back."""


def frees_memory(fn):
    """``fn``, then the native kernel's idle scratch handed back, however it ends (the
    training entry points, so that fit after fit in one process does not grow it); when
    that scratch came to ``TRIM_AFTER_BYTES`` or more, ``release_free_memory()`` too.
    ``fn`` runs under ``fit_malloc_thresholds()``."""

    @functools.wraps(fn)
    def freeing(*args, **kwargs):
        with fit_malloc_thresholds():
            try:
                return fn(*args, **kwargs)
            finally:
                if release_scratch() >= TRIM_AFTER_BYTES:
                    release_free_memory()

    return freeing


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's ``mallopt`` parameters (``malloc.h``)."""

FIT_THRESHOLDS = ((M_MMAP_THRESHOLD, 8 << 20), (M_TRIM_THRESHOLD, 1 << 20))
"""malloc's thresholds while a fit runs: blocks of 8 MiB or more from ``mmap`` (handed
back when freed), the heap's free top handed back past 1 MiB."""

AFTER_FIT_THRESHOLDS = ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 64 << 20))
"""What they are set to when the last running fit ends: the most glibc's own sliding
thresholds reach on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX`` and twice it), where they
sit once a process has freed a large block; NumPy's speed on large arrays is then
glibc's default one."""

USER_MALLOC_SETTINGS = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
    "GLIBC_TUNABLES",
)
"""Environment variables by which a user sets malloc's thresholds: with any of them set,
or ``JAXBOOST_MALLOC=0``, jaxboost leaves malloc's settings alone (read at the first
fit of the process)."""

_MALLOPT: list = []
_FITS = [0]  # fits running now (threads): the thresholds are set by the first, reset by the last
_FITS_LOCK = threading.Lock()


def _mallopt():
    """glibc's ``mallopt`` (None elsewhere, or where the user set malloc's thresholds)."""
    if not _MALLOPT:
        fn = None
        user = os.environ.get("JAXBOOST_MALLOC") == "0" or any(
            v in os.environ for v in USER_MALLOC_SETTINGS
        )
        if sys.platform.startswith("linux") and not user:
            try:
                fn = ctypes.CDLL(None).mallopt  # glibc; absent on musl
                fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            except (OSError, AttributeError):
                fn = None
        _MALLOPT.append(fn)
    return _MALLOPT[0]


@contextlib.contextmanager
def fit_malloc_thresholds():
    """malloc's mmap and trim thresholds set for a fit (``FIT_THRESHOLDS``), then, when
    no other fit is running, to ``AFTER_FIT_THRESHOLDS`` (glibc on Linux only; nothing
    where the user set them, ``USER_MALLOC_SETTINGS``, or with ``JAXBOOST_MALLOC=0``).

    glibc slides its mmap threshold up to the size of the largest block freed (up to 32
    MiB), so after the first large block the round program's scratch (11.6 MiB per
    execution on 1,000,000 x 28 rows) comes from the heap of whichever XLA thread runs
    the chunk, and each such heap keeps its own copy: W1's heaps grew by 23 MiB over its
    first 40 rounds. With ``FIT_THRESHOLDS`` W1 peaks at 1.00x XGBoost's memory after
    one fit instead of 1.08x, at the same speed (``docs/performance.md``). They are not
    left at the fit's values: plain NumPy expressions on 8-30 MiB arrays ran 1.8-2.1x
    slower under such thresholds for the whole process; after a fit, at
    ``AFTER_FIT_THRESHOLDS``, they run at glibc's default speed.

    >>> with fit_malloc_thresholds():
    ...     pass
    """
    fn = _mallopt()
    if fn is None:
        yield
        return
    with _FITS_LOCK:
        _FITS[0] += 1
        if _FITS[0] == 1:
            for param, value in FIT_THRESHOLDS:
                fn(param, value)
    try:
        yield
    finally:
        with _FITS_LOCK:
            _FITS[0] -= 1
            if _FITS[0] == 0:
                for param, value in AFTER_FIT_THRESHOLDS:
                    fn(param, value)


def release_scratch() -> int:
    """The bytes of the native kernel's idle scratch handed back
    (``jaxboost.native.release_scratch``; 0 where the kernel was never loaded)."""
    native = sys.modules.get("jaxboost.native")
    return 0 if native is None else native.release_scratch()


def release_free_memory() -> bool:
    """Hand the C heap's free pages back to the operating system (glibc's
    ``malloc_trim(0)``; nothing elsewhere), after the native kernel's idle scratch
    blocks (``release_scratch``). Returns whether ``malloc_trim`` ran.

    XLA's compiler and the native kernel free their scratch memory to malloc, which keeps
    it in its arenas, so the process's resident memory stays at the compiler's
    high-water mark while the rounds allocate their own on top. Called after a training
    program compiles (``BackendJit``): 1M x 28 rows, logistic, 40 rounds, one process:
    peak 612 -> 503 MiB, resident after training 569 -> 456 MiB. Called again when a
    large training call ends (``frees_memory``).

    >>> isinstance(release_free_memory(), bool)
    True
    """
    release_scratch()
    if not _TRIM:
        fn = None
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None).malloc_trim  # glibc; absent on musl
                fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):
                fn = None
        _TRIM.append(fn)
    if _TRIM[0] is None:
        return False
    _TRIM[0](0)
    return True
