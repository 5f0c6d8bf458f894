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

from .. import compile_cache
from .._types import float32_programs
from .._validation import target_structure
from ..booster import Booster
from ..callbacks import AUTO_SECONDS, EarlyStopping, Progress
from ..engine.autodiff import HESSIAN_FLOOR
from ..engine.round import new_flags
from ..native import thread_limit as native_thread_limit
from ..parallel import distributed as dist
from . import loop
from .config import configure
from .data import prepare, start_margins, where_text
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
from .program import hyper, round_spec, stack


@peer_names
@float32_programs
def train(objective, X, y, *, n_rounds: int = 100, learning_rate=0.3,
          max_depth: int = 6, reg_lambda: float = 1.0, reg_alpha: float = 0.0,
          gamma: float = 0.0, min_child_weight: float = 1.0, max_delta_step: float = 0.0,
          max_bin: int = 256, base_margin=None, sample_weight=None, seed=None,
          subsample: float = 1.0, colsample_bytree: float = 1.0,
          colsample_bylevel: float = 1.0, colsample_bynode: float = 1.0,
          num_parallel_tree: int = 1, bootstrap: bool = False,
          eval_set=None, eval_metric=None, early_stopping_rounds=None,
          early_stopping_metric=None, early_stopping_data=None, min_delta: float = 0.0,
          callbacks=None, verbose="auto", init_model=None,
          hessian: str = "auto", hessian_floor: float = HESSIAN_FLOOR, refit="auto",
          n_outputs=None, multi_strategy: str = "one_output_per_tree",
          multi_hessian: str = "full", mesh=None, quantize: bool = False,
          feature_names=None, group=None, eval_group=None, loss_params=None,
          link=None, eval_base_margin=None, categorical_features=None,
          max_cat_to_onehot: int = 4, max_cat_threshold: int = 64, monotone_constraints=None,
          interaction_constraints=None, min_samples_leaf: int = 1, n_jobs=None,
          grow_policy: str = "depthwise", max_leaves: int = 0) -> Booster:
    r"""Train gradient-boosted trees on any per-row JAX loss.

    Each round computes per-row :math:`g_i = w_i \partial_f \ell(y_i, f_i)` and
    :math:`h_i = w_i \partial^2_f \ell(y_i, f_i)` by autodiff, grows one level-wise tree
    of depth ``max_depth`` on histograms of g and h, and adds
    ``learning_rate * w*`` of each row's leaf to its margin, where
    :math:`w^* = -T_\alpha(G)/(H + \lambda)` (see ``jaxboost.engine.split``). Rounds run on the
    device in chunks of ``ROUNDS_PER_DISPATCH``; evaluation metrics are computed there
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
        Catalogue entries and group losses take ``(N,)`` labels only.
      n_rounds: boosting rounds (trees; ``K`` trees per round for ``K`` outputs with
        ``multi_strategy="one_output_per_tree"``); with ``init_model``'s rounds at most
        ``MAX_ROUNDS = 2**30`` (``ValueError`` before any work).
      learning_rate: shrinkage ``eta`` applied to every leaf value: a number, or any
        callable of the round index returning one (an optax schedule such as
        ``optax.exponential_decay(0.3, 10, 0.5)`` works as is). Rounds count from the
        model's first round, also when continuing an ``init_model``. A schedule is
        checked for the whole run before training (up to
        ``config.SCHEDULE_CHECK_ROUNDS`` rounds): a value that is not a number in
        ``(0, 3.4e38]`` (float32), or a call that fails, is a ``ValueError`` naming the
        round, before round 0.
      max_depth: depth of every tree (static: a new value compiles a new program).
      reg_lambda: L2 penalty ``lambda`` on leaf values.
      reg_alpha: L1 penalty ``alpha`` on leaf values.
      gamma: minimum gain to keep a split, applied by bottom-up post-pruning.
      min_child_weight: minimum sum of h in each child of a split.
      max_delta_step: if > 0, leaf values (before ``learning_rate``) are clipped to
        ``+-max_delta_step``.
      max_bin: the most bins per feature, including one reserved for missing values
        (<= 256). The compiled programs use fewer when the data needs fewer: the
        smallest of a few buckets (16, 32, 64, 128, 256) that holds every feature's
        distinct values (or quantile bins) and the missing bin, so data of few values
        per feature trains faster (``jaxboost.engine.binning.program_bins``).
      base_margin: the model's intercept, a number (``K`` numbers for ``K`` outputs,
        finite in float32), stored in the model and added by ``predict``; ``None`` fits the constant
        minimising :math:`\sum_i w_i \ell(y_i, c)` for any loss. Or margins per row
        (offsets), as XGBoost's ``base_margin``: an ``(N,)`` array (``(N, K)`` for ``K``
        outputs; a 1-D array of ``K`` numbers stays the intercept, also when ``N == K``).
        Training then starts from ``margin_i = base_margin_i`` (no intercept is fitted
        or added: the model's ``base_margin`` is 0), the trees fit
        ``margin = base_margin + trees``, nothing per row is stored, and ``predict``,
        ``staged_predict``, ``grad_hess`` and SHAP take the offsets of their rows as
        ``base_margin=`` (without, a row's offset is the model's ``base_margin``, 0).
        E.g. Poisson counts over exposures ``t``: ``base_margin=np.log(t)``. With
        ``init_model`` per-row offsets are allowed (margins start at
        ``init_model.predict(X, base_margin=..., output_margin=True)``), an intercept
        is not.
      sample_weight: optional ``(N,)`` non-negative row weights: they scale g and h,
        weight the bin quantiles and the base-margin fit.
      seed: seed of every random draw (row and column sampling, quantile sketches of
        very large data). ``None``: 0, or the seed ``init_model`` was trained with. The
        same seed gives a bit-identical model.
      subsample: fraction of rows (Bernoulli per row and round) whose g and h enter each
        round's trees, in ``(0, 1]``.
      colsample_bytree, colsample_bylevel, colsample_bynode: nested fractions of the
        features each tree, level and node may split on, in ``(0, 1]`` (see
        ``jaxboost.engine.sampling``).
      num_parallel_tree: trees grown per output in each round, as XGBoost's parameter
        of that name (at most ``config.MAX_PARALLEL_TREES``): each of the ``P`` trees
        fits the round's g and h with its own row sample and column samples, its leaf
        values are :math:`\eta w^* / P`, and the round adds all ``P``, so the round's
        update is the average of ``P`` trees. A random forest is one round of it:
        ``n_rounds=1, learning_rate=1, num_parallel_tree=100, subsample=0.8,
        colsample_bynode=0.8`` (XGBoost's ``XGBRFRegressor`` recipe; a small
        ``reg_lambda`` such as ``1e-5`` makes the leaves plain Newton steps), for any
        loss. Rounds of several trees each are a "boosted forest". A model has ``P``
        (``P K`` with one tree per output) trees per round; slicing, ``predict``, SHAP,
        files and the XGBoost export treat them as one round. Static (a new value
        compiles a new program).
      bootstrap: draw each tree's rows with replacement (``round(subsample * N)``
        draws, so ``subsample=1`` is the classic bootstrap), a row drawn ``c`` times
        weighing ``c``, as scikit-learn's random forests do; ``False`` (default, as
        XGBoost): each row is in a tree's sample with probability ``subsample``.
      eval_set: evaluation data, ``[(X, y), ...]`` or ``[(X, y, sample_weight), ...]``
        (named ``validation_0``, ``validation_1``, ...), or a dict ``{name: (X, y)}``.
        Evaluated after every round, on the device.
      eval_metric: a metric name, ``jaxboost.metrics.Metric`` or JAX callable
        ``metric(y, pred) -> scalar``, or a list of them; default: the objective's own
        metric (``"objective"``, the mean loss, for plain callables). NumPy or
        scikit-learn code goes through ``jaxboost.metrics.host(fn, maximize=...)``: it
        is called on the host, on each round's predictions copied once per chunk (see
        ``jaxboost.metrics.host`` for the cost). See ``jaxboost.metrics``.
      early_stopping_rounds: stop when the watched metric has not improved for this many
        rounds; the returned model is cut to its best round (``best_iteration``,
        ``best_score``). Needs ``eval_set``.
      early_stopping_metric, early_stopping_data: what early stopping watches (default:
        the last metric on the last evaluation set). Whether larger is better comes
        from the metric's definition.
      min_delta: the least change that counts as an improvement.
      callbacks: callables ``callback(env) -> bool`` called after every round with a
        ``jaxboost.callbacks.CallbackEnv``; ``True`` stops training (e.g.
        ``jaxboost.callbacks.Checkpoint(path, every=10)``). An exception a callback
        raises ends training with the model so far attached (see Raises).
      verbose: ``True``: progress with the latest metrics on stderr from the first
        round (a tqdm bar when tqdm is installed, a plain line otherwise); ``False``:
        silent; ``"auto"``: the same, but only when training itself is slow (the rounds
        still to run expected to take over ``callbacks.AUTO_SECONDS`` = 5 s at the
        speed measured after compilation) and, without tqdm, only on a terminal. An
        early stop ends the bar as complete. See ``jaxboost.callbacks.Progress``.
      init_model: a ``Booster`` to continue from (its trees, bin edges, base margin,
        seed and round count): ``train(..., n_rounds=4, init_model=train(..., n_rounds=4))``
        gives the same model as ``n_rounds=8``, bit for bit.
      hessian: the Hessian the trees use: ``"exact"`` (autodiff), ``"clip"`` (raised to
        ``hessian_floor``; eigenvalues for K x K Hessians), ``"constant"`` (1 per row:
        plain gradient boosting), ``"expected"`` (the objective's Fisher information),
        ``"clip_negative"`` (autodiff's, only negative values, or K x K matrices that
        are not positive semi-definite, raised to ``hessian_floor``), or ``"auto"``:
        the objective's default, ``"clip_negative"`` for plain callables (a convex loss
        keeps its exact h to the bit). Under ``"auto"`` a plain callable whose Hessian
        is 0 on every row at the start margin (``jnp.abs(y - f)``, pinball, hinge)
        trains with ``"constant"`` (and ``refit="newton"`` when ``refit`` is
        ``"auto"``) instead of a constant model, with a ``jaxboost.HessianWarning``.
        Rows whose h is negative (K x K: not positive semi-definite), or 0 where g is
        not, are counted every round and reported once per call as a
        ``HessianWarning`` (share of rows, round, options) when they reach 0.1 % of the
        rows. See ``jaxboost.engine.autodiff.apply_hessian_policy``.
      hessian_floor: floor of ``hessian="clip"`` and ``"clip_negative"`` (default
        ``1e-6``).
      refit: re-solve leaf values on the true loss after each tree is grown:
        ``"exact"`` (each leaf minimises the regularised loss over its rows, by
        bisection: any convex loss, e.g. a pinball loss gets its own quantile whatever
        its keyword is called), ``"newton"`` (a few damped Newton steps),
        ``"quantile"`` (weighted ``alpha``-quantile of residuals, ``alpha`` from
        ``loss_params`` or the objective; a loss of your own without ``alpha`` is
        refused), ``None`` (no refit) or ``"auto"`` (the objective's default; none for
        plain callables). Single-output losses. See ``jaxboost.engine.refit``.
      n_outputs: margins per row ``K`` for a plain callable whose ``pred`` is a ``(K,)``
        vector; catalogue entries know theirs (softmax infers it from the labels).
      multi_strategy: for ``K > 1``: ``"one_output_per_tree"`` (K trees per round, each
        on one output's g and the diagonal of H, as XGBoost's default) or
        ``"multi_output_tree"`` (one tree with vector leaves solving
        :math:`(H + \lambda I) w = -G`).
      multi_hessian: for ``"multi_output_tree"``: ``"full"`` (K x K Hessians) or
        ``"diagonal"`` (cheaper for large K).
      grow_policy: ``"depthwise"`` (level by level, XGBoost's default) or
        ``"lossguide"`` (leaf-wise, XGBoost's and LightGBM's: the split of largest gain
        anywhere in the tree first, ties to the node made first, until ``max_leaves``
        leaves; depth is still bounded by ``max_depth``). Leaf-wise trees are the
        best-first subset of the level-wise candidate splits (a node's split depends
        only on its rows), selected in the native CPU kernel: one CPU device, numeric
        features, no constraints, one output per tree (``ValueError`` otherwise).
        ``max_leaves``: the most leaves of a leaf-wise tree (0: no limit; XGBoost's
        ``max_leaves``, LightGBM's ``num_leaves``); it needs ``"lossguide"``.
      n_jobs: the most threads of the native CPU kernel (histograms, whole trees) and
        of binning: a positive int, or None / -1 for every core (XGBoost's
        ``n_jobs``). XLA's own operations (the loss's g and h, margins, metrics) run on
        XLA's CPU thread pool, sized when JAX starts; with the native kernel on
        one device most of a round is the kernel's. A new value compiles the round
        program once more; on data large enough for threads (rows x features >=
        2**18) the histogram sums are grouped by thread, so models of different
        ``n_jobs`` can differ in their last bits.
      mesh: a one-axis ``jax.sharding.Mesh`` to shard rows over; ``None`` trains on one
        device on CPU (fastest there, see ``jaxboost.sharding``) and on every local device
        of a GPU/TPU backend when the data is large enough. In a multi-process job
        (``jaxboost.distributed``) each process passes its own rows and the mesh spans
        every process (default: ``jaxboost.distributed.default_mesh()``).
      quantize: put g and h on a power-of-two grid every round (24 significant bits of
        the round's largest value) so that every histogram sum is exact: the model is
        then bit-identical whatever the number of devices or processes (see
        ``jaxboost.engine.exact``). Default ``False``: float sums, equal across layouts to
        about 1e-6.
      feature_names: ``F`` unique strings naming the columns of an array ``X`` (for a
        DataFrame they come from its columns, and must equal them if given). Stored as
        ``booster.feature_names`` and in model files; ``predict`` then checks that
        DataFrames have exactly these columns, in this order. Default: the
        ``init_model``'s names, else none.
      group: ``(N,)`` group ids (queries, risk sets) for a group loss
        ``loss(y_group, pred_group, mask) -> scalar`` that couples the rows of a group
        (see ``jaxboost.engine.groups``): g by autodiff, h the exact Hessian diagonal for
        groups of up to 64 rows, a Hutchinson estimate above. One device, one output;
        the base margin defaults to 0.
      loss_params: keyword hyperparameters of a plain-callable loss, e.g.
        ``train(loss, X, y, loss_params={"delta": 2.0})`` trains on
        ``loss(y, pred, delta=2.0)``. They are passed to the compiled round as values,
        not compiled in: a sweep over them compiles nothing new (catalogue variants such
        as ``objectives.huber(delta=2.0)`` and ``functools.partial(loss, delta=2.0)``
        with numeric keywords get the same treatment on their own).
      link: the inverse link of a plain-callable loss, margin -> response: what
        ``predict`` returns and what response metrics (``logloss``, ``error``,
        ``brier``, ...) score, also for early stopping, ``compare``, saved models and
        the scikit-learn classifier's ``predict_proba``. A name: ``"identity"``,
        ``"sigmoid"`` (or ``"logistic"``) for a probability, ``"softmax"`` for ``K``
        class probabilities (``n_outputs=K``), ``"exp"`` for a positive mean; or a JAX
        callable applied to the ``(N,)`` (``(N, K)``) margins. Training never reads it:
        the trees are the same with or without. ``None`` (default): no link, the margin
        is the prediction, and a metric that needs probabilities or a mean raises
        ``ValueError`` before training. Catalogue entries have their own links
        (``objectives.logistic``: sigmoid): ``link`` must then be left out or name the
        same link (``ValueError`` otherwise). The model's objective becomes
        ``objectives.with_link(loss, link)``.
      eval_group: query ids of the evaluation sets, for the ranking metrics ``ndcg``,
        ``map``, ``ndcg@k`` and ``map@k`` (``jaxboost.ranking``): a list with one
        ``(n,)`` array (or None) per evaluation set, or a dict keyed like ``eval_set``.
      eval_base_margin: margins per row of the evaluation sets, as ``base_margin`` per
        row (XGBoost's ``base_margin_eval_set``): a list with one ``(n,)`` (``(n, K)``)
        array (or None) per set, or a dict keyed like ``eval_set``. A set without starts
        from the model's ``base_margin``.
      categorical_features: the columns of ``X`` to split by category, as XGBoost's
        ``enable_categorical=True``: a list of column indices, or of names (a
        DataFrame's columns, ``feature_names``). pandas ``category`` and polars
        ``Categorical``/``Enum`` columns are categorical without being named here; their
        labels are stored in the model, and ``predict`` re-codes a DataFrame whose
        categories differ. An array column holds integer codes ``0 .. C - 1`` (NaN:
        missing), at most ``max_bin - 1`` categories (``DataError`` naming the column
        otherwise, also for negative or fractional codes). A split sends a set of
        categories one way; missing values and codes not seen in training go the
        learned default way (see ``jaxboost.engine.categorical``).
      max_cat_to_onehot: a categorical feature of fewer categories than this is split
        one-vs-rest (one category against the others); otherwise by sorting its
        categories by :math:`G/H` in the node and taking the best prefix. XGBoost's
        parameter, default 4.
      max_cat_threshold: the most categories a partition split gathers on one side
        while scanning (XGBoost's parameter, default 64).
      monotone_constraints: the direction of each feature's effect, as XGBoost's
        ``hist``: ``1`` (predictions never decrease as the feature grows), ``-1``
        (never increase) or ``0`` (free). A sequence of ``F`` signs, a dict
        ``{feature index or name: sign}`` (others 0) or XGBoost's string
        ``"(1,0,-1)"``. A split on a constrained feature is made only when its
        children's weights are in order; their midpoint bounds every weight below
        them, and leaf values are clipped to their node's bounds (see
        ``jaxboost.engine.constraints``). Categories have no order: a categorical
        feature takes sign 0 (``ValueError`` otherwise); signs on other features apply
        with categorical features present (their splits then score as XGBoost's).
      interaction_constraints: the features allowed to interact, as XGBoost's: a list of
        sets (lists of feature indices or names; or the string ``"[[0,1],[2,3]]"``). A
        node splits only on a feature used above it or in a set that holds every feature
        used above it (the root on any feature).
      min_samples_leaf: the fewest rows each child of a split may hold (default 1: no
        limit). Rows count 1 whatever their ``sample_weight``; rows of weight 0, rows
        ``subsample`` left out of the round, and rows of non-finite g or h do not count.
        ``min_child_weight`` instead bounds each child's sum of Hessians.
        The three constraint options are recorded in the model's ``train_state``; a
        continued ``train(..., init_model=...)`` takes them from its own arguments.

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
    compile_cache.ensure()  # the persistent cache, unless the user set their own
    threads = check_n_jobs(n_jobs)
    s, Xf, yf, wf = configure(locals())
    multi = dist.is_multiprocess()
    status = {"round": 0}
    guard = (dist.Watchdog(lambda: where_text(status, s.callbacks)) if multi
             else contextlib.nullcontext())
    # several processes: a lost peer ends this one with a clear message
    with guard, native_thread_limit(threads):
        prep = prepare(s, Xf, yf, wf)
        s = guard_start(s, round_spec(s, prep), prep.rows, prep.margin)
        layout = prep.layout
        evals = eval_sets(eval_set, prep.edges, s, gather=multi, eval_group=eval_group,
                          eval_base_margin=eval_base_margin,
                          targets=target_structure(yf))
        metrics = eval_metrics(s.eval_metric, s.loss, evals, s.n_outputs)
        run_ = model_run(s, prep, evals, metrics, (0, 0), early_stopping=(
            early_stopping_rounds, early_stopping_metric, early_stopping_data, min_delta))
        native_threads = threads if layout.per_process == 1 else 1
        program = ((round_spec(s, prep, native_threads=native_threads),),
                   layout.mesh, prep.rows, prep.shared,
                   (stack([hyper(run_.s)], layout.replicate),), (prep.margin,),
                   (layout.replicate(new_flags(1)),),
                   layout.replicate(np.array([1], np.int32)), s.start_round)
        loop.run([run_], program, s.n_rounds, on_chunk=lambda r0: status.update(round=r0))
        return finish(run_)


def check_n_jobs(n_jobs):
    """``n_jobs`` as a thread cap: None for every core (None or -1), else the int."""
    if n_jobs is None or (not isinstance(n_jobs, bool) and n_jobs == -1):
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, or None or -1 for every "
                         f"core, got {n_jobs!r}")
    return int(n_jobs)


def model_run(s, prep, evals, metrics, where, *, early_stopping, label=""):
    """The ``loop.ModelRun`` of one model: its callbacks (with early stopping and the
    progress bar added), its evaluation sets placed and padded, and how its ``Booster``
    is assembled."""
    rounds, metric, data, min_delta = early_stopping
    callbacks = list(s.callbacks)
    if rounds is not None:
        early = EarlyStopping(rounds, metric=metric, data=data, min_delta=min_delta)
        early.check([e.name for e in evals], [m.name for m in metrics])
        callbacks.append(early)
    if s.verbose and dist.is_writer():
        auto = s.verbose == "auto"
        callbacks.insert(0, Progress(s.n_rounds, min_seconds=AUTO_SECONDS if auto else 0.0,
                                     plain=None if auto else True))
    s = dataclasses.replace(s, callbacks=tuple(callbacks))
    p, layout = s.params, prep.layout
    placed = []
    for e in evals:
        plan = EvalPlan(TreePlan(p.max_depth, prep.edges.n_bins, loop.ROUNDS_PER_DISPATCH,
                                 s.trees_per_round),
                        MetricPlan(plan_metrics(metrics, s.family), link_of(s.loss),
                                   e.grouped))
        data_, n = place(e, pads(metrics) and not e.grouped, layout.replicate)
        start = start_margins(s, prep.base, e.X, e.n, n, e.offsets)
        check_host(metrics, e, start, link_of(s.loss))  # host metrics, before any round
        placed.append((e, plan, data_, layout.replicate(start)))

    def assemble(run_, n_new):
        return loop.assemble_booster(run_, n_new, edges=prep.edges, base=prep.base,
                                     n_features=prep.n_features)

    return loop.ModelRun(s, where, placed, metrics, assemble, label, base=prep.base)


def finish(run_) -> Booster:
    """The model after the loop: cut to its best round under early stopping."""
    s = run_.s
    early = next((cb for cb in s.callbacks if isinstance(cb, EarlyStopping)), None)
    if early is not None and early.best_iteration is not None:
        bst = run_.booster(early.best_iteration + 1)
        bst.best_iteration = s.start_round + early.best_iteration
        bst.best_score = early.best_score
        return bst
    return run_.booster(loop.new_rounds(run_))
