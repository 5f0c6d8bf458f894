r"""One boosting round, and the compiled program that runs a chunk of them.

The round is the same for ``train`` (one model) and ``train_many`` (M models):

.. code-block:: text

    g, h  = gradients(loss, y, margin)        # autodiff, Hessian policy, sample weight
    keep  = finite(g, h) & row sample          # rows that enter this round's trees
    trees = grow(bins, g, h)                   # one tree, or K trees / one vector tree
    trees = refit(trees)                       # optional: leaves re-solved on the loss
    margin += trees(leaf of each row)

(a forest, ``num_parallel_tree = P``: the last four lines for each of P trees, each with
its own row sample and a learning rate ``eta / P``, as XGBoost's random forests.)

What the compiler sees is split into named records:

* ``RoundSpec`` (static, hashable): what fixes the program's structure (the loss
  *family*, depth, bins, Hessian policy, refit kind, outputs, sampling on/off, ...).
  A new value compiles a new program. Its ``max_bin`` is the data's bin bucket ``B``
  (``binning.BinEdges.n_bins``), not the ``max_bin`` parameter: data of few distinct
  values per feature gets a small one, and data sets of one bucket share the program.
* ``Rows``: the training rows (sharded over the mesh's row axis).
* ``Shared``: arrays every device holds whole (bin thresholds, shard offsets, ...).
* ``Hyper``: one model's numbers (regularisation, Hessian floor, sampling ratios,
  seed, and the loss's continuous hyperparameters): traced, so a sweep over any of
  them reuses the compiled program.
* ``Rounds``: which rounds this dispatch runs and their learning rates.

``run_chunk`` is the one compiled program: for every group of models that share a
``RoundSpec``, a loop over the group's models (its trip count is a traced value, so
the loop body is compiled the same way for one model as for many, and ``train`` and
``train_many`` give bit-identical models) of a scan over the chunk's rounds.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from .._types import FLOAT_DTYPE, INDEX_DTYPE
from .autodiff import bind_loss, census_masks, count_rows, grad_hess, map_rows
from .categorical import N_WORDS
from .compile import backend_jit
from .constraints import ConstraintSpec, TreeConstraints, clip_to_bounds
from .exact import to_grid
from .groups import group_derivatives
from .grow import (
    SplitRules,
    TreeSpec,
    class_trees_in_parallel,
    grow_tree,
    grow_vector_tree,
    native_class_trees,
)
from .grow import identity as grow_identity
from .refit import RowSums, refit_exact, refit_newton, refit_quantile
from .sampling import (
    SUBSAMPLE,
    FeatureSampler,
    bootstrap_counts,
    fold,
    round_key,
    row_mask,
    tree_key,
)
from .split import TreeHyper


class RoundSpec(NamedTuple):
    """What fixes the structure of the round program (static and hashable).

    ``max_bin`` is ``B``, the bins per feature of the histograms
    (``binning.BinEdges.n_bins``: the data's bucket, at most the ``max_bin`` parameter;
    bin ``B - 1`` holds missing values). ``loss`` is the loss family (``objectives``
    entries with their continuous hyperparameters taken out, see
    ``Objective.traced_split``; a plain callable as given); ``refit`` is ``None``,
    ``"newton"`` or ``"quantile"``; ``group_max`` is the exact-Hessian group size of a
    group loss (``None`` for per-row losses); ``group_rows_in_order``: each group's rows
    come in the loss's ``row_order`` (``groups.group_derivatives``);
    ``constraints`` the ``constraints.ConstraintSpec`` of monotone / interaction
    constraints and a row minimum per child (``None``: none).
    ``num_parallel_tree`` ``P > 1`` grows a forest each round (XGBoost's parameter of
    that name): ``P`` trees (``P K`` with one tree per output) on the round's g and h,
    each with its own row and column samples and leaf values ``eta w* / P``;
    ``bootstrap`` draws each tree's rows with replacement
    (``sampling.bootstrap_counts``) instead of the ``subsample`` coin flips.
    ``col_kinds``: whether the tree's, the levels' and the nodes' column draws may keep
    fewer than all features (their ratios below 1); a kind that cannot keeps every
    feature without a draw (``sampling.FeatureSampler``'s ``kinds``).
    ``subtract``: the histogram subtraction trick on the pure-JAX histograms (on by
    default on GPU and TPU backends, ``training.program.use_subtraction``).
    ``depth_bucket``: ``max_depth`` is a bucket of depths (``grow.bucketed_depth``) and
    each model grows its own ``Hyper.depth`` (the native whole-tree kernel only,
    ``training.program.depth_bucket_applies``); its trees are cut back afterwards.
    ``weighted_quantile``: the quantile refit's rule (``refit.refit_quantile``): the
    weighted step rule when training was given ``sample_weight`` or draws a bootstrap
    (its draw counts weigh the rows), else XGBoost's interpolated quantile.
    """

    loss: Any
    max_depth: int
    max_bin: int
    n_outputs: int = 1
    multi_output_tree: bool = False
    diagonal: bool = False
    hessian: str = "exact"
    refit: Optional[str] = None
    clipped: bool = False
    any_forward: bool = True
    native: bool = False
    native_threads: Optional[int] = None
    row_sampling: bool = False
    col_sampling: bool = False
    col_kinds: tuple = (True, True, True)
    exact: bool = False
    group_max: Optional[int] = None
    group_rows_in_order: bool = False
    constraints: Optional[ConstraintSpec] = None
    num_parallel_tree: int = 1
    bootstrap: bool = False
    subtract: bool = False
    max_leaves: int = 0
    depth_bucket: bool = False
    weighted_quantile: bool = True

    @property
    def n_nodes(self) -> int:
        return 2 ** (self.max_depth + 1) - 1

    @property
    def class_trees(self) -> bool:
        """One tree per output (``K > 1``, not vector leaves): the round's trees hold
        their own output's values, ``(tpr, M)``, tree ``t`` being output ``t mod K``'s
        (``Ensemble``'s class trees held one output per tree)."""
        return self.n_outputs > 1 and not self.multi_output_tree

    @property
    def trees_per_round(self) -> int:
        per_forest = self.n_outputs if self.class_trees else 1
        return per_forest * self.num_parallel_tree

    def tree_spec(self) -> TreeSpec:
        """The tree builder's part of this record."""
        return TreeSpec(
            self.max_depth,
            self.max_bin,
            self.native,
            self.clipped,
            self.any_forward,
            self.native_threads,
            self.diagonal,
            subtract=self.subtract,
            max_leaves=self.max_leaves,
            depth_bucket=self.depth_bucket,
        )


class Rows(NamedTuple):
    """The training rows of this device: ``bins`` (row-major ``(N, F)`` for the native
    kernel, feature-major ``(F, N)`` otherwise), ``y`` ``(N,)`` (or side data: ``(N, L)``,
    a dict of ``(N,)`` arrays; its partition spec is a prefix of every entry), ``w``
    ``(N,)`` (0 on padding), ``valid`` ``(N,)`` bool (real rows)."""

    bins: Any
    y: Any
    w: Any
    valid: Any

    @staticmethod
    def specs(axis, native):
        return Rows(P(axis, None) if native else P(None, axis), P(axis), P(axis), P(axis))


class Shared(NamedTuple):
    """Arrays every device holds whole: ``cuts_ext`` ``(F, B)`` bin thresholds,
    ``forward_ok`` ``(F,)``, ``offsets`` ``(n_shards,)`` first global row of each shard,
    ``n_total`` real rows of all shards, ``gidx`` the ``(G_b, S_b)`` group index
    buckets (group losses, ``groups.group_buckets``; a ``(1, 1)`` zeros array
    otherwise), ``cats`` the categorical features' ``categorical.CatInfo`` (None when
    every feature is numeric: the program is then the one without categorical
    splits)."""

    cuts_ext: Any
    forward_ok: Any
    offsets: Any
    n_total: Any
    gidx: Any
    cats: Any = None


class Hyper(NamedTuple):
    """One model's traced numbers (float32 scalars unless said): the tree's
    regularisation, the ``hessian="clip"`` floor, the quantile refit's level,
    ``ratios`` ``(4,)`` (``sampling.FIELDS``), ``seed`` int32, ``loss_params``, the
    loss's continuous hyperparameters (a dict of arrays), ``constraints``, the
    ``constraints.ConstraintValues`` (None without constraints), and ``depth`` int32,
    the model's ``max_depth`` (what a program compiled for a bucket of depths grows,
    ``RoundSpec.depth_bucket``; None: the spec's ``max_depth``)."""

    reg_lambda: Any
    reg_alpha: Any
    gamma: Any
    min_child_weight: Any
    max_delta_step: Any
    hessian_floor: Any
    quantile_alpha: Any
    ratios: Any
    seed: Any
    loss_params: Any
    constraints: Any = None
    depth: Any = None

    def dyn(self, eta):
        """The tree builder's ``split.TreeHyper`` at learning rate ``eta``."""
        return TreeHyper(
            jnp.asarray(eta, jnp.float32),
            self.reg_lambda,
            self.reg_alpha,
            self.gamma,
            self.min_child_weight,
            self.max_delta_step,
        )


class Rounds(NamedTuple):
    """The rounds of one dispatch: ``r0`` (first round of the chunk, counted from this
    call's start), ``n_rounds`` (rounds of this call: later ones are skipped),
    ``round0`` (the model's rounds before this call, for the random streams), ``etas``
    ``(M, chunk)`` learning rates per model and round."""

    r0: Any
    n_rounds: Any
    round0: Any
    etas: Any


def empty_trees(spec: RoundSpec, n: int, cats: bool = False):
    """``n`` trees of one leaf of value 0 (dict of ``(n, M)`` arrays, values ``(n, M,
    K)`` for vector leaves; ``cats``: with empty category sets ``cat_bits`` ``(n, M,
    N_WORDS)``)."""
    M, K = spec.n_nodes, spec.n_outputs
    z_i = jnp.zeros((n, M), jnp.int32)
    z_f = jnp.zeros((n, M), jnp.float32)
    value = z_f if K == 1 or spec.class_trees else jnp.zeros((n, M, K), jnp.float32)
    out = dict(
        feature=z_i,
        tbin=z_i,
        threshold=z_f,
        default_left=jnp.zeros((n, M), bool),
        is_leaf=jnp.ones((n, M), bool),
        value=value,
        gain=z_f,
        cover=z_f,
    )
    if cats:
        out["cat_bits"] = jnp.zeros((n, M, N_WORDS), jnp.uint32)
    return out


def per_tree_rate(eta, P: int, zero):
    """XGBoost's learning rate of each of a forest's ``P`` trees, ``float32(eta / P)``
    correctly rounded, as a float32 scalar (``zero``: an int32 0 the compiler cannot
    see).

    Divided in float64 and rounded once to float32: a float64 quotient rounded to
    float32 is the correctly rounded float32 quotient (53 >= 2 * 24 + 2 bits, so the
    double rounding is harmless), whatever the backend does with a float32 division
    (on an H200 ``0.3f / 3`` came out as ``0.10000001``, not XGBoost's ``0.1``, and
    the forest's leaves were 1 ulp off). ``P`` goes through ``zero`` so that the
    compiler cannot turn the division by a constant into a product with ``1 / P``.

    >>> float(per_tree_rate(0.3, 3, jnp.int32(0))) == float(jnp.float32(0.3) / jnp.float32(3))
    True
    """
    with jax.enable_x64(True):
        quotient = jnp.asarray(eta, jnp.float32).astype(jnp.float64) / (zero + P).astype(
            jnp.float64
        )
        return quotient.astype(jnp.float32)


def _stored(tree, zero):
    """The tree with its leaf values rounded to float32 once, for storing AND margins.

    XLA's CPU backend may contract ``margin + w * eta`` into one fused multiply-add,
    skipping the rounding of ``w * eta`` that the stored tree (and so ``predict``) has;
    margins would then differ in the last bit from the stored model's predictions.
    Passing the values through their bits (xor with ``zero``, an int32 0 the compiler
    cannot see) pins the rounded product: nothing can be fused across it.
    """
    bits = jax.lax.bitcast_convert_type(tree["value"], jnp.int32) ^ zero
    return dict(tree, value=jax.lax.bitcast_convert_type(bits, jnp.float32))


FLAG_FIELDS = (
    "bad_round",
    "n_bad",
    "negative_round",
    "n_negative",
    "zero_round",
    "n_zero",
    "n_rows",
    "flat_round",
    "bad_cause",
)
"""A model's ``flag``, int32, carried over a training call's rounds: the first round
at which a non-finite number appeared (``BAD_CAUSES``), how many rows (or tree nodes)
had one, and (last) which cause it was, as an index of ``BAD_CAUSES``; the round with
the most rows of negative h (``autodiff.hessian_census``) and that count; the same for
rows whose h is 0 while g is not; the real rows of weight > 0; the first round at which
no row had positive curvature (the trees could only grow leaves of value 0). Rounds
are counted from the call's start, -1 when none."""

BAD_CAUSES = ("grad", "weighted", "value", "node_sums", "leaf_values", "margins")
"""What can turn non-finite in a round, checked in this order (the first found names
the round's cause), each a count of ``boost_round``'s census after ``autodiff.CENSUS``:
the loss's own g or h (before the sample weight) on real rows; g or h once multiplied
by the sample weight (the loss's were finite); the loss's value on real rows (g and h
finite: e.g. ``log`` of a negative number, or ``jnp.where(cond, nan, loss)``, whose
gradient is 0); the round's trees' node sums and gains (``cover``, ``gain``) and leaf
values (tree nodes); the margins after the round's trees are added (real rows)."""

N_CENSUS = 5 + len(BAD_CAUSES)


def new_flags(n_models: int) -> np.ndarray:
    """``(n_models, len(FLAG_FIELDS))`` int32 flags of models that ran no round yet."""
    return np.tile(np.array([-1, 0, -1, 0, -1, 0, 0, -1, -1], np.int32), (n_models, 1))


def uses_diagonal(spec) -> bool:
    """Whether the trees of ``spec`` use only the diagonal of ``K x K`` Hessians."""
    return spec.n_outputs > 1 and (spec.diagonal or not spec.multi_output_tree)


def _finite_rows(g, h):
    """``(N,)`` bool: rows whose g ``(N[, K])`` and h ``(N[, K, K])`` are all finite."""
    if g.ndim == 1:
        return jnp.isfinite(g) & jnp.isfinite(h)
    return jnp.all(jnp.isfinite(g), axis=1) & jnp.all(jnp.isfinite(h), axis=tuple(range(1, h.ndim)))


def gradients(spec, rows, shared, hyper, loss, margin, rk):
    """``(g, h, seen, raw_ok, value_ok)`` of every row of this device: g and h weighted,
    Hessian policy applied; ``seen`` the Hessian ``autodiff.hessian_census`` reads (None
    when the policy makes every h positive; for ``K`` outputs h is ``(N, K)``, the
    diagonal, when the trees use only that, ``uses_diagonal``); ``raw_ok`` ``(N,)``
    whether the loss's own g and h (before the weight) are finite, ``value_ok`` whether
    its value is (for a group loss: its group's value)."""
    if spec.group_max is not None:  # a group loss (jaxboost.engine.groups)
        g, h, value_ok = group_derivatives(
            loss,
            rows.y,
            margin,
            shared.gidx,
            jax.random.fold_in(rk, 2),
            exact_max=spec.group_max,
            hessian=spec.hessian,
            floor=hyper.hessian_floor,
            rows_in_order=spec.group_rows_in_order,
        )
        raw_ok = _finite_rows(g, h)
        g, h = g * rows.w, h * rows.w
        return g, h, (None if spec.hessian in ("clip", "constant") else h), raw_ok, value_ok
    g, h, seen = grad_hess(
        loss,
        rows.y,
        margin,
        None,
        hessian=spec.hessian,
        floor=hyper.hessian_floor,
        diagonal=uses_diagonal(spec),
        census=True,
    )
    raw_ok = _finite_rows(g, h)
    if getattr(loss, "value_check", True):  # Objective.value_check
        value_ok = jnp.isfinite(map_rows(loss, rows.y, margin))
    else:
        value_ok = jnp.ones(margin.shape[0], bool)
    w = rows.w
    g = g * w.reshape(w.shape + (1,) * (g.ndim - 1))
    h = h * w.reshape(w.shape + (1,) * (h.ndim - 1))  # (N,), (N, K) diagonal, (N, K, K)
    return g, h, seen, raw_ok, value_ok


def _count_nonfinite(trees, fields):
    """Entries of ``trees[f]`` (for ``f`` in ``fields``) that are NaN or infinite."""
    return sum(jnp.sum(~jnp.isfinite(trees[f]), dtype=jnp.int32) for f in fields)


class _Round(NamedTuple):
    """What ``boost_round``'s steps share: its arguments, the bound ``loss``, the sums
    and maxima over devices (``reduce``, ``reduce_max``), this device's first row id
    ``offset``, ``zero`` (an int32 0 the compiler cannot see, ``_stored``), the round's
    weighted ``g`` and ``h`` and ``keep``, the rows whose g and h are finite."""

    spec: Any
    rows: Any
    shared: Any
    hyper: Any
    loss: Any
    reduce: Any
    reduce_max: Any
    offset: Any
    zero: Any
    n_shards: int
    g: Any
    h: Any
    keep: Any


def boost_round(
    spec: RoundSpec,
    rows: Rows,
    shared: Shared,
    hyper: Hyper,
    margin,
    r,
    eta,
    *,
    axis=None,
    n_shards: int = 1,
):
    """One round of one model on this device's rows.

    Returns ``(margin, trees, census)``: the new margins, the round's trees (dict of
    ``(trees_per_round, M)`` arrays) and the ``(N_CENSUS,)`` int32 census over every
    device's rows: ``autodiff.hessian_census`` of this round's g and h (``census[0]``:
    the real rows whose weighted g or h was not finite; their g and h are zeroed), then
    one count per ``BAD_CAUSES``.
    """
    K, tpr = spec.n_outputs, spec.trees_per_round
    reduce = (lambda x: jax.lax.psum(x, axis)) if axis is not None else grow_identity
    reduce_max = (lambda x: jax.lax.pmax(x, axis)) if axis is not None else (lambda x: x)
    offset = shared.offsets[0] if axis is None else shared.offsets[jax.lax.axis_index(axis)]
    loss = bind_loss(spec.loss, hyper.loss_params)
    rk = round_key(jax.random.key(hyper.seed), r)
    zero = (hyper.seed < 0).astype(jnp.int32)  # 0, but not a compile-time constant
    dyn = hyper.dyn(eta)

    g, h, seen, raw_ok, value_ok = gradients(spec, rows, shared, hyper, loss, margin, rk)
    bad = ~_finite_rows(g, h)
    v = rows.valid
    # Every count of the round's rows before its trees, in one pass (count_rows): the
    # census (autodiff.hessian_census, its n_bad over the valid rows), then the causes.
    masks = [bad & v]
    if seen is not None:  # "clip", "constant": no h is zero or negative
        counted = v & (rows.w > 0)
        masks += census_masks(g, seen, counted, diagonal=uses_diagonal(spec))[1:]
    masks += [~raw_ok & v, bad & raw_ok & v, ~value_ok & raw_ok & v]
    counts = count_rows(*masks)
    if seen is None:
        counts = jnp.concatenate([counts[:1], jnp.zeros(4, jnp.int32), counts[1:]])
    rnd = _Round(
        spec, rows, shared, hyper, loss, reduce, reduce_max, offset, zero, n_shards, g, h, ~bad
    )
    P = spec.num_parallel_tree
    if P == 1:
        g, h, take = _sample(rnd, rk)
        trees, delta = _grow(rnd, margin, g, h, dyn, rk, take)
        margin = margin + delta
    else:  # a forest: P trees on this round's g and h, each with its own samples
        dyn = hyper.dyn(per_tree_rate(eta, P, zero))
        start = margin  # every tree of the round (and its refit) sees these margins
        if _forest_side_by_side(rnd):
            trees, deltas = _forest_trees_side_by_side(rnd, dyn, rk, P)
            margin = jax.lax.scan(lambda m, d: (m + d, None), margin, deltas)[0]
            trees = jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), trees)
            assert trees["feature"].shape[0] == tpr
            return _round_end(rnd, margin, trees, counts, K, v)

        def one_tree(margin, p):
            tk = tree_key(rk, p)
            gt, ht, take = _sample(rnd, tk)
            trees, delta = _grow(rnd, start, gt, ht, dyn, tk, take)
            return margin + delta, trees  # added tree by tree, as predict adds them

        margin, trees = jax.lax.scan(one_tree, margin, jnp.arange(P, dtype=INDEX_DTYPE))
        trees = jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), trees)
    assert trees["feature"].shape[0] == tpr
    return _round_end(rnd, margin, trees, counts, K, v)


