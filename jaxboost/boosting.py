"""``train()``: the boosting loop.

Each round is ``g, h = grad_hess(loss, y, margin) -> grow one tree -> margin += tree``,
compiled as one step; ``ROUNDS_PER_DISPATCH`` rounds run per call through ``lax.scan``,
so the host only hears from the device once per chunk (to read the non-finite-gradient
flag, one chunk behind so the device never idles waiting for the host).
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from objectives import Objective
from objectives._base import HESSIAN_POLICIES

from . import _validation
from . import distributed as dist
from .autodiff import HESSIAN_FLOOR, check_loss, fit_base_margin, grad_hess, loss_name, n_outputs_of
from .binning import apply_bins, compute_bin_edges
from .booster import Booster
from .callbacks import CallbackEnv, EarlyStopping, Progress
from .errors import DataError, LossError
from .exact import check_rows, to_grid
from .groups import EXACT_MAX_GROUP, group_grad_hess, group_index
from .grow import grow_tree, grow_vector_tree
from .params import TreeParams
from .refit import refit_newton, refit_quantile
from .sampling import FIELDS as SAMPLING_FIELDS
from .sampling import SUBSAMPLE, FeatureSampler, round_key, row_mask
from .sharding import auto_mesh, check_mesh
from .split import ETA
from .tree import Ensemble, binned_leaf

ROUNDS_PER_DISPATCH = 10


def resolve_objective(objective):
    """A catalogue name -> its entry; entries and callables pass through.

    Raises ``ValueError`` for an unknown name (listing the catalogue) and ``TypeError``
    for anything that is neither a name nor callable.
    """
    if isinstance(objective, str):
        from objectives import CATALOGUE, GROUP_CATALOGUE

        entry = CATALOGUE.get(objective, GROUP_CATALOGUE.get(objective))
        if entry is None:
            raise ValueError(f"unknown objective {objective!r}; catalogue entries: "
                             f"{sorted(CATALOGUE)}, group losses: "
                             f"{sorted(GROUP_CATALOGUE)}, or pass any callable "
                             f"loss(y, pred)")
        return entry
    if not callable(objective):
        raise TypeError(f"objective must be a callable loss(y, pred) -> scalar or an "
                        f"objectives entry, got {type(objective).__name__}")
    return objective


def _empty_tree(M, K=1):
    z_i = jnp.zeros(M, jnp.int32)
    z_f = jnp.zeros(M, jnp.float32)
    value = z_f if K == 1 else jnp.zeros((M, K), jnp.float32)
    return dict(feature=z_i, tbin=z_i, threshold=z_f, default_left=jnp.zeros(M, bool),
                is_leaf=jnp.ones(M, bool), value=value, gain=z_f, cover=z_f)


def _stored(tree, zero):
    """The tree with its leaf values rounded to float32 once, for storing AND margins.

    XLA's CPU backend may contract ``margin + w * eta`` into one fused multiply-add,
    skipping the rounding of ``w * eta`` that the stored tree (and so ``predict``) has;
    margins then differ in the last bit from the stored model's predictions, and
    training continued from a saved model drifts from an uninterrupted run. Passing the
    values through their bits (xor with ``zero``, an int32 0 the compiler cannot see)
    pins the rounded product: nothing can be fused across it.
    """
    bits = jax.lax.bitcast_convert_type(tree["value"], jnp.int32) ^ zero
    return dict(tree, value=jax.lax.bitcast_convert_type(bits, jnp.float32))


def _rounds(state, flag, r0, n_rounds, bins, y, w, valid, dyn, etas, ratios, seed, round0,
            cuts_ext, forward_ok, offsets, n_total, evals, *, loss, max_depth, max_bin, chunk,
            axis, clipped, any_forward, native, hessian="exact", floor=1e-6, refit=None,
            n_outputs=1, strategy="one_output_per_tree", diagonal=False, row_sampling=False,
            col_sampling=False, metrics=(), link=None, n_shards=1, exact=False,
            native_threads=None, group_max=None, gidx=None):
    """Rounds ``r0 .. r0 + chunk - 1`` on this device's rows (skipping ``>= n_rounds``).

    ``state`` is ``(margin, eval_margins)`` (margins ``(N,)`` or ``(N, K)``), ``flag``
    the non-finite-gradient record (see ``_train_chunk``).
    Each round makes ``trees_per_round`` trees, updates the margins of the training rows
    and of every evaluation set, and evaluates ``metrics`` on each evaluation set.
    ``axis`` names the mesh axis rows are sharded over (``None``: one device); evaluation
    sets are replicated. ``offsets`` (``(n_shards,)``) holds each shard's first global
    row number (for ``subsample``), ``n_total`` the real rows of all shards; ``exact``
    puts g and h on the quantization grid of ``jaxboost.exact`` every round.
    """
    M = 2 ** (max_depth + 1) - 1
    K = n_outputs
    F = cuts_ext.shape[0]
    reduce = (lambda x: jax.lax.psum(x, axis)) if axis is not None else (lambda x: x)
    reduce_max = (lambda x: jax.lax.pmax(x, axis)) if axis is not None else (lambda x: x)
    threads = native_threads
    offset = offsets[0] if axis is None else offsets[jax.lax.axis_index(axis)]
    grow = functools.partial(grow_tree, max_depth=max_depth, max_bin=max_bin, reduce=reduce,
                             clipped=clipped, any_forward=any_forward, native=native,
                             native_threads=threads)
    seed_key = jax.random.key(seed)
    zero = (seed < 0).astype(jnp.int32)  # 0, but not a compile-time constant

    def sampler(rk, t):
        if not col_sampling:
            return None
        return FeatureSampler(jax.random.fold_in(jax.random.fold_in(rk, 1), t), ratios, F,
                              max_depth)

    def scalar_tree(g, h, margin, dyn_r, rk):
        tree, leaf = grow(bins, g, h, dyn_r, cuts_ext, forward_ok, features=sampler(rk, 0))
        if refit == "newton":
            tree = refit_newton(tree, leaf, loss, y, margin, w, dyn_r, reduce=reduce,
                                exact_rows=n_total if exact else None,
                                reduce_max=reduce_max)
        elif refit is not None:  # ("quantile", alpha)
            tree = refit_quantile(tree, leaf, y, margin, w, dyn_r, alpha=refit[1])
        tree = _stored(tree, zero)
        return tree, tree["value"][leaf]

    def trees_of_round(g, h, margin, dyn_r, rk):
        """(trees with a leading trees-per-round axis, margin increment)."""
        if K == 1:
            tree, delta = scalar_tree(g, h, margin, dyn_r, rk)
            return jax.tree.map(lambda a: a[None], tree), delta
        if strategy == "multi_output_tree":
            tree, leaf = grow_vector_tree(
                bins, g, h, dyn_r, cuts_ext, forward_ok, max_depth=max_depth, max_bin=max_bin,
                diagonal=diagonal, native=native, reduce=reduce, any_forward=any_forward,
                native_threads=threads, features=sampler(rk, 0))
            tree = _stored(tree, zero)
            return jax.tree.map(lambda a: a[None], tree), tree["value"][leaf]

        # One tree per output, all from this round's g and h (diagonal of H).
        def one_output(_, k):
            tree, leaf = grow(bins, g[:, k], h[:, k, k], dyn_r, cuts_ext, forward_ok,
                              features=sampler(rk, k))
            tree = _stored(tree, zero)
            delta = tree["value"][leaf]
            tree = dict(tree, value=tree["value"][:, None] * jax.nn.one_hot(k, K))
            return None, (tree, delta)

        _, (trees, deltas) = jax.lax.scan(one_output, None, jnp.arange(K))
        return trees, deltas.T

    tpr = K if (K > 1 and strategy == "one_output_per_tree") else 1

    def evaluate(em, ey, ew, eq):
        resp = em if link is None else link(em)
        return jnp.stack([m.fn(ey, em if m.on == "margin" else resp,
                               eq if m.grouped else ew).astype(jnp.float32)
                          for m in metrics])

    def evaluate_chunk(trees, em, ebins, ey, ew, eq):
        """Margins after each round of the chunk and the metrics there, batched.

        All of the chunk's trees route the evaluation rows at once and the metrics run
        vmapped over the rounds (one batched sort for AUC), which costs far less than
        the same work spread over the rounds one at a time.
        """
        leaves = jax.vmap(lambda t: binned_leaf(t, ebins, max_depth=max_depth,
                                                max_bin=max_bin))(trees)  # (T, Ne)
        vals = jax.vmap(lambda v, lf: v[lf])(trees["value"], leaves)  # (T, Ne[, K])
        vals = jnp.sum(vals.reshape((chunk, tpr) + vals.shape[1:]), axis=1)

        def add(m, d):  # round by round in float32, as predict accumulates
            m = m + d
            return m, m

        em, stages = jax.lax.scan(add, em, vals)
        if not metrics:
            return em, jnp.zeros((chunk, 0), jnp.float32)
        return em, jax.vmap(lambda m: evaluate(m, ey, ew, eq))(stages)

    def one_round(carry, i):
        margin, flag = carry
        r = r0 + i
        rk = round_key(seed_key, round0 + r)
        dyn_r = dyn.at[ETA].set(etas[i])

        def run(margin):
            if group_max is not None:  # a group loss (jaxboost.groups)
                g, h = group_grad_hess(loss, y, margin, w, gidx, jax.random.fold_in(rk, 2),
                                       exact_max=group_max, hessian=hessian, floor=floor)
            else:
                g, h = grad_hess(loss, y, margin, w, hessian=hessian, floor=floor)
            bad = ~(jnp.isfinite(g) & jnp.isfinite(h) if K == 1 else
                    jnp.all(jnp.isfinite(g), axis=1) & jnp.all(jnp.isfinite(h), axis=(1, 2)))
            n_bad = reduce(jnp.sum(bad & valid, dtype=jnp.int32))
            keep = ~bad
            if row_sampling:
                keep = keep & (row_mask(rk, y.shape[0], ratios[SUBSAMPLE], offset=offset,
                                        n_ids=y.shape[0] * n_shards) > 0)
            g = jnp.where(keep if K == 1 else keep[:, None], g, 0.0)
            h = jnp.where(keep if K == 1 else keep[:, None, None], h, 0.0)
            if exact:  # every histogram sum exact, whatever the devices (jaxboost.exact)
                g = to_grid(g, n_total, reduce_max=reduce_max)
                h = to_grid(h, n_total, reduce_max=reduce_max)
            trees, delta = trees_of_round(g, h, margin, dyn_r, rk)
            return margin + delta, trees, n_bad

        def skip(margin):
            empty = _empty_tree(M, K)
            return margin, jax.tree.map(lambda a: jnp.stack([a] * tpr), empty), jnp.int32(0)

        margin, trees, n_bad = jax.lax.cond(r < n_rounds, run, skip, margin)
        first = (flag[0] < 0) & (n_bad > 0)
        flag = jnp.where(first, jnp.stack([r, n_bad]), flag)
        return (margin, flag), trees

    (margin, flag), trees = jax.lax.scan(one_round, (state[0], flag),
                                         jnp.arange(chunk, dtype=jnp.int32))
    trees = jax.tree.map(lambda a: a.reshape((chunk * tpr,) + a.shape[2:]), trees)
    emargins, values = [], []
    for em, (eb, ey, ew, eq) in zip(state[1], evals):
        em, v = evaluate_chunk(trees, em, eb, ey, ew, eq)
        emargins.append(em)
        values.append(v)
    values = (jnp.stack(values, axis=1) if values
              else jnp.zeros((chunk, 0, len(metrics)), jnp.float32))
    return (margin, tuple(emargins)), flag, Ensemble(**trees), values


_EXTRA_STATIC = ("hessian", "floor", "refit", "n_outputs", "strategy", "diagonal",
                 "row_sampling", "col_sampling", "metrics", "link", "exact", "native_threads",
                 "group_max")


@functools.partial(jax.jit, static_argnames=("loss", "max_depth", "max_bin", "chunk", "mesh",
                                             "clipped", "any_forward", "native")
                   + _EXTRA_STATIC,
                   donate_argnums=(0,))
def _train_chunk(state, flag, r0, n_rounds, bins, y, w, valid, dyn, etas, ratios, seed, round0,
                 cuts_ext, forward_ok, offsets, n_total, evals, gidx=None, *, loss, max_depth,
                 max_bin, chunk, mesh, clipped, any_forward, native, **extra):
    """One dispatch of ``chunk`` rounds; sharded over ``mesh`` when one is given.

    ``state`` = ``(margin, eval_margins)`` (donated); ``flag`` is ``(2,)`` int32: the
    first round whose g or h had a non-finite value (-1 if none) and how many rows had
    one. Returns ``(state, flag, trees, metric values (chunk, n_eval_sets, n_metrics))``.
    """
    static = dict(loss=loss, max_depth=max_depth, max_bin=max_bin, chunk=chunk,
                  clipped=clipped, any_forward=any_forward, native=native, **extra)
    args = (state, flag, r0, n_rounds, bins, y, w, valid, dyn, etas, ratios, seed, round0,
            cuts_ext, forward_ok, offsets, n_total, evals)
    if mesh is None:
        return _rounds(*args, axis=None, gidx=gidx, **static)
    (axis,) = mesh.axis_names
    rows, rep = P(axis), P()
    eval_specs = tuple((rep, rep, rep, rep) for _ in evals)
    state_spec = (rows, tuple(rep for _ in evals))
    fn = jax.shard_map(
        functools.partial(_rounds, axis=axis, n_shards=mesh.size, **static), mesh=mesh,
        in_specs=(state_spec, rep, rep, rep, P(axis, None) if native else P(None, axis),
                  rows, rows, rows, rep, rep, rep, rep, rep, rep, rep, rep, rep, eval_specs),
        out_specs=(state_spec, rep, rep, rep), check_vma=False)
    return fn(*args)


def _resolve_outputs(loss, n_outputs) -> int:
    """K, the margins per row: the objective's, or ``n_outputs`` for plain callables."""
    if n_outputs is not None:
        n_outputs = _check_int("n_outputs", n_outputs, 1)
    if isinstance(loss, Objective):
        k = n_outputs_of(loss)
        if n_outputs is not None and n_outputs != k:
            raise ValueError(f"n_outputs={n_outputs} but {loss!r} has {k} output(s)")
        return k
    return 1 if n_outputs is None else n_outputs


