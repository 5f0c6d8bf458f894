"""The chunk loop: dispatch rounds, evaluate, read one chunk behind, call callbacks.

The host dispatches chunk ``c`` (``engine.round.run_chunk``, then the evaluation
program of each evaluation set) and only then reads chunk ``c - 1``'s results (the
non-finite-gradient flags and metric values): the device never idles waiting for the
host. A callback's stop, an early stop or a non-finite gradient therefore discards the
rounds the device had already run past it.

One loop serves ``train`` (one model) and ``train_many`` (M models): each model has a
``ModelRun`` (its evaluation sets, history, callbacks and trees); the loop ends when
every model has stopped.
"""

from __future__ import annotations

import jax
import numpy as np

from ..booster import Booster
from ..callbacks import CallbackEnv, Progress
from ..engine.autodiff import loss_name
from ..engine.round import Rounds, run_chunk
from ..engine.tree import Ensemble
from ..errors import LossError, MetricError
from ..parallel import distributed as dist
from . import hessian
from .evaluation import evaluate_chunk, host_kinds, host_predictions, host_scores

ROUNDS_PER_DISPATCH = 10


class ModelRun:
    """One model's host-side state during the loop.

    Args:
      s: the model's ``config.Settings``.
      where: ``(group, index in group)`` of the model in the round program.
      evals: ``[(EvalSet, EvalPlan, EvalData, margin), ...]`` (see ``evaluation``).
      metrics: the ``Metric`` s evaluated on every set.
      assemble: ``assemble(run, n_new_rounds) -> Booster``.
      label: how errors name the model (``""`` for ``train``).
    """

    def __init__(self, s, where, evals, metrics, assemble, label=""):
        self.s = s
        self.where = where
        self.evals = evals
        self.metrics = metrics
        self.metric_defs = {m.name: m for m in metrics}
        self.history = {e.name: {m.name: [] for m in metrics} for e, *_ in evals}
        self.callbacks = list(s.callbacks)
        self.parts = [] if s.init_model is None else [s.init_model.ensemble]
        self.assemble = assemble
        self.label = label
        self.stop = None  # the last round kept, once stopped
        self.values = None
        # what host metrics read ("margin", "response"): copied to the host per chunk
        self.kinds = host_kinds(metrics, evals[0][1].metrics.link) if evals else ()
        self.flag = None  # the last flag read (engine.round.FLAG_FIELDS)
        self.warned = False

    def booster(self, n_new_rounds):
        return self.assemble(self, n_new_rounds)

    def etas(self, r0, chunk):
        s = self.s
        return [s.lr_of(s.start_round + r) if r < s.n_rounds else 1.0
                for r in range(r0, r0 + chunk)]

    def dispatch_eval(self, trees):
        """Evaluate this chunk's trees on every set (asynchronously): per set, the
        device metrics' values and the predictions host metrics read (or None)."""
        values = []
        for i, (e, plan, data, margin) in enumerate(self.evals):
            margin, v, stages = evaluate_chunk(plan, trees, margin, data,
                                               self.s.loss_values)
            self.evals[i] = (e, plan, data, margin)
            values.append((v, host_predictions(self.kinds, plan.metrics.link, stages)
                           if self.kinds else None))
        self.values = values

    def read(self, flag, values, r0, chunk):
        """Process the rounds of one chunk on the host; the stop round or None."""
        s = self.s
        self.flag = np.asarray(flag)
        bad_round, n_bad = (int(v) for v in self.flag[:2])
        if bad_round >= 0:
            self.warn_hessian()
            kept = (f"The model of rounds 0..{bad_round - 1} is attached as error.booster."
                    if bad_round > 0 else "No round completed.")
            raise LossError(
                f"{self.label}the loss {loss_name(s.loss)} gave NaN or infinite gradients or "
                f"Hessians for {n_bad} row(s) at round {bad_round}; check the loss for log/"
                f"sqrt/division of non-positive values at those margins. {kept}",
                round=bad_round, n_rows=n_bad,
                booster=self.booster(bad_round) if bad_round > 0 else None)
        # per set: (chunk, n_device_metrics), and the host metrics' predictions (one
        # transfer of the chunk)
        values = [(np.asarray(v), None if h is None else jax.device_get(h))
                  for v, h in values]
        for i in range(min(chunk, s.n_rounds - r0)):
            try:  # every set's host metrics first: a failure leaves the history whole
                hosts = [[] if h is None else host_scores(self.metrics, e, h, i, r0 + i)
                         for (e, *_), (_, h) in zip(self.evals, values)]
            except MetricError as err:
                raise MetricError(f"{self.label}{err}", metric=err.metric, data=err.data,
                                  round=err.round, booster=self.booster(r0 + i)
                                  if r0 + i > 0 else None) from err.__cause__
            for (e, *_), (v, _), hv in zip(self.evals, values, hosts):
                dev, hv = iter(v[i]), iter(hv)
                for m in self.metrics:
                    self.history[e.name][m.name].append(float(next(hv if m.host else dev)))
            if self.callbacks:
                env = CallbackEnv(r0 + i, s.n_rounds, s.start_round, self.history,
                                  self.metric_defs, self.booster)
                stops = [bool(cb(env)) for cb in self.callbacks]  # every callback sees it
                if any(stops):
                    return r0 + i
        return None

    def warn_hessian(self):
        """The call's one ``HessianWarning`` (``hessian.warning``), if its Hessians could
        not help on some rows; from the last flag read (the worst round of the call)."""
        if self.flag is not None and not self.warned:
            self.warned = True
            hessian.warn(self.s, self.flag, label=self.label)

    def close(self):
        for cb in self.callbacks:
            if isinstance(cb, Progress):
                cb.close()