def _round_end(rnd: "_Round", margin, trees, counts, K, v):
    """``(margin, trees, census)`` of the round: the census of its rows (``counts``,
    then the rows whose margins turned non-finite) and of its trees."""
    margin_ok = jnp.isfinite(margin) if K == 1 else jnp.all(jnp.isfinite(margin), axis=1)
    rows_counts = rnd.reduce(jnp.concatenate([counts, count_rows(~margin_ok & v)]))
    census = jnp.concatenate(
        [
            rows_counts[:8],
            jnp.stack(
                [  # trees: the same on every device
                    _count_nonfinite(trees, ("cover", "gain")),
                    _count_nonfinite(trees, ("value",)),
                    rows_counts[8],
                ]
            ),
        ]
    )
    return margin, trees, census


def _forest_side_by_side(rnd: "_Round") -> bool:
    """Whether a one-output forest's P trees are grown side by side on the cores
    (``grow.class_trees_in_parallel``, without refit or constraints)."""
    spec = rnd.spec
    if spec.n_outputs != 1 or spec.refit is not None or spec.constraints is not None:
        return False
    rules = SplitRules(rnd.shared.cats, None, rnd.hyper.depth if spec.depth_bucket else None)
    return class_trees_in_parallel(rnd.rows.bins, spec.tree_spec(), rnd.reduce, rules)


