r"""``train_many()``: M models in one compiled program, sharing the binned data.

Comparing losses, learning rates or seeds means training many models on the same rows.
``train_many`` checks every configuration as ``train`` would (``config.configure``),
bins the data once, and runs every model's rounds in one program per chunk
(``engine.round.run_chunk``): models whose round has the same structure
(``RoundSpec``: loss family, Hessian policy, refit, sampling switches, ...) form a group,
and each group is one loop over its models of the very round step ``train`` runs. The
continuous numbers (learning rate, regularisation, Hessian floor, sampling ratios, seed,
the loss's hyperparameters) are traced, so a grid over them is one group and one
compiled program. Each model is bit-identical to the one ``train`` gives for its
configuration: same bins, same padding, same random draws, and the same compiled round.

Evaluation sets, metrics, early stopping (per model: each model keeps its own best
round, and the loop ends when every model has stopped) and a mesh work as in ``train``;
a configuration may carry its own ``callbacks``.
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import numpy as np

from objectives import GroupObjective

from .._types import MAX_ROUNDS, float32_programs
from ..engine.binning import QUANTILE_SAMPLE_ROWS
from ..engine.compile import frees_memory
from ..engine.round import new_flags
from ..errors import ConfigurationWarning
from ..inputs.arrays import target_structure
from ..inputs.numbers import check_int
from ..native import compile_cache
from ..parallel import distributed as dist
from . import loop
from .config import configure, resolve_objective
from .data import base_margin, prepare, start_margins
from .evaluation import eval_metrics, eval_sets
from .hessian import guard_start
from .names import peer_names
from .options import Options, defaults, names, record, takes
from .program import hyper, round_spec, stack
from .train import finish, model_run

__all__ = ["train_many", "CONFIG_KEYS"]

#: What may differ between the configurations of one ``train_many`` call.
CONFIG_KEYS = ("objective",) + names(many="config")

#: Arguments every model shares (they fix the program's shapes or the data).
SHARED_KEYS = names(many="shared")

_DEFAULTS = dict(objective=None, **defaults(names(many="config")))

# train() arguments train_many does not take, with what to do instead.
_UNSUPPORTED = {
    "verbose": "train_many prints nothing (verbose=False is accepted)",
    "init_model": "continue each model with train(..., init_model=booster)",
    "group": "group losses train with train(group=...)",
}


def _merged(configs, shared):
    """Each configuration as a dict of ``CONFIG_KEYS`` (its own values over ``shared``)."""
    if isinstance(configs, (str, dict)) or callable(configs):
        raise TypeError(
            "train_many takes a list of configurations (objectives, or dicts "
            "of train() arguments), got one " + type(configs).__name__
        )
    try:
        items = list(configs)
    except TypeError:
        raise TypeError(
            f"train_many takes a list of configurations, got {type(configs).__name__}"
        ) from None
    if not items:
        raise ValueError("train_many needs at least one configuration")
    out = []
    for i, c in enumerate(items):
        merged = dict(_DEFAULTS)
        merged.update(shared)
        if isinstance(c, dict):
            for k in c:
                if k in SHARED_KEYS:
                    raise ValueError(
                        f"configuration {i} sets {k!r}, which every model of one train_many "
                        f"call shares (it fixes the program's shapes or the data); pass it "
                        f"once as train_many(..., {k}=...) or call train_many per value"
                    )
                if k not in CONFIG_KEYS:
                    why = _UNSUPPORTED.get(k)
                    raise TypeError(
                        f"configuration {i} has the unknown key {k!r}"
                        + (f": {why}" if why else "")
                        + f". Keys that may differ: {list(CONFIG_KEYS)}"
                    )
            merged.update(c)
        else:
            merged["objective"] = c
        if merged["objective"] is None:
            raise TypeError(
                f"configuration {i} has no objective: give one per configuration "
                f"or train_many(..., objective=...) for all"
            )
        out.append(merged)
    return out


def _configure(i, merged, common, data):
    """``configure`` of configuration ``i`` on ``data = (X, y)`` (errors name it):
    ``(settings, X, y, w)``."""
    where = f"configuration {i}"
    try:
        loss = resolve_objective(merged["objective"])
        if isinstance(loss, GroupObjective):
            how = "train(...)" if loss.whole_data else "train(..., group=...)"
            raise TypeError(
                f"{loss!r} is a group loss, which train_many does not take yet; train "
                f"each configuration with {how}"
            )
        args = dict(common, **merged)
        del args["objective"]
        args.update(init_model=None, group=None, verbose=False, eval_metric=None)
        X, y = data
        return configure(loss, X, y, Options(**args))
    except (TypeError, ValueError) as e:
        raise type(e)(f"{where}: {e}") from None


@peer_names
@float32_programs
@frees_memory
@takes(SHARED_KEYS, var_keyword="shared")
def train_many(configs, X, y, *, objective=None, **shared) -> list:
    r"""Train M models on the same data in one compiled program per chunk of rounds.

    Equivalent to ``[train(**config, X=X, y=y, ...) for config in configs]``, model for
    model and bit for bit, and faster: the data is binned once, the models run in one
    program, and configurations that differ only in numbers share one compiled round.

    Args:
      configs: a list of M configurations: each an objective (a catalogue name, an
        ``objectives`` entry or a plain ``loss(y, pred)`` callable) or a dict of the
        ``train`` arguments that may differ between models (``CONFIG_KEYS``:
        ``objective``, ``learning_rate`` (number or schedule), ``reg_lambda``,
        ``reg_alpha``, ``gamma``, ``min_child_weight``, ``max_delta_step``, ``seed``,
        ``subsample``, ``colsample_*``, ``hessian``, ``hessian_floor``, ``refit``,
        ``base_margin``, ``loss_params``, ``callbacks``, ``n_outputs``,
        ``multi_strategy``, ``multi_hessian``, ``link``: a plain callable's inverse
        link, as in ``train``; it changes no tree, only predictions and metrics;
        ``num_parallel_tree``, ``bootstrap``: forests, as in ``train``).
      X: ``(N, F)`` features, NaN = missing (array or DataFrame).
      y: ``(N,)`` labels, or side data for losses of your own (``(N, L)``, a dict),
        as in ``train``.
      objective: the objective of configurations that name none.
      **options: the training options of ``jaxboost.training.options.OPTIONS``.
        Shared by every model, as in ``train`` (early stopping watches each model on
        its own). A configuration's ``base_margin`` may be margins per row, as in
        ``train``.
      **shared: defaults of the ``CONFIG_KEYS`` for every configuration (a
        configuration's own value wins), e.g. ``learning_rate=0.1``.

    Returns:
      a list of M ``Booster`` s, in the order of ``configs``, each the model ``train``
      gives for that configuration.

    Raises:
      TypeError: a ``train`` argument ``train_many`` does not take (the message says what
        to do instead), or a shared argument set per configuration.
      ValueError, DataError, LossError, NonFiniteError: as ``train``, before rounds
        start; the message names the configuration. Any exception once rounds have
        started carries ``.boosters``: one model per configuration, of the rounds it
        completed (None where none), as ``train``'s ``.booster``.

    A configuration whose rounds fail with a ``LossError`` or ``NonFiniteError`` (NaN,
    overflow) does not stop the others: they train whole, its entry is the model of the
    rounds before the failure (``None`` when none) with the error as ``.error``, and a
    ``jaxboost.errors.ConfigurationWarning`` lists what failed.

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
    common, n_rounds, shared = _shared_options(shared, objective)
    settings, Xf, yf, wf = _settings(configs, X, y, common, shared)
    prep = prepare(settings[0], Xf, yf, wf, sparse_ok=False)  # bins, padding: shared
    evals = eval_sets(
        common["eval_set"],
        prep.edges,
        settings[0],
        eval_group=common["eval_group"],
        eval_base_margin=common["eval_base_margin"],
        targets=target_structure(yf),
    )
    runs, program = _program(settings, prep, evals, common)
    loop.run(runs, program, n_rounds)
    return _results(runs)


def _shared_options(shared, objective):
    """``train_many``'s first step: ``(common, n_rounds, shared)``, the options every
    model shares (checked), and the defaults of ``CONFIG_KEYS`` (with ``objective``)."""
    given = record("train_many", {k: shared.pop(k) for k in SHARED_KEYS if k in shared})
    common = {k: getattr(given, k) for k in SHARED_KEYS}  # the values themselves, uncopied
    compile_cache.ensure()  # the persistent cache, unless the user set their own
    if shared.get("verbose", True) is False:  # nothing to silence: train_many prints nothing
        shared.pop("verbose")
    for k in shared:
        if k not in CONFIG_KEYS:
            why = _UNSUPPORTED.get(k)
            raise TypeError(
                f"train_many() got an unexpected argument {k!r}" + (f": {why}" if why else "")
            )
    n_rounds = check_int("n_rounds", common["n_rounds"], low=0, high=MAX_ROUNDS)
    if objective is not None:
        shared = dict(shared, objective=objective)
    if dist.is_multiprocess():
        raise ValueError("train_many runs in one process; use train() in a multi-process job")
    return common, n_rounds, shared


def _settings(configs, X, y, common, shared):
    """``(settings, Xf, yf, wf)``: every configuration's ``Settings``, the data read
    (a DataFrame converted, labels and weights checked) once, for the first; the
    others get the validated arrays."""
    merged = _merged(configs, shared)
    s0, Xf, yf, wf = _configure(0, merged[0], common, (X, y))
    common.update(
        sample_weight=wf,
        feature_names=s0.feature_names,
        categorical_features=list(s0.categorical) or None,
    )
    settings = [s0] + [
        dataclasses.replace(
            _configure(i, m, common, (Xf, yf))[0], category_labels=s0.category_labels
        )
        for i, m in enumerate(merged)
        if i > 0
    ]
    seeds = {s.seed for s in settings}
    if len(seeds) > 1 and Xf.shape[0] > QUANTILE_SAMPLE_ROWS:
        raise ValueError(
            "the seeds of these configurations give different bin edges "
            "(data of more than 2**18 rows is sketched with the seed): use one "
            "seed, or call train_many per seed"
        )
    return settings, Xf, yf, wf


def _program(settings, prep, evals, common):
    """``(runs, program)``: each model's run (its metrics, early stopping) and the
    arguments of the chunk program, models grouped by round structure (``RoundSpec``):
    one group per structure, its models stacked."""
    layout = prep.layout
    early = tuple(common[k] for k in EARLY_KEYS)
    chunk = loop.chunk_for(settings)  # what loop.run dispatches for all of them
    y_pad = jax.tree.map(np.asarray, prep.rows.y)  # side data: a dict or (N, L)
    w_pad = np.asarray(prep.rows.w)
    specs: list = []
    runs: list = []
    members: list = []
    preps: list = []
    for i, s in enumerate(settings):
        label = f"configuration {i}: "
        p = prep._replace(base=base_margin(s, layout, prep.rows, y_pad, w_pad), margin=None)
        start = layout.put(_start(s, p)[None], feature_major=True)
        s = settings[i] = guard_start(s, round_spec(s, p), prep.rows, start, label=label)
        preps.append(p)
        spec = round_spec(s, p)
        if spec not in specs:
            specs.append(spec)
            members.append([])
        g = specs.index(spec)
        try:
            metrics = eval_metrics(common["eval_metric"], s.loss, evals, s.n_outputs)
            where = (g, len(members[g]))
            runs.append(
                model_run(
                    s, p, evals, metrics, where, early_stopping=early, chunk=chunk, label=label
                )
            )
        except (TypeError, ValueError) as e:
            raise type(e)(f"configuration {i}: {e}") from None
        members[g].append(i)
    hypers = tuple(stack([hyper(runs[i].s) for i in m], layout.replicate_tree) for m in members)
    margins = tuple(
        layout.put(np.stack([_start(settings[i], preps[i]) for i in m]), feature_major=True)
        for m in members
    )
    flags = tuple(layout.replicate(new_flags(len(m))) for m in members)
    counts = layout.replicate(np.array([len(m) for m in members], np.int32))
    program = (tuple(specs), layout.mesh, prep.rows, prep.shared, hypers, margins, flags)
    return runs, program + (counts, 0)


def _results(runs) -> list:
    """The models of ``runs``: a failed configuration's partial model (or None) with its
    error as ``.error``, and a ``ConfigurationWarning`` naming what failed."""
    out = [finish(r) if r.failure is None else r.failure.booster for r in runs]
    failed = [(i, r.failure) for i, r in enumerate(runs) if r.failure is not None]
    for i, err in failed:
        if out[i] is not None:
            out[i].error = err  # the failure beside the partial model
    if failed:
        lines = "; ".join(f"configuration {i}: {type(e).__name__}: {e}" for i, e in failed)
        warnings.warn(
            f"train_many: {len(failed)} of {len(runs)} configuration(s) failed "
            f"and stopped at the round before the failure (the others trained "
            f"whole): {lines}",
            ConfigurationWarning,
            stacklevel=3,
        )
    return out


EARLY_KEYS = ("early_stopping_rounds", "early_stopping_metric", "early_stopping_data", "min_delta")
"""The early-stopping options, in ``model_run``'s order."""


def _start(s, prep):
    """A model's starting margins on the training rows: its margins per row
    (``base_margin`` given per row), else its base margin everywhere."""
    return start_margins(s, prep.base, None, prep.layout.counts[0], prep.layout.block, s.offsets)
