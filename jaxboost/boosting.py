"""``train()``: the boosting loop.

Each round is ``g, h = grad_hess(loss, y, margin) -> grow one tree -> margin += tree``,
compiled as one step; ``ROUNDS_PER_DISPATCH`` rounds run per call through ``lax.scan``,
so the host only hears from the device once per chunk (to read the non-finite-gradient
flag, one chunk behind so the device never idles waiting for the host).
"""

from __future__ import annotations

import functools
import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from objectives import Objective
from objectives._base import HESSIAN_POLICIES

from . import _validation
from .autodiff import HESSIAN_FLOOR, check_loss, fit_base_margin, grad_hess, loss_name, n_outputs_of
from .binning import apply_bins, compute_bin_edges
from .booster import Booster
from .errors import DataError, LossError
from .grow import grow_tree, grow_vector_tree
from .params import TreeParams
from .refit import refit_newton, refit_quantile
from .sharding import auto_mesh, check_mesh, padded_rows, row_sharding
from .tree import Ensemble

ROUNDS_PER_DISPATCH = 10


def resolve_objective(objective):
    """A catalogue name -> its entry; entries and callables pass through.

    Raises ``ValueError`` for an unknown name (listing the catalogue) and ``TypeError``
    for anything that is neither a name nor callable.
    """
    if isinstance(objective, str):
        from objectives import CATALOGUE

        entry = CATALOGUE.get(objective)
        if entry is None:
            raise ValueError(f"unknown objective {objective!r}; catalogue entries: "
                             f"{sorted(CATALOGUE)}, or pass any callable loss(y, pred)")
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


def _rounds(margin, flag, r0, n_rounds, bins, y, w, valid, dyn, cuts_ext, forward_ok, *,
            loss, max_depth, max_bin, chunk, axis, clipped, any_forward, native,
            hessian="exact", floor=1e-6, refit=None, n_outputs=1,
            strategy="one_output_per_tree", diagonal=False):
    """Rounds ``r0 .. r0 + chunk - 1`` on this device's rows (skipping ``>= n_rounds``).

    ``axis`` names the mesh axis rows are sharded over (``None``: one device). Margins
    are ``(N,)`` or ``(N, K)``; each round makes ``trees_per_round`` trees.
    """
    M = 2 ** (max_depth + 1) - 1
    K = n_outputs
    reduce = (lambda x: jax.lax.psum(x, axis)) if axis is not None else (lambda x: x)
    grow = functools.partial(grow_tree, max_depth=max_depth, max_bin=max_bin, reduce=reduce,
                             clipped=clipped, any_forward=any_forward, native=native,
                             native_threads=None if axis is None else 1)

    def scalar_tree(g, h, margin):
        tree, leaf = grow(bins, g, h, dyn, cuts_ext, forward_ok)
        if refit == "newton":
            tree = refit_newton(tree, leaf, loss, y, margin, w, dyn, reduce=reduce)
        elif refit is not None:  # ("quantile", alpha)
            tree = refit_quantile(tree, leaf, y, margin, w, dyn, alpha=refit[1])
        return tree, tree["value"][leaf]

    def trees_of_round(g, h, margin):
        """(trees with a leading trees-per-round axis, margin increment)."""
        if K == 1:
            tree, delta = scalar_tree(g, h, margin)
            return jax.tree.map(lambda a: a[None], tree), delta
        if strategy == "multi_output_tree":
            tree, leaf = grow_vector_tree(
                bins, g, h, dyn, cuts_ext, forward_ok, max_depth=max_depth, max_bin=max_bin,
                diagonal=diagonal, native=native, reduce=reduce, any_forward=any_forward,
                native_threads=None if axis is None else 1)
            return jax.tree.map(lambda a: a[None], tree), tree["value"][leaf]

        # One tree per output, all from this round's g and h (diagonal of H).
        def one_output(_, k):
            tree, leaf = grow(bins, g[:, k], h[:, k, k], dyn, cuts_ext, forward_ok)
            tree = dict(tree, value=tree["value"][:, None] * jax.nn.one_hot(k, K))
            return None, (tree, tree["value"][leaf, k])

        _, (trees, deltas) = jax.lax.scan(one_output, None, jnp.arange(K))
        return trees, deltas.T

    tpr = K if (K > 1 and strategy == "one_output_per_tree") else 1

    def one_round(carry, i):
        margin, flag = carry
        r = r0 + i

        def run(margin):
            g, h = grad_hess(loss, y, margin, w, hessian=hessian, floor=floor)
            bad = ~(jnp.isfinite(g) & jnp.isfinite(h) if K == 1 else
                    jnp.all(jnp.isfinite(g), axis=1) & jnp.all(jnp.isfinite(h), axis=(1, 2)))
            n_bad = reduce(jnp.sum(bad & valid, dtype=jnp.int32))
            g = jnp.where(bad if K == 1 else bad[:, None], 0.0, g)
            h = jnp.where(bad if K == 1 else bad[:, None, None], 0.0, h)
            trees, delta = trees_of_round(g, h, margin)
            return margin + delta, trees, n_bad

        def skip(margin):
            empty = _empty_tree(M, K)
            return margin, jax.tree.map(lambda a: jnp.stack([a] * tpr), empty), jnp.int32(0)

        margin, trees, n_bad = jax.lax.cond(r < n_rounds, run, skip, margin)
        first = (flag[0] < 0) & (n_bad > 0)
        flag = jnp.where(first, jnp.stack([r, n_bad]), flag)
        return (margin, flag), trees

    (margin, flag), trees = jax.lax.scan(one_round, (margin, flag),
                                         jnp.arange(chunk, dtype=jnp.int32))
    trees = jax.tree.map(lambda a: a.reshape((chunk * tpr,) + a.shape[2:]), trees)
    return margin, flag, Ensemble(**trees)