def _forest_trees_side_by_side(rnd: "_Round", dyn, rk, P):
    """A one-output forest's P trees in one native call: the samples and keys tree by
    tree, as the forest's scan makes them. ``(trees (P, 1, M), deltas (P, N))``."""

    def key_of(p):
        return tree_key(rk, p)

    G, H, _ = jax.lax.map(lambda p: _sample(rnd, key_of(p)), jnp.arange(P, dtype=INDEX_DTYPE))
    trees, deltas = _trees_side_by_side(rnd, G, H, dyn, lambda p: _sampler(rnd, key_of(p), 0))
    return jax.tree.map(lambda a: a[:, None], trees), deltas


def _trees_side_by_side(rnd: "_Round", G, H, dyn, sampler_of):
    """The trees of ``G``, ``H`` ``(T, N)`` (tree ``t``'s column sampler
    ``sampler_of(t)``) in one native call side by side on the cores
    (``grow.native_class_trees``), stored as ``_grow`` stores them: ``(trees, deltas
    (T, N))``, the same bit for bit as growing them one after another."""
    spec, shared = rnd.spec, rnd.shared
    ts = jnp.arange(G.shape[0], dtype=INDEX_DTYPE)
    colsample = None
    if spec.col_sampling:
        colsample = jax.lax.map(lambda t: sampler_of(t).native_args(), ts)
    depth = rnd.hyper.depth if spec.depth_bucket else None
    trees, leaves = native_class_trees(
        rnd.rows.bins,
        G,
        H,
        dyn,
        shared.cuts_ext,
        shared.forward_ok,
        colsample,
        spec.tree_spec(),
        depth,
        shared.cats,
    )

    def finish(a):
        tree, leaf = a
        tree = _stored(tree, rnd.zero)
        return tree, tree["value"][leaf]

    return jax.lax.map(finish, (trees, leaves))


