"""Evaluation during training: programs of their own, over a chunk's trees.

After each chunk of rounds, ``evaluate_chunk`` routes every evaluation set's (already
binned) rows through the chunk's trees and accumulates their margins round by round (in
float32, as ``predict`` does): ``chunk_margins``; then it evaluates the metrics after
every round, vmapped over the rounds: ``chunk_metrics``. Both are programs apart from
the tree builder, so adding, removing or changing evaluation sets and metrics never
recompiles training, and a new metric compiles only the small metric program.
Evaluation rows are padded to a size bucket (``bucket_rows``) with weight-0 rows, so
sets of similar sizes share one program; metrics are weighted, so padding changes no
value (a user metric that takes no weights gets its set unpadded).

Host metrics (``jaxboost.metrics.host``: NumPy or scikit-learn code) are not in the
metric program: ``host_predictions`` keeps a chunk's per-round predictions (margins, or
the link applied to them by a small program of its own) for one copy to the host, and
``host_scores`` calls the metrics there, round by round, on the rows of the set without
padding.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from objectives import MultiTarget, Objective

from .._types import bin_dtype, bucket_rows
from ..engine.autodiff import bind_loss
from ..engine.groups import group_buckets, group_ids
from ..engine.sparse import apply_bins  # dense or scipy.sparse X
from ..engine.tree import binned_leaf, values_at_leaves
from ..errors import DataError
from ..inputs import arrays, frames
from ..inputs import categorical as _categorical
from ..inputs.sparse import ColumnView, is_sparse
from ..parallel import distributed as dist


class EvalSet(NamedTuple):
    name: str
    X: np.ndarray
    bins: np.ndarray  # (n, F) uint8 (uint16 above 256 bins), row-major
    y: np.ndarray
    w: np.ndarray
    n: int
    queries: Any  # group_buckets of its query ids (a tuple); (1, 1) zeros without
    grouped: bool
    offsets: Any = None  # (n[, K]) float32 margins per row (eval_base_margin), or None


def eval_sets(
    eval_set, edges, s, gather=False, eval_group=None, *, eval_base_margin=None, targets="(N,)"
) -> list:
    """Validated, binned evaluation sets of a model of settings ``s`` (its loss,
    feature names, outputs, category labels and offsets) (``gather``: every process's rows, on every
    process), with their query index when ``eval_group`` gives query ids and their
    margins per row when ``eval_base_margin`` gives them (a list aligned with
    ``eval_set`` or a dict keyed like it). ``targets`` is the structure of the training
    ``y`` (``inputs.arrays.target_structure``): every set's ``y`` must have the same.
    Every set has the ``edges.n_features`` features of the training data; categorical
    columns (``edges.categorical``) are checked and DataFrame categories re-coded to the
    training labels ``s.category_labels`` (``jaxboost.inputs.categorical``). When the model
    trains with margins per row (``s.offsets``), every set needs its own: a set
    scored at offset 0 would rank rounds by margins the model never fits."""
    if eval_set is None:
        if eval_group is not None:
            raise ValueError("eval_group is given without eval_set")
        if eval_base_margin is not None:
            raise ValueError("eval_base_margin is given without eval_set")
        return []
    items = _eval_items(eval_set)
    set_names = [name for name, _ in items]
    groups = eval_groups(eval_group, set_names, isinstance(eval_set, dict))
    margins = eval_groups(
        eval_base_margin,
        set_names,
        isinstance(eval_set, dict),
        what="eval_base_margin",
        per_set="margins per row (or None)",
    )
    return [
        _eval_set(name, e, edges, s, (gather, targets), groups.get(name), margins)
        for name, e in items
    ]


def _eval_items(eval_set) -> list:
    """``[(name, (X, y[, w]))]`` of a list or dict ``eval_set``."""
    if isinstance(eval_set, dict):
        return list(eval_set.items())
    if isinstance(eval_set, (list, tuple)):
        if (
            len(eval_set) in (2, 3)
            and not isinstance(eval_set[0], (list, tuple))
            and np.ndim(eval_set[0]) == 2
        ):
            raise TypeError("eval_set is a list of (X, y) pairs: write eval_set=[(X, y)]")
        return [(f"validation_{i}", e) for i, e in enumerate(eval_set)]
    raise TypeError(
        f"eval_set must be a list of (X, y) or (X, y, sample_weight) tuples "
        f"or a dict of them, got {type(eval_set).__name__}"
    )


def _eval_set(name, e, edges, s, how, ids, margins) -> EvalSet:
    """Evaluation set ``name``, ``e = (X, y[, w])``, validated (``how``: ``eval_sets``'
    ``(gather, targets)``), with its query ids ``ids`` (or None) and its margins per row
    from ``margins`` (by set name)."""
    gather, targets = how
    if not isinstance(e, (list, tuple)) or len(e) not in (2, 3):
        raise TypeError(f"eval set {name!r} must be (X, y) or (X, y, sample_weight)")
    try:
        Xe, ye, we = _eval_rows(e, edges, s, gather, targets)
        offsets = margins.get(name)
        if offsets is None and s.offsets is not None:
            raise DataError(
                "has no eval_base_margin, but the model trains with margins per row "
                "(base_margin of shape (N,) or (N, K), e.g. np.log(exposure)): scored "
                "at offset 0 its metric would not measure the model being trained "
                "(nor pick its best round). Pass eval_base_margin= with the set's "
                "own offsets (a list aligned with eval_set, or a dict by name), or "
                "zeros to score it at offset 0 on purpose"
            )
        if offsets is not None:
            offsets = arrays.as_offsets(offsets, Xe.shape[0], s.n_outputs, name="eval_base_margin")
    except ValueError as err:
        raise DataError(f"eval set {name!r}: {err}") from None
    if ids is not None:
        given = np.asarray(ids)
        ids = group_ids(given, Xe.shape[0]) if given.dtype.kind in "iuf" else None
        if ids is None:
            raise DataError(
                f"eval_group of {name!r} must be {Xe.shape[0]} numeric "
                f"query ids (one per row), or the sizes of contiguous queries summing "
                f"to {Xe.shape[0]}; got shape {given.shape}"
            )
    if gather:
        we = np.ones(Xe.shape[0], np.float32) if we is None else we
        Xe, we = (dist.gather_rows(a) for a in (Xe, we))
        ye = _map_targets(dist.gather_rows, ye)
        if ids is not None:
            ids = dist.gather_rows(ids)
        if offsets is not None:
            offsets = dist.gather_rows(offsets)
        if Xe.shape[0] == 0:
            raise DataError(f"eval set {name!r} has no rows on any process")
    n = Xe.shape[0]
    bins = np.zeros((n, edges.n_features), bin_dtype(edges.n_bins))
    apply_bins(Xe, edges, out=bins, row_major=True)
    queries = np.zeros((1, 1), np.int32) if ids is None else group_buckets(ids, n)
    return EvalSet(
        str(name),
        Xe,
        bins,
        ye,
        np.ones(n, np.float32) if we is None else we,
        n,
        queries,
        ids is not None,
        offsets,
    )


def _eval_rows(e, edges, s, gather, targets):
    """``(X, y, w)`` of an evaluation set ``e``, checked against the training data (a
    process of a multi-process job may hold none of its rows)."""
    n_features, names = edges.n_features, s.feature_names
    empty_here = gather and np.ndim(e[0]) == 2 and np.shape(e[0])[0] == 0
    if empty_here:
        if np.shape(e[0])[1] != n_features:
            raise DataError(f"has {np.shape(e[0])[1]} features, the training data {n_features}")
        Xe = np.zeros((0, n_features), np.float32)
        ye, we = np.zeros(0, np.float32), np.zeros(0, np.float32)
        if targets != "(N,)":
            ye = arrays.as_targets(e[1], 0)
    else:
        frames.check_feature_names(names, e[0])
        Xe = arrays.as_features(e[0], allow_inf=True, sparse=None if gather else "csc")
        if Xe.shape[1] != n_features:
            raise DataError(f"has {Xe.shape[1]} features, the training data {n_features}")
        if edges.is_categorical:
            Xe = _categorical.recode(
                Xe, _categorical.frame_categories(e[0]), s.category_labels or {}
            )
            _categorical.check_predict_codes(
                ColumnView(Xe) if is_sparse(Xe) else Xe, np.flatnonzero(edges.categorical), names
            )
        ye = arrays.as_targets(e[1], Xe.shape[0])
        if isinstance(s.loss, MultiTarget):  # a DataFrame's columns: the targets
            ye = arrays.frame_targets(e[1], ye)
        we = arrays.as_weights(e[2] if len(e) == 3 else None, Xe.shape[0])
        if isinstance(s.loss, Objective) and (
            not arrays.is_side_data(ye) or s.loss.takes_label_fields(ye)
        ):
            s.loss.validate_labels(ye)
    if arrays.target_structure(ye) != targets:
        raise DataError(
            f"y has structure {arrays.target_structure(ye)}, the "
            f"training y {targets}; evaluation sets carry the same "
            f"values per row as the training data"
        )
    return Xe, ye, we


def _map_targets(fn, y):
    """``fn`` applied to targets ``y``: to an array, or to every entry of a dict."""
    return {k: fn(v) for k, v in y.items()} if isinstance(y, dict) else fn(y)


def eval_groups(
    eval_group, names, by_name, *, what="eval_group", per_set="query ids (or None)"
) -> dict:
    """``{eval set name: query ids or None}`` from ``eval_group`` (a list aligned with a
    list ``eval_set``, or a dict keyed like a dict ``eval_set``); the same for
    ``eval_base_margin`` (``what``)."""
    if eval_group is None:
        return {}
    if isinstance(eval_group, dict):
        unknown = sorted(set(eval_group) - set(names))
        if unknown:
            raise ValueError(f"{what} names {unknown} are not evaluation sets ({names})")
        return dict(eval_group)
    if by_name or not isinstance(eval_group, (list, tuple)) or len(eval_group) != len(names):
        raise TypeError(
            f"{what} must be a list of {per_set} per evaluation "
            f"set, {len(names)} of them, or a dict keyed like eval_set"
        )
    return dict(zip(names, eval_group))


def eval_metrics(eval_metric, loss, evals, K, group=None) -> list:
    """Metrics, checked against the model's output shape before training (``group``:
    the training rows' group ids, which make a stratum-aware metric need the sets')."""
    from .. import metrics as M

    if eval_metric is None:
        default = loss.metric if isinstance(loss, Objective) else "objective"
        eval_metric = [default]
    elif isinstance(eval_metric, (str, M.Metric)) or callable(eval_metric):
        eval_metric = [eval_metric]
    out = [M.get_metric(m, objective=loss) for m in eval_metric]
    check_metric_links(out, loss)
    if not evals:
        return out
    e = evals[0]
    shape = (e.n,) if K == 1 else (e.n, K)
    link = link_of(loss)
    from ..metrics.targets import metric_targets

    missing = [x.name for x in evals if not x.grouped]  # sets without query ids

    for m in out:
        if m.host:
            continue  # NumPy code: checked on the starting predictions (check_host)
        if m.grouped:
            if missing:
                raise ValueError(
                    f"metric {m.name!r} ranks rows within queries; pass the "
                    f"query ids of {missing} as eval_group"
                )
            continue
        if m.strata and missing and group is not None and np.unique(group).size > 1:
            raise ValueError(
                f"the model is trained with strata (group=), and metric {m.name!r} "
                f"compares rows within a stratum: pass the strata of {missing} as "
                f"eval_group (unstratified, it would score another loss than the one "
                f"trained)"
            )
        margin = jax.ShapeDtypeStruct(shape, jnp.float32)
        pred = margin if (m.on == "margin" or link is None) else jax.eval_shape(link, margin)
        y = jax.tree.map(
            lambda a: jax.ShapeDtypeStruct(np.shape(a), jnp.float32), metric_targets(m, e.y)
        )  # ValueError: no label named
        try:
            res = jax.eval_shape(m.fn, y, pred, jax.ShapeDtypeStruct((e.n,), jnp.float32))
        except Exception as err:
            raise ValueError(
                f"metric {m.name!r} cannot evaluate this model ({K} output(s), "
                f"predictions {pred.shape}): {_err_text(err)}. Metrics must "
                f"be JAX functions metric(y, pred) -> scalar"
                f"{host_hint(m, err)}"
            ) from None
        if getattr(res, "shape", None) != ():
            raise ValueError(
                f"metric {m.name!r} must return a scalar, got shape "
                f"{getattr(res, 'shape', type(res).__name__)}"
            )
    return out


def host_hint(m, err) -> str:
    """For a user's callable that failed under tracing: how to run it on the host."""
    from ..metrics.custom import _UserFn

    if not isinstance(m.fn, _UserFn):
        return ""
    traced = isinstance(
        err,
        (
            jax.errors.TracerArrayConversionError,
            jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError,
        ),
    )
    mark = (
        f"mark it as a host metric, eval_metric=jaxboost.metrics.host({m.name}, "
        f"maximize=True) (maximize=False when smaller is better): it is then called "
        f"on the host, on NumPy predictions, once per round"
    )
    if traced:
        return f". It converts traced arrays to NumPy, so it is NumPy code: {mark}"
    return f". If it is NumPy or scikit-learn code, {mark}"