def _resolve_policies(loss, hessian, floor, refit, K, mesh):
    """Validated ``(hessian policy, refit spec)``; ``"auto"`` takes the objective's."""
    is_obj = isinstance(loss, Objective)
    if hessian == "auto":
        hessian = loss.hessian if is_obj else "exact"
    if hessian not in HESSIAN_POLICIES:
        raise ValueError(f"hessian must be 'auto' or one of {HESSIAN_POLICIES}, "
                         f"got {hessian!r}")
    if hessian == "expected" and (not is_obj or loss.expected_hessian is None):
        raise ValueError(f"hessian='expected' needs an objective with an expected "
                         f"(Fisher) Hessian; {loss_name(loss)} has none. Use 'exact', "
                         f"'clip' or 'constant'")
    if isinstance(floor, bool) or not isinstance(floor, numbers.Real) or \
            not (math.isfinite(floor) and floor > 0):
        raise ValueError(f"hessian_floor must be a finite number > 0, got {floor!r}")
    if isinstance(refit, str) and refit == "auto":
        refit = loss.refit if is_obj else None
    if refit is False:
        refit = None
    if refit not in (None, "newton", "quantile"):
        raise ValueError(f"refit must be 'auto', 'newton', 'quantile' or None, got {refit!r}")
    if refit is not None and K > 1:
        raise ValueError(f"refit={refit!r} is for single-output losses; this one has "
                         f"{K} outputs")
    if refit == "quantile":
        if mesh is not None:
            raise ValueError("refit='quantile' needs every row on one device; train "
                             "without mesh= or use refit='newton'")
        alpha = loss.hyperparameters.get("alpha", 0.5) if is_obj else 0.5
        if not 0.0 < float(alpha) < 1.0:
            raise ValueError(f"refit='quantile' needs alpha in (0, 1), got {alpha!r}")
        return hessian, ("quantile", float(alpha))
    return hessian, refit


