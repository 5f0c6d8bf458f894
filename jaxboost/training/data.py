"""Data preparation: from validated arrays to what the round program takes.

``prepare`` decides where the rows live (one device, a mesh, processes), computes the bin
edges (or takes an ``init_model``'s), bins and pads the rows (weight-0 copies of row 0,
to a size bucket, so similar data sets share compiled programs), fits the intercept
(one compiled program per loss *family*: hyperparameter values are traced) and places
everything on the devices as the engine's records (``engine.round.Rows``, ``Shared``).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from objectives import MultiTarget, Objective

from .._types import NATIVE_WIDE_BIN_LIMIT, bin_dtype
from ..engine.autodiff import fit_base_margin, loss_name
from ..engine.categorical import cat_info
from ..engine.exact import check_rows
from ..engine.groups import group_buckets
from ..engine.refit import quantile_intercept
from ..engine.round import Rows, Shared
from ..engine.sparse import apply_bins, compute_bin_edges, csc_bins  # dense or scipy.sparse X
from ..engine.tree import max_features_for_bins
from ..errors import DataError, LossError
from ..inputs.arrays import pad_targets
from ..parallel import distributed as dist
from ..parallel.sharding import auto_mesh, check_mesh


def use_native() -> bool:
    """Whether training uses the native histogram kernel (see ``jaxboost.native``).

    Only on CPU backends; ``JAXBOOST_NATIVE=0`` turns it off, and any build failure
    falls back to the pure-JAX histogram.
    """
    if jax.default_backend() != "cpu":
        return False
    from .. import native

    return native.available()


def rows_on_bins(Xf, yf, wf, edges, n_pad, native):
    """The training rows as the round program takes them, padded to ``n_pad`` rows.

    Returns ``(bins, y, w, valid, cuts_ext, forward_ok)``: uint8 bins (uint16 above 256
    a feature) in one layout, written in place with its padding (row-major
    ``(n_pad, F)`` for the native kernel, feature-major ``(F, n_pad)`` for the pure-JAX
    scan); labels (every entry of side data) padded with copies of row 0 and weights
    with 0 (padding rows have g = h = 0); ``valid`` marks the real rows;
    ``cuts_ext`` ``(F, B)`` the thresholds of every bin (``BinEdges.cuts_ext``; ``B =
    edges.n_bins``, the data's bin bucket, missing values in bin ``B - 1``);
    ``forward_ok`` the features whose ascending split pass is tried.
    """
    n_rows, n_features = Xf.shape
    bins = np.zeros((n_pad, n_features) if native else (n_features, n_pad), bin_dtype(edges.n_bins))
    apply_bins(Xf, edges, out=bins, row_major=native)
    return (bins,) + rows_without_bins(Xf, yf, wf, edges, n_pad)


OUTSIDE_SHARE = 0.5
"""``check_init_edges`` warns when more than this share of a feature's values lie
beyond the init model's outermost cuts."""


def _present_columns(X, n: int):
    """``(f, values)`` of ``X``'s first ``n`` columns: a dense column whole (NaN
    included), a sparse one's stored entries (absent entries are missing values)."""
    from ..inputs.sparse import is_sparse

    if not is_sparse(X):
        for f in range(n):
            yield f, X[:, f]
        return
    X = X.tocsc()
    for f in range(n):
        yield f, np.asarray(X.data[X.indptr[f] : X.indptr[f + 1]])


def _edge_report(X, edges, max_bin: int):
    """``(outside, few)`` of ``check_init_edges`` for ``X`` (dense or sparse, its rows
    already thinned): the first numeric feature ``(f, share, c0, c1)`` whose values lie
    mostly far outside its cuts, or None; and ``[(f, cuts, bins offered)]`` of the
    numeric features whose distinct values (capped at ``max_bin - 1``) are at least
    twice the cuts' bins."""
    outside, few = None, []
    for f, values in _present_columns(X, min(X.shape[1], edges.n_features)):
        if edges.categorical is not None and edges.categorical[f]:
            continue
        col = np.sort(values)  # NaN last
        col = col[: col.size - int(np.isnan(col).sum())]
        k = int(edges.n_cuts[f])
        if col.size == 0:
            continue
        offered = min(1 + int(np.count_nonzero(np.diff(col))), max_bin - 1)
        if offered >= 2 * (k + 1):
            few.append((f, k, offered))
        if outside is None and k >= 2:
            c0, c1 = float(edges.cuts[f, 0]), float(edges.cuts[f, k - 1])
            lo, hi = c0 - (c1 - c0), c1 + (c1 - c0)  # the cuts' span again on either side
            out = np.searchsorted(col, lo) + col.size - np.searchsorted(col, hi, "right")
            if out / col.size > OUTSIDE_SHARE:
                outside = (f, out / col.size, c0, c1)
    return outside, few


def _warn_edges(outside, few) -> None:
    """The ``DataWarning`` s of ``check_init_edges``'s report (at the user's line)."""
    from ..errors import DataWarning, user_stacklevel

    if outside is not None:
        f, share, c0, c1 = outside
        warnings.warn(
            f"X column {f}: {share:.0%} of its values lie far outside the range the "
            f"init_model's bin edges cover (cuts from {c0:g} to {c1:g}, from the data "
            f"it was trained on); they share its first or last bin, so the new trees "
            f"cannot split among them. Train a new model on data like this, or "
            f"continue only on data like the original",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    if few:
        f, k, m = few[0]
        warnings.warn(
            f"init_model's bin edges hold few cuts for {len(few)} of X's features (column "
            f"{f}: {k} cut(s), where X's values offer {m} bins): the new trees can split "
            f"only at those cuts, as this model's edges are not re-cut here (several "
            f"processes, or categorical features under another max_bin). Train a new "
            f"model on X for splits anywhere in the data",
            DataWarning,
            stacklevel=user_stacklevel(),
        )


def _deepened(s):
    """``s`` with an ``init_model`` laid out shallower than ``max_depth`` (an XGBoost
    import is as deep as its deepest tree) moved to that depth's layout
    (``Ensemble.deepened``): the same trees, new ones grown to ``max_depth``."""
    import dataclasses

    init = s.init_model
    if init is None or init.params.max_depth == s.params.max_depth:
        return s
    params = dataclasses.replace(init.params, max_depth=s.params.max_depth)
    trees = init.trees.deepened(s.params.max_depth)
    return dataclasses.replace(s, init_model=init._with_trees(trees, params=params))


def check_init_edges(s, Xf, wf):
    """``s`` with its ``init_model`` checked against ``Xf`` in one pass over its
    columns (up to 100,000 rows, ``_edge_report``), and re-cut where its cuts are few.

    * **Few cuts**: some numeric feature's values offer at least twice the bins of the
      model's cuts (a model from ``from_xgboost`` has its trees' thresholds as its only
      cuts, one trained on a small sample that sample's). The model's cuts are merged
      with ``Xf``'s own (``binning.merge_cuts``) and its trees' split bins moved to
      them: the same thresholds, so the same predictions, and new trees split anywhere
      the data's cuts allow (XGBoost's ``xgb_model=`` also cuts the new data afresh).
      Multi-process jobs keep their cuts, with a ``DataWarning`` (categorical features
      keep their codes). A sparse ``Xf`` offers its stored entries (absent ones are
      missing values, as in training).
    * **Values far outside the cuts**: a numeric feature with more than
      ``OUTSIDE_SHARE`` of its present values farther below its first cut, or above its
      last, than the cuts' own span (they share one bin, so new trees cannot split among
      them; values just past the outer cuts are ordinary members of the outer bins):
      a ``DataWarning``."""
    import dataclasses

    from ..engine.binning import merge_cuts

    s = _deepened(s)
    init = s.init_model
    if init is None:
        return s
    old = init.bin_edges
    recut = not dist.is_multiprocess() and (
        not old.is_categorical or old.max_bin == s.params.max_bin
    )
    X = Xf[:: max(1, Xf.shape[0] // 100_000)]
    outside, few = _edge_report(X, old, s.params.max_bin if recut else old.max_bin)
    if not (few and recut):
        _warn_edges(outside, few)
        return s
    fresh = compute_bin_edges(Xf, s.params.max_bin, wf, seed=s.seed, categorical=old.categorical)
    edges, lut, offset = merge_cuts(old, fresh, s.params.max_bin)
    held = init.trees
    f = np.clip(np.asarray(held.feature), 0, edges.n_features - 1)
    t = np.clip(np.asarray(held.tbin), 0, old.n_cuts[f] + 1)
    split = ~np.asarray(held.is_leaf) & (np.asarray(held.feature) >= 0)
    tbin = np.where(split, lut[offset[f] + t], held.tbin).astype(np.asarray(held.tbin).dtype)
    out = init._with_trees(held._replace(tbin=tbin), bin_edges=edges)
    return dataclasses.replace(s, init_model=out)


def warn_two_bins(Xf) -> None:
    """``DataWarning`` for ``max_bin=2`` on data without missing values: one of the two
    bins is reserved for missing values, so every feature has one bin of values and no
    tree can split (XGBoost's ``max_bin=2`` is two bins of values)."""
    from ..errors import DataWarning
    from ..inputs.sparse import is_sparse

    if is_sparse(Xf) or np.isnan(Xf).any():
        return  # absent or NaN entries: trees can split present from missing rows
    warnings.warn(
        "max_bin=2 leaves one bin for values (the other is reserved for missing values) "
        "and X has no missing values, so no tree can split: every tree is one leaf. "
        "jaxboost's max_bin counts the missing bin, XGBoost's does not; pass max_bin=3 "
        "for two bins of values",
        DataWarning,
        stacklevel=5,
    )


def sparse_rows(s, Xf, native: bool, layout) -> bool:
    """Whether training keeps a sparse ``Xf`` as CSC bins for the native sparse tree
    kernel (``jaxboost.native.grow_tree_sparse``: time and memory by stored entries)
    instead of dense ``(N, F)`` bins: on one device with the native kernel and its
    whole-tree path on, for what that kernel grows (numeric splits, monotone
    constraints at most, one output per tree; ``dense_reason``). Otherwise sparse input
    is binned densely (``warn_dense_sparse``)."""
    from ..inputs.sparse import is_sparse

    return is_sparse(Xf) and dense_reason(s, native, layout) is None


def _monotone_at_most(constraints) -> bool:
    """Whether ``constraints`` (``training.constraints.Constraints`` or None) hold
    monotone signs at most: no interaction sets, no row minimum."""
    spec = None if constraints is None else constraints.spec()
    return spec is None or (spec.n_sets == 0 and not spec.min_leaf)


#: Dense bins of a sparse ``X`` from this many bytes on get a ``DataWarning``.
DENSE_SPARSE_WARN_BYTES = 1 << 30


def dense_reason(s, native: bool, layout):
    """Why a sparse ``X`` would train on dense bins, in words (the first of the native
    sparse kernel's conditions that fails), or None where it keeps to CSC bins."""
    from .. import native as native_kernel

    for failed, why in (
        (
            not native,
            "the native CPU kernel off (not a CPU backend, JAXBOOST_NATIVE=0, or more "
            "than 4,096 bins a feature)",
        ),
        (not native_kernel.tree_enabled(), "the native whole-tree kernel off"),
        (layout.mesh is not None, "a mesh of devices"),
        (layout.multi, "several processes"),
        (bool(s.categorical), "categorical features"),
        (not _monotone_at_most(s.constraints), "interaction constraints or min_samples_leaf"),
        (s.multi_output_tree and s.n_outputs > 1, "vector leaves (multi_output_tree)"),
        (s.params.max_depth <= 0, "max_depth=0"),
    ):
        if failed:
            return why
    return None


def warn_dense_sparse(s, Xf, native: bool, layout, sparse_ok: bool, n_bins: int) -> None:
    """A ``DataWarning`` before a sparse ``Xf`` is binned densely into
    ``DENSE_SPARSE_WARN_BYTES`` or more (nothing for dense ``Xf``)."""
    from ..errors import DataWarning, user_stacklevel
    from ..inputs.sparse import is_sparse

    if not is_sparse(Xf):
        return
    n, f = Xf.shape
    nbytes = n * f * np.dtype(bin_dtype(n_bins)).itemsize
    if nbytes < DENSE_SPARSE_WARN_BYTES:
        return
    if not sparse_ok:
        why = "train_many, whose configurations share dense bins,"
    else:  # sparse_rows said no (or a test made it): these settings if nothing fails
        why = dense_reason(s, native, layout) or "these settings"
    warnings.warn(
        f"X is a sparse matrix ({n:,} x {f:,}, {Xf.nnz:,} stored entries), but with "
        f"{why} it trains on dense bins: "
        f"{nbytes / 2**30:.1f} GiB of them. Sparse input keeps to its stored entries on "
        "one CPU device with numeric features, monotone constraints at most and one "
        "output per tree; drop what keeps it dense, or select columns, if memory runs "
        "short",
        DataWarning,
        stacklevel=user_stacklevel(),
    )


def rows_without_bins(Xf, yf, wf, edges, n_pad):
    """``rows_on_bins`` without the bins: ``(y, w, valid, cuts_ext, forward_ok)``."""
    n_rows = Xf.shape[0]
    y = pad_targets(yf, n_pad)  # side data: every entry padded alike
    w = np.zeros(n_pad, np.float32)
    w[:n_rows] = 1.0 if wf is None else wf
    forward_ok = edges.has_missing & (edges.n_distinct > 1)
    return y, w, np.arange(n_pad) < n_rows, edges.cuts_ext(), forward_ok


def where_text(where, callbacks) -> str:
    """Where training is, for the lost-process message of ``jaxboost.distributed``."""
    from .callbacks import Checkpoint

    text = f" during the chunk of rounds from {where['round']}"
    for cb in callbacks:
        if isinstance(cb, Checkpoint) and cb.last_round is not None:
            text += f"; the last checkpoint, {cb.path!r}, holds {cb.last_round} round(s)"
    return text


class Prepared(NamedTuple):
    """The training data on the devices: ``layout`` (``distributed.RowLayout``), the
    bin ``edges``, the engine records ``rows`` and ``shared``, ``native`` (whether the
    native histogram kernel is used), ``base`` (the base margin: a float, or ``(K,)``),
    ``margin`` (the starting margins ``(1, N[, K])``, row-sharded), ``any_forward``."""

    layout: Any
    edges: Any
    rows: Rows
    shared: Shared
    native: bool
    base: Any
    margin: Any
    any_forward: bool
    n_features: int


def group_row_order(s):
    """The group loss's ``GroupObjective.row_order`` (host: labels -> sort key), by which
    ``prepare`` orders each group's rows, or None (no group loss, or none given)."""
    if s.group is None:
        return None
    return getattr(s.loss, "row_order", None)


def prepare(s, Xf, yf, wf, sparse_ok: bool = True) -> Prepared:
    """Place, bin and pad the rows of ``train`` under settings ``s``. ``sparse_ok``:
    whether sparse ``Xf`` may be kept sparse (``sparse_rows``; ``train_many``, whose
    models may differ in what the native sparse tree supports, says no)."""
    mesh = s.mesh
    if mesh is not None:
        mesh = check_mesh(mesh, keep_single=dist.is_multiprocess())
    elif not dist.is_multiprocess():
        mesh = auto_mesh(Xf.shape[0])
    layout = dist.RowLayout(Xf.shape[0], mesh)
    if s.quantize:
        check_rows(layout.n_total)
    if s.init_model is not None:
        edges = s.init_model.bin_edges  # the trees' bins refer to these edges
    elif layout.multi:
        edges = dist.agreed_bin_edges(Xf, s.params.max_bin, wf, s.seed, layout.n_total)
    else:
        mask = None
        if s.categorical:
            mask = np.zeros(Xf.shape[1], bool)
            mask[list(s.categorical)] = True
        edges = compute_bin_edges(Xf, s.params.max_bin, wf, seed=s.seed, categorical=mask)
    if s.params.max_bin == 2 and s.init_model is None:
        warn_two_bins(Xf)
    # the native kernels read uint8 bins and uint16 ones up to 4,096 bins a feature
    # (max_bin > 256 on continuous data: the histogram and the numeric level-wise tree
    # kernel, engine.grow.native_tree_takes); more bins are histogrammed by XLA
    native = use_native() and edges.n_bins <= NATIVE_WIDE_BIN_LIMIT
    if Xf.shape[1] > max_features_for_bins(edges.n_bins):
        raise DataError(
            f"X has {Xf.shape[1]} features, but with {edges.n_bins} bins per "
            f"feature (max_bin={s.params.max_bin}) at most "
            f"{max_features_for_bins(edges.n_bins)} fit; use max_bin <= 256"
        )
    if sparse_ok and sparse_rows(s, Xf, native, layout):
        y, w, valid, cuts_ext, forward_ok = rows_without_bins(Xf, yf, wf, edges, layout.block)
        bins = tuple(jax.device_put(a) for a in csc_bins(Xf, edges))
    else:
        warn_dense_sparse(s, Xf, native, layout, sparse_ok, edges.n_bins)
        bins, y, w, valid, cuts_ext, forward_ok = rows_on_bins(
            Xf, yf, wf, edges, layout.block, native
        )
        bins = layout.put(bins, feature_major=not native)
    rows = Rows(bins, jax.tree.map(layout.put, y), layout.put(w), layout.put(valid))
    gidx: Any = np.zeros((1, 1), np.int32)  # a tuple of buckets with a group loss
    if s.group is not None:
        row_order = group_row_order(s)
        key = None if row_order is None else row_order(yf)
        gidx = group_buckets(s.group, Xf.shape[0], layout.block, key)
    cats = cat_info(edges, s.max_cat_to_onehot, s.max_cat_threshold)
    shared = layout.replicate_tree(  # one batched transfer in one process
        Shared(
            cuts_ext=cuts_ext,
            forward_ok=forward_ok,
            offsets=layout.offsets,
            n_total=np.int32(layout.n_total),
            gidx=gidx,
            cats=cats,
        )
    )
    base = base_margin(s, layout, rows, y, w)
    start = start_margins(s, base, Xf, Xf.shape[0], layout.block, s.offsets)
    margin = layout.put(start[None], feature_major=True)
    return Prepared(
        layout, edges, rows, shared, native, base, margin, bool(forward_ok.any()), Xf.shape[1]
    )


def closed_form_start(s, layout, y, w):
    """The start margin in closed form (``Objective.start_margin``: squared error,
    logistic, Poisson, gamma, Tweedie, exponential, softmax), or None: another loss,
    side data, exact sums (``quantize=True``: the fit's sums do not depend on the rows'
    order) or no finite closed form. Computed on the host from the padded labels and
    weights (padding weighs 0; with rows spread over processes, every process's, in
    process order, as one process holds them), it spares a first fit the base-margin
    fit's compile (breast cancer, logistic: a quarter of a 0.6 s cold fit)."""
    loss = s.loss
    if s.quantize or not isinstance(loss, Objective) or loss.intercept is None:
        return None
    if np.ndim(y) != 1 and not isinstance(loss, MultiTarget):
        return None  # side data (a dict, an (N, L) array): no closed form
    y, w = np.asarray(y), np.asarray(w)
    if layout.multi:  # a collective: every process gets here with the same settings
        y, w = dist.gather_rows(y), dist.gather_rows(w)
    return loss.start_margin(y, w)


def base_margin(s, layout, rows, y, w):
    """The model's base margin: the init model's, the given one, 0 when margins are given
    per row (``s.offsets``: they replace the intercept, as XGBoost's ``base_margin``
    does), the labels' quantile at the refit's level for ``refit="quantile"``
    (``refit.quantile_intercept``, XGBoost's ``base_score`` for its quantile and
    absolute-error objectives), the closed-form minimiser of a catalogue entry that has
    one (``closed_form_start``), or the fitted constant minimising the weighted loss
    (sums over every process's rows)."""
    K = s.n_outputs
    if s.init_model is not None:
        base = s.init_model.base_margin
    elif s.base_margin is not None:
        base = s.base_margin
    elif s.offsets is not None:
        base = 0.0 if K == 1 else np.zeros(K, np.float32)
    elif s.refit == "quantile":  # one device: XGBoost's start, the quantile (per target)
        y, w = np.asarray(y), np.asarray(w)
        weighted = s.weight_max is not None
        # output k's label and level: its column, or a level of the one label (the
        # targets the round's refit reads, MultiTarget.target)
        outputs = [s.loss.target(k, y)[1:] for k in range(K)] if K > 1 else [(y, None)]
        base = [
            quantile_intercept(yk, w, s.quantile_alpha if a is None else float(a), weighted)
            for yk, a in outputs
        ]
        base = np.asarray(base, np.float32) if K > 1 else base[0]
    elif (closed := closed_form_start(s, layout, y, w)) is not None:
        base = closed
    else:
        exact_rows = layout.n_total if s.quantize else None
        args = dict(exact_rows=exact_rows, loss_params=s.loss_values)
        if layout.multi:  # the arrays are global
            base = np.asarray(dist.local(fit_base_margin(s.family, rows.y, rows.w, K, **args)))
        elif layout.mesh is None:  # rows.y, rows.w: y and w on the one device
            base = _fitted_start(s, rows.y, rows.w, K, args)
        else:  # rows sharded over a mesh: the fit on one device, as without one
            base = _fitted_start(s, jax.device_put(y), jax.device_put(w), K, args)
        if not np.all(np.isfinite(base)):
            raise LossError(
                f"the loss {loss_name(s.loss)} gave a non-finite intercept when "
                f"minimised over a constant (before round 0); pass "
                f"base_margin= explicitly or check the loss",
                round=None,
            )
    return float(base) if K == 1 else np.asarray(base, np.float32)


def _fitted_start(s, y, w, K, args) -> np.ndarray:
    """``fit_base_margin`` on one device; for several targets of an entry
    (``objectives.multi_target``) the entry's own fit of each column, the start of
    ``T`` separate models (the vector fit's last bits differ)."""
    family = s.family
    if not isinstance(family, MultiTarget):
        return np.asarray(fit_base_margin(family, y, w, K, **args))
    single = family.single
    return np.asarray([fit_base_margin(single, y[:, t], w, 1, **args) for t in range(K)])


def start_margins(s, base, Xraw, n, n_total, offsets=None):
    """``(n_total[, K])`` float32 margins a model starts from on rows ``Xraw`` (``n``
    real ones): the init model's predictions (from ``offsets`` when given), the
    ``(n[, K])`` margins per row ``offsets``, or the base margin; padding rows copy row
    0's."""
    K = s.n_outputs
    shape = (n_total,) if K == 1 else (n_total, K)
    out = np.broadcast_to(np.asarray(base, np.float32), shape).copy()
    m = None
    if s.init_model is not None and n:
        m = s.init_model.predict(Xraw, output_margin=True, base_margin=offsets)
    elif offsets is not None and n:
        m = offsets
    if m is not None:
        out[:n] = m
        out[n:] = m[0]
    return out