def link_of(loss):
    """The inverse link metrics and ``predict`` apply: an ``Objective``'s (a catalogue
    entry's, or the ``link=`` given to a plain callable), else None (margins)."""
    return loss.link if isinstance(loss, Objective) else None


def check_metric_links(eval_metric, loss) -> None:
    """``ValueError`` when a metric needs a response (``Metric.needs``: probabilities,
    class probabilities, a mean) but ``loss`` is a plain callable without a link, whose
    margins the metric would score instead. Called before any round is trained."""
    from objectives._base import Hyperparameters

    from .. import metrics as M
    from ..engine.autodiff import loss_name

    if eval_metric is None or isinstance(loss, Hyperparameters):
        return  # the objective's own metric; or a loss with a link (or a group entry)
    if isinstance(eval_metric, (str, M.Metric)) or callable(eval_metric):
        eval_metric = [eval_metric]
    for m in eval_metric:
        m = M.get_metric(m, objective=loss)
        if m.needs is None or m.on == "margin":
            continue
        link = M.NEEDS[m.needs]
        what = {"probability": "probabilities", "mean": "a mean"}.get(m.needs, m.needs)
        raise ValueError(
            f"metric {m.name!r} scores {what}, but the loss {loss_name(loss)} has no link, "
            f"so it would score raw margins: pass link={link!r} (train(loss, X, y, "
            f"link={link!r}, ...)) to read margins through that inverse link, or use a "
            f"metric that reads margins ('objective', the mean loss; 'auc', 'merror')"
        )