def _check_base_margin(base_margin, K):
    if K == 1:
        if isinstance(base_margin, bool) or not isinstance(base_margin, numbers.Real):
            raise TypeError(f"base_margin must be a number or None, got "
                            f"{type(base_margin).__name__}")
        if not math.isfinite(base_margin):
            raise ValueError(f"base_margin must be finite, got {base_margin}")
        return float(np.float32(base_margin))
    try:
        b = np.asarray(base_margin, np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"base_margin must be None or {K} numbers, got "
                        f"{type(base_margin).__name__}") from None
    if b.ndim == 0:
        b = np.full(K, b, np.float32)
    if b.shape != (K,) or not np.all(np.isfinite(b)):
        raise ValueError(f"base_margin must be {K} finite numbers (one per output), "
                         f"got {base_margin!r}")
    return b


def _use_native() -> bool:
    """Whether training uses the native histogram kernel (see ``jaxboost.native``).

    Only on CPU backends; ``JAXBOOST_NATIVE=0`` turns it off, and any build failure
    falls back to the pure-JAX histogram.
    """
    if jax.default_backend() != "cpu":
        return False
    from . import native

    return native.available()


def _check_int(name, v, low):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__} {v!r}")
    if v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    return int(v)


def train(objective, X, y, *, n_rounds: int = 100, learning_rate=0.3,
          max_depth: int = 6, reg_lambda: float = 1.0, reg_alpha: float = 0.0,
          gamma: float = 0.0, min_child_weight: float = 1.0, max_delta_step: float = 0.0,
          max_bin: int = 256, base_margin=None, sample_weight=None, seed=None,
          subsample: float = 1.0, colsample_bytree: float = 1.0,
          colsample_bylevel: float = 1.0, colsample_bynode: float = 1.0,
          eval_set=None, eval_metric=None, early_stopping_rounds=None,
          early_stopping_metric=None, early_stopping_data=None, min_delta: float = 0.0,
          callbacks=None, verbose="auto", init_model=None,
          hessian: str = "auto", hessian_floor: float = HESSIAN_FLOOR, refit="auto",
          n_outputs=None, multi_strategy: str = "one_output_per_tree",
          multi_hessian: str = "full", mesh=None, quantize: bool = False,
          feature_names=None, group=None, eval_group=None) -> Booster:
    r"""Train gradient-boosted trees on any per-row JAX loss.

    Each round computes per-row :math:`g_i = w_i \partial_f \ell(y_i, f_i)` and
    :math:`h_i = w_i \partial^2_f \ell(y_i, f_i)` by autodiff, grows one level-wise tree
    of depth ``max_depth`` on histograms of g and h, and adds
    ``learning_rate * w*`` of each row's leaf to its margin, where
    :math:`w^* = -T_\alpha(G)/(H + \lambda)` (see ``jaxboost.split``). Rounds run on the
    device in chunks of ``ROUNDS_PER_DISPATCH``; evaluation metrics are computed there
    too and reach the host once per chunk.

    Args:
      objective: a per-row loss ``loss(y, pred) -> scalar`` written in JAX, an entry
        of the ``objectives`` catalogue (e.g. ``objectives.logistic``), or its name.
      X: ``(N, F)`` features, NaN = missing: an array, or a pandas/polars DataFrame of
        numeric or bool columns (string column names become ``feature_names``). In a
        multi-process job, this process's rows, or a global ``jax.Array`` whose rows
        are split over the processes (``jax.make_array_from_process_local_data``);
        the same for ``y`` and ``sample_weight``.
      y: ``(N,)`` labels (an array or a Series).
      n_rounds: boosting rounds (trees; ``K`` trees per round for ``K`` outputs with
        ``multi_strategy="one_output_per_tree"``).
      learning_rate: shrinkage ``eta`` applied to every leaf value: a number, or any
        callable of the round index returning one (an optax schedule such as
        ``optax.exponential_decay(0.3, 10, 0.5)`` works as is). Rounds count from the
        model's first round, also when continuing an ``init_model``.
      max_depth: depth of every tree (static: a new value compiles a new program).
      reg_lambda: L2 penalty ``lambda`` on leaf values.
      reg_alpha: L1 penalty ``alpha`` on leaf values.
      gamma: minimum gain to keep a split, applied by bottom-up post-pruning.
      min_child_weight: minimum sum of h in each child of a split.
      max_delta_step: if > 0, leaf values (before ``learning_rate``) are clipped to
        ``+-max_delta_step``.
      max_bin: bins per feature, including one reserved for missing values (<= 256).
      base_margin: constant initial margin (K numbers for K outputs); ``None`` fits the
        constant minimising :math:`\sum_i w_i \ell(y_i, c)` for any loss.
      sample_weight: optional ``(N,)`` non-negative row weights: they scale g and h,
        weight the bin quantiles and the base-margin fit.
      seed: seed of every random draw (row and column sampling, quantile sketches of
        very large data). ``None``: 0, or the seed ``init_model`` was trained with. The
        same seed gives a bit-identical model.
      subsample: fraction of rows (Bernoulli per row and round) whose g and h enter each
        round's trees, in ``(0, 1]``.
      colsample_bytree, colsample_bylevel, colsample_bynode: nested fractions of the
        features each tree, level and node may split on, in ``(0, 1]`` (see
        ``jaxboost.sampling``).
      eval_set: evaluation data, ``[(X, y), ...]`` or ``[(X, y, sample_weight), ...]``
        (named ``validation_0``, ``validation_1``, ...), or a dict ``{name: (X, y)}``.
        Evaluated after every round, on the device.
      eval_metric: a metric name, ``jaxboost.metrics.Metric`` or JAX callable
        ``metric(y, pred) -> scalar``, or a list of them; default: the objective's own
        metric (``"objective"``, the mean loss, for plain callables). See
        ``jaxboost.metrics``.
      early_stopping_rounds: stop when the watched metric has not improved for this many
        rounds; the returned model is cut to its best round (``best_iteration``,
        ``best_score``). Needs ``eval_set``.
      early_stopping_metric, early_stopping_data: what early stopping watches (default:
        the last metric on the last evaluation set). Whether larger is better comes
        from the metric's definition.
      min_delta: the least change that counts as an improvement.
      callbacks: callables ``callback(env) -> bool`` called after every round with a
        ``jaxboost.callbacks.CallbackEnv``; ``True`` stops training (e.g.
        ``jaxboost.callbacks.Checkpoint(path, every=10)``).
      verbose: ``True``: a progress bar with the latest metrics (tqdm when installed,
        a plain line on stderr otherwise); ``False``: silent; ``"auto"``: shown only for
        runs that last longer than 5 s.
      init_model: a ``Booster`` to continue from (its trees, bin edges, base margin,
        seed and round count): ``train(..., n_rounds=4, init_model=train(..., n_rounds=4))``
        gives the same model as ``n_rounds=8``, bit for bit.
      hessian: the Hessian the trees use: ``"exact"`` (autodiff), ``"clip"`` (raised to
        ``hessian_floor``; eigenvalues for K x K Hessians), ``"constant"`` (1 per row:
        plain gradient boosting), ``"expected"`` (the objective's Fisher information),
        or ``"auto"``: the objective's default (``"exact"`` for plain callables). See
        ``jaxboost.autodiff.apply_hessian_policy``.
      hessian_floor: floor of ``hessian="clip"`` (default ``1e-6``).
      refit: re-solve leaf values on the true loss after each tree is grown:
        ``"newton"``, ``"quantile"`` (weighted ``alpha``-quantile of residuals, ``alpha``
        from the objective, else 0.5), ``None`` (no refit) or ``"auto"`` (the
        objective's default; none for plain callables). See ``jaxboost.refit``.
      n_outputs: margins per row ``K`` for a plain callable whose ``pred`` is a ``(K,)``
        vector; catalogue entries know theirs (softmax infers it from the labels).
      multi_strategy: for ``K > 1``: ``"one_output_per_tree"`` (K trees per round, each
        on one output's g and the diagonal of H, as XGBoost's default) or
        ``"multi_output_tree"`` (one tree with vector leaves solving
        :math:`(H + \lambda I) w = -G`).
      multi_hessian: for ``"multi_output_tree"``: ``"full"`` (K x K Hessians) or
        ``"diagonal"`` (cheaper for large K).
      mesh: a one-axis ``jax.sharding.Mesh`` to shard rows over; ``None`` trains on one
        device on CPU (fastest there, see ``jaxboost.sharding``) and on every local device
        of a GPU/TPU backend when the data is large enough. In a multi-process job
        (``jaxboost.distributed``) each process passes its own rows and the mesh spans
        every process (default: ``jaxboost.distributed.default_mesh()``).
      quantize: put g and h on a power-of-two grid every round (24 significant bits of
        the round's largest value) so that every histogram sum is exact: the model is
        then bit-identical whatever the number of devices or processes (see
        ``jaxboost.exact``). Default ``False``: float sums, equal across layouts to
        about 1e-6.
      feature_names: ``F`` unique strings naming the columns of an array ``X`` (for a
        DataFrame they come from its columns, and must equal them if given). Stored as
        ``booster.feature_names`` and in model files; ``predict`` then checks that
        DataFrames have exactly these columns, in this order. Default: the
        ``init_model``'s names, else none.
      group: ``(N,)`` group ids (queries, risk sets) for a group loss
        ``loss(y_group, pred_group, mask) -> scalar`` that couples the rows of a group
        (see ``jaxboost.groups``): g by autodiff, h the exact Hessian diagonal for
        groups of up to 64 rows, a Hutchinson estimate above. One device, one output;
        the base margin defaults to 0.
      eval_group: query ids of the evaluation sets, for the ranking metrics ``ndcg``,
        ``map``, ``ndcg@k`` and ``map@k`` (``jaxboost.ranking``): a list with one
        ``(n,)`` array (or None) per evaluation set, or a dict keyed like ``eval_set``.

    Returns:
      ``Booster`` with ``history`` (``{data_name: {metric: [per round]}}``),
      ``best_iteration`` and ``best_score`` (with early stopping, else None).

    Raises:
      DataError: bad X, y, sample_weight or evaluation data (a ``ValueError``).
      ValueError, TypeError: bad parameters (raised before any training).
      LossError: the loss returns a non-scalar per row, or its g or h is NaN/inf at
        some round (the error names the round and the row count, and carries the
        model trained before it as ``.booster``).

    Example:
      >>> import jax.numpy as jnp, numpy as np, jaxboost
      >>> def loss(y, pred):
      ...     return jnp.logaddexp(0.0, pred) - y * pred
      >>> X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
      >>> y = (X[:, 0] > 0).astype(np.float32)
      >>> bst = jaxboost.train(loss, X, y, n_rounds=10, max_depth=2)
      >>> float(((bst.predict(X, output_margin=True) > 0) == y).mean())
      1.0
      >>> bst = jaxboost.train("logistic", X[:150], y[:150], n_rounds=50,
      ...                      eval_set=[(X[150:], y[150:])], early_stopping_rounds=5)
      >>> bst.best_iteration < 50, list(bst.history["validation_0"])
      (True, ['logloss'])
    """
    from .compile_cache import ensure as _compile_cache_on  # see jaxboost.compile_cache
    _compile_cache_on()
    # --- parameters, all checked before any work ---------------------------------------
    n_rounds = _check_int("n_rounds", n_rounds, 0)
    if init_model is not None and not isinstance(init_model, Booster):
        raise TypeError(f"init_model must be a jaxboost Booster, got "
                        f"{type(init_model).__name__}")
    if seed is None:
        seed = (init_model.train_state.get("seed", 0)
                if init_model is not None and init_model.train_state else 0)
    seed = _check_int("seed", seed, 0)
    if seed > 2 ** 31 - 1:
        raise ValueError(f"seed must be < 2**31, got {seed}")
    start_round = 0 if init_model is None else len(init_model)
    lr_of = _learning_rate_schedule(learning_rate)
    params = TreeParams(max_depth=max_depth, max_bin=max_bin, learning_rate=lr_of(start_round),
                        reg_lambda=reg_lambda, reg_alpha=reg_alpha, gamma=gamma,
                        min_child_weight=min_child_weight, max_delta_step=max_delta_step)
    ratios = _sampling_ratios(subsample, colsample_bytree, colsample_bylevel, colsample_bynode)
    if verbose not in (True, False, "auto"):
        raise ValueError(f"verbose must be True, False or 'auto', got {verbose!r}")
    callbacks = list(callbacks or [])
    for cb in callbacks:
        if not callable(cb):
            raise TypeError(f"callbacks must be callables callback(env) -> bool, got "
                            f"{type(cb).__name__}")
    loss = resolve_objective(objective)

    # Global arrays whose rows are split over processes: each process takes its own.
    X, y, sample_weight = (dist.local_rows(a) for a in (X, y, sample_weight))
    Xf = _validation.as_features(X)
    n_rows, n_features = Xf.shape
    names = _feature_names(X, feature_names, n_features, init_model)
    yf = _validation.as_labels(y, n_rows)
    wf = _validation.as_weights(sample_weight, n_rows)
    if isinstance(loss, Objective):
        try:
            loss.validate_labels(yf)
            loss = loss.resolve_outputs(yf)
            loss.validate_labels(yf)
        except ValueError as e:
            raise DataError(str(e)) from None
    K = _resolve_outputs(loss, n_outputs)
    if group is not None or _is_group_objective(loss):
        group, eval_metric = _check_group(group, n_rows, loss, K, mesh, eval_set, refit,
                                          hessian, eval_metric, yf)
        refit, hessian = None, ("exact" if hessian == "auto" else hessian)
        if base_margin is None:
            base_margin = 0.0
    hessian, refit_spec = _resolve_policies(loss, hessian, hessian_floor, refit, K, mesh)
    if multi_strategy not in ("one_output_per_tree", "multi_output_tree"):
        raise ValueError(f"multi_strategy must be 'one_output_per_tree' or "
                         f"'multi_output_tree', got {multi_strategy!r}")
    if multi_hessian not in ("full", "diagonal"):
        raise ValueError(f"multi_hessian must be 'full' or 'diagonal', got {multi_hessian!r}")
    tpr = K if (K > 1 and multi_strategy == "one_output_per_tree") else 1
    if group is None:
        check_loss(loss, jnp.zeros((), jnp.float32),
                   jnp.zeros(() if K == 1 else (K,), jnp.float32))
    if base_margin is not None:
        base_margin = _check_base_margin(base_margin, K)
    if init_model is not None:
        _check_init_model(init_model, params, n_features, K, tpr, base_margin)

    multi = dist.is_multiprocess()
    where = {"round": 0}
    guard = (dist.Watchdog(lambda: _where(where, callbacks)) if multi
             else contextlib.nullcontext())
    with guard:  # several processes: a lost peer ends this one with a clear message
        # Where the rows live: one device, a mesh, or a mesh spanning processes (their row
        # counts are exchanged here). Rows are padded to a size bucket with weight-0 copies
        # of row 0, so folds of similar size share compiled code and shards are equal.
        if mesh is not None:
            mesh = check_mesh(mesh, keep_single=multi)
        elif not multi:
            mesh = auto_mesh(n_rows)
        layout = dist.RowLayout(n_rows, mesh)
        mesh = layout.mesh
        if quantize:
            check_rows(layout.n_total)
        if init_model is not None:
            edges = init_model.bin_edges  # the trees' bins refer to these edges
        elif multi:
            edges = dist.agreed_bin_edges(Xf, params.max_bin, wf, seed, layout.n_total)
        else:
            edges = compute_bin_edges(Xf, params.max_bin, wf, seed=seed)
        evals = _eval_sets(eval_set, edges, loss, n_features, names, gather=multi,
                           eval_group=eval_group)
        metrics = _eval_metrics(eval_metric, loss, evals, K)
        early = None
        if early_stopping_rounds is not None:
            early = EarlyStopping(early_stopping_rounds, metric=early_stopping_metric,
                                  data=early_stopping_data, min_delta=min_delta)
            early.check([e.name for e in evals], [m.name for m in metrics])
            callbacks.append(early)
        if verbose and dist.is_writer():
            callbacks.insert(0, Progress(n_rounds, after_seconds=5.0 if verbose == "auto" else 0.0))

        n_pad = layout.block
        use_native = _use_native()
        bins_np, y_np, w_np, valid_np, cuts_ext, forward_ok = _rows_on_bins(
            Xf, yf, wf, edges, n_pad, params.max_bin, use_native)

        put_rows = layout.put
        bins_t = layout.put(bins_np, feature_major=not use_native)
        y_dev, w_dev, valid = put_rows(y_np), put_rows(w_np), put_rows(valid_np)

        if init_model is not None:
            base = init_model.base_margin
        elif base_margin is None:
            exact_rows = layout.n_total if quantize else None
            if multi:  # sums over every process's rows (the arrays are global)
                base = np.asarray(dist.local(fit_base_margin(loss, y_dev, w_dev, K,
                                                             exact_rows=exact_rows)))
            else:
                base = np.asarray(fit_base_margin(loss, jnp.asarray(y_np), jnp.asarray(w_np), K,
                                                  exact_rows=exact_rows))
            if not np.all(np.isfinite(base)):
                raise LossError(f"the loss {loss_name(loss)} gave a non-finite intercept when "
                                f"minimised over a constant (before round 0); pass "
                                f"base_margin= explicitly or check the loss", round=None)
        else:
            base = base_margin
        base = float(base) if K == 1 else np.asarray(base, np.float32)

        def start_margin(Xraw, n, n_total):
            """Margins a model starts from: the init model's, or the base margin."""
            shape = (n_total,) if K == 1 else (n_total, K)
            out = np.broadcast_to(np.asarray(base, np.float32), shape).copy()
            if init_model is not None and n:
                m = init_model.predict(Xraw, output_margin=True)
                out[:n] = m
                out[n:] = m[0]
            return out

        margin = put_rows(start_margin(Xf, n_rows, n_pad))
        eval_margins = tuple(layout.replicate(start_margin(e.X, e.n, e.n)) for e in evals)
        eval_args = tuple((layout.replicate(e.bins), layout.replicate(e.y),
                           layout.replicate(e.w), layout.replicate(e.queries))
                          for e in evals)
        state = (margin, eval_margins)
        flag = np.array([-1, 0], np.int32)
        chunk = ROUNDS_PER_DISPATCH
        static = dict(loss=loss, max_depth=params.max_depth, max_bin=params.max_bin,
                      chunk=chunk, mesh=mesh,
                      clipped=params.max_delta_step > 0, any_forward=bool(forward_ok.any()),
                      native=use_native, hessian=hessian, floor=float(hessian_floor),
                      refit=refit_spec, n_outputs=K, strategy=multi_strategy,
                      diagonal=multi_hessian == "diagonal", row_sampling=bool(ratios[0] < 1),
                      col_sampling=bool(np.any(ratios[1:] < 1)), metrics=tuple(metrics),
                      link=_link(loss), exact=bool(quantize),
                      native_threads=None if layout.per_process == 1 else 1,
                  group_max=None if group is None else EXACT_MAX_GROUP)
        gidx = None if group is None else jnp.asarray(group_index(group, n_rows, n_pad))
        offsets = layout.replicate(layout.offsets)
        n_total = np.int32(layout.n_total)
        dyn = params.dynamic()

        # --- the loop: dispatch chunk c, then read chunk c - 1 (flag, metrics, callbacks) --
        history = {e.name: {m.name: [] for m in metrics} for e in evals}
        metric_defs = {m.name: m for m in metrics}
        parts = [] if init_model is None else [init_model.ensemble]
        n_init = 0 if init_model is None else init_model.ensemble.n_trees

        def make_booster(n_new_rounds, cut=None):
            empty = _empty_tree(params.n_nodes, K).values()
            ens = Ensemble.concat(parts)[: n_init + n_new_rounds * tpr] if parts else \
                Ensemble(*(np.asarray(a)[None][:0] for a in empty))
            b = Booster(ens, objective=loss, params=params, bin_edges=edges, base_margin=base,
                        n_features=n_features, n_outputs=K, trees_per_round=tpr,
                        feature_names=names)
            b.history = {d: {m: list(v) for m, v in ms.items()} for d, ms in history.items()}
            b.train_state = {"seed": seed, "rounds": start_round + n_new_rounds}
            return b

        def read(flag_dev, values_dev, r0):
            """Process the rounds of one chunk on the host; the stop round or None."""
            bad_round, n_bad = (int(v) for v in np.asarray(flag_dev))
            if bad_round >= 0:
                kept = (f"The model of rounds 0..{bad_round - 1} is attached as error.booster."
                        if bad_round > 0 else "No round completed.")
                raise LossError(
                    f"the loss {loss_name(loss)} gave NaN or infinite gradients or Hessians "
                    f"for {n_bad} row(s) at round {bad_round}; check the loss for log/sqrt/"
                    f"division of non-positive values at those margins. {kept}",
                    round=bad_round, n_rows=n_bad,
                    booster=make_booster(bad_round) if bad_round > 0 else None)
            values = np.asarray(values_dev)  # (chunk, n_sets, n_metrics): one transfer
            for i in range(min(chunk, n_rounds - r0)):
                for s, e in enumerate(evals):
                    for j, m in enumerate(metrics):
                        history[e.name][m.name].append(float(values[i, s, j]))
                if callbacks:
                    env = CallbackEnv(r0 + i, n_rounds, start_round, history, metric_defs,
                                      make_booster)
                    stops = [bool(cb(env)) for cb in callbacks]  # every callback sees every round
                    if any(stops):
                        return r0 + i
            return None

        def read_agreed(flag_dev, values_dev, r0):
            """``read``, and with several processes the earliest stop any of them asked."""
            where["round"] = r0
            # A LossError comes from the flag, which is the same on every process: all
            # of them raise it together.
            stop = read(flag_dev, values_dev, r0)
            if multi:  # every process, every chunk (callbacks may differ between them)
                stop = dist.earliest_stop(stop)
            return stop

        pending = None
        stop = None
        try:
            for r0 in range(0, n_rounds, chunk):
                etas = np.array([lr_of(start_round + r) if r < n_rounds else 1.0
                                 for r in range(r0, r0 + chunk)], np.float32)
                state, flag, trees, values = _train_chunk(
                    state, flag, np.int32(r0), np.int32(n_rounds), bins_t, y_dev, w_dev, valid, dyn,
                    etas, ratios, np.int32(seed), np.int32(start_round), cuts_ext, forward_ok,
                    offsets, n_total, eval_args, gidx, **static)
                if pending is not None:
                    stop = read_agreed(*pending)
                    if stop is not None:
                        break
                parts.append(jax.tree.map(dist.local, trees) if multi else trees)
                pending = ((dist.local(flag), dist.local(values), r0) if multi
                           else (flag, values, r0))
            if stop is None and pending is not None:
                stop = read_agreed(*pending)
        finally:
            for cb in callbacks:
                if isinstance(cb, Progress):
                    cb.close()
        done = n_rounds if stop is None else stop + 1
        if early is not None and early.best_iteration is not None:
            bst = make_booster(early.best_iteration + 1)
            bst.best_iteration = start_round + early.best_iteration
            bst.best_score = early.best_score
            return bst
        return make_booster(done)


