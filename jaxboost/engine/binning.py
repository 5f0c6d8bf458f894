"""Quantile binning: raw float features -> ``uint8`` bin indices (``uint16`` when the
programs need more than 256 bins per feature, ``_types.bin_dtype``).

Bin edges are computed once, on the host, from the training data. For a feature with
cuts ``c_0 < c_1 < ... < c_{k-1}`` a present value ``x`` falls in bin
``#{j : c_j <= x}`` (so bin ``b`` holds ``c_{b-1} <= x < c_b``) and a missing value
(NaN) falls in the reserved bin ``B - 1`` (``B = BinEdges.n_bins``, see below). A
split "bins ``< t`` go left" is therefore the same rule as the float test
``x < c_{t-1}``, which is what prediction on raw data evaluates: binned training and
raw prediction agree by construction.

When a feature has at most ``max_bin - 1`` distinct present values, every distinct
value gets a bin of its own and the cuts are the float32 midpoints of neighbouring
values: split finding then sees exactly the candidate splits of XGBoost's exact
method. Otherwise cuts sit at sample-weighted quantiles of the distinct values.

A categorical feature (``compute_bin_edges(..., categorical=mask)``) holds integer
category codes ``0 .. C - 1``; code ``c`` falls in bin ``c`` (its cuts are
``0.5, 1.5, ..., C - 1.5``, ``C`` the largest training code plus one, at most
``max_bin - 1``), and a code that is missing, outside ``[0, C)`` or never seen in
training falls in the missing-value bin (``apply_bins``), so it goes where the split
sends missing values (``jaxboost.engine.categorical``).

Bins follow the data: ``max_bin`` is a cap, not the width of every feature. The compiled
programs (histograms ``(F, nodes, B)``, split finding, routing) take their bin dimension
``B = BinEdges.n_bins`` from a few buckets (``program_bins``: 16, 32, 64, 128, 256 for
the default ``max_bin``), the smallest that holds every feature's bins: its value bins
``n_cuts[f] + 1`` plus the missing-value bin ``B - 1``. Data with at most 17 distinct
values per feature (sklearn's digits) trains with ``B = 32``, continuous data of many
rows with ``B = max_bin``; data of another size in the same bucket compiles no new
program. Which bucket a feature lands in changes no split: a bin past ``n_cuts[f] + 1``
is empty, so its candidates are never chosen, and the trees are bit-identical to those
of bins padded to ``max_bin`` (``JAXBOOST_PAD_BINS=1`` forces that padding, for tests
and comparisons). One exception, in the last bits of float64 sums: where the width
itself picks how the histograms are summed -- the native kernel on several threads
moves from row blocks to per-node sums once its scratch histograms pass 8 MiB, and
very wide data is histogrammed in feature blocks (``grow.feature_block``) -- a
narrower ``B`` may keep the other scheme, whose sums are associated differently (as
between thread counts). ``max_bin`` stays what model files store; ``n_bins`` is
recomputed from the cuts whenever edges are built or read.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._types import FLOAT_DTYPE, NARROW_BIN_LIMIT, bin_dtype
from .compile import release_free_memory

PAD_BINS_ENV = "JAXBOOST_PAD_BINS"
"""Set to ``1`` to give every ``BinEdges`` built afterwards ``n_bins = max_bin`` (bins
padded to the cap, the layout before bins followed the data): a private switch for the
tests that compare both layouts and for benchmarks."""

BIN_BUCKET_MIN = 16
"""The smallest bucket of ``program_bins`` (unless ``max_bin`` is smaller)."""

# Above this many rows, quantiles of high-cardinality features are estimated from a
# seeded row sample of this size (LightGBM samples 200k rows for the same purpose).
QUANTILE_SAMPLE_ROWS = 1 << 18


@dataclasses.dataclass(frozen=True, eq=False)
class BinEdges:
    """Per-feature bin edges.

    Attributes:
      cuts: ``(F, max_bin - 2)`` float32, each row ascending, padded with ``+inf``.
      n_cuts: ``(F,)`` int32, the number of real cuts per feature (``n_cuts[f] + 1``
        value bins).
      has_missing: ``(F,)`` bool, whether the training data had NaN in the feature.
      n_distinct: ``(F,)`` int64, distinct present values seen in training (capped
        by the sample for very large data).
      max_bin: the cap on bins per feature (the training parameter, what model files
        store): at most ``max_bin - 1`` value bins, and the missing-value bin.
      categories: ``None`` (every feature numeric), or ``(F, max_bin)`` bool: row ``f``
        of a categorical feature marks the category codes seen in training (code ``c``
        is bin ``c``; ``n_cuts[f] + 1`` is the largest seen code plus one); rows of
        numeric features are all False, as are rows of categorical features that had
        no present value (see ``categorical``).
      categorical: ``None``, or ``(F,)`` bool, the features split by category.
      n_bins: ``B``, the bins per feature of the training programs (not an argument:
        computed from the other fields, ``program_bins`` of ``bins_needed``, or
        ``max_bin`` when ``$JAXBOOST_PAD_BINS`` is ``1``). Present values of feature
        ``f`` fall in bins ``0 .. n_cuts[f]``, missing values in ``B - 1``.
    """

    cuts: np.ndarray
    n_cuts: np.ndarray
    has_missing: np.ndarray
    n_distinct: np.ndarray
    max_bin: int
    categories: np.ndarray | None = None
    categorical: np.ndarray | None = None
    n_bins: int = dataclasses.field(init=False)

    def __post_init__(self):
        pad = os.environ.get(PAD_BINS_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        n = int(self.max_bin) if pad else program_bins(bins_needed(self), int(self.max_bin))
        object.__setattr__(self, "n_bins", n)

    @property
    def is_categorical(self) -> bool:
        """Whether any feature is categorical."""
        return self.categorical is not None and bool(np.any(self.categorical))

    @property
    def n_features(self) -> int:
        return self.cuts.shape[0]

    @property
    def missing_bin(self) -> int:
        """The bin of missing values, ``n_bins - 1``."""
        return self.n_bins - 1

    def threshold(self, feature: np.ndarray, tbin: np.ndarray) -> np.ndarray:
        """Float thresholds for splits "bin < tbin goes left".

        ``tbin == 0`` sends every present value right (threshold ``-inf``);
        ``tbin > n_cuts[feature]`` sends every present value left (``+inf``).
        """
        feature = np.asarray(feature)
        tbin = np.asarray(tbin).astype(np.int64)
        table = self.cuts_ext()
        idx = np.clip(tbin, 0, table.shape[1] - 1)
        return table[feature, idx]

    def cuts_ext(self) -> np.ndarray:
        """``(F, n_bins)`` float32 threshold of every split bin: ``cuts_ext[f, t]`` is the
        value below which "bin < t goes left" sends a row (``-inf`` at ``t = 0``, the
        cuts, then ``+inf``). The one table training, validation and routing share.

        >>> e = compute_bin_edges(np.array([[0.0], [1.0], [2.0]], np.float32), max_bin=5)
        >>> e.cuts_ext().tolist()
        [[-inf, 0.5, 1.5, inf, inf]]
        """
        table = np.full((self.n_features, self.n_bins), np.inf, FLOAT_DTYPE)
        table[:, 0] = -np.inf
        width = min(self.cuts.shape[1], self.n_bins - 1)  # cuts past n_cuts are +inf
        table[:, 1 : 1 + width] = self.cuts[:, :width]
        return table


def merge_cuts(old: BinEdges, fresh: BinEdges, max_bin: int):
    """Bin edges holding every cut of ``old`` and, for its numeric features, as many of
    ``fresh``'s as fit in ``max_bin - 1`` value bins (evenly spread over ``fresh``'s when
    not all fit), and the table that moves ``old``'s split bins to them. Categorical
    features keep ``old``'s codes (``old.max_bin`` must then be ``max_bin``).

    For continuing a model whose cuts serve new data poorly (an XGBoost import's cuts
    are its trees' thresholds only): its trees keep every threshold, now a cut among
    the data's own, and new trees may split anywhere the data's cuts allow.

    Args:
      old, fresh: ``BinEdges`` of the same ``F`` features.
      max_bin: the cap of the result (the training's ``max_bin``).

    Returns:
      ``(edges, lut, offset)``: ``lut[offset[f] + t]`` is the merged edges' bin for
      ``old``'s split bin ``t`` of feature ``f`` (``0 <= t <= old.n_cuts[f] + 1``: 0 and
      ``n_cuts + 1``, every value right or left, stay so), int64.

    >>> a = BinEdges(np.float32([[1.0]]), np.int32([1]), np.ones(1, bool), np.int64([2]), 4)
    >>> b = BinEdges(np.float32([[0.5, 2.0]]), np.int32([2]), np.ones(1, bool), np.int64([3]), 4)
    >>> e, lut, off = merge_cuts(a, b, 5)
    >>> e.cuts[0, : e.n_cuts[0]].tolist(), lut.tolist()
    ([0.5, 1.0, 2.0], [0, 2, 4])
    """
    cap = max_bin - 2  # cuts of max_bin - 1 value bins
    merged, luts = [], []
    categorical = np.zeros(old.n_features, bool) if old.categorical is None else old.categorical
    if categorical.any() and old.max_bin != max_bin:
        raise ValueError(f"categorical bin edges of max_bin {old.max_bin}, not {max_bin}")
    for f in range(old.n_features):
        c = old.cuts[f, : old.n_cuts[f]]
        if categorical[f]:  # codes, not values: kept
            merged.append(c.astype(FLOAT_DTYPE))
            luts.append(np.arange(c.size + 2))
            continue
        extra = np.setdiff1d(fresh.cuts[f, : fresh.n_cuts[f]], c)
        room = max(cap - c.size, 0)
        if extra.size > room:  # evenly spread: indices at least 1 apart, so distinct
            extra = extra[np.linspace(0, extra.size - 1, room).round().astype(int)]
        u = np.union1d(c, extra).astype(FLOAT_DTYPE)
        merged.append(u)
        luts.append(np.concatenate([[0], 1 + np.searchsorted(u, c), [u.size + 1]]))
    n_cuts = np.array([u.size for u in merged], np.int32)
    cuts = np.full((old.n_features, max(1, int(n_cuts.max(initial=0)))), np.inf, FLOAT_DTYPE)
    for f, u in enumerate(merged):
        cuts[f, : u.size] = u
    offset = np.concatenate([[0], np.cumsum([t.size for t in luts])])[:-1]
    edges = BinEdges(
        cuts=cuts,
        n_cuts=n_cuts,
        has_missing=np.asarray(old.has_missing) | np.asarray(fresh.has_missing),
        n_distinct=np.where(
            categorical, old.n_distinct, np.maximum(np.asarray(fresh.n_distinct), n_cuts + 1)
        ).astype(np.int64),
        max_bin=int(max_bin),
        categories=old.categories,
        categorical=old.categorical,
    )
    return edges, np.concatenate(luts).astype(np.int64), offset.astype(np.int64)


def category_slots(max_codes: int, max_bin: int) -> int:
    """``S``, the bins categorical split finding sorts (``categorical.CatInfo.codes``):
    the largest number of categories ``max_codes`` rounded up to a power of two, at least
    8, at most ``max_bin - 1``.

    >>> category_slots(3, 256), category_slots(9, 256), category_slots(200, 64)
    (8, 16, 63)
    """
    width = 8
    while width < int(max_codes):
        width *= 2
    return min(width, int(max_bin) - 1)


def bins_needed(edges) -> int:
    """The most bins one feature of ``edges`` needs: its value bins ``n_cuts + 1`` and
    the missing-value bin; with categorical features at least ``S + 1`` (``S`` their
    ``category_slots``: split finding reads the ``S`` category bins below the missing
    one).

    >>> bins_needed(compute_bin_edges(np.array([[0.0], [1.0], [2.0]], np.float32)))
    4
    """
    n_cuts = np.asarray(edges.n_cuts)
    need = int(n_cuts.max()) + 2 if n_cuts.size else 2
    cat = edges.categorical
    if cat is not None and np.any(cat):
        codes = int((n_cuts[np.asarray(cat, bool)] + 1).max())
        need = max(need, category_slots(codes, edges.max_bin) + 1)
    return need


def program_bins(needed: int, max_bin: int) -> int:
    """``B``, the bins per feature the training programs use for data whose features need
    at most ``needed`` bins: the smallest bucket that holds them, at most ``max_bin``.

    The buckets are ``16, 32, 64, ...`` plus ``max_bin % 16`` (so ``16, 32, 64, 128,
    256`` for the default ``max_bin = 256``), and ``max_bin`` itself. Keeping ``B`` equal
    to ``max_bin`` modulo 16 keeps bin ``b``'s place within the 16-bin blocks of split
    finding's prefix sums (``split.prefix_sums``, both directions) what it is at
    ``max_bin``, so the sums, gains and trees are bit-identical to those of bins padded
    to ``max_bin``.

    >>> program_bins(18, 256), program_bins(3, 256), program_bins(256, 256)
    (32, 16, 256)
    >>> program_bins(18, 100), program_bins(70, 100), program_bins(3, 8)
    (20, 100, 8)
    """
    max_bin = int(max_bin)
    rest = max_bin % BIN_BUCKET_MIN
    size = BIN_BUCKET_MIN
    while size + rest < needed and size + rest < max_bin:
        size *= 2
    return min(size + rest, max_bin)


def _midpoints(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    # float32 arithmetic, as XGBoost's exact method computes (a + b) * 0.5f.
    lo = lo.astype(FLOAT_DTYPE)
    hi = hi.astype(FLOAT_DTYPE)
    # over: lo + hi near float32 max; invalid: -inf + inf, which only compute_bin_edges
    # called directly can meet (training refuses infinite values before binning)
    with np.errstate(over="ignore", invalid="ignore"):
        mid = (lo + hi) * FLOAT_DTYPE(0.5)
        bad = ~np.isfinite(mid)
        if bad.any():  # overflow of lo + hi near float32 max
            mid[bad] = lo[bad] * FLOAT_DTYPE(0.5) + hi[bad] * FLOAT_DTYPE(0.5)
    return mid


def _feature_cuts(col, weight, n_value_bins, rng, sample=None):
    """Cuts for one float32 column (NaN already removed) with optional weights.

    Above ``QUANTILE_SAMPLE_ROWS`` values the quantiles come from a row sample:
    ``sample = (values, weights)`` drawn by the caller (``compute_bin_edges`` draws one
    for all features), else ``QUANTILE_SAMPLE_ROWS`` of ``col`` drawn with ``rng``.
    """
    n = col.shape[0]
    if n == 0:
        return np.zeros(0, FLOAT_DTYPE), 0
    values, w = col, weight
    if n > QUANTILE_SAMPLE_ROWS:
        if sample is None:
            idx = rng.choice(n, QUANTILE_SAMPLE_ROWS, replace=False)
            sample = (col[idx], None if weight is None else weight[idx])
        if np.unique(sample[0]).shape[0] > n_value_bins:
            values, w = sample
        # else possibly low cardinality: look at every row so no value is missed
    if w is None:  # counts from a sort (a weighted count needs the slower argsort)
        vals, counts = np.unique(values, return_counts=True)
    else:
        vals, inv = np.unique(values, return_inverse=True)
        counts = np.bincount(inv.ravel(), weights=w, minlength=vals.shape[0])
        if counts.sum() <= 0:
            counts = np.bincount(inv.ravel(), minlength=vals.shape[0])
    n_distinct = vals.shape[0]
    if n_distinct <= n_value_bins:
        cuts = _midpoints(vals[:-1], vals[1:])
    else:
        cum = np.cumsum(counts.astype(np.float64))
        total = cum[-1]
        targets = total * np.arange(1, n_value_bins) / n_value_bins
        # The cut goes after the first distinct value whose cumulative weight
        # reaches the target.
        pos = np.searchsorted(cum, targets, side="left")
        pos = np.unique(np.clip(pos, 0, n_distinct - 2))
        cuts = _midpoints(vals[pos], vals[pos + 1])
    cuts = np.unique(cuts)  # strictly increasing (midpoints can coincide in float32)
    return cuts, n_distinct


def _category_edges(col, max_bin):
    """Cuts ``0.5, ..., C - 1.5`` of a categorical column of integer codes (NaN removed)
    and the ``(max_bin,)`` mask of the codes present."""
    seen = np.zeros(max_bin, bool)
    if col.size == 0:
        return np.zeros(0, FLOAT_DTYPE), seen
    codes = np.unique(col).astype(np.int64)
    seen[codes] = True
    return np.arange(int(codes[-1]), dtype=FLOAT_DTYPE) + FLOAT_DTYPE(0.5), seen


def compute_bin_edges(
    X: np.ndarray, max_bin: int = 256, sample_weight=None, seed: int = 0, categorical=None
) -> BinEdges:
    """Per-feature quantile bin edges.

    Args:
      X: ``(N, F)`` float32, NaN marks a missing value.
      max_bin: bins per feature including the one reserved for missing values
        (``<= 65536``); at most ``max_bin - 1`` bins hold present values.
      sample_weight: optional ``(N,)`` non-negative weights for the quantiles; rows of
        weight 0 are left out entirely (no cuts from their values).
      seed: seeds the row sample used for quantiles of very large data: above
        ``QUANTILE_SAMPLE_ROWS`` rows, one sample of that many rows serves every feature
        with more present values than that (as LightGBM samples rows once); features
        are processed in parallel threads (the result does not depend on their number).
      categorical: optional ``(F,)`` bool, the features whose values are category
        codes: integers in ``[0, max_bin - 2]`` (checked by the caller,
        ``jaxboost.inputs.categorical.check_codes``). Code ``c`` gets bin ``c``.

    Returns:
      ``BinEdges``.

    Example:
      >>> import numpy as np
      >>> e = compute_bin_edges(np.array([[1.0], [2.0], [2.0], [4.0]], np.float32))
      >>> e.cuts[0, :e.n_cuts[0]].tolist()
      [1.5, 3.0]
    """
    X = np.asarray(X, dtype=FLOAT_DTYPE)
    F = X.shape[1]
    edges = EdgeBuilder(F, max_bin, categorical, seed)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    if w is not None and not (w > 0).all():
        # A row of weight 0 is a row that is not there: its values must not add cuts
        # (or mark missing values), so that weight 0 trains the model that dropping
        # the row trains.
        keep = w > 0
        X, w = X[keep], w[keep]
    rows = None
    if X.shape[0] > QUANTILE_SAMPLE_ROWS:
        rows = np.sort(edges.rng.choice(X.shape[0], QUANTILE_SAMPLE_ROWS, replace=False))
        X_sample = X[rows]
        w_sample = None if w is None else w[rows]

    threaded = X.shape[0] * F >= 1 << 18
    if not (threaded or edges.narrow) and w is None and (edges.cat is None or not edges.cat.any()):
        _add_sorted_columns(edges, X)  # small data: every column sorted in one call
        return edges.result()

    def one(f):
        col = X[:, f]
        present = ~np.isnan(col)
        has_missing = not present.all()
        if has_missing:
            col, wf = col[present], None if w is None else w[present]
        else:
            wf = w
        sample = None
        if rows is not None and col.shape[0] > QUANTILE_SAMPLE_ROWS:
            s_col = X_sample[:, f]
            keep = ~np.isnan(s_col)
            sample = (s_col[keep], None if w_sample is None else w_sample[keep])
        edges.add(f, col, wf, has_missing=has_missing, sample=sample)

    _each_feature(one, F, threaded=threaded)  # NumPy's sorts release the GIL
    return edges.result()


def _add_sorted_columns(edges: "EdgeBuilder", X: np.ndarray) -> None:
    """The cuts of every column of a small unweighted ``X`` (no categorical features)
    into ``edges``: those ``_feature_cuts`` gives, bit for bit, from one sort of all
    columns and array operations over all features, instead of a few ``np.unique``
    calls per column (sklearn's breast cancer, 569 x 30: 2.2 -> 0.66 ms a fit; digits,
    1,797 x 64: 2.6 -> 1.15 ms).

    A feature's distinct values are the starts of the runs of its sorted present values
    (NaN sorts last). Up to ``n`` of them, every midpoint between neighbours is a cut.
    Above, ``_feature_cuts`` cuts after the first distinct value whose cumulative count
    reaches ``m k / n`` (``m`` present values, ``k = 1 .. n - 1``): an integer count
    reaches it exactly when it reaches ``ceil(m k / n)``, so that value is the run
    holding sorted position ``ceil(m k / n) - 1``. Each feature's midpoints are then
    ``np.unique``'d: where they are non-decreasing, non-zero and not NaN (all but
    overflowing or signed-zero corner cases) that is dropping repeats in place.
    """
    N, F = X.shape
    n = edges.max_bin - 1  # bins for present values
    S = np.sort(np.ascontiguousarray(X.T), axis=1)  # (F, N), NaN last
    m = N - np.count_nonzero(np.isnan(S), axis=1)  # present values per feature
    new = np.empty((F, N), bool)  # a sorted position that starts a run of equal values
    new[:, :1] = True
    np.not_equal(S[:, 1:], S[:, :-1], out=new[:, 1:])
    new &= np.arange(N) < m[:, None]
    nd = np.count_nonzero(new, axis=1)  # distinct values per feature
    vals = S[new]  # the distinct values, feature after feature
    start = np.zeros(F + 1, np.int64)
    np.cumsum(nd, out=start[1:])
    fid = np.repeat(np.arange(F), nd)
    # pairs, then lo: index into vals of the lower value of each cut's pair
    few = nd <= n
    pairs = [np.flatnonzero((fid[:-1] == fid[1:]) & few[fid[:-1]])]
    many = np.flatnonzero(~few)
    if many.size:
        run = np.cumsum(new[many], axis=1) - 1  # the run of every sorted position
        targets = m[many, None].astype(np.float64) * np.arange(1, n) / n
        pos = np.take_along_axis(run, np.ceil(targets).astype(np.int64) - 1, axis=1)
        pos = np.minimum(pos, (nd[many] - 2)[:, None])  # pos >= 0: targets > 0
        first = np.ones(pos.shape, bool)  # pos is non-decreasing: np.unique drops repeats
        np.not_equal(pos[:, 1:], pos[:, :-1], out=first[:, 1:])
        pairs.append((start[many][:, None] + pos)[first])
    lo = np.sort(np.concatenate(pairs))  # feature after feature, ascending within each
    f_of = fid[lo]
    mids = _midpoints(vals[lo], vals[lo + 1])
    same = f_of[1:] == f_of[:-1]
    keep = np.ones(mids.shape[0], bool)
    keep[1:] = ~(same & (mids[1:] == mids[:-1]))
    odd = np.zeros(F, bool)  # features whose midpoints np.unique must sort itself
    odd[f_of[1:][same & ~(mids[1:] > mids[:-1]) & (mids[1:] != mids[:-1])]] = True
    odd[f_of[np.isnan(mids) | (mids == 0)]] = True
    keep &= ~odd[f_of]
    f_kept = f_of[keep]
    n_cuts = np.bincount(f_kept, minlength=F)
    rank = np.arange(f_kept.shape[0]) - np.repeat(np.cumsum(n_cuts) - n_cuts, n_cuts)
    edges.cuts[f_kept, rank] = mids[keep]
    edges.n_cuts[:] = n_cuts
    edges.n_distinct[:] = nd
    edges.has_missing[:] = m < N
    for f in np.flatnonzero(odd):
        edges.put(int(f), np.unique(mids[f_of == f]), int(nd[f]), bool(m[f] < N))


_FEATURE_THREADS: list = []
_FEATURE_THREADS_LOCK = threading.Lock()


def _feature_threads() -> ThreadPoolExecutor:
    """The binning threads (one per core), started once and kept: a new pool for every
    fit put its column copies and sorts in other malloc arenas each time (glibc keeps
    what a thread's arena held), and a process grew fit after fit (500,000 x 30 rows,
    four fits: peak 448 MiB against 405 with the kept pool)."""
    if not _FEATURE_THREADS:
        with _FEATURE_THREADS_LOCK:
            if not _FEATURE_THREADS:
                n = os.cpu_count() or 1
                _FEATURE_THREADS.append(ThreadPoolExecutor(n, thread_name_prefix="jaxboost-bins"))
    return _FEATURE_THREADS[0]


def _each_feature(one, F: int, threaded: bool) -> None:
    """``one(f)`` for every feature ``f < F``: on the binning threads (one per core)
    when ``threaded`` (and there are several), then the C heap's freed memory handed
    back (``compile.release_free_memory``: the threads' malloc arenas keep the columns
    they copied and sorted, 525 -> 494 MiB peak over four fits of 500,000 x 30 rows);
    else in this thread, in order."""
    if threaded and min(F, os.cpu_count() or 1) > 1:
        list(_feature_threads().map(one, range(F)))
        release_free_memory()
    else:
        for f in range(F):
            one(f)


NARROW_CUTS_BYTES = 64 << 20
"""Above this size, a ``(F, max_bin - 2)`` float32 cuts table is kept only as wide as
the feature with the most cuts (``BinEdges.cuts`` may be narrower than ``max_bin - 2``;
cuts past a feature's ``n_cuts`` are ``+inf`` either way)."""


class EdgeBuilder:
    """The ``BinEdges`` of ``F`` features, filled one feature at a time (the sparse
    path adds them in order, each large column subsampled from one generator seeded
    with ``seed``; the dense path adds them from threads, with one row sample drawn
    before).

    ``add(f, values, weights, has_missing)`` takes feature ``f``'s present (non-NaN)
    values and their weights (``None``: all 1); ``result()`` returns the edges. Shared
    by the dense ``compute_bin_edges`` and the sparse ``engine.sparse.sparse_bin_edges``.
    """

    def __init__(self, n_features: int, max_bin: int, categorical=None, seed: int = 0):
        F = n_features
        self.max_bin = int(max_bin)
        width = max(max_bin - 2, 1)
        # Very wide data (sparse text features): the cuts table as wide as its widest
        # feature, not max_bin - 2 (1M columns x 254 float32 would be 1 GB).
        self.narrow = F * width * 4 > NARROW_CUTS_BYTES
        # narrow: {feature: its cuts}, else the (F, width) table
        self.cuts: Any = {} if self.narrow else np.full((F, width), np.inf, dtype=FLOAT_DTYPE)
        self.n_cuts = np.zeros(F, dtype=np.int32)
        self.has_missing = np.zeros(F, dtype=bool)
        self.n_distinct = np.zeros(F, dtype=np.int64)
        self.cat = None if categorical is None else np.asarray(categorical, bool)
        self.seen: Any = None if self.cat is None else np.zeros((F, max_bin), bool)
        self.rng = np.random.default_rng(seed)
        self.lock = threading.Lock()

    def add(self, f: int, values, weights, has_missing: bool, sample=None) -> None:
        if self.cat is not None and self.cat[f]:  # category codes: code c in bin c
            c, self.seen[f] = _category_edges(values, self.max_bin)
            nd = int(self.seen[f].sum())
        else:
            if sample is None and values.shape[0] > QUANTILE_SAMPLE_ROWS:
                # this feature's own sample: drawn in feature order (sparse input)
                with self.lock:
                    idx = self.rng.choice(values.shape[0], QUANTILE_SAMPLE_ROWS, replace=False)
                sample = (values[idx], None if weights is None else weights[idx])
            c, nd = _feature_cuts(values, weights, self.max_bin - 1, self.rng, sample)
        self.put(f, c, nd, has_missing)

    def put(self, f: int, cuts, n_distinct: int, has_missing: bool) -> None:
        """Feature ``f``'s cuts (strictly increasing float32) and counts, as found."""
        self.has_missing[f] = has_missing
        if self.narrow:
            if cuts.shape[0]:
                self.cuts[f] = cuts
        else:
            self.cuts[f, : cuts.shape[0]] = cuts
        self.n_cuts[f] = cuts.shape[0]
        self.n_distinct[f] = n_distinct

    def result(self) -> BinEdges:
        cuts = self.cuts
        if self.narrow:
            width = max(1, int(self.n_cuts.max()) if self.n_cuts.size else 1)
            cuts = np.full((self.n_cuts.shape[0], width), np.inf, dtype=FLOAT_DTYPE)
            for f, c in self.cuts.items():
                cuts[f, : c.shape[0]] = c
        return BinEdges(
            cuts=cuts,
            n_cuts=self.n_cuts,
            has_missing=self.has_missing,
            n_distinct=self.n_distinct,
            max_bin=self.max_bin,
            categories=self.seen,
            categorical=self.cat,
        )


def _unseen_to_missing(X, edges, out, row_major):
    """Codes of categorical features outside the training categories (beyond the
    largest, or never seen) go to the missing-value bin."""
    for f in np.flatnonzero(edges.categorical):
        col = X[:, f]
        with np.errstate(invalid="ignore"):
            code = np.where((col >= 0) & (col < edges.max_bin), col, edges.max_bin - 1)
        code = np.nan_to_num(code, nan=edges.max_bin - 1).astype(np.int64)
        unseen = ~edges.categories[f][code]
        if unseen.any():
            if row_major:
                out[: X.shape[0], f][unseen] = edges.missing_bin
            else:
                out[f, : X.shape[0]][unseen] = edges.missing_bin


def _native_binning(X, edges, out, row_major) -> bool:
    """Bin with the native kernel when it is built (about 10x faster than NumPy's
    searchsorted per feature); ``False`` when it is not available."""
    if not (out.flags.c_contiguous and out.dtype == np.uint8 and edges.n_bins <= NARROW_BIN_LIMIT):
        return False
    try:
        from .. import native
    except ImportError:
        return False
    if not native.available():
        return False
    F = X.shape[1]
    cuts = np.full((F, NARROW_BIN_LIMIT), np.nan, np.float32)
    width = min(edges.cuts.shape[1], NARROW_BIN_LIMIT)  # n_cuts <= n_bins - 2 here
    real = np.arange(width)[None, :] < edges.n_cuts[:, None]
    cuts[:, :width] = np.where(real, edges.cuts[:, :width], np.nan)
    workers = min(native.default_threads(), 8) if X.shape[0] * F >= 1 << 18 else 1
    native.apply_bins(
        np.ascontiguousarray(X),
        cuts,
        edges.missing_bin,
        out,
        row_major=row_major,
        n_threads=workers,
    )
    return True


def apply_bins(
    X: np.ndarray, edges: BinEdges, *, out: np.ndarray | None = None, row_major: bool = False
) -> np.ndarray:
    """Bin raw features with the given edges.

    Args:
      X: ``(N, F)`` float32, NaN = missing.
      edges: from ``compute_bin_edges``.
      out: optional array of ``bin_dtype(edges.n_bins)`` to write into: ``(F, >= N)``
        (feature-major) or ``(>= N, F)`` (``row_major``); rows beyond ``N`` are left as
        they are (padding).
      row_major: produce ``(N, F)`` instead of ``(F, N)``.

    Returns:
      uint8 bins (uint16 when ``edges.n_bins > 256``), feature-major ``(F, N)`` by
      default (the layout the pure-JAX histogram scans) or row-major ``(N, F)`` (the
      native kernel's layout).
    """
    X = np.asarray(X, dtype=FLOAT_DTYPE)
    N, F = X.shape
    if out is None:
        out = np.empty((N, F) if row_major else (F, N), dtype=bin_dtype(edges.n_bins))
    _numeric_bins(X, edges, out, row_major)
    if edges.is_categorical:
        _unseen_to_missing(X, edges, out, row_major)
    return out


def _numeric_bins(X, edges, out, row_major):
    N, F = X.shape
    if _native_binning(X, edges, out, row_major):
        return

    def one(f):
        col = X[:, f]
        b = np.searchsorted(edges.cuts[f, : edges.n_cuts[f]], col, side="right")
        b[np.isnan(col)] = edges.missing_bin
        if row_major:
            out[:N, f] = b
        else:
            out[f, :N] = b

    _each_feature(one, F, threaded=N * F >= 1 << 16)  # searchsorted releases the GIL
