"""The chunk loop: dispatch rounds, evaluate, read one chunk behind, call callbacks.

The host dispatches chunk ``c`` (``engine.round.run_chunk``, then the evaluation
program of each evaluation set) and only then reads chunk ``c - 1``'s results (the
non-finite flags and metric values): the device never idles waiting for the host. A
callback's stop, an early stop or a non-finite number therefore discards the rounds
the device had already run past it.

No work is lost: a non-finite number (``engine.round.BAD_CAUSES``, all checked on the
device and read with the chunk's flags, no extra transfer) raises a ``LossError`` or
``NonFiniteError`` naming its cause and carrying the model of the rounds before it;
any other exception once the loop runs (a callback's, an evaluation's,
``KeyboardInterrupt``) leaves with the model of the rounds completed so far attached
as ``error.booster`` (``train``) and ``error.boosters`` (every model), and a note.

One loop serves ``train`` (one model) and ``train_many`` (M models): each model has a
``ModelRun`` (its evaluation sets, history, callbacks and trees); the loop ends when
every model has stopped.
"""

from __future__ import annotations

import jax
import numpy as np

from .._types import FLOAT32_MAX
from ..engine.autodiff import loss_name
from ..engine.round import Rounds, run_chunk
from ..engine.tree import Ensemble
from ..errors import LossError, MetricError, NonFiniteError
from ..model.booster import Booster, one_output_per_tree
from ..parallel import distributed as dist
from . import hessian
from .callbacks import CallbackEnv, Progress
from .evaluation import evaluate_chunk, host_kinds, host_predictions, host_scores

ROUNDS_PER_DISPATCH = 10
TREES_PER_DISPATCH = 100
"""A chunk holds at most ``ROUNDS_PER_DISPATCH`` rounds, and fewer when a round grows
more than ``TREES_PER_DISPATCH / ROUNDS_PER_DISPATCH`` trees (``rounds_per_dispatch``)."""