_EXTRA_STATIC = ("hessian", "floor", "refit", "n_outputs", "strategy", "diagonal")


@functools.partial(jax.jit, static_argnames=("loss", "max_depth", "max_bin", "chunk", "mesh",
                                             "clipped", "any_forward", "native")
                   + _EXTRA_STATIC,
                   donate_argnums=(0,))
def _train_chunk(margin, flag, r0, n_rounds, bins, y, w, valid, dyn, cuts_ext, forward_ok,
                 *, loss, max_depth, max_bin, chunk, mesh, clipped, any_forward, native,
                 hessian="exact", floor=1e-6, refit=None, n_outputs=1,
                 strategy="one_output_per_tree", diagonal=False):
    """One dispatch of ``chunk`` rounds; sharded over ``mesh`` when one is given.

    ``flag`` is ``(2,)`` int32: the first round whose g or h had a non-finite value
    (-1 if none) and how many rows had one.
    """
    static = dict(loss=loss, max_depth=max_depth, max_bin=max_bin, chunk=chunk,
                  clipped=clipped, any_forward=any_forward, native=native, hessian=hessian,
                  floor=floor, refit=refit, n_outputs=n_outputs, strategy=strategy,
                  diagonal=diagonal)
    args = (margin, flag, r0, n_rounds, bins, y, w, valid, dyn, cuts_ext, forward_ok)
    if mesh is None:
        return _rounds(*args, axis=None, **static)
    (axis,) = mesh.axis_names
    rows, rep = P(axis), P()
    fn = jax.shard_map(
        functools.partial(_rounds, axis=axis, **static), mesh=mesh,
        in_specs=(rows, rep, rep, rep, P(axis, None) if native else P(None, axis), rows, rows,
                  rows, rep, rep, rep),
        out_specs=(rows, rep, rep), check_vma=False)
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