def _sample(rnd: _Round, tk):
    """One tree's ``(g, h, take)``: g and h of the round's rows in the tree's row sample
    (``tk``: the tree's key; on the exact grid when ``spec.exact``) and ``take``, each
    row's float32 multiplicity in that sample (0 or 1; a bootstrap's draw count), 0 where
    g or h is not finite."""
    spec, rows, hyper, keep, g, h = rnd.spec, rnd.rows, rnd.hyper, rnd.keep, rnd.g, rnd.h
    K, n_total = spec.n_outputs, rnd.shared.n_total
    if spec.bootstrap:
        c = bootstrap_counts(
            tk,
            rows.w.shape[0],
            hyper.ratios[SUBSAMPLE],
            n_total,
            offset=rnd.offset,
            n_ids=rows.w.shape[0] * rnd.n_shards,
        )
        take = jnp.where(keep, c, 0.0)
        taken = take > 0
        gt = jnp.where(
            taken if K == 1 else taken[:, None], g * c.reshape(c.shape + (1,) * (g.ndim - 1)), 0.0
        )
        ht = jnp.where(
            taken.reshape(taken.shape + (1,) * (h.ndim - 1)),
            h * c.reshape(c.shape + (1,) * (h.ndim - 1)),
            0.0,
        )
    else:
        take = keep
        if spec.row_sampling:
            take = take & (
                row_mask(
                    tk,
                    rows.w.shape[0],
                    hyper.ratios[SUBSAMPLE],
                    offset=rnd.offset,
                    n_ids=rows.w.shape[0] * rnd.n_shards,
                )
                > 0
            )
        gt = jnp.where(take if K == 1 else take[:, None], g, 0.0)
        ht = jnp.where(take.reshape(take.shape + (1,) * (h.ndim - 1)), h, 0.0)
        take = take.astype(FLOAT_DTYPE)
    if spec.exact:  # every histogram sum exact, whatever the devices (engine.exact)
        gt = to_grid(gt, n_total, reduce_max=rnd.reduce_max)
        ht = to_grid(ht, n_total, reduce_max=rnd.reduce_max)
    return gt, ht, take