def rounds_per_dispatch(trees_per_round: int) -> int:
    """Rounds per dispatch of the round program (its static ``chunk``) for rounds of
    ``trees_per_round`` trees: ``ROUNDS_PER_DISPATCH`` (10) for up to 10 trees a round,
    else ``TREES_PER_DISPATCH // trees_per_round`` (at least 1).

    The program's tree outputs hold ``chunk * trees_per_round`` trees whether or not the
    rounds run: a random forest of 100 trees for each of 10 classes (one round, 1,000
    trees) would fill, copy to the host and cut 10,000 (83 MB and 0.15 s on digits).

    >>> rounds_per_dispatch(1), rounds_per_dispatch(10), rounds_per_dispatch(30)
    (10, 10, 3)
    >>> rounds_per_dispatch(1000)
    1
    """
    return max(1, min(ROUNDS_PER_DISPATCH, TREES_PER_DISPATCH // max(int(trees_per_round), 1)))


def chunk_for(settings) -> int:
    """The rounds per dispatch of one round program training models of ``settings``
    (``config.Settings``) together: ``rounds_per_dispatch`` of their largest round, so
    that every model's evaluation plan (``train.model_run``) reads the chunk ``run``
    dispatches."""
    return rounds_per_dispatch(max(s.trees_per_round for s in settings))


HUGE_MARGIN = 1e18
"""Margins beyond this (their squares overflow float32) explain a loss's non-finite g, h
or value by what made them so large: a learning rate > 1 or the base margin."""


class ModelRun:
    """One model's host-side state during the loop.

    Args:
      s: the model's ``config.Settings``.
      where: ``(group, index in group)`` of the model in the round program.
      evals: ``[(EvalSet, EvalPlan, EvalData, margin), ...]`` (see ``evaluation``).
      metrics: the ``Metric`` s evaluated on every set.
      assemble: ``assemble(run, n_new_rounds, final) -> Booster``.
      label: how errors name the model (``""`` for ``train``).
      base: the model's base margin (for error messages).
    """

    def __init__(self, s, where, evals, metrics, assemble, label="", base=None):
        self.s = s
        self.where = where
        self.evals = evals
        self.metrics = metrics
        self.metric_defs = {m.name: m for m in metrics}
        self.history: dict[str, dict[str, list[float]]] = {
            e.name: {m.name: [] for m in metrics} for e, *_ in evals
        }
        self.callbacks = list(s.callbacks)
        self.parts = [] if s.init_model is None else [s.init_model.trees]
        # class trees (K outputs, one tree per output): the round program gives each
        # tree's own values, (T, M), K times less than (T, M, K); the model holds them so
        held = one_output_per_tree(s.n_outputs, s.trees_per_round, s.num_parallel_tree)
        self.class_trees = s.n_outputs if held else 0
        self.assemble = assemble
        self.label = label
        self.stop = None  # the last round kept, once stopped
        self.failure = None  # train_many: this model's LossError / NonFiniteError
        self.values = None
        # what host metrics read ("margin", "response"): copied to the host per chunk
        self.kinds = host_kinds(metrics, evals[0][1].metrics.link) if evals else ()
        self.flag = None  # the last flag read (engine.round.FLAG_FIELDS)
        self.warned = False
        self.base = base
        self.done = 0  # new rounds read, checked finite and shown to the callbacks
        self.eta_log = []  # the learning rate of every round dispatched

    def booster(self, n_new_rounds, final=False):
        """The model of the first ``n_new_rounds`` new rounds; ``final``: the last one
        asked of this run (its chunks' trees are let go as they are copied)."""
        return self.assemble(self, n_new_rounds, final)

    def etas(self, r0, chunk):
        s = self.s
        etas = [
            s.lr_of(s.start_round + r) if r < s.n_rounds else 1.0 for r in range(r0, r0 + chunk)
        ]
        self.eta_log[r0:] = etas[: max(0, s.n_rounds - r0)]
        return etas

    def dispatch_eval(self, trees):
        """Evaluate this chunk's trees on every set (asynchronously): per set, the
        device metrics' values and the predictions host metrics read (or None)."""
        values = []
        for i, (e, plan, data, margin) in enumerate(self.evals):
            margin, v, stages = evaluate_chunk(plan, trees, margin, data, self.s.loss_values)
            self.evals[i] = (e, plan, data, margin)
            values.append(
                (v, host_predictions(self.kinds, plan.metrics.link, stages) if self.kinds else None)
            )
        self.values = values

    def read(self, flag, values, r0, chunk):
        """Process the rounds of one chunk on the host; the stop round or None."""
        s = self.s
        self.flag = np.asarray(flag)
        bad_round = int(self.flag[0])
        if bad_round >= 0:
            self.warn_hessian()
            raise self.non_finite(bad_round, int(self.flag[1]), int(self.flag[8]))
        # per set: (chunk, n_device_metrics), and the host metrics' predictions (one
        # transfer of the chunk)
        values = [(np.asarray(v), None if h is None else jax.device_get(h)) for v, h in values]
        for i in range(min(chunk, s.n_rounds - r0)):
            try:  # every set's host metrics first: a failure leaves the history whole
                hosts = [
                    [] if h is None else host_scores(self.metrics, e, h, i, r0 + i)
                    for (e, *_), (_, h) in zip(self.evals, values)
                ]
            except MetricError as err:
                raise MetricError(
                    f"{self.label}{err}",
                    metric=err.metric,
                    data=err.data,
                    round=err.round,
                    booster=self.booster(r0 + i) if r0 + i > 0 else None,
                ) from err.__cause__
            for (e, *_), (v, _), hv in zip(self.evals, values, hosts):
                dev, host = iter(v[i]), iter(hv)
                for m in self.metrics:
                    self.history[e.name][m.name].append(float(next(host if m.host else dev)))
            self.done = r0 + i + 1
            if self.callbacks:
                env = CallbackEnv(
                    r0 + i, s.n_rounds, s.start_round, self.history, self.metric_defs, self.booster
                )
                stops = [bool(cb(env)) for cb in self.callbacks]  # every callback sees it
                if any(stops):
                    return r0 + i
        return None

    def non_finite(self, r, n, cause):
        """The error of the first non-finite number, at round ``r`` (``n`` rows or tree
        nodes, ``cause`` an index of ``engine.round.BAD_CAUSES``), naming what caused
        it and carrying the model of rounds ``0 .. r - 1``."""
        s = self.s
        booster = self.booster(r) if r > 0 else None
        kept = (
            f"The model of rounds 0..{r - 1} is attached as error.booster."
            if r > 0
            else "No round completed."
        )
        if cause in (0, 2):  # g, h or the value at margins so large that the loss overflows?
            blamed = self.huge_margins(r, n, booster, kept, "g or h" if cause == 0 else "value")
            if blamed is not None:
                return blamed
        c = dict(
            r=r,
            n=n,
            name=loss_name(s.loss),
            where=_where_at(s, r, self.base),
            eta=self.eta_log[r] if r < len(self.eta_log) else s.lr_of(s.start_round + r),
            w_max=s.weight_max,
            big=f"beyond the float32 range (+-{FLOAT32_MAX:.4g})",
            base=_number(self.base),
            fresh_start=r == 0 and s.init_model is None,
        )
        blame, text = (_bad_derivatives if cause < 3 else _bad_trees)(cause, c)
        message = f"{self.label}{text} {kept}"
        if blame is None:  # the loss itself
            return LossError(message, round=r, n_rows=n, booster=booster)
        return NonFiniteError(message, cause=blame, round=r, n_rows=n, booster=booster)

    def drain(self, flag, values, r0, chunk):
        """After an exception outside reading: keep the rounds of the last chunk
        dispatched before it (from ``r0``) that its flags show finite, with their
        metric values (no callback sees them)."""
        flag = np.asarray(flag)
        end = min(chunk, self.s.n_rounds - r0)
        if int(flag[0]) >= 0:
            end = min(end, int(flag[0]) - r0)
        values = [np.asarray(v) for v in values]
        for i in range(max(end, 0)):
            for (e, *_), v in zip(self.evals, values):
                for j, m in enumerate(self.metrics):
                    self.history[e.name][m.name].append(float(v[i, j]))
        self.done = max(self.done, r0 + end)

    def huge_margins(self, r, n, booster, kept, what):
        """A ``NonFiniteError`` when the loss's non-finite ``what`` at round ``r`` comes
        from margins past ``HUGE_MARGIN`` that a learning rate > 1 or the base margin
        made (the loss is blameless there), else None."""
        base = np.abs(np.asarray(self.base, np.float64))
        leaves = (
            np.abs(np.asarray(booster.trees.value, np.float64))
            if booster is not None and booster.trees.n_trees
            else np.zeros(1)
        )
        peak = float(max(base.max(), leaves.max()))
        if peak <= HUGE_MARGIN:
            return None
        eta = max(self.eta_log[:r], default=0.0)
        text = (
            f"the loss {loss_name(self.s.loss)} gave a non-finite {what} for {n} "
            f"row(s) at round {r} at margins of magnitude up to {peak:.3g}, "
        )
        if eta > 1:
            return NonFiniteError(
                f"{self.label}{text}where learning_rate={eta:g} (> 1) scaled the leaf "
                f"values of the rounds before; use a learning rate <= 1. {kept}",
                cause="learning_rate",
                round=r,
                n_rows=n,
                booster=booster,
            )
        if float(base.max()) > HUGE_MARGIN:
            return NonFiniteError(
                f"{self.label}{text}where the margins start from base_margin="
                f"{_number(self.base)}; use a base margin of a smaller magnitude (or None: "
                f"fitted). {kept}",
                cause="base_margin",
                round=r,
                n_rows=n,
                booster=booster,
            )
        return None

    def warn_hessian(self):
        """The call's one ``HessianWarning`` (``hessian.warning``), if its Hessians could
        not help on some rows; from the last flag read (the worst round of the call)."""
        if self.flag is not None and not self.warned:
            self.warned = True
            hessian.warn(self.s, self.flag, label=self.label)

    def close(self):
        """End the progress display: as complete when a callback stopped training."""
        for cb in self.callbacks:
            if isinstance(cb, Progress):
                cb.close(stopped_at=self.stop)


def _number(v) -> str:
    """A base margin for a message: ``1e+30``, or ``[0.1, -2]`` for K outputs."""
    a = np.asarray(v, np.float64)
    return f"{float(a):g}" if a.ndim == 0 else "[" + ", ".join(f"{x:g}" for x in a) + "]"


def run(models, program, n_rounds, on_chunk=lambda r0: None):
    """Run every model's rounds; sets each model's ``stop`` and ``parts``.

    ``program`` is ``(specs, mesh, rows, shared, hypers, margins, flags, counts, round0)``
    of ``engine.round.run_chunk`` (``round0``: rounds before this call). Raises the
    ``LossError`` or ``NonFiniteError`` of the first model where a non-finite number
    appeared, with one model; with several (``train_many``, one process) that model
    stops with the error in its ``failure`` and the others go on. Any exception leaves
    with the models of the rounds completed (``_attach``; after an exception outside
    reading, the last chunk dispatched counts when its flags are clean).
    """
    specs, mesh, rows, shared, hypers, margins, flags, counts, round0 = program
    chunk = chunk_for([m.s for m in models])
    multi = dist.is_multiprocess()
    pending, reading = None, False
    try:
        for r0 in range(0, n_rounds, chunk):
            etas = tuple(
                np.array([m.etas(r0, chunk) for m in models if m.where[0] == g], np.float32)
                for g in range(len(specs))
            )
            rounds = Rounds(np.int32(r0), np.int32(n_rounds), np.int32(round0), etas)
            margins, flags, trees = run_chunk(
                specs, chunk, mesh, rows, shared, hypers, margins, flags, rounds, counts
            )
            on_chunk(r0)
            for m in models:
                if m.stop is None:
                    g, i = m.where
                    m.dispatch_eval(trees[g][i])
            reading = pending is not None
            if reading and _read(models, pending, chunk, multi):
                _warn(models)
                return
            reading = False
            for m in models:
                if m.stop is None:
                    g, i = m.where
                    t = trees[g][i]
                    m.parts.append(
                        Ensemble(**({k: dist.local(v) for k, v in t.items()} if multi else t))
                    )
            pending = (flags, r0, [list(m.values) if m.stop is None else None for m in models])
        reading = pending is not None
        if reading:
            _read(models, pending, chunk, multi)
        _warn(models)
    except BaseException as e:
        if pending is not None and not reading:  # e.g. a schedule failed, an interrupt
            _drain(models, pending, chunk, multi)
        _attach(e, models)
        raise
    finally:
        for m in models:
            m.close()


def _drain(models, pending, chunk, multi):
    """``ModelRun.drain`` of every running model for the chunk ``pending`` (the last
    dispatched before an exception); what cannot be read is left out."""
    flags, r0, values = pending
    for m, v in zip(models, values):
        if m.stop is not None or v is None:
            continue
        g, i = m.where
        try:
            m.drain(
                _flag(flags, g, i, multi),
                [dist.local(x) for x in v] if multi else v,
                r0,
                chunk,
            )
        except Exception:  # the device failed: those rounds cannot be read
            pass


def _attach(error, models):
    """Put the models of the rounds completed so far on ``error`` (``booster`` for one
    model unless it carries its own, ``boosters`` for every model), with a note."""
    rounds = [m.done if m.stop is None else m.stop + 1 for m in models]
    boosters = []
    for m, n in zip(models, rounds):
        try:
            boosters.append(m.booster(n) if n > 0 else None)
        except Exception:  # e.g. the device failed: what it holds cannot be read
            boosters.append(None)
    try:
        if len(models) > 1:
            error.boosters = boosters
        if isinstance(error, (LossError, NonFiniteError, MetricError)):
            return  # it carries the model before its own round, and says so
        error.booster = boosters[0] if len(models) == 1 else None
    except (AttributeError, TypeError):  # an exception type that takes no attributes
        return
    if any(b is not None for b in boosters) and hasattr(error, "add_note"):
        what = "error.booster" if len(models) == 1 else "error.boosters (one per configuration)"
        error.add_note(
            f"jaxboost: training ended with this error after {max(rounds)} "
            f"round(s); the model of the rounds completed is attached as {what}."
        )


def _flag(flags, g, i, multi):
    """Model ``i`` of group ``g``'s flag as a NumPy array: the group's flags come to the
    host whole, then are indexed there (indexing the device array would dispatch, and
    for a new group size compile, a program of its own)."""
    return np.asarray(dist.local(flags[g]) if multi else flags[g])[i]


def _read(models, pending, chunk, multi) -> bool:
    """Read one chunk for every running model; True when all have stopped."""
    flags, r0, values = pending
    for m, v in zip(models, values):
        if m.stop is not None or v is None:
            continue
        g, i = m.where
        try:
            stop = m.read(
                _flag(flags, g, i, multi), jax.tree.map(dist.local, v) if multi else v, r0, chunk
            )
        except (LossError, NonFiniteError) as e:
            if len(models) == 1 or multi:
                raise
            # train_many: this configuration failed; the others go on (its error, with
            # the model of the rounds before it, is reported by train_many)
            m.failure, m.stop = e, -1
            continue
        if multi:  # every process, every chunk (callbacks may differ between them)
            stop = dist.earliest_stop(stop)
        if stop is not None:
            m.stop = stop
    return all(m.stop is not None for m in models)


def _warn(models):
    for m in models:
        m.warn_hessian()


def new_rounds(m) -> int:
    """Rounds this call added to model ``m`` (after the loop)."""
    return m.s.n_rounds if m.stop is None else m.stop + 1


def assemble_booster(run_, n_new_rounds, *, edges, base, n_features, final=False):
    """The ``Booster`` of ``run_``'s first ``n_new_rounds`` new rounds. ``final``: the
    last assembly of this run (after the loop): its parts are let go as they are copied,
    so the trees are not held twice at the end of a fit."""
    s = run_.s
    tpr = s.trees_per_round
    n_init = 0 if s.init_model is None else s.init_model.trees.n_trees
    n_trees = n_init + n_new_rounds * tpr
    if run_.parts:
        parts: list[Ensemble] = []
        have = 0
        M = s.params.n_nodes
        for part in run_.parts:  # only the chunks needed (a later one may still run)
            if have >= n_trees and parts:
                break
            # a program compiled for a bucket of depths (RoundSpec.depth_bucket) gives
            # deeper heap arrays, whose nodes past the model's depth are unused leaves
            parts.append(_heap_prefix(part, M))
            have += part.n_trees
        if final:
            del part
            run_.parts = []
        if run_.class_trees:  # held one output per tree (Booster.trees), or all spread
            held = [p.one_output_per_tree(run_.class_trees) for p in parts]
            kept = [h for h in held if h is not None]
            parts[:] = (
                kept if len(kept) == len(parts) else [p.spread(run_.class_trees) for p in parts]
            )
            del held, kept
        ens = Ensemble.concat(parts, n_trees=n_trees, consume=final)
    else:
        ens = _no_trees(s)
    b = Booster(
        ens,
        objective=s.loss,
        params=s.params,
        bin_edges=edges,
        base_margin=base,
        n_features=n_features,
        n_outputs=s.n_outputs,
        trees_per_round=tpr,
        feature_names=s.feature_names,
        category_labels=s.category_labels,
        num_parallel_tree=s.num_parallel_tree,
    )
    b.history = {d: {k: list(v) for k, v in ms.items()} for d, ms in run_.history.items()}
    # The seed and rounds continue training; the Hessian policy, floor and (vector
    # trees) Hessian form let Booster.grad_hess give the g and h the trees saw.
    b.train_state = {
        "seed": s.seed,
        "rounds": s.start_round + n_new_rounds,
        "hessian": s.hessian,
        "hessian_floor": s.hessian_floor,
    }
    if s.offsets is not None or getattr(s.init_model, "trained_with_offsets", False):
        b.train_state["offsets"] = True  # predictions need the rows' offsets
    if s.max_leaves:  # recorded: continuing training passes the same
        b.train_state.update(grow_policy="lossguide", max_leaves=s.max_leaves)
    if s.multi_output_tree:
        b.train_state["multi_hessian"] = "diagonal" if s.diagonal else "full"
    if s.constraints is not None:  # recorded (prediction does not need them)
        b.train_state.update(s.constraints.train_state())
    return b


def _heap_prefix(part: Ensemble, M: int) -> Ensemble:
    """``part`` with its trees cut to their first ``M`` heap nodes (on the host)."""
    if part.feature.shape[1] == M:
        return part
    return Ensemble(*(None if a is None else np.asarray(a)[:, :M] for a in part))


def _no_trees(s):
    M, K = s.params.n_nodes, s.n_outputs
    z = np.zeros((0, M), np.float32)
    return Ensemble(
        np.zeros((0, M), np.int32),
        np.zeros((0, M), np.int32),
        z,
        np.zeros((0, M), bool),
        np.zeros((0, M), bool),
        z if K == 1 else np.zeros((0, M, K), np.float32),
        z,
        z,
    )


def _where_at(s, r, base) -> str:
    """ "at round r", and at round 0 where the start margins came from."""
    where = f"at round {r}"
    if r > 0:
        return where
    if s.init_model is not None:
        return where + " (the init_model's margins)"
    how = "given" if s.base_margin is not None else "fitted: the intercept fit needs a finite loss"
    return where + f" (the start margin base_margin={_number(base)}, {how})"


def _bad_derivatives(cause, c):
    """``(blame, text)`` of a non-finite g, h or loss value (``BAD_CAUSES`` 0-2):
    ``blame`` None for the loss itself, else the option to blame."""
    n, name, where, big = c["n"], c["name"], c["where"], c["big"]
    if cause == 0:
        return None, (
            f"the loss {name} gave NaN or infinite gradients or Hessians for {n} row(s) "
            f"{where}; check the loss for log/sqrt/division of non-positive values at "
            f"those margins."
        )
    if cause == 1:
        return "sample_weight", (
            f"sample_weight made g or h infinite for {n} row(s) at round {c['r']}: the "
            f"loss's own g and h are finite there, but times weights of up to "
            f"{c['w_max']:g} they go {big}. Scale the weights down (min_child_weight and "
            f"reg_lambda are in the same units as the weighted h)."
        )
    return None, (
        f"the loss {name} returned NaN or an infinite value for {n} row(s) {where} "
        f"although its g and h are finite there: e.g. jnp.log of a non-positive "
        f"number, or jnp.where(cond, nan, loss), whose gradient 0 would silently "
        f"drop those rows. Make the loss finite on every row (and pass "
        f"base_margin= where it is, if the start margin is outside its domain)."
    )


def _bad_trees(cause, c):
    """``(blame, text)`` of a non-finite tree sum, leaf value or margin (``BAD_CAUSES``
    3 and up), as ``_bad_derivatives``."""
    r, n, name, big, eta, w_max = c["r"], c["n"], c["name"], c["big"], c["eta"], c["w_max"]
    if cause == 3:
        nodes = f"round {r}'s trees have {n} node sum(s) of h (cover) or split gain(s) {big}"
        if w_max is not None and w_max > 1:
            return "sample_weight", (
                f"{nodes}: sample_weight (up to {w_max:g}) scales every g and h. Scale "
                f"the weights down."
            )
        return None, (
            f"{nodes}: the g and h of the loss {name} are too large (e.g. labels of a "
            f"huge scale: standardise them)."
        )
    if cause == 4:
        if eta > 1:
            return "learning_rate", (
                f"round {r}'s trees have {n} leaf value(s) {big}: learning_rate={eta:g} at "
                f"that round multiplies the leaf weights -G/(H + lambda) (g and h were "
                f"finite); use a learning rate <= 1."
            )
        return None, (
            f"round {r}'s trees have {n} leaf value(s) {big}: the leaf weights "
            f"-G/(H + lambda) of the loss {name} overflow where h is near 0 and g is "
            f"large; raise reg_lambda, min_child_weight or max_delta_step, or use "
            f"hessian='clip' with a larger hessian_floor."
        )
    margins = f"the margins of {n} row(s) went {big} at round {r}"
    if eta > 1:
        return "learning_rate", (
            f"{margins}: learning_rate={eta:g} at that round scales the leaf values added "
            f"to them; use a learning rate <= 1."
        )
    if c["fresh_start"]:
        return "base_margin", (
            f"{margins}: they start at base_margin={c['base']}, and round 0's leaf values "
            f"pushed them over. Use a base margin of a smaller magnitude (or None: fitted)."
        )
    return None, (
        f"{margins}: the leaf values of the loss {name} keep pushing them outwards (its "
        f"minimiser lies at infinity?); use a smaller learning_rate, max_delta_step or a "
        f"larger reg_lambda."
    )