def _is_group_objective(loss) -> bool:
    from objectives import GroupObjective

    return isinstance(loss, GroupObjective)


def _rows_on_bins(Xf, yf, wf, edges, n_pad, max_bin, native):
    """The training rows as the round program takes them, padded to ``n_pad`` rows.

    Returns ``(bins, y, w, valid, cuts_ext, forward_ok)``: uint8 bins in one layout,
    written in place with its padding (row-major ``(n_pad, F)`` for the native kernel,
    feature-major ``(F, n_pad)`` for the pure-JAX scan); labels padded with copies of row
    0 and weights with 0 (padding rows have g = h = 0); ``valid`` marks the real rows;
    ``cuts_ext`` ``(F, max_bin)`` the thresholds of every bin (``-inf``, the cuts, then
    ``+inf``); ``forward_ok`` the features whose ascending split pass is tried.
    """
    n_rows, n_features = Xf.shape
    bins = np.zeros((n_pad, n_features) if native else (n_features, n_pad), np.uint8)
    apply_bins(Xf, edges, out=bins, row_major=native)
    y = np.full(n_pad, yf[0], np.float32)
    y[:n_rows] = yf
    w = np.zeros(n_pad, np.float32)
    w[:n_rows] = 1.0 if wf is None else wf
    cuts_ext = np.concatenate(
        [np.full((n_features, 1), -np.inf, np.float32), edges.cuts,
         np.full((n_features, max_bin - 1 - edges.cuts.shape[1]), np.inf, np.float32)],
        axis=1)
    forward_ok = edges.has_missing & (edges.n_distinct > 1)
    return bins, y, w, np.arange(n_pad) < n_rows, cuts_ext, forward_ok