def _sampler(rnd: _Round, key, t):
    """The column sampler of output ``t``'s tree (``key``: the tree's), or None."""
    if not rnd.spec.col_sampling:
        return None
    return FeatureSampler(
        fold(fold(key, 1), t),
        rnd.hyper.ratios,
        rnd.shared.cuts_ext.shape[0],
        rnd.spec.max_depth,
        rnd.spec.col_kinds,
    )


def _bounds_of(cons, tree):
    """The tree without the node bounds of monotone constraints, and the bounds (None
    without them)."""
    if not (cons is not None and cons.monotone):
        return tree, None
    tree = dict(tree)
    return tree, (tree.pop("lower"), tree.pop("upper"))


def _grow(rnd: _Round, margin, g, h, dyn, key, take):
    """The trees of the round (or of one tree of a forest's round) on weighted g, h (rows
    outside the sample ``take`` already 0): ``(trees, delta)``, a dict of ``(n_outputs or
    1, M)`` arrays and every row's ``(N[, K])`` margin increment. ``key`` seeds the column
    sampling; ``margin`` is what a refit starts from."""
    spec, rows, shared, zero = rnd.spec, rnd.rows, rnd.shared, rnd.zero
    K = spec.n_outputs
    tspec = spec.tree_spec()
    cons = None
    if spec.constraints is not None:
        counts = None
        if spec.constraints.min_leaf:  # the rows this tree is grown on
            counts = ((take > 0) & rows.valid & (rows.w > 0)).astype(FLOAT_DTYPE)
        cons = TreeConstraints(spec.constraints, rnd.hyper.constraints, counts)
    rules = SplitRules(shared.cats, cons, rnd.hyper.depth if spec.depth_bucket else None)
    if K == 1:
        tree, leaf = grow_tree(
            rows.bins,
            g,
            h,
            dyn,
            shared.cuts_ext,
            shared.forward_ok,
            tspec,
            reduce=rnd.reduce,
            features=_sampler(rnd, key, 0),
            rules=rules,
        )
        tree, bounds = _bounds_of(cons, tree)
        tree = _refit(rnd, tree, leaf, margin, rows.w * take, dyn)
        if spec.refit is not None and bounds is not None:
            tree = clip_to_bounds(tree, bounds, dyn.learning_rate)
        tree = _stored(tree, zero)
        return jax.tree.map(lambda a: a[None], tree), tree["value"][leaf]
    if spec.multi_output_tree:
        tree, leaf = grow_vector_tree(
            rows.bins,
            g,
            h,
            dyn,
            shared.cuts_ext,
            shared.forward_ok,
            tspec,
            reduce=rnd.reduce,
            features=_sampler(rnd, key, 0),
        )
        tree = _stored(tree, zero)
        return jax.tree.map(lambda a: a[None], tree), tree["value"][leaf]

    # one tree per output, all from this round's g and h ((N, K): diagonal of H)
    if spec.refit is None and class_trees_in_parallel(rows.bins, tspec, rnd.reduce, rules):
        return _class_trees_side_by_side(rnd, g, h, dyn, key)

    def one_output(_, k):
        tree, leaf = grow_tree(
            rows.bins,
            g[:, k],
            h[:, k],
            dyn,
            shared.cuts_ext,
            shared.forward_ok,
            tspec,
            reduce=rnd.reduce,
            features=_sampler(rnd, key, k),
            rules=rules,
        )
        tree, bounds = _bounds_of(cons, tree)
        if spec.refit is not None:  # several targets or levels: each tree's own
            target = rnd.loss.target(k, rows.y)  # objectives.multi_target / multi_quantile
            tree = _refit(rnd, tree, leaf, margin[:, k], rows.w * take, dyn, target)
            if bounds is not None:
                tree = clip_to_bounds(tree, bounds, dyn.learning_rate)
        tree = _stored(tree, zero)  # its values are output k's: (M,), class trees held
        return None, (tree, tree["value"][leaf])  # one output per tree (Ensemble)

    _, (trees, deltas) = jax.lax.scan(one_output, None, jnp.arange(K, dtype=INDEX_DTYPE))
    return trees, deltas.T


