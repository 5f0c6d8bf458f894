"""``train()``: configure, prepare, loop over chunks, assemble.

The body reads as the journey of one call: every argument is checked once
(``config.configure``), the rows are binned, padded and placed (``data.prepare``), the
evaluation sets are binned and padded (``evaluation``), the round program's static
record and traced numbers are built (``program``), the chunk loop runs rounds with
evaluation and callbacks one chunk behind (``loop.run``), and the ``Booster`` is
assembled, cut to its best round under early stopping.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from .._types import float32_programs
from ..engine.compile import frees_memory
from ..engine.round import new_flags
from ..inputs.arrays import target_structure
from ..model.booster import Booster
from ..native import compile_cache
from ..native import thread_limit as native_thread_limit
from ..parallel import distributed as dist
from . import loop
from .callbacks import AUTO_SECONDS, EarlyStopping, Progress
from .config import configure
from .data import check_init_edges, prepare, start_margins, where_text
from .evaluation import (
    EvalPlan,
    MetricPlan,
    TreePlan,
    check_host,
    eval_metrics,
    eval_sets,
    link_of,
    pads,
    place,
    plan_metrics,
)
from .hessian import guard_start
from .names import peer_names
from .options import names, record, takes
from .program import hyper, round_spec, stack


@peer_names
@float32_programs
@frees_memory
@takes(names())
def train(objective, X, y, **options) -> Booster:
    r"""Train gradient-boosted trees on any per-row JAX loss.

    Each round computes per-row :math:`g_i = w_i \partial_f \ell(y_i, f_i)` and
    :math:`h_i = w_i \partial^2_f \ell(y_i, f_i)` by autodiff, grows one level-wise tree
    of depth ``max_depth`` on histograms of g and h, and adds
    ``learning_rate * w*`` of each row's leaf to its margin, where
    :math:`w^* = -T_\alpha(G)/(H + \lambda)` (see ``jaxboost.engine.split``). Rounds run on the
    device in chunks of ``ROUNDS_PER_DISPATCH`` (fewer for rounds of more than 10 trees:
    ``loop.rounds_per_dispatch``); evaluation metrics are computed there
    too and reach the host once per chunk.

    Args:
      objective: a per-row loss ``loss(y, pred) -> scalar`` written in JAX, an entry
        of the ``objectives`` catalogue (e.g. ``objectives.logistic``), or its name.
        A loss with keyword hyperparameters, ``loss(y, pred, *, delta)``, takes them
        from ``loss_params``. A plain callable's margins are its predictions unless
        ``link`` gives it an inverse link.
      X: ``(N, F)`` features, NaN = missing: an array, or a pandas/polars DataFrame of
        numeric or bool columns (string column names become ``feature_names``). In a
        multi-process job, this process's rows, or a global ``jax.Array`` whose rows
        are split over the processes (``jax.make_array_from_process_local_data``);
        the same for ``y`` and ``sample_weight``.
      y: ``(N,)`` labels (an array or a Series); or, for a loss of your own, labels
        with side data, of which the loss receives one row: an ``(N, L)`` array (``y``
        is then an ``(L,)`` vector in the loss, ``y[1]``), or a dict of ``(N,)`` (or
        ``(N, d)``) arrays (a dict of one row's values, ``y["exposure"]``; a DataFrame
        of several columns becomes one by column name). Side data may hold ``+-inf``
        (an open interval bound), not NaN. Built-in metrics read the label from a dict's
        ``"label"`` entry (``ValueError`` before training when there is none, or for an
        ``(N, L)`` array); ``"objective"`` and metrics of your own receive ``y`` whole.
        Catalogue entries take ``(N,)`` labels, or an ``(N, T)`` array of ``T >= 2``
        targets for an entry of one output (``squared``, ``logistic``, ``poisson``,
        ...: ``objectives.multi_target``, one tree per target per round, or vector
        leaves with ``multi_strategy="multi_output_tree"``; the model predicts
        ``(N, T)``; metrics such as ``rmse`` and ``logloss`` average over every value,
        as XGBoost's multi-target models). Group losses take ``(N,)`` labels only.
      **options: the training options of ``jaxboost.training.options.OPTIONS``.

    The model does not depend on JAX's global ``jax_enable_x64`` flag: ``train`` runs
    with 64-bit mode off, scoped to the call (``jaxboost._types.float32_programs``;
    the loss, link, metrics, schedule and callbacks run inside that scope), so
    ``JAX_ENABLE_X64=1`` gives the same model bit for bit.

    Returns:
      ``Booster`` with ``history`` (``{data_name: {metric: [per round]}}``),
      ``best_iteration`` and ``best_score`` (with early stopping, else None).

    Warns:
      HessianWarning: the Hessian could not help on some rows (see ``hessian``).
      CheckpointWarning: a ``Checkpoint`` could not write its file; training goes on.

    Raises:
      DataError: bad X, y (complex numbers included; softmax labels implying more
        than ``MAX_CLASSES`` classes, or fewer than 2), sample_weight or evaluation
        data (a ``ValueError``).
      ValueError, TypeError: bad parameters (raised before any training).
      LossError: the loss returns a non-scalar per row; or, at some round, its g, h or
        value is NaN/inf on some rows, or its g and h overflow the trees' node sums,
        leaf values or the margins.
      NonFiniteError: NaN/inf caused by something else, named as ``.cause``:
        ``"sample_weight"``, ``"learning_rate"`` (> 1, scaling leaf values past
        float32) or ``"base_margin"``.
      MetricError: a host metric raised or returned anything but one finite number
        (named with its eval set and round).

    ``LossError``, ``NonFiniteError`` and ``MetricError`` carry ``.round`` and the model
    trained before that round as ``.booster`` (the first two also ``.n_rows``). Every
    non-finite check runs on the device each round (the last round's trees and margins
    too) and reaches the host with the chunk's flags. Any other exception once rounds
    have started (a callback's, ``KeyboardInterrupt``, ...) propagates unchanged but
    with ``.booster``, the model of the rounds completed before it (None if none), and
    a note saying so: no work is lost.

    Example:
      >>> import jax.numpy as jnp, numpy as np, jaxboost
      >>> def loss(y, pred):
      ...     return jnp.logaddexp(0.0, pred) - y * pred
      >>> X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
      >>> y = (X[:, 0] > 0).astype(np.float32)
      >>> bst = jaxboost.train(loss, X, y, n_rounds=10, max_depth=2)
      >>> float(((bst.predict(X, output_margin=True) > 0) == y).mean())
      1.0
      >>> bst = jaxboost.train(loss, X, y, n_rounds=10, max_depth=2, link="sigmoid")
      >>> p = bst.predict(X)                      # probabilities, sigmoid of the margins
      >>> float(((p > 0.5) == y).mean()), bst.objective
      (1.0, objectives.with_link(loss, 'sigmoid'))
      >>> bst = jaxboost.train("logistic", X[:150], y[:150], n_rounds=50,
      ...                      eval_set=[(X[150:], y[150:])], early_stopping_rounds=5)
      >>> bst.best_iteration < 50, list(bst.history["validation_0"])
      (True, ['logloss'])
      >>> forest = jaxboost.train("logistic", X, y, n_rounds=1, learning_rate=1.0,
      ...                         num_parallel_tree=20, subsample=0.8,
      ...                         colsample_bynode=0.8, max_depth=2)
      >>> len(forest), forest.ensemble.n_trees             # one round of 20 trees
      (1, 20)
    """
    o = record("train", options, loss=objective)
    compile_cache.ensure()  # the persistent cache, unless the user set their own
    threads = check_n_jobs(o.n_jobs)
    s, Xf, yf, wf = configure(objective, X, y, o)
    multi = dist.is_multiprocess()
    status = {"round": 0}
    guard = (
        dist.Watchdog(lambda: where_text(status, s.callbacks))
        if multi
        else contextlib.nullcontext()
    )
    # several processes: a lost peer ends this one with a clear message
    with guard, native_thread_limit(threads):
        s = check_init_edges(s, Xf, wf)  # few cuts (an import's): merged with X's
        prep = prepare(s, Xf, yf, wf)
        s = guard_start(s, round_spec(s, prep), prep.rows, prep.margin)
        layout = prep.layout
        evals = eval_sets(
            o.eval_set,
            prep.edges,
            s,
            gather=multi,
            eval_group=o.eval_group,
            eval_base_margin=o.eval_base_margin,
            targets=target_structure(yf),
        )
        metrics = eval_metrics(s.eval_metric, s.loss, evals, s.n_outputs, s.group)
        run_ = model_run(
            s,
            prep,
            evals,
            metrics,
            (0, 0),
            chunk=loop.chunk_for([s]),
            early_stopping=(
                o.early_stopping_rounds,
                o.early_stopping_metric,
                o.early_stopping_data,
                o.min_delta,
            ),
        )
        native_threads = threads if layout.per_process == 1 else 1
        program = (
            (round_spec(s, prep, native_threads=native_threads),),
            layout.mesh,
            prep.rows,
            prep.shared,
            (stack([hyper(run_.s)], layout.replicate_tree),),
            (prep.margin,),
            (layout.replicate(new_flags(1)),),
            layout.replicate(np.array([1], np.int32)),
            s.start_round,
        )
        loop.run([run_], program, s.n_rounds, on_chunk=lambda r0: status.update(round=r0))
        return finish(run_)


def check_n_jobs(n_jobs):
    """``n_jobs`` as a thread cap: None for every core (None or -1), else the int."""
    if n_jobs is None or (not isinstance(n_jobs, bool) and n_jobs == -1):
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(
            f"n_jobs must be a positive integer, or None or -1 for every core, got {n_jobs!r}"
        )
    return int(n_jobs)


def model_run(s, prep, evals, metrics, where, *, early_stopping, chunk, label=""):
    """The ``loop.ModelRun`` of one model: its callbacks (with early stopping and the
    progress bar added), its evaluation sets placed and padded (evaluated ``chunk``
    rounds at a time: ``loop.chunk_for`` of every model trained with it), and how its
    ``Booster`` is assembled."""
    rounds, metric, data, min_delta = early_stopping
    callbacks = list(s.callbacks)
    if rounds is not None:
        early = EarlyStopping(rounds, metric=metric, data=data, min_delta=min_delta)
        early.check([e.name for e in evals], [m.name for m in metrics])
        callbacks.append(early)
    if s.verbose and dist.is_writer():
        auto = s.verbose == "auto"
        callbacks.insert(
            0,
            Progress(
                s.n_rounds, min_seconds=AUTO_SECONDS if auto else 0.0, plain=None if auto else True
            ),
        )
    s = dataclasses.replace(s, callbacks=tuple(callbacks))
    p, layout = s.params, prep.layout
    placed = []
    for e in evals:
        plan = EvalPlan(
            TreePlan(p.max_depth, prep.edges.n_bins, chunk, s.trees_per_round),
            MetricPlan(plan_metrics(metrics, s.family), link_of(s.loss), e.grouped),
        )
        data_, n = place(e, pads(metrics) and not e.grouped, layout.replicate)
        start = start_margins(s, prep.base, e.X, e.n, n, e.offsets)
        check_host(metrics, e, start, link_of(s.loss))  # host metrics, before any round
        placed.append((e, plan, data_, layout.replicate(start)))

    def assemble(run_, n_new, final=False):
        return loop.assemble_booster(
            run_, n_new, edges=prep.edges, base=prep.base, n_features=prep.n_features, final=final
        )

    return loop.ModelRun(s, where, placed, metrics, assemble, label, base=prep.base)


def finish(run_) -> Booster:
    """The model after the loop: cut to its best round under early stopping."""
    s = run_.s
    early = next((cb for cb in s.callbacks if isinstance(cb, EarlyStopping)), None)
    if early is not None and early.best_iteration is not None:
        bst = run_.booster(early.best_iteration + 1, final=True)
        bst.best_iteration = s.start_round + early.best_iteration
        bst.best_score = early.best_score
        return bst
    return run_.booster(loop.new_rounds(run_), final=True)
