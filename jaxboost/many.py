r"""``train_many()``: M models in one compiled program, sharing the binned data.

Comparing losses, learning rates or seeds means training many models on the same rows.
Separate ``train`` calls bin the data M times and compile one program per loss (a few
seconds each on a CPU); ``train_many`` bins once and compiles one program whose rounds
advance all M models together:

* each distinct loss (with its Hessian policy and leaf refit) computes g and h for its
  models, vmapped over them (``M`` margins ``(M, N)``);
* one tree builder, looped over the M models inside the program (``lax.map``), grows
  every model's tree from its own g, h, dynamic parameters (``learning_rate``,
  ``reg_lambda``, ``reg_alpha``, ``gamma``, ``min_child_weight``, ``max_delta_step``),
  sampling ratios and seed;
* leaf refits run per loss (looped over its models), then every model's margins move
  by its own tree.

The models are the ones separate ``train`` calls give: same bins, same padding, same
random draws, and the same operations in the same order, so the trees are usually
bit-identical. The programs differ, though, and XLA's CPU compiler may fuse a
multiply and an add into one rounding in one program and not the other; a one-ulp
difference in a gradient can then flip a later split (seen with ``pseudo_huber``
under ``hessian="constant"`` on 10,000 rows: test AUC 2e-4 apart after 100 rounds).

What is shared, because it fixes array shapes or the program: the data, ``n_rounds``,
``max_depth``, ``max_bin`` and ``sample_weight``. Single-output losses only (K = 1),
one device, no evaluation sets (``jaxboost.compare`` evaluates the returned models'
staged predictions), no early stopping, callbacks or ``init_model``: use ``train`` for
those.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from objectives import GroupObjective, Objective

from . import _validation
from . import distributed as dist
from .autodiff import HESSIAN_FLOOR, _fit_base_margin, check_loss, grad_hess, loss_name
from .binning import QUANTILE_SAMPLE_ROWS, compute_bin_edges
from .booster import Booster
from .boosting import (
    ROUNDS_PER_DISPATCH,
    _check_base_margin,
    _check_int,
    _empty_tree,
    _feature_names,
    _learning_rate_schedule,
    _resolve_outputs,
    _resolve_policies,
    _rows_on_bins,
    _sampling_ratios,
    _stored,
    _use_native,
    resolve_objective,
)
from .errors import DataError, LossError
from .exact import check_rows, to_grid
from .grow import grow_tree
from .params import TreeParams
from .refit import refit_newton, refit_quantile
from .sampling import SUBSAMPLE, FeatureSampler, round_key, row_mask
from .split import ETA
from .tree import Ensemble

__all__ = ["train_many", "CONFIG_KEYS"]

#: What may differ between the configurations of one ``train_many`` call.
CONFIG_KEYS = ("objective", "learning_rate", "reg_lambda", "reg_alpha", "gamma",
               "min_child_weight", "max_delta_step", "seed", "subsample", "colsample_bytree",
               "colsample_bylevel", "colsample_bynode", "hessian", "hessian_floor", "refit",
               "base_margin")

_DEFAULTS = dict(objective=None, learning_rate=0.3, reg_lambda=1.0, reg_alpha=0.0, gamma=0.0,
                 min_child_weight=1.0, max_delta_step=0.0, seed=0, subsample=1.0,
                 colsample_bytree=1.0, colsample_bylevel=1.0, colsample_bynode=1.0,
                 hessian="auto", hessian_floor=HESSIAN_FLOOR, refit="auto", base_margin=None)

# train() arguments train_many does not take, with what to do instead.
_UNSUPPORTED = {
    "eval_set": "evaluate the returned boosters (jaxboost.compare does, round by round)",
    "eval_metric": "evaluate the returned boosters (jaxboost.compare does, round by round)",
    "eval_group": "train the ranking model with train()",
    "early_stopping_rounds": "train the chosen configuration with train()",
    "early_stopping_metric": "train the chosen configuration with train()",
    "early_stopping_data": "train the chosen configuration with train()",
    "min_delta": "train the chosen configuration with train()",
    "callbacks": "use train() for callbacks",
    "verbose": "train_many prints nothing",
    "init_model": "continue each model with train(..., init_model=booster)",
    "mesh": "train_many runs on one device; use train(mesh=...) per model",
    "group": "group losses train with train(group=...)",
    "n_outputs": "train_many trains single-output losses; use train() for vector outputs",
    "multi_strategy": "train_many trains single-output losses",
    "multi_hessian": "train_many trains single-output losses",
}


class _Config:
    """One validated configuration."""

    def __init__(self, i, merged, n_rows, yf, max_depth, max_bin):
        where = f"configuration {i}"
        if merged["objective"] is None:
            raise TypeError(f"{where} has no objective: give one per configuration or "
                            f"train_many(..., objective=...) for all")
        try:
            loss = resolve_objective(merged["objective"])
        except (TypeError, ValueError) as e:
            raise type(e)(f"{where}: {e}") from None
        if isinstance(loss, Objective):
            try:
                loss.validate_labels(yf)
                loss = loss.resolve_outputs(yf)
            except ValueError as e:
                raise DataError(f"{where}: {e}") from None
        elif isinstance(loss, GroupObjective):
            raise TypeError(f"{where}: {loss!r} is a group loss; train it with "
                            f"train(group=...)")
        if _resolve_outputs(loss, None) != 1:
            raise ValueError(f"{where}: train_many trains single-output losses; {loss!r} "
                             f"has {_resolve_outputs(loss, None)} outputs (use train)")
        check_loss(loss, jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32))
        self.loss = loss
        self.lr_of = _learning_rate_schedule(merged["learning_rate"])
        try:
            self.params = TreeParams(
                max_depth=max_depth, max_bin=max_bin, learning_rate=self.lr_of(0),
                reg_lambda=merged["reg_lambda"], reg_alpha=merged["reg_alpha"],
                gamma=merged["gamma"], min_child_weight=merged["min_child_weight"],
                max_delta_step=merged["max_delta_step"])
            self.ratios = _sampling_ratios(merged["subsample"], merged["colsample_bytree"],
                                           merged["colsample_bylevel"],
                                           merged["colsample_bynode"])
            self.seed = _check_int("seed", merged["seed"], 0)
            if self.seed > 2 ** 31 - 1:
                raise ValueError(f"seed must be < 2**31, got {self.seed}")
            self.hessian, self.refit = _resolve_policies(
                loss, merged["hessian"], merged["hessian_floor"], merged["refit"], 1, None)
            self.base_margin = (None if merged["base_margin"] is None
                                else _check_base_margin(merged["base_margin"], 1))
        except (TypeError, ValueError) as e:
            raise type(e)(f"{where}: {e}") from None
        self.floor = float(merged["hessian_floor"])

    @property
    def kind(self):
        """What selects the code of g, h and the refit (static in the program)."""
        return (self.loss, self.hessian, self.floor, self.refit)


def _configs(configs, shared, n_rows, yf, max_depth, max_bin):
    if isinstance(configs, (str, dict)) or callable(configs):
        raise TypeError("train_many takes a list of configurations (objectives, or dicts "
                        "of train() arguments), got one " + type(configs).__name__)
    try:
        items = list(configs)
    except TypeError:
        raise TypeError(f"train_many takes a list of configurations, got "
                        f"{type(configs).__name__}") from None
    if not items:
        raise ValueError("train_many needs at least one configuration")
    out = []
    for i, c in enumerate(items):
        merged = dict(_DEFAULTS)
        merged.update(shared)
        if isinstance(c, dict):
            for k in c:
                if k in ("max_depth", "max_bin", "n_rounds", "sample_weight"):
                    raise ValueError(
                        f"configuration {i} sets {k!r}, which every model of one train_many "
                        f"call shares (it fixes the program's shapes); pass it once as "
                        f"train_many(..., {k}=...) or call train_many per value")
                if k not in CONFIG_KEYS:
                    why = _UNSUPPORTED.get(k)
                    raise TypeError(f"configuration {i} has the unknown key {k!r}"
                                    + (f": {why}" if why else "")
                                    + f". Keys that may differ: {list(CONFIG_KEYS)}")
            merged.update(c)
        else:
            merged["objective"] = c
        out.append(_Config(i, merged, n_rows, yf, max_depth, max_bin))
    return out


def train_many(configs, X, y, *, objective=None, n_rounds: int = 100, max_depth: int = 6,
               max_bin: int = 256, sample_weight=None, feature_names=None,
               quantize: bool = False, **shared) -> list:
    r"""Train M models on the same data in one compiled program.

    Equivalent to ``[train(**config, X=X, y=y, ...) for config in configs]`` and much
    faster when the configurations use different losses: the data is binned once and one
    program is compiled for all M models, whose trees grow vmapped over the models (see
    the module docs).

    Args:
      configs: a list of M configurations: each an objective (a catalogue name, an
        ``objectives`` entry or a plain ``loss(y, pred)`` callable) or a dict of the
        ``train`` arguments that may differ between models (``CONFIG_KEYS``:
        ``objective``, ``learning_rate`` (number or schedule), ``reg_lambda``,
        ``reg_alpha``, ``gamma``, ``min_child_weight``, ``max_delta_step``, ``seed``,
        ``subsample``, ``colsample_*``, ``hessian``, ``hessian_floor``, ``refit``,
        ``base_margin``).
      X: ``(N, F)`` features, NaN = missing (array or DataFrame).
      y: ``(N,)`` labels.
      objective: the objective of configurations that name none.
      n_rounds, max_depth, max_bin, sample_weight, feature_names: shared by every model,
        as in ``train``.
      **shared: defaults of the ``CONFIG_KEYS`` for every configuration (a
        configuration's own value wins), e.g. ``learning_rate=0.1``.

    Returns:
      a list of M ``Booster`` s, in the order of ``configs``; each equals (to float32
      rounding) the model ``train`` gives for that configuration.

    Raises:
      TypeError: a ``train`` argument ``train_many`` does not take (evaluation sets,
        callbacks, ``init_model``, ...: the message says what to do instead), or a
        shared parameter set per configuration.
      ValueError: bad values (the message names the configuration), vector-output
        losses.
      DataError, LossError: as ``train``; a loss's non-finite g or h names the
        configuration, the loss and the round.

    Example:
      >>> import numpy as np, jaxboost
      >>> X = np.random.default_rng(0).normal(size=(300, 3)).astype(np.float32)
      >>> y = (X[:, 0] + X[:, 1] > 0).astype(np.float32)
      >>> models = jaxboost.train_many(["logistic", "squared"], X, y, n_rounds=20,
      ...                              max_depth=3)
      >>> [m.objective.name for m in models]
      ['logistic', 'squared']
      >>> grid = jaxboost.train_many([{"learning_rate": lr} for lr in (0.1, 0.3)], X, y,
      ...                            objective="logistic", n_rounds=20, max_depth=3)
      >>> [round(m.params.learning_rate, 1) for m in grid]
      [0.1, 0.3]
    """
    from .compile_cache import ensure as _compile_cache_on  # see jaxboost.compile_cache
    _compile_cache_on()
    for k in shared:
        if k not in CONFIG_KEYS:
            why = _UNSUPPORTED.get(k)
            raise TypeError(f"train_many() got an unexpected argument {k!r}"
                            + (f": {why}" if why else ""))
    n_rounds = _check_int("n_rounds", n_rounds, 0)
    if objective is not None:
        shared = dict(shared, objective=objective)
    if dist.is_multiprocess():
        raise ValueError("train_many runs in one process; use train() in a multi-process job")

    Xf = _validation.as_features(X)
    n_rows, n_features = Xf.shape
    names = _feature_names(X, feature_names, n_features, None)
    yf = _validation.as_labels(y, n_rows)
    wf = _validation.as_weights(sample_weight, n_rows)
    TreeParams(max_depth=max_depth, max_bin=max_bin)  # validates the shared shapes
    if not isinstance(quantize, bool):
        raise TypeError(f"quantize must be True or False, got {quantize!r}")
    if quantize:
        check_rows(n_rows)
    cfgs = _configs(configs, shared, n_rows, yf, max_depth, max_bin)
    M = len(cfgs)

    # Models of one kind (loss, Hessian policy, refit) sit next to each other, so each
    # kind's g and h come from one vmapped call over a static slice of the margins.
    kinds = list(dict.fromkeys(c.kind for c in cfgs))
    order = sorted(range(M), key=lambda i: kinds.index(cfgs[i].kind))
    slices, start = [], 0
    for k in kinds:
        n = sum(1 for c in cfgs if c.kind == k)
        slices.append((start, start + n))
        start += n
    ordered = [cfgs[i] for i in order]

    # The data, as train() prepares it (same bins, same padding).
    layout = dist.RowLayout(n_rows, None)
    seeds = {c.seed for c in cfgs}
    if n_rows <= QUANTILE_SAMPLE_ROWS:  # exact quantiles: the seed plays no part
        shared_edges = compute_bin_edges(Xf, max_bin, wf, seed=min(seeds))
        edges = {s: shared_edges for s in seeds}
    else:
        edges = {s: compute_bin_edges(Xf, max_bin, wf, seed=s) for s in sorted(seeds)}
    edge0 = edges[min(seeds)]
    if any(not _same_edges(edge0, e) for e in edges.values()):
        # Bin edges depend on the seed only through the quantile sketch of very large
        # data; configurations whose edges differ cannot share the binned rows.
        raise ValueError("the seeds of these configurations give different bin edges "
                         "(very large data is sketched with the seed): use one seed, or "
                         "call train_many per seed")
    native = _use_native()
    bins_np, y_np, w_np, valid_np, cuts_ext, forward_ok = _rows_on_bins(
        Xf, yf, wf, edge0, layout.block, max_bin, native)
    n_pad = layout.block
    bins_t, y_dev, w_dev, valid = (jnp.asarray(a) for a in (bins_np, y_np, w_np, valid_np))

    # Every intercept to fit, from one compiled program (one compile, not one per loss).
    to_fit = tuple(dict.fromkeys(c.loss for c in ordered if c.base_margin is None))
    fitted = (dict(zip(to_fit, np.asarray(_fit_bases(y_dev, w_dev, np.int32(n_rows),
                                                     losses=to_fit, exact=bool(quantize)))))
              if to_fit else {})
    bases = []
    for c in ordered:
        if c.base_margin is not None:
            bases.append(c.base_margin)
            continue
        b = float(fitted[c.loss])
        if not np.isfinite(b):
            raise LossError(f"the loss {loss_name(c.loss)} gave a non-finite intercept when "
                            f"minimised over a constant (before round 0); pass "
                            f"base_margin= explicitly or check the loss", round=None)
        bases.append(b)
    margins = jnp.asarray(np.repeat(np.asarray(bases, np.float32)[:, None], n_pad, axis=1))
    dyn = jnp.asarray(np.stack([c.params.dynamic() for c in ordered]))
    ratios = np.stack([c.ratios for c in ordered])
    seed_arr = jnp.asarray(np.array([c.seed for c in ordered], np.int32))
    static = dict(kinds=tuple(kinds), slices=tuple(slices), max_depth=max_depth,
                  max_bin=max_bin, chunk=ROUNDS_PER_DISPATCH, native=native,
                  clipped=any(c.params.max_delta_step > 0 for c in ordered),
                  any_forward=bool(forward_ok.any()),
                  row_sampling=bool(np.any(ratios[:, SUBSAMPLE] < 1)),
                  col_sampling=bool(np.any(ratios[:, 1:] < 1)), exact=bool(quantize))
    ratios = jnp.asarray(ratios)

    flags = jnp.asarray(np.tile(np.array([-1, 0], np.int32), (M, 1)))
    parts = []
    chunk = ROUNDS_PER_DISPATCH
    for r0 in range(0, n_rounds, chunk):
        etas = np.array([[c.lr_of(r) if r < n_rounds else 1.0 for r in range(r0, r0 + chunk)]
                         for c in ordered], np.float32)
        margins, flags, trees = _many_chunk(
            margins, flags, np.int32(r0), np.int32(n_rounds), bins_t, y_dev, w_dev, valid,
            dyn, jnp.asarray(etas), ratios, seed_arr, cuts_ext, forward_ok, np.int32(n_rows),
            **static)
        parts.append(trees)
    flags = np.asarray(flags)
    trees = (jax.tree.map(lambda *a: np.concatenate(a, axis=1), *parts) if parts else None)

    boosters = [None] * M
    for j, c in enumerate(ordered):
        i = order[j]
        if trees is None:
            ens = Ensemble(*(np.asarray(a)[None][:0] for a in _empty_tree(c.params.n_nodes)
                             .values()))
        else:
            ens = Ensemble(**{k: np.asarray(v[j]) for k, v in trees.items()})
        bad_round, n_bad = (int(v) for v in flags[j])
        b = Booster(ens[:n_rounds if bad_round < 0 else bad_round], objective=c.loss,
                    params=c.params, bin_edges=edges[c.seed], base_margin=float(bases[j]),
                    n_features=n_features, n_outputs=1, trees_per_round=1,
                    feature_names=names)
        b.history = {}
        b.train_state = {"seed": c.seed, "rounds": n_rounds if bad_round < 0 else bad_round}
        if bad_round >= 0:
            raise LossError(
                f"configuration {i}: the loss {loss_name(c.loss)} gave NaN or infinite "
                f"gradients or Hessians for {n_bad} row(s) at round {bad_round}; check the "
                f"loss for log/sqrt/division of non-positive values at those margins. The "
                f"model of rounds 0..{bad_round - 1} is attached as error.booster.",
                round=bad_round, n_rows=n_bad, booster=b if bad_round > 0 else None)
        boosters[i] = b
    return boosters


@functools.partial(jax.jit, static_argnames=("losses", "exact"))
def _fit_bases(y, w, n_total, *, losses, exact):
    """``(U,)`` float32: ``fit_base_margin`` of each loss, in one program."""
    return jnp.stack([_fit_base_margin(loss, y, w, exact, n_total) for loss in losses])


def _same_edges(a, b) -> bool:
    return (np.array_equal(a.cuts, b.cuts) and np.array_equal(a.has_missing, b.has_missing)
            and np.array_equal(a.n_distinct, b.n_distinct))


@functools.partial(jax.jit, static_argnames=(
    "kinds", "slices", "max_depth", "max_bin", "chunk", "native", "clipped", "any_forward",
    "row_sampling", "col_sampling", "exact"), donate_argnums=(0,))
def _many_chunk(margins, flags, r0, n_rounds, bins, y, w, valid, dyn, etas, ratios, seeds,
                cuts_ext, forward_ok, n_total, *, kinds, slices, max_depth, max_bin, chunk,
                native, clipped, any_forward, row_sampling, col_sampling, exact):
    """Rounds ``r0 .. r0 + chunk - 1`` of all M models (see the module docs).

    ``margins`` ``(M, N)`` (donated), ``flags`` ``(M, 2)`` int32 (first round with a
    non-finite g or h, and its row count; -1 if none), ``dyn`` ``(M, 6)``, ``etas``
    ``(M, chunk)``, ``ratios`` ``(M, 4)``, ``seeds`` ``(M,)``. Returns the new margins,
    flags and the chunk's trees (dict of ``(M, chunk, nodes)`` arrays).
    """
    N = y.shape[0]
    F = cuts_ext.shape[0]
    grow = functools.partial(grow_tree, max_depth=max_depth, max_bin=max_bin,
                             clipped=clipped, any_forward=any_forward, native=native)
    zeros = (seeds < 0).astype(jnp.int32)  # 0, but not a compile-time constant

    def model_tree(g, h, dyn_r, ratio, seed, r):
        """One model's tree of round r from its g and h (sampling as train() does)."""
        rk = round_key(jax.random.key(seed), r)
        bad = ~(jnp.isfinite(g) & jnp.isfinite(h))
        n_bad = jnp.sum(bad & valid, dtype=jnp.int32)
        keep = ~bad
        if row_sampling:
            keep = keep & (row_mask(rk, N, ratio[SUBSAMPLE], offset=0, n_ids=N) > 0)
        g = jnp.where(keep, g, 0.0)
        h = jnp.where(keep, h, 0.0)
        if exact:  # order-free sums (jaxboost.exact), as train(quantize=True)
            g, h = to_grid(g, n_total), to_grid(h, n_total)
        features = (FeatureSampler(jax.random.fold_in(jax.random.fold_in(rk, 1), 0), ratio,
                                   F, max_depth) if col_sampling else None)
        tree, leaf = grow(bins, g, h, dyn_r, cuts_ext, forward_ok, features=features)
        return tree, leaf, n_bad

    def run(margins, r, eta):
        dyn_r = dyn.at[:, ETA].set(eta)
        gs, hs = [], []
        for (loss, hessian, floor, _), (a, b) in zip(kinds, slices):
            g, h = jax.vmap(lambda m, loss=loss, hessian=hessian, floor=floor: grad_hess(
                loss, y, m, w, hessian=hessian, floor=floor))(margins[a:b])
            gs.append(g)
            hs.append(h)
        g, h = jnp.concatenate(gs), jnp.concatenate(hs)
        # The trees one model after another (lax.map: one copy of the tree builder in
        # the program, run on each model's arrays as train() runs it). Vmapped instead,
        # XLA lowers the batched split search and its sums several times slower and in
        # another order of additions.
        trees, leaves, n_bad = jax.lax.map(lambda a: model_tree(*a, r),
                                           (g, h, dyn_r, ratios, seeds))
        values = trees["value"]
        for (loss, _, _, refit), (a, b) in zip(kinds, slices):
            if refit is None:
                continue

            def refit_one(args, loss=loss, refit=refit):
                t, lf, m, d = args
                if refit == "newton":
                    t = refit_newton(t, lf, loss, y, m, w, d,
                                     exact_rows=n_total if exact else None)
                else:  # ("quantile", alpha)
                    t = refit_quantile(t, lf, y, m, w, d, alpha=refit[1])
                return t["value"]

            part = jax.tree.map(lambda x, a=a, b=b: x[a:b], trees)
            values = values.at[a:b].set(jax.lax.map(
                refit_one, (part, leaves[a:b], margins[a:b], dyn_r[a:b])))
        trees = dict(trees, value=values)
        trees = jax.vmap(_stored)(trees, zeros)
        delta = jax.vmap(lambda v, lf: v[lf])(trees["value"], leaves)
        return margins + delta, trees, n_bad

    def skip(margins, r, eta):
        empty = _empty_tree(2 ** (max_depth + 1) - 1)
        return (margins, jax.tree.map(lambda a: jnp.broadcast_to(a, (dyn.shape[0],) + a.shape),
                                      empty), jnp.zeros(dyn.shape[0], jnp.int32))

    def one_round(carry, i):
        margins, flags = carry
        r = r0 + i
        margins, trees, n_bad = jax.lax.cond(r < n_rounds, run, skip, margins, r, etas[:, i])
        first = (flags[:, 0] < 0) & (n_bad > 0)
        flags = jnp.where(first[:, None], jnp.stack([jnp.full_like(n_bad, r), n_bad], 1), flags)
        return (margins, flags), trees

    (margins, flags), trees = jax.lax.scan(one_round, (margins, flags),
                                           jnp.arange(chunk, dtype=jnp.int32))
    trees = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), trees)  # (M, chunk, nodes)
    return margins, flags, trees