class EvalData(NamedTuple):
    """One evaluation set on the device, padded to ``bucket_rows``: ``bins`` ``(n, F)``
    uint8 row-major, ``y`` (``(n,)``, or side data like the training ``y``), ``w`` (0 on
    padding), ``queries`` the ``(Q_b, S_b)`` query index buckets (``group_buckets``)."""

    bins: Any
    y: Any
    w: Any
    queries: Any


class EvalPlan(NamedTuple):
    """What fixes the two evaluation programs (static).

    ``trees`` (``TreePlan``) fixes the routing program (depth, bins, rounds per chunk,
    trees per round); ``metrics`` (``MetricPlan``) fixes the metric program. They are
    compiled apart, so a new metric never recompiles the routing of rows.
    """

    trees: "TreePlan"
    metrics: "MetricPlan"


class TreePlan(NamedTuple):
    """The routing program's static shape: the trees' depth and bins (``max_bin``: the
    training program's ``B``, ``BinEdges.n_bins``, whose last bin holds missing values),
    the chunk's rounds and trees per round."""

    max_depth: int
    max_bin: int
    chunk: int
    trees_per_round: int


class MetricPlan(NamedTuple):
    """The metric program's static content: the metrics, the inverse link, whether the
    set is grouped (ranking metrics get its query index)."""

    metrics: tuple
    link: Any
    grouped: bool