def _check_group(group, n_rows, loss, K, mesh, eval_set, refit, hessian, eval_metric, y):
    """``(group ids, eval_metric)`` for a group loss: validated ``(N,)`` numeric ids
    (all zeros for a whole-data entry without ``group=``) and the metric list with a
    catalogue entry's default filled in. A plain loss is checked on a group of two
    rows (it must return a scalar); an entry's labels are checked (``DataError``)."""
    if isinstance(loss, Objective):
        raise TypeError(f"group= needs a group loss loss(y_group, pred_group, mask); "
                        f"{loss!r} is a per-row loss")
    entry = _is_group_objective(loss)
    if entry and group is None:
        if not loss.whole_data:
            raise TypeError(f"{loss!r} ranks the rows within queries: pass group= with "
                            f"one query id per row (e.g. train({loss!r}, X, y, "
                            f"group=query_ids))")
        group = np.zeros(n_rows, np.int32)  # one group: every row
    if K != 1:
        raise ValueError("group losses have one output per row (n_outputs=1)")
    if mesh is not None or dist.is_multiprocess():
        raise ValueError("group losses train on one device for now; leave mesh=None")
    if entry:
        try:
            loss.validate_labels(y)
        except ValueError as e:
            raise DataError(str(e)) from None
        _check_eval_labels(loss, eval_set)
        if eval_metric is None:
            eval_metric = loss.metric
    if eval_set is not None and eval_metric is None:
        raise ValueError("a group loss has no per-row default metric: pass eval_metric "
                         "(e.g. 'ndcg@10', with the sets' query ids as eval_group)")
    if refit not in ("auto", None, False):
        raise ValueError("refit is for per-row losses; group losses use Newton leaves")
    if hessian not in ("auto", "exact", "clip", "constant"):
        raise ValueError(f"group losses take hessian 'exact', 'clip' or 'constant', "
                         f"got {hessian!r}")
    try:
        ids = np.asarray(group)
    except Exception:
        raise TypeError(f"group must be an array of ids, got {type(group).__name__}") from None
    if ids.shape != (n_rows,):
        raise DataError(f"group must hold one id per row, shape ({n_rows},), got "
                        f"{ids.shape}")
    if ids.dtype.kind not in "iuf" or (ids.dtype.kind == "f" and not np.isfinite(ids).all()):
        raise DataError("group ids must be finite numbers")
    v = jnp.zeros(2, jnp.float32)
    try:
        out = jax.eval_shape(loss, v, v, jnp.ones(2, bool))
    except Exception as e:
        raise LossError(f"the group loss {loss_name(loss)} failed on a group of 2 rows "
                        f"(called as loss(y_group, pred_group, mask)): "
                        f"{type(e).__name__}: {e}", round=None) from None
    if getattr(out, "shape", None) != ():
        raise LossError(f"the group loss {loss_name(loss)} must return a scalar per group, "
                        f"got shape {getattr(out, 'shape', None)}", round=None)
    return ids, eval_metric


