"""The training options, declared once: ``OPTIONS``.

Each ``Option`` is one keyword argument of ``jaxboost.train``: its name, default, type,
whether the compiled round takes it as a traced number (a new value compiles nothing)
or fixes the program (a new value compiles a new one), which other entry points take it,
and its documentation. From this table

* ``train`` and ``train_many`` take their keyword arguments and the ``Args`` of their
  docstrings (``signature``, ``args_doc``; ``help(jaxboost.train)`` shows both);
* ``train_many`` knows what may differ between its configurations (``many="config"``)
  and what its models share (``many="shared"``);
* the scikit-learn estimators take the options marked ``sklearn=True`` by name (every
  other option through ``**kwargs``, as XGBoost's estimators do);
* ``hypergrad`` and ``tune`` know which options it differentiates, which choose the
  trees' structure and which a replay does not follow (``hypergrad=...``);
* ``configure`` receives one ``Options`` record of every value (``record``), never
  ``locals()``, and hands it on in ``Settings.options``.

Adding an option is one ``Option(...)`` here and the code that reads
``settings.options.<name>`` where it acts.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from ..engine.autodiff import HESSIAN_FLOOR, takes_keyword

MANY = (None, "config", "shared")
HYPERGRAD = (None, "differentiable", "structural", "not_replayed")


class Option(NamedTuple):
    """One keyword argument of ``train``.

    ``doc`` None: documented with the option before it (``"a, b: ..."``). ``traced``:
    passed to the compiled round as a number (else it fixes the program, or is no
    number at all). ``many``: ``"config"`` may differ between ``train_many``'s
    configurations, ``"shared"`` is one value for all of them, None: ``train_many`` does
    not take it. ``sklearn``: a named parameter of the estimators (others still pass
    through their ``**kwargs``). ``hypergrad``: ``"differentiable"`` (a gradient is
    taken), ``"structural"`` (chooses the trees: no gradient), ``"not_replayed"``
    (refused), None (passed on to ``train``). ``check``: ``check(name, value)`` run
    when the record is made (the options whose checks involve others are checked in
    ``training.config.configure``).
    """

    name: str
    default: Any = None
    traced: bool = False
    type: Optional[type] = None
    many: Optional[str] = None
    sklearn: bool = False
    hypergrad: Optional[str] = None
    check: Optional[Callable] = None
    doc: Optional[str] = ""


OPTIONS = (
    Option(
        "n_rounds",
        100,
        type=int,
        many="shared",
        hypergrad="structural",
        doc="""
        boosting rounds (trees; ``K`` trees per round for ``K`` outputs with
        ``multi_strategy="one_output_per_tree"``); with ``init_model``'s rounds at most
        ``MAX_ROUNDS = 2**30`` (``ValueError`` before any work).""",
    ),
    Option(
        "learning_rate",
        0.3,
        traced=True,
        many="config",
        sklearn=True,
        hypergrad="differentiable",
        doc="""
        shrinkage ``eta`` applied to every leaf value: a number, or any
        callable of the round index returning one (an optax schedule such as
        ``optax.exponential_decay(0.3, 10, 0.5)`` works as is). Rounds count from the
        model's first round, also when continuing an ``init_model``. A schedule is
        checked for the whole run before training (up to
        ``config.SCHEDULE_CHECK_ROUNDS`` rounds): a value that is not a number in
        ``(0, 3.4e38]`` (float32), or a call that fails, is a ``ValueError`` naming the
        round, before round 0.""",
    ),
    Option(
        "max_depth",
        6,
        type=int,
        many="shared",
        sklearn=True,
        hypergrad="structural",
        doc="""
        depth of every tree (static: a new value compiles a new program).""",
    ),
    Option(
        "reg_lambda",
        1.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="differentiable",
        doc="""
        L2 penalty ``lambda`` on leaf values.""",
    ),
    Option(
        "reg_alpha",
        0.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="differentiable",
        doc="""
        L1 penalty ``alpha`` on leaf values.""",
    ),
    Option(
        "gamma",
        0.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc="""
        minimum gain to keep a split, applied by bottom-up post-pruning.""",
    ),
    Option(
        "min_child_weight",
        1.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc="""
        minimum sum of h in each child of a split. With vector leaves
        (``multi_strategy="multi_output_tree"``) the sum of h per output: ``trace(H) / K``,
        the child's Hessian summed over its K outputs and divided by K (XGBoost 3.4's
        rule), so K copies of one target grow that target's trees.""",
    ),
    Option(
        "max_delta_step",
        0.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="differentiable",
        doc="""
        if > 0, leaf values (before ``learning_rate``) are clipped to
        ``+-max_delta_step``.""",
    ),
    Option(
        "max_bin",
        256,
        type=int,
        many="shared",
        sklearn=True,
        hypergrad="structural",
        doc="""
        the most bins per feature, including one reserved for missing values
        (<= 256; XGBoost's ``max_bin`` counts only the bins of values, so its
        ``max_bin=k`` is ``k + 1`` here; ``max_bin=2`` on data without NaN warns: no
        tree can split). The compiled programs use fewer when the data needs fewer: the
        smallest of a few buckets (16, 32, 64, 128, 256) that holds every feature's
        distinct values (or quantile bins) and the missing bin, so data of few values
        per feature trains faster (``jaxboost.engine.binning.program_bins``).""",
    ),
    Option(
        "base_margin",
        None,
        many="config",
        hypergrad="not_replayed",
        doc="""
        the model's intercept, a number (``K`` numbers for ``K`` outputs,
        finite in float32), stored in the model and added by ``predict``; ``None`` fits the constant
        minimising :math:`\\sum_i w_i \\ell(y_i, c)` for any loss. Or margins per row
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
        is not.""",
    ),
    Option(
        "sample_weight",
        None,
        many="shared",
        doc="""
        optional ``(N,)`` non-negative row weights: they scale g and h,
        weight the bin quantiles and the base-margin fit.""",
    ),
    Option(
        "seed",
        None,
        traced=True,
        many="config",
        hypergrad="structural",
        doc="""
        seed of every random draw (row and column sampling, quantile sketches of
        very large data). ``None``: 0, or the seed ``init_model`` was trained with. The
        same seed gives a bit-identical model.""",
    ),
    Option(
        "subsample",
        1.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc="""
        fraction of rows (Bernoulli per row and round) whose g and h enter each
        round's trees, in ``(0, 1]``.""",
    ),
    Option(
        "colsample_bytree",
        1.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc="""
        nested fractions of the
        features each tree, level and node may split on, in ``(0, 1]`` (see
        ``jaxboost.engine.sampling``).""",
    ),
    Option(
        "colsample_bylevel",
        1.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc=None,
    ),
    Option(
        "colsample_bynode",
        1.0,
        traced=True,
        type=float,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc=None,
    ),
    Option(
        "num_parallel_tree",
        1,
        type=int,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc="""
        trees grown per output in each round, as XGBoost's parameter
        of that name (at most ``config.MAX_PARALLEL_TREES``): each of the ``P`` trees
        fits the round's g and h with its own row sample and column samples, its leaf
        values are :math:`\\eta w^* / P`, and the round adds all ``P``, so the round's
        update is the average of ``P`` trees. A random forest is one round of it:
        ``n_rounds=1, learning_rate=1, num_parallel_tree=100, subsample=0.8,
        colsample_bynode=0.8`` (XGBoost's ``XGBRFRegressor`` recipe; a small
        ``reg_lambda`` such as ``1e-5`` makes the leaves plain Newton steps), for any
        loss. Rounds of several trees each are a "boosted forest". A model has ``P``
        (``P K`` with one tree per output) trees per round; slicing, ``predict``, SHAP,
        files and the XGBoost export treat them as one round. Static (a new value
        compiles a new program).""",
    ),
    Option(
        "bootstrap",
        False,
        type=bool,
        many="config",
        sklearn=True,
        doc="""
        draw each tree's rows with replacement (``round(subsample * N)``
        draws, so ``subsample=1`` is the classic bootstrap), a row drawn ``c`` times
        weighing ``c``, as scikit-learn's random forests do; ``False`` (default, as
        XGBoost): each row is in a tree's sample with probability ``subsample``.""",
    ),
    Option(
        "eval_set",
        None,
        many="shared",
        hypergrad="not_replayed",
        doc="""
        evaluation data, ``[(X, y), ...]`` or ``[(X, y, sample_weight), ...]``
        (named ``validation_0``, ``validation_1``, ...), or a dict ``{name: (X, y)}``.
        Evaluated after every round, on the device.""",
    ),
    Option(
        "eval_metric",
        None,
        many="shared",
        sklearn=True,
        hypergrad="not_replayed",
        doc="""
        a metric name, ``jaxboost.metrics.Metric`` or JAX callable
        ``metric(y, pred) -> scalar``, or a list of them; default: the objective's own
        metric (``"objective"``, the mean loss, for plain callables). NumPy or
        scikit-learn code goes through ``jaxboost.metrics.host(fn, maximize=...)``: it
        is called on the host, on each round's predictions copied once per chunk (see
        ``jaxboost.metrics.host`` for the cost). See ``jaxboost.metrics``.""",
    ),
    Option(
        "early_stopping_rounds",
        None,
        many="shared",
        sklearn=True,
        hypergrad="not_replayed",
        doc="""
        stop when the watched metric has not improved for this many
        rounds; the returned model is cut to its best round (``best_iteration``,
        ``best_score``). Needs ``eval_set``.""",
    ),
    Option(
        "early_stopping_metric",
        None,
        many="shared",
        hypergrad="not_replayed",
        doc="""
        what early stopping watches (default:
        the last metric on the last evaluation set). Whether larger is better comes
        from the metric's definition.""",
    ),
    Option("early_stopping_data", None, many="shared", hypergrad="not_replayed", doc=None),
    Option(
        "min_delta",
        0.0,
        type=float,
        many="shared",
        doc="""
        the least change that counts as an improvement.""",
    ),
    Option(
        "callbacks",
        None,
        many="config",
        doc="""
        callables ``callback(env) -> bool`` called after every round with a
        ``jaxboost.callbacks.CallbackEnv``; ``True`` stops training (e.g.
        ``jaxboost.callbacks.Checkpoint(path, every=10)``). An exception a callback
        raises ends training with the model so far attached (see Raises).""",
    ),
    Option(
        "verbose",
        "auto",
        sklearn=True,
        doc="""
        ``True``: progress with the latest metrics on stderr from the first
        round (a tqdm bar when tqdm is installed, a plain line otherwise); ``False``:
        silent; ``"auto"``: the same, but only when training itself is slow (the rounds
        still to run expected to take over ``callbacks.AUTO_SECONDS`` = 5 s at the
        speed measured after compilation) and, without tqdm, only on a terminal. An
        early stop ends the bar as complete. See ``jaxboost.callbacks.Progress``.""",
    ),
    Option(
        "init_model",
        None,
        hypergrad="not_replayed",
        doc="""
        a ``Booster`` to continue from (its trees, bin edges, base margin,
        seed and round count): ``train(..., n_rounds=4, init_model=train(..., n_rounds=4))``
        gives the same model as ``n_rounds=8``, bit for bit. The same ``max_bin``;
        ``max_depth`` at least its trees' (a deeper one lays them out anew, unchanged).
        Where its cuts are few for ``X`` (a ``from_xgboost`` model's are its trees'
        thresholds) they are merged with ``X``'s own and its trees' bins moved: the
        same predictions, and new trees split anywhere.""",
    ),
    Option(
        "hessian",
        "auto",
        type=str,
        many="config",
        sklearn=True,
        doc="""
        the Hessian the trees use: ``"exact"`` (autodiff), ``"clip"`` (raised to
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
        rows. See ``jaxboost.engine.autodiff.apply_hessian_policy``.""",
    ),
    Option(
        "hessian_floor",
        HESSIAN_FLOOR,
        traced=True,
        type=float,
        many="config",
        hypergrad="differentiable",
        doc="""
        floor of ``hessian="clip"`` and ``"clip_negative"`` (default
        ``1e-6``).""",
    ),
    Option(
        "refit",
        "auto",
        many="config",
        sklearn=True,
        doc="""
        re-solve leaf values on the true loss after each tree is grown:
        ``"exact"`` (each leaf minimises the regularised loss over its rows, by
        bisection: any convex loss, e.g. a pinball loss gets its own quantile whatever
        its keyword is called), ``"newton"`` (a few damped Newton steps),
        ``"quantile"`` (``alpha``-quantile of residuals by XGBoost's rules: interpolated
        without ``sample_weight``, a weighted step with it; training starts from the
        labels' quantile; ``alpha`` from
        ``loss_params`` or the objective; a loss of your own without ``alpha`` is
        refused), ``None`` (no refit) or ``"auto"`` (the objective's default; none for
        plain callables). Single-output losses. A leaf's rows are those its tree was
        grown on: rows ``subsample`` left out do not count; a bootstrap's counts weigh
        them. See ``jaxboost.engine.refit``.""",
    ),
    Option(
        "n_outputs",
        None,
        many="config",
        hypergrad="not_replayed",
        doc="""
        margins per row ``K`` for a plain callable whose ``pred`` is a ``(K,)``
        vector; catalogue entries know theirs (softmax infers it from the labels).""",
    ),
    Option(
        "multi_strategy",
        "one_output_per_tree",
        type=str,
        many="config",
        sklearn=True,
        hypergrad="not_replayed",
        doc="""
        for ``K > 1``: ``"one_output_per_tree"`` (K trees per round, each
        on one output's g and the diagonal of H, as XGBoost's default) or
        ``"multi_output_tree"`` (one tree with vector leaves solving
        :math:`(H + \\lambda I) w = -G`).""",
    ),
    Option(
        "multi_hessian",
        "auto",
        type=str,
        many="config",
        doc="""
        for ``"multi_output_tree"``: ``"full"`` (K x K Hessians), ``"diagonal"``
        (cheaper for large K; XGBoost's rule) or ``"auto"``: diagonal for several
        targets of a catalogue entry (``objectives.multi_target``, whose Hessian is
        diagonal: the same leaves, without the K x K solves), full otherwise.""",
    ),
    Option(
        "mesh",
        None,
        many="shared",
        doc="""
        a one-axis ``jax.sharding.Mesh`` to shard rows over; ``None`` trains on one
        device on CPU (fastest there, see ``jaxboost.sharding``) and on every local device
        of a GPU/TPU backend when the data is large enough. In a multi-process job
        (``jaxboost.distributed``) each process passes its own rows and the mesh spans
        every process (default: ``jaxboost.distributed.default_mesh()``).""",
    ),
    Option(
        "quantize",
        False,
        type=bool,
        many="shared",
        hypergrad="not_replayed",
        doc="""
        put g and h on a power-of-two grid every round (24 significant bits of
        the round's largest value) so that every histogram sum is exact: the model is
        then bit-identical whatever the number of devices or processes (see
        ``jaxboost.engine.exact``). Default ``False``: float sums, equal across layouts to
        about 1e-6.""",
    ),
    Option(
        "feature_names",
        None,
        many="shared",
        doc="""
        ``F`` unique strings naming the columns of an array ``X`` (for a
        DataFrame they come from its columns, and must equal them if given). Stored as
        ``booster.feature_names`` and in model files; ``predict`` then checks that
        DataFrames have exactly these columns, in this order. Default: the
        ``init_model``'s names, else none.""",
    ),
    Option(
        "group",
        None,
        hypergrad="not_replayed",
        doc="""
        ``(N,)`` group ids (queries, risk sets), or the sizes of contiguous groups
        summing to N as XGBoost's ``set_group`` takes them, for a group loss
        ``loss(y_group, pred_group, mask) -> scalar`` that couples the rows of a group
        (see ``jaxboost.engine.groups``): g by autodiff, h the exact Hessian diagonal for
        groups of up to 64 rows, a Hutchinson estimate above. One device, one output;
        the base margin defaults to 0.""",
    ),
    Option(
        "eval_group",
        None,
        many="shared",
        hypergrad="not_replayed",
        doc="""
        query ids of the evaluation sets, for the ranking metrics ``ndcg``,
        ``map``, ``ndcg@k`` and ``map@k`` (``jaxboost.ranking``): a list with one
        ``(n,)`` array (or None) per evaluation set, or a dict keyed like ``eval_set``;
        each may also be the sizes of contiguous queries (as for ``group``).""",
    ),
    Option(
        "loss_params",
        None,
        traced=True,
        many="config",
        hypergrad="not_replayed",
        doc="""
        keyword hyperparameters of a plain-callable loss, e.g.
        ``train(loss, X, y, loss_params={"delta": 2.0})`` trains on
        ``loss(y, pred, delta=2.0)``. They are passed to the compiled round as values,
        not compiled in: a sweep over them compiles nothing new (catalogue variants such
        as ``objectives.huber(delta=2.0)`` and ``functools.partial(loss, delta=2.0)``
        with numeric keywords get the same treatment on their own).""",
    ),
    Option(
        "link",
        None,
        many="config",
        doc="""
        the inverse link of a plain-callable loss, margin -> response: what
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
        ``objectives.with_link(loss, link)``.""",
    ),
    Option(
        "eval_base_margin",
        None,
        many="shared",
        doc="""
        margins per row of the evaluation sets, as ``base_margin`` per
        row (XGBoost's ``base_margin_eval_set``): a list with one ``(n,)`` (``(n, K)``)
        array (or None) per set, or a dict keyed like ``eval_set``. A set without starts
        from the model's ``base_margin``.""",
    ),
    Option(
        "categorical_features",
        None,
        many="shared",
        doc="""
        the columns of ``X`` to split by category, as XGBoost's
        ``enable_categorical=True``: a list of column indices, or of names (a
        DataFrame's columns, ``feature_names``). pandas ``category`` and polars
        ``Categorical``/``Enum`` columns are categorical without being named here; their
        labels are stored in the model, and ``predict`` re-codes a DataFrame whose
        categories differ. An array column holds integer codes ``0 .. C - 1`` (NaN:
        missing), at most ``max_bin - 1`` categories (``DataError`` naming the column
        otherwise, also for negative or fractional codes). A split sends a set of
        categories one way; missing values and codes not seen in training go the
        learned default way (see ``jaxboost.engine.categorical``).""",
    ),
    Option(
        "max_cat_to_onehot",
        4,
        type=int,
        many="shared",
        sklearn=True,
        hypergrad="structural",
        doc="""
        a categorical feature of fewer categories than this is split
        one-vs-rest (one category against the others); otherwise by sorting its
        categories by :math:`G/H` in the node and taking the best prefix. XGBoost's
        parameter, default 4.""",
    ),
    Option(
        "max_cat_threshold",
        64,
        type=int,
        many="shared",
        sklearn=True,
        hypergrad="structural",
        doc="""
        the most categories a partition split gathers on one side
        while scanning (XGBoost's parameter, default 64).""",
    ),
    Option(
        "monotone_constraints",
        None,
        many="config",
        sklearn=True,
        hypergrad="not_replayed",
        doc="""
        the direction of each feature's effect, as XGBoost's
        ``hist``: ``1`` (predictions never decrease as the feature grows), ``-1``
        (never increase) or ``0`` (free). A sequence of ``F`` signs, a dict
        ``{feature index or name: sign}`` (others 0) or XGBoost's string
        ``"(1,0,-1)"``. A split on a constrained feature is made only when its
        children's weights are in order; their midpoint bounds every weight below
        them, and leaf values are clipped to their node's bounds (see
        ``jaxboost.engine.constraints``). Categories have no order: a categorical
        feature takes sign 0 (``ValueError`` otherwise); signs on other features apply
        with categorical features present (their splits then score as XGBoost's).""",
    ),
    Option(
        "interaction_constraints",
        None,
        many="config",
        sklearn=True,
        doc="""
        the features allowed to interact, as XGBoost's: a list of
        sets (lists of feature indices or names; or the string ``"[[0,1],[2,3]]"``). A
        node splits only on a feature used above it or in a set that holds every feature
        used above it (the root on any feature).""",
    ),
    Option(
        "min_samples_leaf",
        1,
        type=int,
        many="config",
        sklearn=True,
        hypergrad="structural",
        doc="""
        the fewest rows each child of a split may hold (default 1: no
        limit). Rows count 1 whatever their ``sample_weight``; rows of weight 0, rows
        ``subsample`` left out of the round, and rows of non-finite g or h do not count.
        ``min_child_weight`` instead bounds each child's sum of Hessians.
        The three constraint options are recorded in the model's ``train_state``; a
        continued ``train(..., init_model=...)`` takes them from its own arguments.""",
    ),
    Option(
        "n_jobs",
        None,
        sklearn=True,
        doc="""
        the most threads of the native CPU kernel (histograms, whole trees) and
        of binning: a positive int, or None / -1 for every core (XGBoost's
        ``n_jobs``). A cap, never more threads than the data warrants: below
        2**20 rows x features a tree takes one thread and a round's class trees
        (or a forest's trees) go side by side on up to ``n_jobs`` cores. The
        estimators' ``predict`` runs under the same cap. XLA's own operations
        (the loss's g and h, margins, metrics) run on XLA's CPU thread pool,
        sized when JAX starts; with the native kernel on one device most of a
        round is the kernel's. A new value compiles the round program once more;
        the whole-tree kernel spreads features over its threads below 2**22
        rows x features (the same model for any ``n_jobs``) and blocks of rows
        above; there, and in the XLA level loop from 2**18, the histogram sums
        are grouped by thread, so models of different ``n_jobs`` can differ in
        their last bits.""",
    ),
    Option(
        "grow_policy",
        "depthwise",
        type=str,
        sklearn=True,
        doc="""
        ``"depthwise"`` (level by level, XGBoost's default) or
        ``"lossguide"`` (leaf-wise, XGBoost's and LightGBM's: the split of largest gain
        anywhere in the tree first, ties to the node made first, until ``max_leaves``
        leaves; depth is still bounded by ``max_depth``). Leaf-wise trees are grown in
        the native CPU kernel, their cost following ``max_leaves``, not ``max_depth``
        (the best-first subset of the level-wise tree: a node's split depends only on
        its rows): one CPU device, numeric or categorical features,
        every split constraint (monotone signs with numeric features only), one output
        per tree (``ValueError`` otherwise).""",
    ),
    Option(
        "max_leaves",
        0,
        type=int,
        sklearn=True,
        doc="""
        the most leaves of a leaf-wise tree (0: no limit; XGBoost's
        ``max_leaves``, LightGBM's ``num_leaves``); it needs ``"lossguide"``.""",
    ),
)