def train(objective, X, y, *, n_rounds: int = 100, learning_rate: float = 0.3,
          max_depth: int = 6, reg_lambda: float = 1.0, reg_alpha: float = 0.0,
          gamma: float = 0.0, min_child_weight: float = 1.0, max_delta_step: float = 0.0,
          max_bin: int = 256, base_margin=None, sample_weight=None, seed: int = 0,
          hessian: str = "auto", hessian_floor: float = HESSIAN_FLOOR, refit="auto",
          n_outputs=None, multi_strategy: str = "one_output_per_tree",
          multi_hessian: str = "full", mesh=None) -> Booster:
    r"""Train gradient-boosted trees on any per-row JAX loss.

    Each round computes per-row :math:`g_i = w_i \partial_f \ell(y_i, f_i)` and
    :math:`h_i = w_i \partial^2_f \ell(y_i, f_i)` by autodiff, grows one level-wise tree
    of depth ``max_depth`` on histograms of g and h, and adds
    ``learning_rate * w*`` of each row's leaf to its margin, where
    :math:`w^* = -T_\alpha(G)/(H + \lambda)` (see ``jaxboost.split``).

    Args:
      objective: a per-row loss ``loss(y, pred) -> scalar`` written in JAX, an entry
        of the ``objectives`` catalogue (e.g. ``objectives.logistic``), or its name.
      X: ``(N, F)`` features, NaN = missing.
      y: ``(N,)`` labels.
      n_rounds: boosting rounds (trees).
      learning_rate: shrinkage ``eta`` applied to every leaf value.
      max_depth: depth of every tree (static: a new value compiles a new program).
      reg_lambda: L2 penalty ``lambda`` on leaf values.
      reg_alpha: L1 penalty ``alpha`` on leaf values.
      gamma: minimum gain to keep a split, applied by bottom-up post-pruning.
      min_child_weight: minimum sum of h in each child of a split.
      max_delta_step: if > 0, leaf values (before ``learning_rate``) are clipped to
        ``+-max_delta_step``.
      max_bin: bins per feature, including one reserved for missing values (<= 256).
      base_margin: constant initial margin; ``None`` fits the constant minimising
        :math:`\sum_i w_i \ell(y_i, c)` for any loss.
      sample_weight: optional ``(N,)`` non-negative row weights.
      seed: random seed (for quantile sampling of very large data).
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
        of a GPU/TPU backend when the data is large enough.

    Returns:
      ``Booster``.

    Raises:
      DataError: bad X, y or sample_weight (a ``ValueError``).
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
    """
    params = TreeParams(max_depth=max_depth, max_bin=max_bin, learning_rate=learning_rate,
                        reg_lambda=reg_lambda, reg_alpha=reg_alpha, gamma=gamma,
                        min_child_weight=min_child_weight, max_delta_step=max_delta_step)
    n_rounds = _check_int("n_rounds", n_rounds, 0)
    seed = _check_int("seed", seed, 0)
    loss = resolve_objective(objective)

    Xf = _validation.as_features(X)
    n_rows, n_features = Xf.shape
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
    hessian, refit_spec = _resolve_policies(loss, hessian, hessian_floor, refit, K, mesh)
    if multi_strategy not in ("one_output_per_tree", "multi_output_tree"):
        raise ValueError(f"multi_strategy must be 'one_output_per_tree' or "
                         f"'multi_output_tree', got {multi_strategy!r}")
    if multi_hessian not in ("full", "diagonal"):
        raise ValueError(f"multi_hessian must be 'full' or 'diagonal', got {multi_hessian!r}")
    tpr = K if (K > 1 and multi_strategy == "one_output_per_tree") else 1
    check_loss(loss, jnp.zeros((), jnp.float32), jnp.zeros(() if K == 1 else (K,), jnp.float32))
    if base_margin is not None:
        base_margin = _check_base_margin(base_margin, K)

    edges = compute_bin_edges(Xf, params.max_bin, wf, seed=seed)
    cuts_ext = np.concatenate(
        [np.full((n_features, 1), -np.inf, np.float32), edges.cuts,
         np.full((n_features, params.max_bin - 1 - edges.cuts.shape[1]), np.inf, np.float32)],
        axis=1)
    forward_ok = edges.has_missing & (edges.n_distinct > 1)

    # Rows padded to a size bucket (divisible by the shards) with weight-0 copies of
    # row 0, so folds of similar size share compiled code and shards are equal.
    mesh = check_mesh(mesh) if mesh is not None else auto_mesh(n_rows)
    n_shards = 1 if mesh is None else mesh.size
    n_pad = padded_rows(n_rows, n_shards)
    use_native = _use_native()
    # One layout, written in place with its padding: row-major (N, F) for the native
    # kernel, feature-major (F, N) for the pure-JAX scan.
    bins_np = np.zeros((n_pad, n_features) if use_native else (n_features, n_pad), np.uint8)
    apply_bins(Xf, edges, out=bins_np, row_major=use_native)
    y_np = np.full(n_pad, yf[0], np.float32)
    y_np[:n_rows] = yf
    w_np = np.zeros(n_pad, np.float32)
    w_np[:n_rows] = 1.0 if wf is None else wf
    valid_np = np.arange(n_pad) < n_rows

    if mesh is None:
        put_rows = put_fm = jnp.asarray
    else:
        def put_rows(a):
            return jax.device_put(a, row_sharding(mesh))

        def put_fm(a):
            return jax.device_put(a, row_sharding(mesh, feature_major=not use_native))
    bins_t = put_fm(bins_np)
    y_dev, w_dev, valid = put_rows(y_np), put_rows(w_np), put_rows(valid_np)

    if base_margin is None:
        base = np.asarray(fit_base_margin(loss, jnp.asarray(y_np), jnp.asarray(w_np), K))
        if not np.all(np.isfinite(base)):
            raise LossError(f"the loss {loss_name(loss)} gave a non-finite intercept when "
                            f"minimised over a constant (before round 0); pass "
                            f"base_margin= explicitly or check the loss", round=None)
    else:
        base = base_margin
    base = float(base) if K == 1 else np.asarray(base, np.float32)

    margin = put_rows(np.broadcast_to(np.asarray(base, np.float32),
                                      (n_pad,) if K == 1 else (n_pad, K)).copy())
    flag = np.array([-1, 0], np.int32)
    static = dict(loss=loss, max_depth=params.max_depth, max_bin=params.max_bin,
                  chunk=ROUNDS_PER_DISPATCH, mesh=mesh,
                  clipped=params.max_delta_step > 0, any_forward=bool(forward_ok.any()),
                  native=use_native, hessian=hessian, floor=float(hessian_floor),
                  refit=refit_spec, n_outputs=K, strategy=multi_strategy,
                  diagonal=multi_hessian == "diagonal")
    common = (np.int32(n_rounds), bins_t, y_dev, w_dev, valid, params.dynamic(), cuts_ext,
              forward_ok)

    def make_booster(ens):
        return Booster(ens, objective=loss, params=params, bin_edges=edges,
                       base_margin=base, n_features=n_features, n_outputs=K,
                       trees_per_round=tpr)

    parts = []
    pending = None

    def check(flag_dev):
        bad_round, n_bad = (int(v) for v in np.asarray(flag_dev))
        if bad_round >= 0:
            good = Ensemble.concat(parts)[:bad_round * tpr] if parts else None
            kept = (f"The model of rounds 0..{bad_round - 1} is attached as error.booster."
                    if bad_round > 0 else "No round completed.")
            raise LossError(
                f"the loss {loss_name(loss)} gave NaN or infinite gradients or Hessians "
                f"for {n_bad} row(s) at round {bad_round}; check the loss for log/sqrt/"
                f"division of non-positive values at those margins. {kept}",
                round=bad_round, n_rows=n_bad,
                booster=make_booster(good) if good is not None and bad_round > 0 else None)

    for r0 in range(0, n_rounds, ROUNDS_PER_DISPATCH):
        margin, flag, trees = _train_chunk(margin, flag, np.int32(r0), *common, **static)
        if pending is not None:
            check(pending)
        parts.append(trees)
        pending = flag
    # Trees are small: gather them on the host (no per-shape device concatenation).
    if pending is not None:
        check(pending)
    if parts:
        ens = Ensemble.concat(parts)[:n_rounds * tpr]
    else:
        ens = Ensemble(*(np.asarray(a)[None][:0] for a in _empty_tree(params.n_nodes, K).values()))
    return make_booster(ens)