def _check_eval_labels(loss, eval_set):
    """A group entry's label check on the evaluation sets' labels (``DataError``)."""
    if isinstance(eval_set, dict):
        items = list(eval_set.items())
    elif isinstance(eval_set, (list, tuple)):
        items = [(f"validation_{i}", e) for i, e in enumerate(eval_set)]
    else:
        return  # malformed: _eval_sets raises the error
    for name, e in items:
        if isinstance(e, (list, tuple)) and len(e) in (2, 3):
            try:
                ye = np.asarray(e[1], np.float64).ravel()
            except (TypeError, ValueError):
                continue  # _eval_sets reports it
            try:
                loss.validate_labels(ye)
            except ValueError as err:
                raise DataError(f"eval set {name!r}: {err}") from None


def _where(where, callbacks) -> str:
    """Where training is, for the lost-process message of ``jaxboost.distributed``."""
    from .callbacks import Checkpoint

    text = f" during the chunk of rounds from {where['round']}"
    for cb in callbacks:
        if isinstance(cb, Checkpoint) and cb.last_round is not None:
            text += f"; the last checkpoint, {cb.path!r}, holds {cb.last_round} round(s)"
    return text


def _feature_names(X, given, n_features, init_model):
    """The model's feature names: ``given``, a DataFrame's string columns, or None."""
    from_frame = _validation.frame_feature_names(X)
    if given is not None:
        given = _validation.check_names_list(given, n_features)
        if from_frame is not None and given != from_frame:
            raise DataError(f"feature_names {given} differ from the columns of the X "
                            f"DataFrame {from_frame}; leave feature_names out to use the "
                            f"columns")
    names = given if given is not None else from_frame
    inherited = None if init_model is None else init_model.feature_names
    if names is None:
        return inherited
    if inherited is not None and names != inherited:
        raise DataError(f"init_model was trained on the features {inherited}, X has "
                        f"{names}; continued training needs the same columns in the same "
                        f"order")
    return names