BY_NAME = {o.name: o for o in OPTIONS}


def names(**where) -> tuple:
    """The names of the options whose fields equal ``where``, in table order:
    ``names(many="config")``, ``names(sklearn=True)``."""
    return tuple(o.name for o in OPTIONS if all(getattr(o, k) == v for k, v in where.items()))


def defaults(selected=None) -> dict:
    """``{name: default}`` of ``selected`` names (default: every option)."""
    return {n: BY_NAME[n].default for n in (selected or BY_NAME)}


if TYPE_CHECKING:  # the type checker sees a record of any option names

    class Options:
        def __init__(self, **options: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
else:
    Options = dataclasses.make_dataclass(
        "Options",
        [(o.name, Any, dataclasses.field(default=o.default)) for o in OPTIONS],
        frozen=True,
    )
    Options.__module__ = __name__  # pickles and reprs name this module
    Options.__doc__ = (
        "Every option of one training call (``OPTIONS``), as given: what ``configure`` receives."
    )


def record(fn: str, given: dict, loss=None) -> Options:
    """The ``Options`` of a call to ``fn`` with keyword arguments ``given`` (the others
    take their defaults). An unknown name is Python's ``TypeError`` (naming the closest
    option's name when one is close, ``difflib``, or ``loss_params`` when it is a
    keyword parameter of the callable ``loss``); an option with a ``check`` is
    checked here."""
    unknown = [k for k in given if k not in BY_NAME]
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, list(BY_NAME), n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        if loss is not None and takes_keyword(loss, name, any_keyword=False):
            hint = (
                f"; {name!r} is a parameter of the loss: pass it as "
                f"loss_params={{{name!r}: {given[name]!r}}}"
            )
        raise TypeError(f"{fn}() got an unexpected keyword argument {name!r}{hint}")
    for k, v in given.items():
        check = BY_NAME[k].check
        if check is not None:
            check(k, v)
    return Options(**given)


def signature(
    leading: list, selected, *, var_keyword: Optional[str] = None, returns=inspect.Parameter.empty
) -> inspect.Signature:
    """A signature of ``leading`` parameters (``inspect.Parameter``) and the options
    ``selected`` as keyword-only arguments with their defaults (and ``**var_keyword``)."""
    kw = inspect.Parameter.KEYWORD_ONLY
    params = list(leading) + [
        inspect.Parameter(
            n,
            kw,
            default=BY_NAME[n].default,
            annotation=(
                BY_NAME[n].type if BY_NAME[n].type is not None else inspect.Parameter.empty
            ),
        )
        for n in selected
    ]
    if var_keyword:
        params.append(inspect.Parameter(var_keyword, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params, return_annotation=returns)


def args_doc(selected, indent: str = "      ") -> str:
    """The ``Args`` lines of the options ``selected``: ``name: doc``, an option without
    its own doc joined to the one before it (``"a, b: doc"``)."""
    groups: list = []
    for n in selected:
        o = BY_NAME[n]
        if o.doc is None and groups:
            groups[-1][0].append(n)
        else:
            groups.append(([n], o.doc or ""))
    lines = []
    for group, doc in groups:
        first, *rest = inspect.cleandoc(doc).split("\n")
        lines.append(f"{indent}{', '.join(group)}: {first}".rstrip())
        lines.extend(f"{indent}  {line}".rstrip() for line in rest)
    return "\n".join(lines)


def takes(selected, *, leading: int = 3, var_keyword: Optional[str] = None):
    """Give ``fn(..., **options)`` the signature of its ``leading`` parameters and the
    options ``selected``, and put their ``Args`` lines in its docstring in place of the
    line ``**options: ...`` (``inspect.signature``, ``help`` and IDEs show both; a
    reader of the source, such as the API reference, sees that one line)."""

    def wrap(fn):
        own = list(inspect.signature(fn).parameters.values())
        head = [p for p in own if p.kind != inspect.Parameter.VAR_KEYWORD][:leading] + [
            p for p in own[leading:] if p.kind == inspect.Parameter.KEYWORD_ONLY
        ]
        fn.__signature__ = signature(
            head, selected, var_keyword=var_keyword, returns=inspect.signature(fn).return_annotation
        )
        if fn.__doc__:
            fn.__doc__ = re.sub(
                r"\*\*options: [^\n]*(\n +[^\n:]+$)*",
                lambda m: args_doc(selected).lstrip(),
                fn.__doc__,
                count=1,
                flags=re.M,
            )
        return fn

    return wrap