def plan_metrics(metrics, family):
    """The metrics as the program holds them: the ``objective`` metric's loss becomes
    the loss family, its hyperparameters bound from traced values in the program. Host
    metrics are left out: the program is the one the device metrics alone give."""
    from ..metrics.custom import _MeanLoss

    return tuple(
        dataclasses.replace(m, fn=_MeanLoss(family)) if isinstance(m.fn, _MeanLoss) else m
        for m in metrics
        if not m.host
    )


def pads(metrics) -> bool:
    """Whether a set may be padded: every device metric reads the row weights (host
    metrics see the set without its padding)."""
    from ..metrics.custom import _UserFn

    return all(not (isinstance(m.fn, _UserFn) and m.fn.weight_kw is None) for m in metrics)


def place(e: EvalSet, padded: bool, put=jax.device_put):
    """``(EvalData, n_rows)``: the set padded to its bucket (weight-0 copies of row 0)."""
    n = bucket_rows(e.n) if (padded and e.n) else e.n
    bins = np.zeros((n,) + e.bins.shape[1:], e.bins.dtype)
    bins[: e.n] = e.bins
    y = arrays.pad_targets(e.y, n)
    w = np.zeros(n, np.float32)
    w[: e.n] = e.w
    if e.n:
        bins[e.n :] = e.bins[0]
    queries = jax.tree.map(put, e.queries)  # a tuple of buckets: each put on its own
    return EvalData(put(bins), _map_targets(put, y), put(w), queries), n