def run(models, program, n_rounds, on_chunk=lambda r0: None):
    """Run every model's rounds; sets each model's ``stop`` and ``parts``.

    ``program`` is ``(specs, mesh, rows, shared, hypers, margins, flags, counts, round0)``
    of ``engine.round.run_chunk`` (``round0``: rounds before this call). Raises a
    ``LossError`` of the first model whose g or h turned non-finite.
    """
    specs, mesh, rows, shared, hypers, margins, flags, counts, round0 = program
    chunk = ROUNDS_PER_DISPATCH
    multi = dist.is_multiprocess()
    pending = None
    try:
        for r0 in range(0, n_rounds, chunk):
            etas = tuple(np.array([m.etas(r0, chunk) for m in models if m.where[0] == g],
                                  np.float32) for g in range(len(specs)))
            rounds = Rounds(np.int32(r0), np.int32(n_rounds), np.int32(round0), etas)
            margins, flags, trees = run_chunk(specs, chunk, mesh, rows, shared, hypers,
                                              margins, flags, rounds, counts)
            on_chunk(r0)
            for m in models:
                if m.stop is None:
                    g, i = m.where
                    m.dispatch_eval({k: v[i] for k, v in trees[g].items()})
            if pending is not None and _read(models, pending, chunk, multi):
                _warn(models)
                return
            for m in models:
                if m.stop is None:
                    g, i = m.where
                    t = {k: v[i] for k, v in trees[g].items()}
                    m.parts.append(Ensemble(**(
                        {k: dist.local(v) for k, v in t.items()} if multi else t)))
            pending = (flags, r0, [list(m.values) if m.stop is None else None
                                   for m in models])
        if pending is not None:
            _read(models, pending, chunk, multi)
        _warn(models)
    finally:
        for m in models:
            m.close()


def _read(models, pending, chunk, multi) -> bool:
    """Read one chunk for every running model; True when all have stopped."""
    flags, r0, values = pending
    for m, v in zip(models, values):
        if m.stop is not None or v is None:
            continue
        g, i = m.where
        flag = flags[g][i]
        stop = m.read(dist.local(flag) if multi else flag,
                      jax.tree.map(dist.local, v) if multi else v, r0, chunk)
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


def assemble_booster(run_, n_new_rounds, *, edges, base, n_features):
    """The ``Booster`` of ``run_``'s first ``n_new_rounds`` new rounds."""
    s = run_.s
    tpr = s.trees_per_round
    n_init = 0 if s.init_model is None else s.init_model.ensemble.n_trees
    if run_.parts:
        ens = Ensemble.concat(run_.parts)[: n_init + n_new_rounds * tpr]
    else:
        ens = Ensemble.concat([_no_trees(s)])
    b = Booster(ens, objective=s.loss, params=s.params, bin_edges=edges, base_margin=base,
                n_features=n_features, n_outputs=s.n_outputs, trees_per_round=tpr,
                feature_names=s.feature_names)
    b.history = {d: {k: list(v) for k, v in ms.items()} for d, ms in run_.history.items()}
    # The seed and rounds continue training; the Hessian policy, floor and (vector
    # trees) Hessian form let Booster.grad_hess give the g and h the trees saw.
    b.train_state = {"seed": s.seed, "rounds": s.start_round + n_new_rounds,
                     "hessian": s.hessian, "hessian_floor": s.hessian_floor}
    if s.multi_output_tree:
        b.train_state["multi_hessian"] = "diagonal" if s.diagonal else "full"
    return b


def _no_trees(s):
    M, K = s.params.n_nodes, s.n_outputs
    z = np.zeros((0, M), np.float32)
    return Ensemble(np.zeros((0, M), np.int32), np.zeros((0, M), np.int32), z,
                    np.zeros((0, M), bool), np.zeros((0, M), bool),
                    z if K == 1 else np.zeros((0, M, K), np.float32), z, z)