class _EvalSet(NamedTuple):
    name: str
    X: np.ndarray
    bins: np.ndarray  # (n, F) uint8, row-major
    y: np.ndarray
    w: np.ndarray
    n: int
    queries: np.ndarray  # (Q, S) group_index of its query ids; (1, 1) zeros without
    grouped: bool


def _eval_sets(eval_set, edges, loss, n_features, names=None, gather=False,
               eval_group=None) -> list:
    """Validated, binned evaluation sets (``gather``: every process's rows, on every
    process), with their query index when ``eval_group`` gives query ids."""
    if eval_set is None:
        if eval_group is not None:
            raise ValueError("eval_group is given without eval_set")
        return []
    if isinstance(eval_set, dict):
        items = list(eval_set.items())
    elif isinstance(eval_set, (list, tuple)):
        if len(eval_set) in (2, 3) and not isinstance(eval_set[0], (list, tuple)) and \
                np.ndim(eval_set[0]) == 2:
            raise TypeError("eval_set is a list of (X, y) pairs: write eval_set=[(X, y)]")
        items = [(f"validation_{i}", e) for i, e in enumerate(eval_set)]
    else:
        raise TypeError(f"eval_set must be a list of (X, y) or (X, y, sample_weight) tuples "
                        f"or a dict of them, got {type(eval_set).__name__}")
    groups = _eval_groups(eval_group, [name for name, _ in items],
                          isinstance(eval_set, dict))
    out = []
    for name, e in items:
        if not isinstance(e, (list, tuple)) or len(e) not in (2, 3):
            raise TypeError(f"eval set {name!r} must be (X, y) or (X, y, sample_weight)")
        # In a multi-process job a process may hold none of the set's rows.
        empty_here = gather and np.ndim(e[0]) == 2 and np.shape(e[0])[0] == 0
        try:
            if empty_here:
                if np.shape(e[0])[1] != n_features:
                    raise DataError(f"has {np.shape(e[0])[1]} features, the training "
                                    f"data {n_features}")
                Xe = np.zeros((0, n_features), np.float32)
                ye, we = np.zeros(0, np.float32), np.zeros(0, np.float32)
            else:
                _validation.check_feature_names(names, e[0])
                Xe = _validation.as_features(e[0], allow_inf=True)
                if Xe.shape[1] != n_features:
                    raise DataError(f"has {Xe.shape[1]} features, the training data "
                                    f"{n_features}")
                ye = _validation.as_labels(e[1], Xe.shape[0])
                we = _validation.as_weights(e[2] if len(e) == 3 else None, Xe.shape[0])
                if isinstance(loss, Objective):
                    loss.validate_labels(ye)
        except ValueError as err:
            raise DataError(f"eval set {name!r}: {err}") from None
        ids = groups.get(name)
        if ids is not None:
            ids = np.asarray(ids)
            if ids.shape != (Xe.shape[0],) or ids.dtype.kind not in "iuf":
                raise DataError(f"eval_group of {name!r} must be {Xe.shape[0]} numeric "
                                f"query ids (one per row), got shape {ids.shape}")
        if gather:
            we = np.ones(Xe.shape[0], np.float32) if we is None else we
            Xe, ye, we = (dist.gather_rows(a) for a in (Xe, ye, we))
            if ids is not None:
                ids = dist.gather_rows(ids)
            if Xe.shape[0] == 0:
                raise DataError(f"eval set {name!r} has no rows on any process")
        n = Xe.shape[0]
        bins = np.zeros((n, n_features), np.uint8)
        apply_bins(Xe, edges, out=bins, row_major=True)
        queries = (np.zeros((1, 1), np.int32) if ids is None else group_index(ids, n))
        out.append(_EvalSet(str(name), Xe, bins, ye,
                            np.ones(n, np.float32) if we is None else we, n, queries,
                            ids is not None))
    return out