def evaluate_chunk(plan: EvalPlan, trees, margin, data: EvalData, loss_values):
    """Margins after each round of the chunk and the metrics there.

    Two compiled programs: ``chunk_margins`` (route the rows, accumulate margins) and
    ``chunk_metrics`` (the metrics after every round), so changing the metrics compiles
    only the small second one.

    Args:
      plan: static ``EvalPlan``.
      trees: dict of ``(chunk * trees_per_round, M[, K])`` arrays (one model's chunk).
      margin: ``(n[, K])`` float32 margins before the chunk (donated).
      data: ``EvalData``.
      loss_values: the loss family's traced hyperparameters (for the ``objective``
        metric).

    Returns:
      ``(margin, values, stages)``: margins after the chunk, ``(chunk, n_metrics)``
      float32 of the device metrics, and the ``(chunk, n[, K])`` margins after each
      round (for ``host_predictions``).
    """
    margin, stages = chunk_margins(plan.trees, trees, margin, data.bins)
    if not plan.metrics.metrics:
        return margin, np.zeros((plan.trees.chunk, 0), np.float32), stages
    return margin, chunk_metrics(plan.metrics, stages, data, loss_values), stages


@functools.partial(jax.jit, static_argnames=("plan",), donate_argnums=(2,))
def chunk_margins(plan: TreePlan, trees, margin, bins):
    """``(margin, stages)``: the margins after the chunk, ``(n[, K])``, and after each of
    its rounds, ``(chunk, n[, K])``, accumulated round by round in float32 as
    ``predict`` does. ``bins``: ``(n, F)`` uint8 row-major."""
    leaves = jax.vmap(
        lambda t: binned_leaf(t, bins, max_depth=plan.max_depth, max_bin=plan.max_bin)
    )(trees)  # (T, n)
    value = trees["value"]
    # class trees hold (T, M) values: tree t's are output t mod K's, spread here
    K = margin.shape[1] if margin.ndim == 2 and value.ndim == 2 else None
    ts = jnp.arange(value.shape[0])
    vals = jax.vmap(lambda v, lf, t: values_at_leaves(v, lf, t, K))(value, leaves, ts)
    vals = jnp.sum(vals.reshape((plan.chunk, plan.trees_per_round) + vals.shape[1:]), axis=1)

    def add(m, d):
        m = m + d
        return m, m

    return jax.lax.scan(add, margin, vals)


@functools.partial(jax.jit, static_argnames=("plan",))
def chunk_metrics(plan: MetricPlan, stages, data: EvalData, loss_values):
    """``(chunk, n_metrics)`` float32: every metric after every round of the chunk
    (``stages``: ``(chunk, n[, K])`` margins), vmapped over the rounds."""
    from ..metrics.custom import _MeanLoss
    from ..metrics.targets import metric_targets

    fns = [
        (_MeanLoss(bind_loss(m.fn.loss, loss_values)) if isinstance(m.fn, _MeanLoss) else m.fn, m)
        for m in plan.metrics
    ]

    def evaluate(em):
        resp = em if plan.link is None else plan.link(em)
        return jnp.stack(
            [
                fn(
                    metric_targets(m, data.y),
                    em if m.on == "margin" else resp,
                    data.queries if m.grouped else data.w,
                    *((data.queries,) if (m.strata and plan.grouped) else ()),
                ).astype(jnp.float32)
                for fn, m in fns
            ]
        )

    return jax.vmap(evaluate)(stages)