def _class_trees_side_by_side(rnd: _Round, g, h, dyn, key):
    """``_grow``'s K class trees on small data, side by side on the cores
    (``_trees_side_by_side``): ``(trees, delta)`` as ``_grow``'s scan returns them."""
    trees, deltas = _trees_side_by_side(rnd, g.T, h.T, dyn, lambda k: _sampler(rnd, key, k))
    return trees, deltas.T  # tree k's values, output k's (class trees held so)


def _refit(rnd: _Round, tree, leaf, margin, w, dyn, target=None):
    """The one-output tree with its leaf values refit by ``spec.refit`` (unchanged when
    None) on the rows that grew it: ``w`` ``(N,)`` is each row's weight times its
    multiplicity in the tree's row sample (``_sample``), so rows left out of the sample
    count no more in the leaf values than in the splits (Friedman's stochastic gradient
    boosting; XGBoost's ``reg:absoluteerror`` and ``reg:quantileerror`` leave them out of
    their leaf quantiles too). ``target``: ``(loss, y, alpha)`` of one output's tree of
    a multi-target or multi-quantile model (``MultiTarget.target``; ``margin`` its
    ``(N,)`` margins; ``alpha`` None: the model's level), else the model's own."""
    spec, n_total = rnd.spec, rnd.shared.n_total
    loss, y, alpha = target if target is not None else (rnd.loss, rnd.rows.y, None)
    alpha = rnd.hyper.quantile_alpha if alpha is None else alpha
    if spec.refit in ("newton", "exact"):
        refit = refit_newton if spec.refit == "newton" else refit_exact
        sums = RowSums(rnd.reduce, n_total if spec.exact else None, rnd.reduce_max)
        return refit(tree, leaf, loss, y, margin, w, dyn, sums=sums)
    if spec.refit == "quantile":
        return refit_quantile(
            tree,
            leaf,
            y,
            margin,
            w,
            dyn,
            alpha=alpha,
            weighted=spec.weighted_quantile,
        )
    return tree


