"""Optional native CPU histogram kernel, called through XLA's FFI; and jaxboost's cache
of compiled programs on this machine (``compile_cache``: JAX's persistent compilation
cache, in the folder where a first-use build of the kernel goes too; public as
``jaxboost.compile_cache``).

Two entry points share one library: :func:`histogram` (per-level histograms for the XLA
level loop of ``jaxboost.engine.grow``) and :func:`grow_tree` (a whole tree of numeric
splits in one call: the level loop, split search, gamma pruning and each row's leaf;
``JAXBOOST_NATIVE_TREE=0`` turns it off, see :func:`tree_enabled`).

The kernel (``hist.cc`` beside this file) is compiled when jaxboost is installed
(``setup.py``, whenever a C++ compiler is present) into
``libjaxboost_hist-<source hash>.so`` beside this file, and :func:`available` loads that
library. When it is missing (installed without a compiler, or ``hist.cc`` edited in an
editable checkout since), the first call builds it instead (below). When neither works
(no compiler, a failed build, an unsafe cache folder, not Linux/macOS), :func:`available`
is ``False``, a :class:`NativeKernelWarning` says why once per process, and callers keep
the pure-JAX :func:`jaxboost.engine.histogram.build_histogram`. ``JAXBOOST_NATIVE=0`` turns the
kernel off without a warning.

* Compiler: ``$CXX`` (may hold arguments, e.g. ``"ccache g++"``), else ``c++``, else ``g++``
  (at install and at first use alike).
* Flags: ``-O3 -std=c++17 -shared -fPIC -pthread`` (no ``-march=native``: a wheel or a
  cache may be shared between machines).
* First-use build: into ``$JAXBOOST_CACHE_DIR`` or ``~/.cache/jaxboost``, in a subfolder
  keyed by a hash of the source, jaxlib version, compiler (path and ``--version``), flags
  and machine architecture. The library is built into a temporary file in that folder and
  moved into place with ``os.replace``, so concurrent processes never load a half-written
  file. A library is loaded from there only when the cache folder, the subfolder and the
  file are owned by the current user and not writable by group or others (anyone who can
  write there could make this process run their code); otherwise the kernel is refused.

Layout: the kernel takes ROW-major ``(N, F)`` bins (measured 1.1-1.5x faster than a
feature-major kernel on uniform bins, up to 7x on skewed bins, and rows outside the level
cost little), so a caller keeps a row-major copy of the bins next to the feature-major one.

Threads: the kernel is multi-threaded itself (call it on ONE device; splitting the host
into several JAX CPU devices made a training round slower). The threads run on XLA:CPU's
intra-op thread pool (std::threads when the runtime offers none). With few nodes it
splits the rows into ``n_threads`` contiguous blocks, each summed into a private
histogram, then reduces the blocks in a fixed order; with many nodes (when those
histograms would outgrow the caches: about 64+ nodes at 28 features x 256 bins) it
groups the rows by node and gives each thread whole nodes. The default thread count is
the number of cores this process may run on (``os.sched_getaffinity``), or
``$JAXBOOST_NATIVE_THREADS`` when set, and 1 when ``rows * features < 2**18`` (too little
work to pay for threads); it is read when the call is traced, so a jitted function keeps
the value it was traced with. Results are bit-identical from call to call for a given
thread count. Across thread counts, row blocks associate the float64 sums differently,
so results may differ in the last bits (grouped by node, every count gives the
sequential sum).

>>> import numpy as np, jax.numpy as jnp
>>> from jaxboost import native
>>> if native.available():
...     G, H = native.histogram(np.array([[0], [1], [1]], np.uint8), jnp.array([1., 2., 3.]),
...                             jnp.ones(3), jnp.zeros(3, jnp.int32), 1, 2)
...     assert G.tolist() == [[[1.0, 5.0]]] and H.tolist() == [[[1.0, 2.0]]]
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import hashlib
import os
import platform
import shlex
import stat
import sys
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .._types import BIN_DTYPE, NARROW_BIN_LIMIT, NATIVE_WIDE_BIN_LIMIT, WIDE_BIN_DTYPE
from ..errors import NativeKernelWarning
from . import _build
from .compile_cache import cache_root

__all__ = [
    "available",
    "unavailable_reason",
    "histogram",
    "predict",
    "predict_csr",
    "shap_patterns",
    "predict_stages",
    "pack_trees",
    "PackedTrees",
    "grow_tree",
    "grow_trees",
    "grow_tree_sparse",
    "library_path",
    "installed_library",
    "default_threads",
    "tree_enabled",
    "NativeKernelWarning",
    "TARGET_NAME",
]

TARGET_NAME = "jaxboost_histogram"
TREE_TARGET_NAME = "jaxboost_grow_tree"
TREES_TARGET_NAME = "jaxboost_grow_trees"
SPARSE_TREE_TARGET_NAME = "jaxboost_grow_tree_sparse"
TREE_CAT_TARGET_NAME = "jaxboost_grow_tree_cat"
TREES_CAT_TARGET_NAME = "jaxboost_grow_trees_cat"
VECTOR_SPLITS_TARGET_NAME = "jaxboost_vector_splits"
CHANNELS_TARGET_NAME = "jaxboost_histogram_channels"
_ABI_VERSION = 17
_SOURCE = _build.SOURCE
_FLAGS = _build.FLAGS
_LIB_NAME = "libjaxboost_hist.so"
# Where the library built at install time lies (a module attribute, for tests).
_PACKAGE_DIR = Path(__file__).parent
ENV_THREADS = "JAXBOOST_NATIVE_THREADS"
# Below this many (rows * features) the default is one thread: the work (~0.1-0.3 ms)
# would not pay for starting threads and reducing their histograms.
_MIN_WORK_FOR_THREADS = 1 << 18
# The whole-tree kernels on one thread walk each node's own rows (segments partitioned
# level by level); threads walk every row at every level. One thread is as fast up to
# about 2**20 rows * features (friedman1, 50 rounds, depth 6, 2 cores: 30,000 x 10 rows
# 78 against 115 ms, 100,000 x 10 190 against 193 ms, 20,000 x 64 305 against 284 ms).
MIN_TREE_WORK_FOR_THREADS = 1 << 20
_MAX_THREADS = 4096

_lock = threading.Lock()
_state: dict = {"done": False, "ok": False, "reason": None, "lib": None, "path": None}


class _Disabled(RuntimeError):
    """Turned off by the user: fall back without a warning."""


def _cache_root() -> Path:
    # $JAXBOOST_CACHE_DIR, else ~/.cache/jaxboost (shared with JAX's compilation cache).
    return Path(cache_root()).expanduser()


def installed_library() -> Path | None:
    """The library built when jaxboost was installed, or ``None`` when there is none for
    this version of ``hist.cc``."""
    path = _PACKAGE_DIR / _build.installed_name()
    return path if path.is_file() else None


def _check_private(path: Path) -> None:
    """Refuse (RuntimeError) a path that someone else could have written."""
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise RuntimeError(
            f"refusing to load the native kernel from {path}: owned by uid "
            f"{st.st_uid}, not by this user (uid {os.getuid()})"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise RuntimeError(
            f"refusing to load the native kernel from {path}: writable by "
            f"group or others (mode {stat.filemode(st.st_mode)}); "
            f"chmod go-w it or set JAXBOOST_CACHE_DIR"
        )


def _load(path: Path):
    lib = ctypes.CDLL(str(path))
    lib.JaxboostHistogramAbiVersion.restype = ctypes.c_int
    if lib.JaxboostHistogramAbiVersion() != _ABI_VERSION:
        raise RuntimeError(f"{path} has an unexpected ABI version")
    return lib


def _build_in_cache():
    """The first-use fallback: build into the user's cache (see the module's docstring);
    return ``(library, path)``."""
    import jaxlib

    include_dir = jax.ffi.include_dir()
    if not (Path(include_dir) / "xla" / "ffi" / "api" / "ffi.h").is_file():
        raise RuntimeError(f"XLA FFI headers not found under {include_dir}")
    cxx = _build.compiler()
    key = hashlib.sha256()
    for part in (
        _SOURCE.read_bytes(),
        jaxlib.__version__.encode(),
        shlex.join(cxx).encode(),
        _build.compiler_version(cxx).encode(),
        " ".join(_FLAGS).encode(),
        platform.machine().encode(),
        sys.platform.encode(),
    ):
        key.update(part)
        key.update(b"\0")
    root = _cache_root()
    folder = root / f"hist-{key.hexdigest()[:20]}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        writable = True
    except OSError:  # cache not writable (read-only home, ...): build for this process
        writable = False
    if writable:
        _check_private(root)
        _check_private(folder)
    else:
        folder = Path(tempfile.mkdtemp(prefix="jaxboost-native-"))  # 0700, ours
    path = folder / _LIB_NAME
    if not path.is_file():
        _build.build(cxx, include_dir, path)
    _check_private(path)
    try:
        return _load(path), path
    except OSError:
        # An unloadable cached file (e.g. copied from another machine): rebuild once.
        _build.build(cxx, include_dir, path)
        return _load(path), path


def _load_and_register() -> None:
    if os.environ.get("JAXBOOST_NATIVE", "").strip().lower() in ("0", "false", "no", "off"):
        raise _Disabled("disabled by JAXBOOST_NATIVE=0")
    if sys.platform == "win32":
        raise RuntimeError("the native kernel is built only on Linux and macOS")
    if not _SOURCE.is_file():
        raise RuntimeError(f"kernel source {_SOURCE} is missing from the installation")
    lib = None
    path = installed_library()
    if path is not None:
        try:
            lib = _load(path)
        except (OSError, RuntimeError):  # e.g. a wheel built elsewhere: build it here
            lib = None
    if lib is None:
        lib, path = _build_in_cache()
    jax.ffi.register_ffi_target(
        TARGET_NAME, jax.ffi.pycapsule(lib.JaxboostHistogram), platform="cpu"
    )
    jax.ffi.register_ffi_target(
        TREE_TARGET_NAME, jax.ffi.pycapsule(lib.JaxboostGrowTree), platform="cpu"
    )
    jax.ffi.register_ffi_target(
        TREES_TARGET_NAME, jax.ffi.pycapsule(lib.JaxboostGrowTrees), platform="cpu"
    )
    jax.ffi.register_ffi_target(
        SPARSE_TREE_TARGET_NAME, jax.ffi.pycapsule(lib.JaxboostGrowTreeSparse), platform="cpu"
    )
    for name, fn in (
        (TREE_CAT_TARGET_NAME, lib.JaxboostGrowTreeCat),
        (TREES_CAT_TARGET_NAME, lib.JaxboostGrowTreesCat),
        (VECTOR_SPLITS_TARGET_NAME, lib.JaxboostVectorSplits),
        (CHANNELS_TARGET_NAME, lib.JaxboostHistogramChannels),
    ):
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(fn), platform="cpu")
    lib.JaxboostApplyBins.restype = None
    lib.JaxboostApplyBins.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_uint8,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
    ]
    lib.JaxboostPredict.restype = None
    lib.JaxboostPredict.argtypes = (
        [ctypes.c_void_p, ctypes.c_int64]
        + [ctypes.c_void_p] * 6
        + [ctypes.c_int64] * 3
        + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    )
    lib.JaxboostPredictCSR.restype = None
    # JaxboostPredict's arguments, X given as its CSR arrays (indptr, indices, data)
    lib.JaxboostPredictCSR.argtypes = [ctypes.c_void_p] * 3 + lib.JaxboostPredict.argtypes[1:]
    lib.JaxboostShapPatterns.restype = None
    lib.JaxboostShapPatterns.argtypes = (
        [ctypes.c_void_p, ctypes.c_int64]
        + [ctypes.c_void_p] * 6
        + [ctypes.c_int64] * 2
        + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    )
    lib.JaxboostShapInteractionPatterns.restype = None
    lib.JaxboostShapInteractionPatterns.argtypes = lib.JaxboostShapPatterns.argtypes
    lib.JaxboostReleaseScratch.restype = ctypes.c_int64
    lib.JaxboostReleaseScratch.argtypes = []
    _state["lib"] = lib  # keep the library loaded for the life of the process
    _state["path"] = path


def release_scratch() -> int:
    """Hand the kernel's idle scratch blocks back to the operating system; returns
    their bytes (0 when the library is not loaded).

    The kernels keep their per-call scratch (each row's node, the rows sorted by node,
    the level histograms) in a pool between calls, taken straight from ``mmap``, so a
    fit's thousands of blocks never enter malloc's per-thread heaps; the training calls
    hand them back when they end (``jaxboost.engine.compile.frees_memory``).

    >>> release_scratch() >= 0
    True
    """
    lib = _state.get("lib")
    return 0 if lib is None else int(lib.JaxboostReleaseScratch())


def available() -> bool:
    """Whether the native kernel can be used (never raises).

    The first call loads the library built at install, else builds one in the cache (see
    the module's docstring); when both fail it warns once (:class:`NativeKernelWarning`,
    not when ``JAXBOOST_NATIVE=0``) and returns ``False``.
    """
    if _state["done"]:
        return _state["ok"]
    warn = None
    with _lock:
        if not _state["done"]:
            try:
                _load_and_register()
                _state["ok"] = True
            except Exception as e:  # noqa: BLE001 - any failure means "use the fallback"
                _state["ok"] = False
                _state["reason"] = (
                    str(e) if isinstance(e, RuntimeError) else (f"{type(e).__name__}: {e}")
                )
                if not isinstance(e, _Disabled):
                    warn = _state["reason"]
            _state["done"] = True
    if warn is not None:
        warnings.warn(
            f"jaxboost's native histogram kernel is unavailable ({warn}); "
            "histograms use pure JAX, which is slower on CPU. "
            "JAXBOOST_NATIVE=0 turns the kernel off without this warning.",
            NativeKernelWarning,
            stacklevel=2,
        )
    return _state["ok"]


def apply_bins(X, cuts_nan, missing_bin: int, out, *, row_major: bool, n_threads: int):
    """Bin ``X`` into ``out`` with the native kernel (see ``jaxboost.engine.binning``).

    Args:
      X: ``(N, F)`` C-contiguous float32.
      cuts_nan: ``(F, 256)`` C-contiguous float32, cuts ascending then NaN.
      missing_bin: bin of NaN values.
      out: uint8 ``(>= N, F)`` (``row_major``) or ``(F, >= N)``, C-contiguous.
      n_threads: threads (row blocks; the call releases the GIL).
    """
    lib = _state["lib"]
    N, F = X.shape
    os_row, os_feat = (F, 1) if row_major else (1, out.shape[1])
    args = (X.ctypes.data, F, cuts_nan.ctypes.data, missing_bin, out.ctypes.data, os_row, os_feat)
    if n_threads <= 1 or N < 2 * n_threads:
        lib.JaxboostApplyBins(*args, 0, N)
        return
    _on_row_ranges(lambda b, e: lib.JaxboostApplyBins(*args, b, e), N, n_threads)


def _on_row_ranges(fn, N: int, n_threads: int, align: int = 1) -> None:
    """``fn(begin, end)`` over ``n_threads`` contiguous ranges of rows ``0 .. N - 1``
    (each a multiple of ``align`` rows but the last), one thread each: the native
    calls release the GIL."""
    step = -(-N // n_threads)
    step = -(-step // align) * align
    with ThreadPoolExecutor(n_threads) as ex:
        list(ex.map(lambda b: fn(b, min(N, b + step)), range(0, N, step)))


_PREDICT_NODE = np.dtype([("feature", np.int32), ("threshold", np.float32)])
# Below this many (rows * trees) prediction runs on one thread.
_MIN_PREDICT_WORK_FOR_THREADS = 1 << 16


class PackedTrees:
    """An ensemble in the prediction kernel's layout (:func:`pack_trees`), made once
    and kept by a model: packing a digits softmax (1,000 trees) took 0.18 ms, which was
    most of a one-row prediction. Any first ``n`` of its trees predict what those trees
    of the ensemble predict (``predict(..., n_trees=n)``), so the slices of a model
    share it.

    Attributes:
      nodes: ``(T, M)`` ``PredictNode`` records (feature, threshold); flags: ``(T, M)``
        uint8 (1: missing values go left, 4: a categorical split).
      value: ``(T, M)`` (one output per tree, ``out``) or ``(T, M, K)`` float32.
      cat: ``(T, M, 8)`` uint32 category bits, or ``None`` (no categorical split).
      out: ``(T,)`` int32 output of each class tree held one output per tree, or ``None``.
      depth: ``(T,)`` int32 levels of each tree that hold a reachable split.
      T, M, K: trees, nodes per tree, outputs; max_feature: the largest feature a
        reachable split reads (-1 when none).
    """

    __slots__ = ("nodes", "flags", "value", "cat", "out", "depth", "T", "M", "K", "max_feature")

    def __init__(self, **fields):
        for k, v in fields.items():
            setattr(self, k, v)


def pack_trees(ensemble, max_depth: int, n_outputs: int) -> PackedTrees:
    """``ensemble`` (host NumPy fields, ``T`` trees of ``M`` heap nodes) in the
    prediction kernel's layout, checked: :class:`PackedTrees`.

    Each tree's depth is the number of levels with a reachable split (a row of a tree
    of depth 2 takes two steps in a model of ``max_depth`` 6). Class trees held one
    output per tree (``(T, M)`` values, ``n_outputs > 1``) stay so unless a value is not
    finite; then the ``(T, M, K)`` layout is packed (``v * one_hot``: the zeros beside
    an infinite value are NaN, which the kernel's one add per tree would not make).

    Example:
      >>> import numpy as np
      >>> from jaxboost.engine.tree import Ensemble
      >>> stump = Ensemble(feature=np.int32([[0, 0, 0]]), tbin=np.int32([[1, 0, 0]]),
      ...     threshold=np.float32([[0.5, 0, 0]]), default_left=np.array([[True, 0, 0]], bool),
      ...     is_leaf=np.array([[False, True, True]]), value=np.float32([[0, -1, 2]]),
      ...     gain=np.zeros((1, 3), np.float32), cover=np.zeros((1, 3), np.float32))
      >>> packed = pack_trees(stump, 1, 1)
      >>> packed.depth.tolist(), packed.max_feature
      ([1], 0)
    """
    T, M = ensemble.feature.shape
    K = int(n_outputs)
    value = np.asarray(ensemble.value, np.float32)
    out = None
    if K > 1 and value.shape == (T, M):  # class trees, one output per tree
        if np.isfinite(value).all():
            out = (np.arange(T) % K).astype(np.int32)  # tree t's values go to output t % K
        else:  # the (T, M, K) layout's sums: v on its output, v * 0 on the others
            with np.errstate(invalid="ignore"):  # inf * 0: NaN, as that layout holds
                value = value[..., None] * np.eye(K, dtype=np.float32)[np.arange(T) % K][:, None]
    if value.shape[:2] != (T, M) or (out is None and int(np.prod(value.shape[2:])) != K):
        raise ValueError(f"leaf values of shape {ensemble.value.shape} for {K} outputs")
    # The kernel walks heap indices below 2**(max_depth+1) - 1 without bounds checks:
    # refuse trees that would read outside their arrays.
    max_depth = int(max_depth)
    if M < 2 ** (max_depth + 1) - 1:
        raise ValueError(f"trees of {M} nodes cannot hold depth {max_depth}")
    leaf = np.asarray(ensemble.is_leaf, bool)
    feat = np.array(ensemble.feature, np.int32)
    threshold = np.array(ensemble.threshold, np.float32)
    flags = np.asarray(ensemble.default_left, np.uint8)
    cat = ensemble.cat_bits
    if cat is not None and np.shape(cat) != (T, M, 8):
        raise ValueError(f"cat_bits of shape {np.shape(cat)}, expected {(T, M, 8)}")
    if cat is not None:  # categorical splits: split nodes whose threshold is NaN
        flags |= (np.isnan(threshold) & ~leaf).astype(np.uint8) << 2
        cat = np.ascontiguousarray(cat, np.uint32)
    value = np.array(value, np.float32, order="C")  # a copy: completed below
    # Each tree completed to its depth: a leaf above the tree's last level becomes a
    # split on feature 0 whose descendants on that level all hold the leaf's value, so
    # every row takes the tree's depth in steps with no test for leaves (a branch that
    # was mispredicted at every early leaf) and ends on the same value.
    depth = np.zeros(T, np.int32)
    reach = np.ones((T, 1), bool)  # the reachable nodes of one level, in heap order
    max_feature = -1
    for level in range(max_depth):
        lo, hi = 2**level - 1, 2 ** (level + 1) - 1
        split = reach & ~leaf[:, lo:hi]  # reachable splits
        if not split.any():
            break
        depth += split.any(axis=1)  # a split on every level above a reachable one
        used = feat[:, lo:hi][split]
        if int(used.min()) < 0:
            raise ValueError("a split reads a negative feature index")
        max_feature = max(max_feature, int(used.max()))
        rest = ~split  # leaves and what lies below them: the absorbing nodes
        feat[:, lo:hi][rest] = 0
        threshold[:, lo:hi][rest] = 0.0
        flags[:, lo:hi][rest] = 0
        down = np.repeat(rest, 2, axis=1)  # their children, the next level in order
        child = value[:, hi : 2 * hi + 1]
        child[down] = np.repeat(value[:, lo:hi], 2, axis=1)[down]
        reach = np.repeat(split, 2, axis=1)  # children 2i+1, 2i+2
    nodes = np.zeros((T, M), _PREDICT_NODE)
    nodes["feature"] = feat
    nodes["threshold"] = threshold
    return PackedTrees(
        nodes=nodes,
        flags=np.ascontiguousarray(flags),
        value=value,
        cat=cat,
        out=out,
        depth=depth,
        T=T,
        M=M,
        K=K,
        max_feature=max_feature,
    )


def predict(X, ensemble, margin, max_depth: int, *, n_threads: int | None = None, n_trees=None):
    """Add the trees of ``ensemble`` to ``margin`` for the rows of ``X``, in place (the
    native twin of :func:`jaxboost.engine.tree.predict_margin`, equal to it bit for bit).

    Args:
      X: ``(N, F)`` float32, C-contiguous; NaN = missing.
      ensemble: a host ``Ensemble`` (NumPy fields) of ``T`` trees of ``M`` heap nodes,
        or the :class:`PackedTrees` of one (:func:`pack_trees`, made once per model).
        Its values ``(T, M[, K])``; ``(T, M)`` with ``K > 1`` outputs are class trees
        held one output per tree (tree ``t``'s values are output ``t % K``'s;
        ``Ensemble``), which add what the ``(T, M, K)`` layout would, bit for bit.
      margin: ``(N,)`` or ``(N, K)`` float32, C-contiguous: the margins before the trees
        (the base margin or offsets); on return, plus every tree's leaf value, added in
        float32 tree by tree.
      max_depth: the trees' depth (a row walks at most this many steps).
      n_threads: row blocks run on this many threads (the call releases the GIL);
        ``None``: :func:`default_threads`, and 1 below 2**16 rows x trees.
      n_trees: only the first ``n_trees`` trees (``None``: all).

    Returns:
      ``margin``.

    Example:
      >>> import numpy as np
      >>> from jaxboost.engine.tree import Ensemble
      >>> stump = Ensemble(feature=np.int32([[0, 0, 0]]), tbin=np.int32([[1, 0, 0]]),
      ...     threshold=np.float32([[0.5, 0, 0]]), default_left=np.array([[True, 0, 0]], bool),
      ...     is_leaf=np.array([[False, True, True]]), value=np.float32([[0, -1, 2]]),
      ...     gain=np.zeros((1, 3), np.float32), cover=np.zeros((1, 3), np.float32))
      >>> if available():
      ...     m = predict(np.float32([[0.0], [1.0], [np.nan]]), stump, np.zeros(3, np.float32), 1)
      ...     assert m.tolist() == [-1.0, 2.0, -1.0]
    """
    packed, T = _packed_for(X, ensemble, margin, max_depth, n_trees)
    _run_predict(X, packed, margin, 0, T, n_threads)
    return margin


def predict_csr(X, ensemble, margin, max_depth: int, *, n_threads: int | None = None, n_trees=None):
    """:func:`predict` for a ``scipy.sparse`` CSR matrix, absent entries missing (NaN):
    the same margins bit for bit as :func:`predict` on its dense twin, at the cost of the
    stored entries and the trees' walks, not of ``N x F`` (each row's entries go into
    one NaN row of ``F`` floats, then back to NaN).

    Args:
      X: ``(N, F)`` canonical CSR matrix of float32 (sorted indices, no duplicates;
        ``jaxboost.inputs.sparse.as_sparse_features(..., layout="csr")``).
      ensemble, margin, max_depth, n_threads, n_trees: as for :func:`predict`.

    Returns:
      ``margin``.

    Example:
      >>> import numpy as np, scipy.sparse as sp
      >>> from jaxboost.engine.tree import Ensemble
      >>> stump = Ensemble(feature=np.int32([[0, 0, 0]]), tbin=np.int32([[1, 0, 0]]),
      ...     threshold=np.float32([[0.5, 0, 0]]), default_left=np.array([[True, 0, 0]], bool),
      ...     is_leaf=np.array([[False, True, True]]), value=np.float32([[0, -1, 2]]),
      ...     gain=np.zeros((1, 3), np.float32), cover=np.zeros((1, 3), np.float32))
      >>> X = sp.csr_matrix(np.float32([[0.0, 1.0], [1.0, 0.0]]))  # row 0's x0: absent
      >>> if available():
      ...     m = predict_csr(X, stump, np.zeros(2, np.float32), 1)
      ...     assert m.tolist() == [-1.0, 2.0]  # absent goes the default way (left)
    """
    from ..inputs.sparse import check_structure

    if getattr(X, "format", None) != "csr":
        raise ValueError(f"X must be a CSR matrix, got {type(X).__name__}")
    check_structure(X)  # DataError (a ValueError) for index arrays outside the shape
    N, F = X.shape
    indptr = np.ascontiguousarray(X.indptr, np.int64)
    indices = np.ascontiguousarray(X.indices, np.int32)
    data = np.ascontiguousarray(X.data, np.float32)
    packed, T = _packed_for(X, ensemble, margin, max_depth, n_trees, dense=False)
    if T == 0 or N == 0:
        return margin
    args = (indptr.ctypes.data, indices.ctypes.data, data.ctypes.data, F) + _packed_args(
        packed, margin, 0, T
    )
    lib = _state["lib"]
    _on_predict_threads(lambda b, e: lib.JaxboostPredictCSR(*args, b, e), N, T, n_threads)
    return margin


def predict_stages(
    X,
    ensemble,
    margin,
    max_depth: int,
    *,
    n_threads: int | None = None,
    n_trees=None,
    every: int = 1,
):
    """The margins after every tree: ``(T,) + margin.shape`` float32, entry ``t`` =
    ``margin`` plus trees ``0..t`` (the native twin of
    :func:`jaxboost.engine.tree.staged_margins`, equal to it bit for bit: the same
    running float32 sum). ``margin`` (the margins before the trees) ends as the last
    entry. With ``every=k`` (a divisor of ``T``), only the margins after every ``k``-th
    tree, ``(T // k,) + margin.shape``: a model's rounds of ``k`` trees each (softmax's
    class trees), not each tree's stage. Other arguments as for :func:`predict`.

    Example:
      >>> import numpy as np
      >>> from jaxboost.engine.tree import Ensemble
      >>> stump = Ensemble(feature=np.int32([[0, 0, 0]]), tbin=np.int32([[1, 0, 0]]),
      ...     threshold=np.float32([[0.5, 0, 0]]), default_left=np.array([[True, 0, 0]], bool),
      ...     is_leaf=np.array([[False, True, True]]), value=np.float32([[0, -1, 2]]),
      ...     gain=np.zeros((1, 3), np.float32), cover=np.zeros((1, 3), np.float32))
      >>> two = Ensemble.concat([stump, stump])
      >>> if available():
      ...     s = predict_stages(np.float32([[0.0], [1.0]]), two, np.zeros(2, np.float32), 1)
      ...     assert s.tolist() == [[-1.0, 2.0], [-2.0, 4.0]]
    """
    packed, T = _packed_for(X, ensemble, margin, max_depth, n_trees)
    every = int(every)
    if every < 1 or T % every:
        raise ValueError(f"every={every} must divide the {T} trees")
    N, S = X.shape[0], T // every
    out = np.empty((S,) + margin.shape, np.float32)
    if T == 0 or N == 0:
        return out
    lib = _state["lib"]
    per_stage = [_predict_args(X, packed, margin, s * every, (s + 1) * every) for s in range(S)]

    def rows(b, e):  # every stage's trees over rows b..e-1, one stage after another
        for s in range(S):
            lib.JaxboostPredict(*per_stage[s], b, e)
            out[s, b:e] = margin[b:e]

    _on_predict_threads(rows, N, T, n_threads)
    return out


def _packed_for(X, ensemble, margin, max_depth, n_trees, *, dense=True):
    """The checks of one call (``dense``: of ``X``'s array too; a CSR matrix's are the
    caller's), and ``(packed, T)``: ``ensemble`` packed (or as it is, when packed) and
    the number of its trees to add (``n_trees``, ``None``: all)."""
    if not available():
        raise RuntimeError(f"native kernel unavailable: {unavailable_reason()}")
    N, F = X.shape
    if dense and (X.dtype != np.float32 or not X.flags.c_contiguous):
        raise ValueError("X must be C-contiguous float32")
    if margin.dtype != np.float32 or not margin.flags.c_contiguous or margin.shape[0] != N:
        raise ValueError(f"margin must be C-contiguous float32 with {N} rows")
    K = 1 if margin.ndim == 1 else margin.shape[1]
    packed = ensemble if isinstance(ensemble, PackedTrees) else pack_trees(ensemble, max_depth, K)
    if packed.K != K:
        raise ValueError(f"margins for {K} outputs, trees packed for {packed.K}")
    # The kernel reads X[row, feature] without bounds checks.
    if F >= 1 << 30 or packed.max_feature >= F:
        raise ValueError(f"a split reads a feature outside the {F} columns of X")
    return packed, (packed.T if n_trees is None else min(int(n_trees), packed.T))


def _run_predict(X, packed, margin, t0, t1, n_threads):
    """Trees ``t0 .. t1 - 1`` of ``packed`` added to ``margin`` (row blocks on threads)."""
    N, T = X.shape[0], t1 - t0
    if T <= 0 or N == 0:
        return
    args = _predict_args(X, packed, margin, t0, t1)
    lib = _state["lib"]
    _on_predict_threads(lambda b, e: lib.JaxboostPredict(*args, b, e), N, T, n_threads)


def _predict_args(X, packed, margin, t0, t1):
    """``JaxboostPredict``'s arguments but the row range, for trees ``t0 .. t1 - 1``."""
    return (X.ctypes.data, X.shape[1]) + _packed_args(packed, margin, t0, t1)


def _packed_args(packed, margin, t0, t1):
    """The trees' and margins' arguments of the prediction kernels (all but ``X``, its
    width and the row range), for trees ``t0 .. t1 - 1``."""
    M, K, cat, out = packed.M, packed.K, packed.cat, packed.out
    return (
        packed.nodes.ctypes.data + t0 * M * _PREDICT_NODE.itemsize,
        packed.flags.ctypes.data + t0 * M,
        packed.value.ctypes.data + t0 * M * (K if out is None else 1) * 4,
        None if cat is None else cat.ctypes.data + t0 * M * 8 * 4,
        None if out is None else out.ctypes.data + t0 * 4,
        packed.depth.ctypes.data + t0 * 4,
        t1 - t0,
        M,
        K,
        margin.ctypes.data,
    )


def shap_patterns(X, feature, lo, hi, flags, cats, table, out, *, n_threads=None):
    """Add every path's TreeSHAP contributions to each row's features, looked up by the
    row's pattern of one fractions (``jaxboost.model.explain``'s pattern tables).

    Args:
      X: ``(N, F)`` C-contiguous float32 rows (NaN = missing).
      feature: ``(P, L)`` int32 features of the paths' elements (all ``< F``).
      lo, hi: ``(P, L)`` float64 bounds; flags: ``(P, L)`` uint8 (1: has ``lo``, 2: has
        ``hi``, 4: a missing value follows, 8: padding, 16: categorical).
      cats: ``(P, L, 8)`` uint32 category sets, or ``None`` (no categorical element).
      table: ``(P, 2 ** L, L)`` float64 contributions per pattern (bit ``e`` of a
        pattern: the row follows element ``e``); or ``(P, 2 ** L, L, L)``, the pairs'
        (element ``e``'s feature, element ``j``'s) for interaction values.
      out: ``(N, F)`` C-contiguous float64 (``(N, F, F)`` for pairs), added to in place.
      n_threads: rows on this many threads (``None``: :func:`default_threads`; one
        below 2**16 rows x paths).

    Returns:
      ``out``.

    Example (one path of one element, ``x0 < 0.5``; patterns 0 and 1 add 10 and 20):
      >>> X = np.float32([[0.0], [1.0]])
      >>> one = dict(lo=np.float64([[-np.inf]]), hi=np.float64([[0.5]]))
      >>> if available():
      ...     out = shap_patterns(X, np.int32([[0]]), one["lo"], one["hi"], np.uint8([[2]]),
      ...                         None, np.float64([[[10.0], [20.0]]]), np.zeros((2, 1)))
      ...     assert out.tolist() == [[20.0], [10.0]]
    """
    N, F = X.shape
    P, L = feature.shape
    pairs = table.ndim == 4
    ok = (
        X.dtype == np.float32
        and out.dtype == np.float64
        and out.shape == ((N, F, F) if pairs else (N, F))
        and table.shape == (P, 1 << L, L) + ((L,) if pairs else ())
        and table.dtype == np.float64
        and feature.dtype == np.int32
        and flags.dtype == np.uint8
        and all(a.shape == (P, L) for a in (lo, hi, flags))
        and all(a.dtype == np.float64 for a in (lo, hi))
        and (cats is None or (cats.shape == (P, L, 8) and cats.dtype == np.uint32))
        and all(
            a.flags.c_contiguous
            for a in (X, feature, lo, hi, flags, table, out) + (cats,) * (cats is not None)
        )
    )
    if not ok or (P and L and (feature.min() < 0 or feature.max() >= F)):
        raise ValueError("shap_patterns: arrays of unexpected shapes, types or features")
    if N == 0 or P == 0 or L == 0:
        return out
    lib = _state["lib"]
    fn = lib.JaxboostShapInteractionPatterns if pairs else lib.JaxboostShapPatterns
    args = (
        X.ctypes.data,
        F,
        feature.ctypes.data,
        lo.ctypes.data,
        hi.ctypes.data,
        flags.ctypes.data,
        None if cats is None else cats.ctypes.data,
        table.ctypes.data,
        P,
        L,
        out.ctypes.data,
    )
    _on_predict_threads(lambda b, e: fn(*args, b, e), N, P * (L if pairs else 1), n_threads)
    return out


def _on_predict_threads(fn, N, T, n_threads):
    """``fn(begin, end)`` over the rows: on ``n_threads`` threads, each whole blocks of
    64 rows (``None``: :func:`default_threads`, one below 2**16 rows x trees ``T``), or
    at once in this thread when the rows are few."""
    if n_threads is None:
        n_threads = default_threads() if N * T >= _MIN_PREDICT_WORK_FOR_THREADS else 1
    if n_threads <= 1 or N < 128 * n_threads:
        fn(0, N)
    else:
        _on_row_ranges(fn, N, n_threads, align=64)


def unavailable_reason() -> str | None:
    """Why :func:`available` is ``False`` (``None`` when it is ``True``)."""
    available()
    return None if _state["ok"] else _state["reason"]


def library_path() -> Path | None:
    """Path of the loaded shared library, or ``None``."""
    return _state["path"] if available() else None


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


_THREAD_CAP = contextvars.ContextVar("jaxboost_thread_cap", default=None)


@contextlib.contextmanager
def thread_limit(n):
    """Within the block, the native kernel's and the binning's threads are at most
    ``n`` (None: no limit): ``train(n_jobs=n)`` runs under it.

    >>> with thread_limit(1):
    ...     default_threads()
    1
    """
    token = _THREAD_CAP.set(n)
    try:
        yield
    finally:
        _THREAD_CAP.reset(token)


def default_threads(
    n_rows: int | None = None,
    n_features: int | None = None,
    *,
    cap: int | None = None,
    min_work: int = _MIN_WORK_FOR_THREADS,
) -> int:
    """The thread count :func:`histogram` uses when not given ``n_threads``.

    ``$JAXBOOST_NATIVE_THREADS`` (a positive integer) when set, else the number of cores
    available to this process, at most ``cap`` (and the cap of :func:`thread_limit`);
    1 when ``n_rows * n_features`` (if given) is below ``min_work`` (2**18; the tree
    kernels :func:`grow_tree` and :func:`grow_trees` use ``MIN_TREE_WORK_FOR_THREADS``,
    2**20), whatever the cap.

    >>> default_threads(100, 10, cap=4), default_threads(cap=1)
    (1, 1)

    Raises:
      ValueError: when ``$JAXBOOST_NATIVE_THREADS`` is not a positive integer.
    """
    env = os.environ.get(ENV_THREADS, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if not 1 <= n <= _MAX_THREADS:
            raise ValueError(
                f"{ENV_THREADS} must be an integer in [1, {_MAX_THREADS}], got {env!r}"
            )
    else:
        n = _cores()
    for c in (_THREAD_CAP.get(), cap):
        if c is not None:
            n = min(n, int(c))
    if n_rows is not None and n_features is not None and (n_rows * n_features < min_work):
        return 1
    return min(n, _MAX_THREADS)


def _histogram_sizes(n_nodes, n_bins, limit: int = 256) -> tuple:
    """``(n_nodes, n_bins)`` as ints, checked (``ValueError``; ``n_bins`` at most
    ``limit``), once the kernel is known to be available (``RuntimeError`` otherwise)."""
    if not available():
        raise RuntimeError(f"native histogram unavailable: {unavailable_reason()}")
    n_nodes, n_bins = int(n_nodes), int(n_bins)
    if not 1 <= n_bins <= limit:
        raise ValueError(f"n_bins must be in [1, {limit}], got {n_bins}")
    if n_nodes < 0:
        raise ValueError(f"n_nodes must be >= 0, got {n_nodes}")
    return n_nodes, n_bins


def histogram(
    bins,
    g,
    h,
    node,
    n_nodes: int,
    n_bins: int,
    *,
    n_threads: int | None = None,
    n_active=None,
    _xla_pool: bool = True,
):
    """Histograms of g and h per (feature, node, bin), by the native kernel.

    Same result as :func:`jaxboost.engine.histogram.build_histogram` (float64 sums), but from
    row-major bins and unpacked g, h, computed on several threads (see the module's
    docstring). Usable inside ``jax.jit`` (traced with or without x64) and inside
    ``jax.shard_map`` over rows (then ``lax.psum`` the result; each device's call then
    uses its own ``n_threads``, so pass ``n_threads=1`` there to keep one per core).

    Args:
      bins: ``(N, F)`` uint8 bins, ROW-major (uint16 when ``n_bins > 256``); values
        must be ``< n_bins`` (bin ``n_bins - 1`` = missing is an ordinary bin here).
      g, h: ``(N,)`` float32 (or float64) gradients and hessians.
      node: ``(N,)`` int32 node of each row within the level; rows with a node outside
        ``[0, n_nodes)`` (e.g. ``n_nodes``: finished leaves, padding, the larger sibling
        under the subtraction trick) are skipped at almost no cost.
      n_nodes, n_bins: static; ``1 <= n_bins <= 256`` for uint8 bins, at most
        ``NATIVE_WIDE_BIN_LIMIT`` (4096) for uint16 ones.
      n_threads: static; the number of threads (at most the number of rows). ``None``:
        :func:`default_threads` (cores or ``$JAXBOOST_NATIVE_THREADS``; 1 for small
        inputs). An explicit value is used as is, even for small inputs. The result is
        bit-identical across calls for a given count; across counts it may differ in the
        last bits of float64 (see the module's docstring).
      n_active: optional int32 scalar, may be traced: only nodes ``[0, n_active)``
        are histogrammed (rows of other nodes are skipped) and the slots of nodes
        ``>= n_active`` are zero; the work (scratch histograms, their reduction, the
        choice between the kernel's two threading schemes) is that of ``n_active``
        nodes, so one compiled call serves levels of different sizes. ``None``:
        ``n_nodes``.
      _xla_pool: private (tests, benchmarks); ``False`` runs the threads as std::threads
        instead of on XLA:CPU's intra-op thread pool.

    Returns:
      ``(G, H)``, each ``(F, n_nodes, n_bins)`` float64.

    Raises:
      RuntimeError: when :func:`available` is ``False``.
    """
    wide = getattr(bins, "dtype", None) == WIDE_BIN_DTYPE
    n_nodes, n_bins = _histogram_sizes(n_nodes, n_bins, NATIVE_WIDE_BIN_LIMIT if wide else 256)
    if n_threads is not None:
        n_threads = int(n_threads)
        if not 1 <= n_threads <= _MAX_THREADS:
            raise ValueError(f"n_threads must be in [1, {_MAX_THREADS}], got {n_threads}")
    with jax.enable_x64(True):
        bins = jnp.asarray(bins)
        if bins.ndim != 2:
            raise ValueError(f"bins must be (N, F), got shape {bins.shape}")
        if bins.dtype not in (BIN_DTYPE, WIDE_BIN_DTYPE):
            raise TypeError(f"bins must be uint8 (or uint16), got {bins.dtype}")
        g, h, node = jnp.asarray(g), jnp.asarray(h), jnp.asarray(node)
        N, F = bins.shape
        for name, a in (("g", g), ("h", h), ("node", node)):
            if a.shape != (N,):
                raise ValueError(f"{name} must have shape ({N},), got {a.shape}")
        dt = jnp.result_type(g.dtype, h.dtype)
        dt = jnp.float64 if dt == jnp.float64 else jnp.float32
        g, h = g.astype(dt), h.astype(dt)
        node = node.astype(jnp.int32)
        if n_threads is None:
            n_threads = default_threads(N, F)
        n_active = jnp.asarray(n_nodes if n_active is None else n_active, jnp.int32)
        if n_active.shape != ():
            raise ValueError(f"n_active must be a scalar, got shape {n_active.shape}")
        out = jax.ShapeDtypeStruct((F, n_nodes, n_bins), np.float64)
        G, H = jax.ffi.ffi_call(TARGET_NAME, (out, out), vmap_method="sequential")(
            bins, g, h, node, n_active, n_threads=np.int64(n_threads), use_xla_pool=bool(_xla_pool)
        )
        return G, H


def histogram_channels(
    bins, vals, node, n_nodes: int, n_bins: int, *, n_threads: int | None = None, n_active=None
):
    """Histograms of ``C`` per-row channels at once, by the native kernel: what
    :func:`histogram` gives for two channels, for all ``C`` in one pass over the bins,
    in the layout of :func:`vector_splits`.

    ``S[f, n, b, c]`` is the float64 sum of ``vals[i, c]`` over the rows ``i`` of node
    ``n`` whose feature ``f`` falls in bin ``b``, associated as :func:`histogram`
    associates it for the same ``n_threads`` (its two schemes, chosen by the size of
    the scratch histograms of all ``C`` channels): the same bits on every call, and
    those of :func:`histogram` channel pair by channel pair under the same scheme (with
    one thread, sums in row order). Usable inside ``jax.jit``.

    Args:
      bins: ``(N, F)`` uint8 bins, ROW-major, values ``< n_bins``.
      vals: ``(N, C)`` float32 (or float64) channels, e.g. the gradients and Hessian
        entries of vector leaves.
      node: ``(N,)`` int32 node of each row; rows outside ``[0, n_active)`` are skipped.
      n_nodes, n_bins: static; ``1 <= n_bins <= 256``.
      n_threads: static thread count; ``None``: :func:`default_threads` (as
        :func:`histogram`'s).
      n_active: optional int32 scalar, may be traced (as in :func:`histogram`).

    Returns:
      ``(F, n_nodes, n_bins, C)`` float64.

    >>> import numpy as np
    >>> S = histogram_channels(np.array([[0], [1], [1]], np.uint8),
    ...                        np.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]], np.float32),
    ...                        np.zeros(3, np.int32), 1, 2)
    >>> np.asarray(S)[0, 0].tolist()
    [[1.0, 2.0, 3.0], [11.0, 13.0, 15.0]]

    Raises:
      RuntimeError: when :func:`available` is ``False``.
    """
    n_nodes, n_bins = _histogram_sizes(n_nodes, n_bins)
    with jax.enable_x64(True):
        bins, vals, node = jnp.asarray(bins), jnp.asarray(vals), jnp.asarray(node)
        if bins.ndim != 2 or bins.dtype != BIN_DTYPE:
            raise ValueError(f"bins must be (N, F) uint8, got {bins.shape} {bins.dtype}")
        N, F = bins.shape
        if vals.ndim != 2 or vals.shape[0] != N:
            raise ValueError(f"vals must have shape ({N}, C), got {vals.shape}")
        if node.shape != (N,):
            raise ValueError(f"node must have shape ({N},), got {node.shape}")
        C = vals.shape[1]
        if vals.dtype != jnp.float64:
            vals = vals.astype(jnp.float32)
        if n_threads is None:
            n_threads = default_threads(N, F)
        n_threads = int(n_threads)
        if not 1 <= n_threads <= _MAX_THREADS:
            raise ValueError(f"n_threads must be in [1, {_MAX_THREADS}], got {n_threads}")
        n_active = jnp.asarray(n_nodes if n_active is None else n_active, jnp.int32)
        if n_active.shape != ():
            raise ValueError(f"n_active must be a scalar, got shape {n_active.shape}")
        out = jax.ShapeDtypeStruct((F, n_nodes, n_bins, C), np.float64)
        return jax.ffi.ffi_call(CHANNELS_TARGET_NAME, out, vmap_method="sequential")(
            bins,
            vals,
            node.astype(jnp.int32),
            n_active,
            n_threads=np.int64(n_threads),
            use_xla_pool=True,
        )


def vector_splits(
    S,
    Sp,
    hyper,
    forward_ok,
    mask,
    *,
    K: int,
    diagonal: bool,
    any_forward: bool,
    n_threads=None,
    n_valid=None,
):
    """The best vector-leaf split of each node, by the native kernel: what
    ``jaxboost.engine.split.find_best_vector_splits`` computes in XLA (the same
    candidates, validity rules and first-maximum tie rule), one candidate at a time with
    its ``K x K`` solve in registers (XLA's batched solve was 10-30x slower at
    ``K = 10``). Prefix sums run in bin order, so gains may differ from XLA's in the
    last float64 bits. Usable inside ``jax.jit`` (``vmap`` runs it model by model).
    The (node, feature) pairs run on ``n_threads`` threads (``None``:
    :func:`default_threads`; 1 below 2**16 candidates times ``K`` or ``K**2``), each
    pair's first best kept and then each node's first best over features in order:
    the same result for every thread count.

    Args:
      S: ``(F, n, B, C)`` float64 histograms (``C = K + P`` channels: gradients, then
        Hessian channels, see ``split.unpack_hessian``); bin ``B - 1`` holds missing
        values. Sp: ``(n, C)`` float64 node totals.
      hyper: ``(4,)`` float64 ``(lambda, alpha, min_child_weight, max_delta_step)``.
      forward_ok: ``(F,)`` bool; mask: ``(n, F)`` bool (features each node may use).
      K, diagonal, any_forward: static, as in ``find_best_vector_splits``.
      n_threads: static thread count, or None.
      n_valid: ``(F,)`` int32 or None (``B - 1`` each): feature ``f``'s rows lie in
        bins ``0 .. n_valid[f] - 1`` and the missing bin (``binning.BinEdges.n_cuts +
        1``: the bins of the bucket past a feature's own are empty). The scan stops
        there instead of reading those bins; the result is the same.

    Returns:
      ``(gain, feature, tbin, default_left)``: ``(n,)`` float32, int32, int32, bool.

    Raises:
      RuntimeError: when :func:`available` is ``False``.
    """
    if not available():
        raise RuntimeError(f"native kernel unavailable: {unavailable_reason()}")
    F, n, B, C = S.shape
    P = K if diagonal else K * (K + 1) // 2
    if C != K + P or not 1 <= K <= 64:
        raise ValueError(f"S has {C} channels; K = {K} (1..64) needs {K + P}")
    if n_valid is None:
        n_valid = jnp.full((F,), B - 1, jnp.int32)
    with jax.enable_x64(True):
        out = (
            jax.ShapeDtypeStruct((n,), np.float32),
            jax.ShapeDtypeStruct((n,), np.int32),
            jax.ShapeDtypeStruct((n,), np.int32),
            jax.ShapeDtypeStruct((n,), np.bool_),
        )
        return jax.ffi.ffi_call(VECTOR_SPLITS_TARGET_NAME, out, vmap_method="sequential")(
            jnp.asarray(S, jnp.float64),
            jnp.asarray(Sp, jnp.float64),
            jnp.asarray(forward_ok, bool),
            jnp.asarray(mask, bool),
            jnp.asarray(hyper, jnp.float64),
            jnp.asarray(n_valid, jnp.int32),
            K=np.int64(K),
            diagonal=bool(diagonal),
            any_forward=bool(any_forward),
            n_threads=np.int64(
                default_threads(n * F * B, K if diagonal else K * K, min_work=1 << 16)
                if n_threads is None
                else n_threads
            ),
        )


ENV_TREE = "JAXBOOST_NATIVE_TREE"


def tree_enabled() -> bool:
    """Whether :func:`grow_tree` takes over whole trees where it can (the default);
    ``JAXBOOST_NATIVE_TREE=0`` keeps the XLA level loop around the native histogram
    (read when a training program is traced)."""
    return os.environ.get(ENV_TREE, "").strip().lower() not in ("0", "false", "no", "off")


def tree_scratch_bytes(
    n_rows, n_features: int, max_depth: int, n_bins: int, max_leaves: int = 0
) -> int:
    """Bytes of level histograms the whole-tree kernel (:func:`grow_tree`) sets aside for
    one tree: a slot for each live node of the widest level that splits, ``min(2 **
    (max_depth - 1), n_rows)`` of them (``n_rows=None``: not bounded by the rows), each
    ``n_features`` rows of ``FS`` (G, H) float64 pairs, ``FS`` the kernel's padded width
    for ``n_bins`` (20, 36, 68, 132 or 260; 516 to 4,100 for uint16 bins). Leaf-wise
    trees (``max_leaves > 0``) hold at most ``min(2 * max_leaves, 2 ** (max_depth - 1))
    + 1``: grown best first (one
    thread), a slot for each leaf that may still split; level by level (several
    threads), at most ``max_leaves - 1`` splits a level. Pages are touched as nodes use
    them, so this bounds what a tree holds.

    >>> tree_scratch_bytes(50_000, 20, 14, 256) >> 20  # MiB
    650
    >>> tree_scratch_bytes(50_000, 20, 14, 256, max_leaves=31) >> 20
    5
    >>> tree_scratch_bytes(None, 2000, 6, 256) >> 20
    253
    """
    fs = next(w for w in (20, 36, 68, 132, 260, 516, 1028, 2052, 4100) if n_bins <= w - 4)
    ns = int(n_features) * fs
    if (ns // 4) % 2 == 0:  # an odd number of 64-byte lines per slot, as the kernel
        ns += 4
    slots = 1 << max(int(max_depth) - 1, 0)
    if n_rows is not None:
        slots = min(slots, max(int(n_rows), 1))
    if max_leaves > 0:  # hist.cc: GrowLeafWise, or GrowTree with PruneLeafWise
        slots = min(2 * int(max_leaves), 1 << max(int(max_depth) - 1, 0)) + 1
    return slots * ns * 16


def grow_tree(
    bins,
    g,
    h,
    hyper,
    root,
    forward_ok,
    colsample,
    max_depth: int,
    n_bins: int,
    *,
    n_threads: int | None = None,
    _xla_pool: bool = True,
    max_leaves: int = 0,
    depth=None,
    cats=None,
    sets=None,
    mono=None,
    counts=None,
    min_leaf=None,
):
    """One tree, grown level by level in one native call.

    The level loop of :func:`jaxboost.engine.grow.grow_tree` on one device (interaction
    and monotone constraints and a row minimum at most: ``sets``, ``mono``, ``counts``),
    as one XLA custom call: each level histograms (the smaller child of each pair; its
    sibling by subtraction), scans and routes only the nodes that exist. Split
    arithmetic is that of :mod:`jaxboost.engine.split`:
    float64 sums (prefix sums in bin order), float32 scores and gains, candidates in
    XGBoost's order, the first strictly greater gain wins, a split needs gain > 1e-6.
    Usable inside ``jax.jit``; call it on one device.

    Args:
      bins: ``(N, F)`` uint8 ROW-major bins, bin ``n_bins - 1`` = missing (uint16 for
        ``n_bins`` up to 4,096).
      g, h: ``(N,)`` float32 (or float64) gradients and Hessians (0 for rows left out).
      hyper: ``(6,)`` float32, ``split.TreeHyper``'s fields in order.
      root: ``(2,)`` float64, the root's sums of g and h.
      forward_ok: ``(F,)`` bool, features whose ascending (missing right) pass is tried.
      colsample: ``None``, or column sampling by node as
        ``jaxboost.engine.sampling.FeatureSampler.native_args`` gives it:
        ``(node_key (2,) uint32, level_sets (max_depth, F) bool, node_ratio (1,)
        float32)``; the kernel draws each live node's features itself, the same draw
        as ``FeatureSampler.levels`` (``uniform(node_key, (max_depth, W, F))`` at node
        ``k`` of level ``d``, ``W = 2**(max_depth - 1)``; of the level's ``n``
        features the ``max(1, floor(ratio n))`` with the smallest numbers).
      max_depth: static, ``>= 1``; n_bins: static, ``2 <= n_bins <= 256``.
      n_threads: as for :func:`histogram` (``None``: :func:`default_threads`).
      max_leaves: static; > 0 grows leaf-wise (XGBoost's ``grow_policy="lossguide"``),
        best first: the leaf of largest gain splits first, ties to the node allocated
        first, until the tree has ``max_leaves`` leaves; only the splits' children are
        histogrammed (on several threads level by level, each level keeping the splits
        that walk can take). The tree is that walk over the level-wise tree's splits.
      depth: ``None``, or a traced integer ``1 <= depth <= max_depth``: grow only that
        many levels in arrays sized for ``max_depth`` (one compiled program for a
        bucket of depths). The tree, its draws and its rows' leaves are those of
        ``max_depth=depth``; the nodes below stay leaves.
      cats: ``None`` (every feature numeric), or a ``jaxboost.engine.categorical.CatInfo``
        of the ``F`` features: categorical features split by sets of categories, the
        candidates and arithmetic of ``categorical.find_best_splits`` (one-vs-rest or
        a partition of the categories sorted by weight).
      sets: ``None``, or interaction constraints as ``(C, F)`` bool (feature ``f`` in
        set ``j``), ``jaxboost.engine.constraints``' rule: below the root a node splits
        on a feature on its path or in a set that holds its whole path (with column
        sampling, on the features allowed by both).
      mono: ``None``, or monotone constraints as ``(F,)`` int32 signs (numeric features
        only): ``jaxboost.engine.constraints``' rules (weights bounded by each node's
        bounds, XGBoost's float32 scores given them, splits out of order refused, the
        midpoint bounds below each split). The leaf values and bounds are then
        computed from the tree (``grow._native_tree_grow``).
      counts, min_leaf: ``None``, or a row minimum per child (``min_samples_leaf``):
        ``counts`` ``(N,)`` float32, 1 for the rows the tree is grown on and 0 for the
        others, and ``min_leaf`` a (traced) integer ``k``; a
        candidate split is then valid only when each child holds ``>= k`` counted rows
        (``jaxboost.engine.constraints.rows_ok``).

    Returns:
      ``(structure, Gn, Hn, leaf)``: ``structure`` a dict of ``(M,)`` heap arrays
      (``M = 2**(max_depth + 1) - 1``) ``feature``, ``tbin`` int32, ``default_left``,
      ``is_split`` bool, ``gain`` float32 (0 where no split), after gamma
      post-pruning (``hyper[3]``, as ``jaxboost.engine.grow.prune_gamma``); with
      ``cats`` also ``is_cat`` ``(M,)`` bool and ``bits`` ``(M, 8)`` uint32, each
      categorical split's bins going left (``categorical.pack_bits``); ``Gn``,
      ``Hn`` ``(M,)`` float64 node sums; ``leaf`` ``(N,)`` int32, every row's leaf.

    Example:
      >>> import numpy as np
      >>> if available():  # seed 001: x < 3.5 splits the root
      ...     s, Gn, Hn, leaf = grow_tree(np.array([[0], [1], [2], [3]], np.uint8),
      ...         np.float32([0.5, -0.5, 0.5, -0.5]), np.full(4, 0.25, np.float32),
      ...         np.float32([1, 0, 0, 0, 0, 0]), np.array([0.0, 1.0]), np.zeros(1, bool),
      ...         None, 1, 5)
      ...     assert int(s["tbin"][0]) == 3 and leaf.tolist() == [1, 1, 1, 2]
    """
    if depth is not None:  # hyper[6]: the levels to grow
        with jax.enable_x64(True):
            depth = jnp.asarray(depth, jnp.float32).reshape(1)
            hyper = jnp.concatenate([jnp.asarray(hyper, jnp.float32), depth])
    return _grow_call(
        TREE_TARGET_NAME,
        (),
        bins,
        g,
        h,
        hyper,
        root,
        forward_ok,
        colsample,
        max_depth,
        n_bins,
        n_threads,
        _xla_pool,
        max_leaves,
        cats,
        sets,
        mono,
        counts,
        min_leaf,
    )


def grow_trees(
    bins,
    g,
    h,
    hyper,
    root,
    forward_ok,
    colsample,
    max_depth: int,
    n_bins: int,
    *,
    n_threads: int | None = None,
    max_leaves: int = 0,
    cats=None,
):
    """``T`` trees on the same bins, grown in parallel (one tree per thread, each grown
    by one thread): :func:`grow_tree` with ``n_threads=1`` for each of them, bit for
    bit, in one native call. For data too small for threads within a tree (below
    ``MIN_TREE_WORK_FOR_THREADS`` rows x features), a round's class trees then use
    every core instead of one.

    Args:
      bins: ``(N, F)`` uint8 (or uint16, as :func:`grow_tree`) row-major bins, shared.
      g, h: ``(T, N)`` float32 (or float64) gradients and Hessians of each tree.
      hyper: ``(T, 6)`` float32 (or ``(T, 7)``: each tree's depth last); root ``(T, 2)``
        float64; forward_ok ``(F,)`` bool, shared.
      colsample: ``None``, or each tree's ``(node_key (T, 2), level_sets (T, max_depth,
        F), node_ratio (T, 1))`` (:func:`grow_tree`'s, stacked).
      max_depth, n_bins, max_leaves, cats: as for :func:`grow_tree` (``cats`` shared).
      n_threads: workers (``None``: :func:`default_threads` of every core).

    Returns:
      ``(structure, Gn, Hn, leaf)`` of :func:`grow_tree` with a leading ``T``.

    Example:
      >>> import numpy as np
      >>> if available():  # seed 001 twice, the second with g negated
      ...     g = np.float32([[0.5, -0.5, 0.5, -0.5], [-0.5, 0.5, -0.5, 0.5]])
      ...     s, Gn, Hn, leaf = grow_trees(np.array([[0], [1], [2], [3]], np.uint8), g,
      ...         np.full((2, 4), 0.25, np.float32), np.tile(np.float32([1, 0, 0, 0, 0, 0]),
      ...         (2, 1)), np.array([[0.0, 1.0], [0.0, 1.0]]), np.zeros(1, bool), None, 1, 5)
      ...     assert s["tbin"][:, 0].tolist() == [3, 3] and leaf[0].tolist() == [1, 1, 1, 2]
    """
    T = np.shape(g)[0]
    return _grow_call(
        TREES_TARGET_NAME,
        (T,),
        bins,
        g,
        h,
        hyper,
        root,
        forward_ok,
        colsample,
        max_depth,
        n_bins,
        default_threads() if n_threads is None else n_threads,
        True,
        max_leaves,
        cats,
    )


def _grow_call(
    target,
    lead,
    bins,
    g,
    h,
    hyper,
    root,
    forward_ok,
    colsample,
    max_depth,
    n_bins,
    n_threads,
    use_xla_pool,
    max_leaves,
    cats=None,
    sets=None,
    mono=None,
    counts=None,
    min_leaf=None,
):
    """The custom call of :func:`grow_tree` (``lead = ()``) or :func:`grow_trees`
    (``lead = (T,)``: every per-tree input and output with a leading ``T``);
    ``n_threads`` ``None``: :func:`default_threads` of the rows and features (the tree
    kernels' ``MIN_TREE_WORK_FOR_THREADS``); ``cats``
    a ``CatInfo`` (the categorical kernels) or ``None``. uint16 ``bins`` (features of
    more than 256 bins, at most ``NATIVE_WIDE_BIN_LIMIT``) grow leaf-wise trees level by
    level."""
    wide = getattr(bins, "dtype", None) == WIDE_BIN_DTYPE
    max_depth, n_bins = _tree_args(max_depth, n_bins, NATIVE_WIDE_BIN_LIMIT if wide else 256)
    with jax.enable_x64(True):
        bins = jnp.asarray(bins)
        if bins.ndim != 2 or bins.dtype not in (BIN_DTYPE, WIDE_BIN_DTYPE):
            raise ValueError(f"bins must be (N, F) uint8 or uint16, got {bins.shape} {bins.dtype}")
        N, F = bins.shape
        if n_threads is None:
            n_threads = default_threads(N, F, min_work=MIN_TREE_WORK_FOR_THREADS)
        g, h = _rows_dtype(g, h)
        level_sets, node_key, node_ratio = _colsample_args(colsample, max_depth, F, lead)
        M = 2 ** (max_depth + 1) - 1
        out_types = _tree_outputs(M, N, lead)
        cat_args, cat_attrs = (), {}
        if cats is not None:
            target = {TREE_TARGET_NAME: TREE_CAT_TARGET_NAME}.get(target, TREES_CAT_TARGET_NAME)
            out_types += (
                jax.ShapeDtypeStruct(lead + (M,), bool),
                jax.ShapeDtypeStruct(lead + (M, 8), np.uint32),
            )
            cat_args = (
                jnp.asarray(cats.kind, jnp.int32),
                jnp.asarray(cats.n_cats, jnp.int32),
                jnp.asarray(cats.seen, bool),
                jnp.asarray(cats.max_cat_threshold, jnp.int32).reshape(1),
            )
            cat_attrs = dict(cat_slots=np.int64(np.shape(cats.codes)[0]))
        outs = jax.ffi.ffi_call(target, out_types, vmap_method="sequential")(
            bins,
            g,
            h,
            jnp.asarray(hyper, jnp.float32),
            jnp.asarray(root, jnp.float64),
            jnp.asarray(forward_ok, bool),
            level_sets,
            node_key,
            node_ratio,
            jnp.zeros((0, F), bool) if sets is None else jnp.asarray(sets, bool),
            jnp.zeros((0,), jnp.int32) if mono is None else jnp.asarray(mono, jnp.int32),
            jnp.zeros((0,), jnp.float32) if counts is None else jnp.asarray(counts, jnp.float32),
            jnp.zeros((0,), jnp.int32)
            if counts is None
            else jnp.asarray(min_leaf, jnp.int32).reshape(1),
            *cat_args,
            max_depth=np.int64(max_depth),
            n_bins=np.int64(n_bins),
            n_threads=np.int64(n_threads),
            use_xla_pool=bool(use_xla_pool),
            colsample=colsample is not None,
            max_leaves=np.int64(max_leaves),
            **cat_attrs,
        )
    return _tree_result(outs)


def _tree_args(max_depth, n_bins, limit: int = 256):
    """``(max_depth, n_bins)`` as ints, checked for the tree kernels (and the kernel
    available); ``n_bins`` at most ``limit``."""
    if not available():
        raise RuntimeError(f"native kernel unavailable: {unavailable_reason()}")
    max_depth, n_bins = int(max_depth), int(n_bins)
    if max_depth < 1:
        raise ValueError(f"max_depth must be >= 1, got {max_depth}")
    if not 2 <= n_bins <= limit:
        raise ValueError(f"n_bins must be in [2, {limit}], got {n_bins}")
    return max_depth, n_bins


def _tree_outputs(M, N, lead=()):
    """The tree kernels' outputs, with leading dimensions ``lead`` (``(T,)``: T trees)."""
    i32, f32, f64 = np.int32, np.float32, np.float64
    return tuple(
        jax.ShapeDtypeStruct(lead + (n,), dt)
        for n, dt in (
            (M, i32),
            (M, i32),
            (M, bool),
            (M, bool),
            (M, f32),
            (M, f64),
            (M, f64),
            (N, i32),
        )
    )


def _tree_result(outs):
    """``(structure, Gn, Hn, leaf)`` of the tree kernels' eight outputs (ten with
    categorical features: ``is_cat`` and ``bits`` join ``structure``)."""
    feature, tbin, dl, is_split, gain, Gn, Hn, leaf = outs[:8]
    structure = dict(feature=feature, tbin=tbin, default_left=dl, is_split=is_split, gain=gain)
    if len(outs) == 10:
        structure.update(is_cat=outs[8], bits=outs[9])
    return structure, Gn, Hn, leaf


def _rows_dtype(g, h):
    """g and h in one float dtype: float64 when either is, else float32."""
    dt = jnp.result_type(jnp.asarray(g).dtype, jnp.asarray(h).dtype)
    dt = jnp.float64 if dt == jnp.float64 else jnp.float32
    return jnp.asarray(g, dt), jnp.asarray(h, dt)


def _colsample_args(colsample, max_depth, F, lead=()):
    """``(level_sets, node_key, node_ratio)`` for the tree kernels, with leading dimensions
    ``lead`` (``(T,)``: one set per tree); placeholders without column sampling."""
    if colsample is None:
        return (
            jnp.zeros(lead + (max_depth, F), bool),
            jnp.zeros(lead + (2,), jnp.uint32),
            jnp.ones(lead + (1,), jnp.float32),
        )
    node_key, level_sets, node_ratio = colsample
    return (
        jnp.asarray(level_sets, bool),  # its shape is checked by the kernel
        jnp.asarray(node_key, jnp.uint32).reshape(lead + (2,)),
        jnp.asarray(node_ratio, jnp.float32).reshape(lead + (1,)),
    )


def grow_tree_sparse(
    sparse_bins,
    g,
    h,
    hyper,
    root,
    forward_ok,
    colsample,
    max_depth: int,
    n_bins: int,
    *,
    max_leaves: int = 0,
    mono=None,
):
    """:func:`grow_tree` on sparse columns: a CSC matrix of bins whose absent entries are
    missing values. Time and memory follow the stored entries: each level goes over the
    features once, summing a feature's entries into small histograms of the level's
    nodes (that feature's own bins only) and scanning them at once; nothing of size
    rows x features or nodes x features x bins is formed. Grows the trees
    :func:`grow_tree` grows from the dense bins (missing-value sums are the node's totals
    minus the stored values', so float64 sums may differ in their last bits). One thread.

    Args:
      sparse_bins: ``(colptr, rows, ebin)``: ``(F + 1,)`` int32 column pointers,
        ``(nnz,)`` int32 rows (ascending within a column) and ``(nnz,)`` bins
        ``< n_bins - 1`` (missing values are left out): uint8, or uint16 when
        ``n_bins`` is above 256 (up to 4,096). Checked by the kernel (an error, not a
        crash).
      g, h: ``(N,)`` (``N`` rows); hyper, root, forward_ok ``(F,)``, colsample,
        max_depth, n_bins, max_leaves, mono (monotone signs): as :func:`grow_tree`.

    Returns:
      As :func:`grow_tree`.

    Example:
      >>> import numpy as np
      >>> if available():  # seed 001 again, as one stored column
      ...     X = (np.array([0, 4], np.int32), np.arange(4, dtype=np.int32),
      ...          np.array([0, 1, 2, 3], np.uint8))
      ...     s, Gn, Hn, leaf = grow_tree_sparse(X, np.float32([0.5, -0.5, 0.5, -0.5]),
      ...         np.full(4, 0.25, np.float32), np.float32([1, 0, 0, 0, 0, 0]),
      ...         np.array([0.0, 1.0]), np.zeros(1, bool), None, 1, 5)
      ...     assert int(s["tbin"][0]) == 3 and leaf.tolist() == [1, 1, 1, 2]
    """
    max_depth, n_bins = _tree_args(max_depth, n_bins, NATIVE_WIDE_BIN_LIMIT)
    with jax.enable_x64(True):
        colptr, rows, ebin = (jnp.asarray(a) for a in sparse_bins)
        g, h = _rows_dtype(g, h)
        N = g.shape[0]
        forward_ok = jnp.asarray(forward_ok, bool)
        F = forward_ok.shape[0]
        level_sets, node_key, node_ratio = _colsample_args(colsample, max_depth, F)
        M = 2 ** (max_depth + 1) - 1
        outs = jax.ffi.ffi_call(
            SPARSE_TREE_TARGET_NAME, _tree_outputs(M, N), vmap_method="sequential"
        )(
            colptr.astype(jnp.int32),
            rows.astype(jnp.int32),
            ebin.astype(jnp.uint16 if n_bins > NARROW_BIN_LIMIT else jnp.uint8),
            g,
            h,
            jnp.asarray(hyper, jnp.float32),
            jnp.asarray(root, jnp.float64),
            forward_ok,
            level_sets,
            node_key,
            node_ratio,
            jnp.zeros((0,), jnp.int32) if mono is None else jnp.asarray(mono, jnp.int32),
            max_depth=np.int64(max_depth),
            n_bins=np.int64(n_bins),
            colsample=colsample is not None,
            max_leaves=np.int64(max_leaves),
        )
    return _tree_result(outs)