# --- host metrics ------------------------------------------------------------------------
def host_kinds(metrics, link) -> tuple:
    """What the host metrics read: ``"margin"`` and/or ``"response"`` (a model without
    a link has margins for responses)."""
    on = {
        ("margin" if (m.on == "margin" or link is None) else "response") for m in metrics if m.host
    }
    return tuple(k for k in ("margin", "response") if k in on)


@functools.partial(jax.jit, static_argnames=("link",))
def chunk_responses(link, stages):
    """``link`` applied to a chunk's ``(chunk, n[, K])`` margins, round by round: a loop
    over the rounds, each as ``predict`` applies it to one round's margins, so the
    responses are ``predict``'s to the bit (vmapped, XLA may round a softmax
    differently)."""
    return jax.lax.map(link, stages)


def host_predictions(kinds, link, stages) -> dict:
    """``{kind: (chunk, n[, K]) device array}`` for the host metrics (``host_kinds``);
    their copy to the host starts now, and is read a chunk later (``jax.device_get``:
    one transfer of the chunk for every round)."""
    out = {}
    for k in kinds:
        out[k] = stages if k == "margin" else chunk_responses(link, stages)
    for a in out.values():
        if getattr(a, "is_fully_addressable", False):
            a.copy_to_host_async()
    return out


def host_scores(metrics, e: EvalSet, preds: dict, i: int, round_) -> list:
    """The values of the host metrics (in their order) on set ``e`` at round ``i`` of a
    chunk (``preds``: ``host_predictions`` on the host). ``MetricError`` (without its
    ``booster``) when a metric raises or returns anything but one finite number."""
    from ..errors import MetricError
    from ..metrics.host import BadValue, host_value
    from ..metrics.targets import metric_targets

    out = []
    for m in metrics:
        if not m.host:
            continue
        kind = "margin" if m.on == "margin" or "response" not in preds else "response"
        pred = preds[kind][i, : e.n]
        try:  # copies: a metric that writes into its arguments changes no other round
            y = jax.tree.map(np.copy, metric_targets(m, e.y))  # side data: a dict
            out.append(host_value(m, y, pred.copy(), e.w.copy()))
        except Exception as err:  # the user's code: report, with context
            kept = (
                f"The model of rounds 0..{round_ - 1} is attached as error.booster."
                if round_ > 0
                else "No round completed."
            )
            raise MetricError(
                f"host metric {m.name!r} on eval set {e.name!r} at round {round_}: "
                f"{_err_text(err)}. {kept}",
                metric=m.name,
                data=e.name,
                round=round_,
            ) from (None if isinstance(err, BadValue) else err)
    return out


def check_host(metrics, e: EvalSet, start, link) -> None:
    """Call every host metric once on ``e``'s starting predictions (``start``:
    ``(n[, K])`` margins) before any round: ``MetricError`` when one raises or does not
    return a number (a value that is not finite passes: the start is a constant)."""
    import warnings

    from ..errors import MetricError
    from ..metrics.host import host_value
    from ..metrics.targets import metric_targets

    hosts = [m for m in metrics if m.host]
    if not hosts or not e.n:
        return
    margin = np.asarray(start[: e.n], np.float32)
    resp = margin if link is None else np.asarray(link(jnp.asarray(margin)))
    for m in hosts:
        pred = margin if m.on == "margin" else resp
        try:
            with warnings.catch_warnings():  # e.g. scikit-learn's ill-defined warnings
                warnings.simplefilter("ignore")
                host_value(m, metric_targets(m, e.y), pred, e.w, finite=False)
        except Exception as err:
            y_shape = jax.tree.map(np.shape, e.y)
            raise MetricError(
                f"host metric {m.name!r} fails on eval set {e.name!r} (y {y_shape}, "
                f"pred {pred.shape} {'margins' if pred is margin else 'responses'}, "
                f"before training, on the starting predictions): {_err_text(err)}",
                metric=m.name,
                data=e.name,
            ) from None


def _err_text(err) -> str:
    """The first line of an error, after its type (not for ``BadValue``: it says)."""
    from ..metrics.host import BadValue

    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return first if isinstance(err, BadValue) else f"{type(err).__name__}: {first}".rstrip(": ")