def update_flag(flag, r, census):
    """The ``flag`` (``FLAG_FIELDS``) after round ``r`` with ``census`` (``N_CENSUS``:
    ``autodiff.CENSUS``, then ``BAD_CAUSES``)."""
    n_neg, n_zero, n_rows, n_pos = (census[i] for i in range(1, 5))
    causes = census[5:]
    cause = jnp.argmax(causes > 0).astype(jnp.int32)  # the first cause found
    first = (flag[0] < 0) & jnp.any(causes > 0)
    more_neg = n_neg > flag[3]
    more_zero = n_zero > flag[5]
    flat = (flag[7] < 0) & (n_rows > 0) & (n_pos == 0) & (n_neg == 0) & (n_zero > 0)
    return jnp.stack(
        [
            jnp.where(first, r, flag[0]),
            jnp.where(first, causes[cause], flag[1]),
            jnp.where(more_neg, r, flag[2]),
            jnp.where(more_neg, n_neg, flag[3]),
            jnp.where(more_zero, r, flag[4]),
            jnp.where(more_zero, n_zero, flag[5]),
            jnp.maximum(flag[6], n_rows),
            jnp.where(flat, r, flag[7]),
            jnp.where(first, cause, flag[8]),
        ]
    )


def model_chunk(spec, chunk, rows, shared, hyper, margin, flag, rounds, *, axis, n_shards):
    """``chunk`` rounds of one model: a scan of ``boost_round`` (rounds at or past
    ``rounds.n_rounds`` are skipped and give empty trees).

    ``flag`` (``FLAG_FIELDS``, int32) records the first round at which a non-finite
    number appeared (``BAD_CAUSES``), how many rows had one and its cause, and the
    rounds of the most rows whose h could not help (``update_flag``); ``rounds.etas``
    is this model's ``(chunk,)`` learning rates. Returns ``(margin, flag, trees)`` with
    ``chunk * trees_per_round`` trees.
    """
    tpr = spec.trees_per_round

    def one_round(carry, i):
        margin, flag = carry
        r = rounds.r0 + i

        def run(margin):
            return boost_round(
                spec,
                rows,
                shared,
                hyper,
                margin,
                rounds.round0 + r,
                rounds.etas[i],
                axis=axis,
                n_shards=n_shards,
            )

        def skip(margin):
            return (
                margin,
                empty_trees(spec, tpr, shared.cats is not None),
                jnp.zeros(N_CENSUS, jnp.int32),
            )

        margin, trees, census = jax.lax.cond(r < rounds.n_rounds, run, skip, margin)
        return (margin, update_flag(flag, r, census)), trees

    (margin, flag), trees = jax.lax.scan(
        one_round, (margin, flag), jnp.arange(chunk, dtype=jnp.int32)
    )
    trees = jax.tree.map(lambda a: a.reshape((chunk * tpr,) + a.shape[2:]), trees)
    return margin, flag, trees