def _eval_groups(eval_group, names, by_name) -> dict:
    """``{eval set name: query ids or None}`` from ``eval_group`` (a list aligned with a
    list ``eval_set``, or a dict keyed like a dict ``eval_set``)."""
    if eval_group is None:
        return {}
    if isinstance(eval_group, dict):
        unknown = sorted(set(eval_group) - set(names))
        if unknown:
            raise ValueError(f"eval_group names {unknown} are not evaluation sets "
                             f"({names})")
        return dict(eval_group)
    if by_name or not isinstance(eval_group, (list, tuple)) or len(eval_group) != len(names):
        raise TypeError(f"eval_group must be a list of query ids (or None) per evaluation "
                        f"set, {len(names)} of them, or a dict keyed like eval_set")
    return dict(zip(names, eval_group))


def _eval_metrics(eval_metric, loss, evals, K) -> list:
    """Metrics, checked against the model's output shape before training."""
    from . import metrics as M

    if eval_metric is None:
        default = loss.metric if isinstance(loss, Objective) else "objective"
        eval_metric = [default]
    elif isinstance(eval_metric, (str, M.Metric)) or callable(eval_metric):
        eval_metric = [eval_metric]
    out = [M.get_metric(m, objective=loss) for m in eval_metric]
    if not evals:
        return out
    e = evals[0]
    shape = (e.n,) if K == 1 else (e.n, K)
    link = _link(loss)
    for m in out:
        if m.grouped:
            missing = [x.name for x in evals if not x.grouped]
            if missing:
                raise ValueError(f"metric {m.name!r} ranks rows within queries; pass the "
                                 f"query ids of {missing} as eval_group")
            continue
        margin = jax.ShapeDtypeStruct(shape, jnp.float32)
        pred = margin if (m.on == "margin" or link is None) else jax.eval_shape(link, margin)
        try:
            res = jax.eval_shape(m.fn, jax.ShapeDtypeStruct((e.n,), jnp.float32), pred,
                                 jax.ShapeDtypeStruct((e.n,), jnp.float32))
        except Exception as err:
            raise ValueError(f"metric {m.name!r} cannot evaluate this model ({K} output(s), "
                             f"predictions {pred.shape}): {type(err).__name__}: {err}. "
                             f"Metrics must be JAX functions metric(y, pred) -> scalar") from None
        if getattr(res, "shape", None) != ():
            raise ValueError(f"metric {m.name!r} must return a scalar, got shape "
                             f"{getattr(res, 'shape', type(res).__name__)}")
    return out


def _link(loss):
    return loss.link if isinstance(loss, Objective) else None


def _learning_rate_schedule(learning_rate):
    """``round -> float`` for a number or a schedule callable (checked at round 0)."""
    if callable(learning_rate):
        def lr_of(r):
            try:
                v = float(learning_rate(r))
            except Exception as e:
                raise ValueError(f"the learning_rate schedule failed at round {r}: "
                                 f"{type(e).__name__}: {e}") from None
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"the learning_rate schedule gave {v!r} at round {r}; it "
                                 f"must be a finite number > 0")
            return v
        return lr_of
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, numbers.Real):
        raise TypeError(f"learning_rate must be a number or a callable of the round, got "
                        f"{type(learning_rate).__name__}")
    value = float(learning_rate)
    return lambda r: value


def _sampling_ratios(*values) -> np.ndarray:
    for name, v in zip(SAMPLING_FIELDS, values):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be a number in (0, 1], got {type(v).__name__}")
        if not (0.0 < float(v) <= 1.0):
            raise ValueError(f"{name} must be in (0, 1], got {v!r}")
    return np.array(values, np.float32)


def _check_init_model(init, params, n_features, K, tpr, base_margin):
    if init.n_features != n_features:
        raise DataError(f"init_model was trained on {init.n_features} features, X has "
                        f"{n_features}")
    for name in ("max_depth", "max_bin"):
        if getattr(init.params, name) != getattr(params, name):
            raise ValueError(f"init_model has {name}={getattr(init.params, name)}; "
                             f"continued training needs the same value, got "
                             f"{getattr(params, name)}")
    if init.n_outputs != K or init.trees_per_round != tpr:
        raise ValueError(f"init_model has {init.n_outputs} output(s) and "
                         f"{init.trees_per_round} tree(s) per round; this objective and "
                         f"multi_strategy give {K} and {tpr}")
    if base_margin is not None:
        raise ValueError("base_margin cannot be given with init_model (training continues "
                         "from the model's margins)")