def _group_chunk(spec, chunk, rows, shared, hypers, state, rounds, count, *, axis, n_shards):
    """``model_chunk`` of each model of one group, one after another (a loop whose trip
    count ``count`` is traced: the body compiles the same for 1 model as for M).
    ``state``: the group's ``(margins, flags)``."""
    margins, flags = state
    n = margins.shape[0]
    out = empty_trees(spec, chunk * spec.trees_per_round, shared.cats is not None)
    out = jax.tree.map(lambda a: jnp.zeros((n,) + a.shape, a.dtype), out)

    def body(m, carry):
        margins, flags, out = carry
        take = functools.partial(jax.lax.dynamic_index_in_dim, index=m, keepdims=False)
        hyper = jax.tree.map(take, hypers)
        margin, flag, trees = model_chunk(
            spec,
            chunk,
            rows,
            shared,
            hyper,
            take(margins),
            take(flags),
            rounds._replace(etas=take(rounds.etas)),
            axis=axis,
            n_shards=n_shards,
        )

        def put(buf, x):
            return jax.lax.dynamic_update_index_in_dim(buf, x, m, 0)

        return (put(margins, margin), put(flags, flag), jax.tree.map(put, out, trees))

    return jax.lax.fori_loop(0, count, body, (margins, flags, out))


SMALL_ROUND_ROWS = 1 << 18
"""Rows below which the CPU round compiles with ``compile.SMALL_CPU_COMPILE``."""


def _small_rounds(specs, chunk, mesh, rows, *args, **kwargs) -> bool:
    return rows.w.shape[0] < SMALL_ROUND_ROWS


@backend_jit(static_argnames=("specs", "chunk", "mesh"), donate_argnums=(6,), small=_small_rounds)
def run_chunk(specs, chunk, mesh, rows, shared, hypers, margins, flags, rounds, counts):
    """``chunk`` rounds of every model, on one device or sharded over ``mesh``.

    Args:
      specs: static tuple of ``RoundSpec``, one per group of models.
      chunk: static rounds per dispatch.
      mesh: static one-axis mesh or None.
      rows, shared: ``Rows`` and ``Shared`` (see above).
      hypers: per group, a ``Hyper`` whose leaves have a leading model axis ``(M_g,)``.
      margins: per group ``(M_g, N[, K])`` float32 margins (donated).
      flags: per group ``(M_g, len(FLAG_FIELDS))`` int32: each model's ``flag`` (the
        first round at which a non-finite number appeared, how many rows had one and its
        cause; rows whose h could not help, see ``FLAG_FIELDS``).
      rounds: ``Rounds``; ``rounds.etas`` is a tuple of ``(M_g, chunk)`` per group.
      counts: ``(n_groups,)`` int32, models per group (the loops' trip counts).

    Returns:
      ``(margins, flags, trees)``: per group the new margins and flags, and per group a
      tuple with one dict per model of ``(chunk * tpr, nodes[, K])`` arrays (the
      chunk's trees, replicated). Each model's trees are outputs of their own, so the
      host takes them without indexing (which would dispatch, and for a new shape
      compile, one small program per field).
    """

    def program(rows, shared, hypers, margins, flags, rounds, counts, axis=None, n_shards=1):
        out = [
            _group_chunk(
                spec,
                chunk,
                rows,
                shared,
                hypers[g],
                (margins[g], flags[g]),
                rounds._replace(etas=rounds.etas[g]),
                counts[g],
                axis=axis,
                n_shards=n_shards,
            )
            for g, spec in enumerate(specs)
        ]
        out = [
            (m, f, tuple(jax.tree.map(operator.itemgetter(i), t) for i in range(m.shape[0])))
            for m, f, t in out
        ]
        return tuple(zip(*out)) if out else ((), (), ())

    args = (rows, shared, hypers, margins, flags, rounds, counts)
    if mesh is None:
        return program(*args)
    (axis,) = mesh.axis_names
    rep = P()
    margin_specs = tuple(P(None, axis) for _ in specs)
    in_specs = (
        (Rows.specs(axis, specs[0].native),)
        + tuple(jax.tree.map(lambda _: rep, a) for a in (shared, hypers))
        + (
            margin_specs,
            jax.tree.map(lambda _: rep, flags),
            jax.tree.map(lambda _: rep, rounds),
            rep,
        )
    )
    fn = jax.shard_map(
        functools.partial(program, axis=axis, n_shards=mesh.size),
        mesh=mesh,
        in_specs=in_specs,
        out_specs=(margin_specs, rep, rep),
        check_vma=False,
    )
    return fn(*args)
