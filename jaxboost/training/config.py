"""Every argument of ``train`` checked once, before any work: ``configure``.

``configure(args)`` turns the keyword arguments of ``train`` into a frozen ``Settings``
record (validated values, the resolved objective, its loss family and traced
hyperparameters, the Hessian policy and refit, the learning-rate schedule, sampling
ratios, callbacks) and the validated data arrays. Wrong values raise ``TypeError`` /
``ValueError`` (``DataError`` for data) here, so no training work is ever lost to a typo.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from objectives import MultiTarget, Objective, multi_target
from objectives import resolve as resolve_objective
from objectives._base import HESSIAN_POLICIES
from objectives._link import LinkedLoss, attach_link, link_label, link_name, resolve_link, unlink
from objectives._targets import not_per_target

from .._types import FLOAT32_MAX, MAX_CLASSES, MAX_ROUNDS
from ..engine import same_code
from ..engine.autodiff import check_loss_once, loss_name, n_outputs_of, split_loss
from ..engine.groups import group_ids
from ..engine.sampling import FIELDS as SAMPLING_FIELDS
from ..errors import DataError, DataWarning, LossError, user_stacklevel
from ..inputs import arrays, frames
from ..inputs import categorical as _categorical
from ..inputs.numbers import check_int, check_real, is_real
from ..inputs.sparse import ColumnView, is_sparse
from ..model.booster import Booster
from ..model.params import TreeParams
from ..parallel import distributed as dist
from .constraints import check_categorical_signs, check_constraints
from .options import Options


def resolve_outputs(loss, n_outputs) -> int:
    """K, the margins per row: the objective's, or ``n_outputs`` for plain callables;
    at most ``MAX_CLASSES`` (checked before anything of size K is allocated), and at
    least 2 for an entry whose outputs are classes (softmax)."""
    if n_outputs is not None:
        n_outputs = check_int("n_outputs", n_outputs, low=1, high=MAX_CLASSES)
    if isinstance(loss, Objective):
        k = n_outputs_of(loss)
        if n_outputs is not None and n_outputs != k:
            raise ValueError(f"n_outputs={n_outputs} but {loss!r} has {k} output(s)")
        if k > MAX_CLASSES:
            raise ValueError(
                f"{loss!r} has {k} outputs; at most MAX_CLASSES = {MAX_CLASSES} are supported"
            )
        if loss.infer_outputs is not None and k < 2:
            raise ValueError(
                f"{loss!r} needs at least 2 classes, got {k}; for two "
                f"classes use objectives.logistic"
            )
        return k
    return 1 if n_outputs is None else n_outputs


def check_classes(loss, y) -> None:
    """``DataError`` when an entry that infers its classes from the labels (softmax:
    ``K = max(y) + 1``) would get more than ``MAX_CLASSES`` of them, or fewer than 2;
    before anything of size K is allocated. The message names the label."""
    if (
        not isinstance(loss, Objective)
        or loss.outputs is not None
        or loss.infer_outputs is None
        or y.size == 0
    ):
        return
    i = int(np.argmax(y))
    k = int(loss.infer_outputs(y))
    if k > MAX_CLASSES:
        raise DataError(
            f"{loss!r} takes its classes from the labels (K = max(y) + 1): "
            f"the label {float(y[i]):g} at row {i} implies {k} classes, more "
            f"than the maximum MAX_CLASSES = {MAX_CLASSES}. Labels must be "
            f"class indices 0, 1, ..., K-1"
        )
    if k < 2:
        raise DataError(
            f"{loss!r} needs at least 2 classes, but every label is "
            f"{float(y[i]):g} (K = max(y) + 1 = {k}); a model of one class "
            f"predicts nothing. For two classes use objectives.logistic"
        )
    warn_empty_classes(loss, y, k)


def warn_empty_classes(loss, y, k: int) -> None:
    """``DataWarning`` when some class index below ``k = max(y) + 1`` has no row: labels
    that start at 1 (1, 2, 3) or are codes (0 and 500) train an output for every index
    in between, each near probability 0."""
    with np.errstate(invalid="ignore"):
        yi = np.asarray(y).astype(np.int64, copy=False)
    if not (np.all(yi == y) and yi.min() >= 0):
        return  # not class indices: the objective's label check says so
    empty = np.flatnonzero(np.bincount(yi, minlength=k) == 0)
    if empty.size == 0:
        return
    shown = ", ".join(str(c) for c in empty[:8]) + (", ..." if empty.size > 8 else "")
    which = (
        f"class index {shown} has no rows"
        if empty.size == 1
        else f"{empty.size} of the class indices 0..{k - 1} have no rows ({shown})"
    )
    start = " If the labels start at 1, subtract 1." if empty.tolist() == [0] else ""
    warnings.warn(
        f"{loss!r} takes its classes from the labels (K = max(y) + 1 = {k}), but "
        f"{which}: the model gets an output for each of the {k} indices, "
        f"{k - empty.size} of them seen.{start} Labels that are codes (such as 0 and "
        f"500) must be renumbered 0..K-1 (np.unique(y, return_inverse=True)); for "
        f"classes absent from this data on purpose (a fold), pass "
        f"objectives.softmax(n_classes=K)",
        DataWarning,
        stacklevel=user_stacklevel(),
    )


REFITS = (None, "newton", "exact", "quantile")


def resolve_policies(loss, hessian, refit, K, mesh):
    """Validated ``(hessian policy, refit spec)``; ``"auto"`` takes the objective's
    (for a plain callable: ``"clip_negative"`` and no refit)."""
    is_obj = isinstance(loss, Objective)
    if hessian == "auto":  # a plain callable: exact h, negatives raised to the floor
        hessian = loss.hessian if is_obj else "clip_negative"
    if hessian not in HESSIAN_POLICIES:
        raise ValueError(f"hessian must be 'auto' or one of {HESSIAN_POLICIES}, got {hessian!r}")
    if hessian == "expected" and (not is_obj or loss.expected_hessian is None):
        raise ValueError(
            f"hessian='expected' needs an objective with an expected "
            f"(Fisher) Hessian; {loss_name(loss)} has none. Use 'exact', "
            f"'clip' or 'constant'"
        )
    if isinstance(refit, str) and refit == "auto":
        refit = loss.refit if is_obj else None
    if refit is False:
        refit = None
    if refit not in REFITS:
        raise ValueError(
            f"refit must be 'auto', 'newton', 'exact', 'quantile' or None, got {refit!r}"
        )
    if refit is not None and K > 1 and not isinstance(loss, MultiTarget):
        raise ValueError(f"refit={refit!r} is for single-output losses; this one has {K} outputs")
    if refit == "quantile":
        if mesh is not None:
            raise ValueError(
                "refit='quantile' needs every row on one device; train "
                "without mesh= or use refit='exact'"
            )
        if isinstance(loss, Objective):
            check_quantile_level(quantile_level(loss, {}))
    return hessian, refit


def check_quantile_level(alpha) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"refit='quantile' needs alpha in (0, 1), got {alpha!r}")
    return alpha


def quantile_level(loss, values) -> float:
    """The level of ``refit="quantile"``: ``alpha`` from ``values`` (the loss's keyword
    values, ``loss_params``), else the objective's ``alpha`` hyperparameter, else 0.5
    for a catalogue entry without one (absolute error: the median).

    A loss of your own has no level the library could know unless it names it
    ``alpha``: it gets a ``ValueError`` that points to ``refit="exact"``, never a
    default level in silence."""
    if "alpha" in values:
        return check_quantile_level(float(values["alpha"]))
    if isinstance(loss, Objective):
        return check_quantile_level(float(loss.hyperparameters.get("alpha", 0.5)))
    keys = ", ".join(sorted(values)) or "no keywords"
    raise ValueError(
        f"refit='quantile' sets each leaf to a quantile of its residuals at the level "
        f"named alpha, but {loss_name(loss)} is a loss of your own with {keys} in "
        f"loss_params: its level cannot be known. Use refit='exact' (each leaf "
        f"minimises your loss itself: the right quantile for a pinball loss whatever "
        f"its keyword is called), or pass the level as loss_params={{'alpha': ...}}"
    )


def is_per_row(base_margin, K) -> bool:
    """Whether ``base_margin`` gives margins per row (offsets) rather than the model's
    intercept: for one output an array of one or more dimensions (``(N,)``; a number is
    the intercept), for ``K`` outputs a 2-D array (``(N, K)``; ``K`` numbers, or one, are
    the intercept). So a length-``K`` vector is never read as ``K`` rows' offsets, also
    when ``N == K``."""
    if base_margin is None or is_real(base_margin):
        return False
    try:
        nd = np.ndim(frames._series_array(base_margin))
    except Exception:
        return False  # check_base_margin says what is wrong
    return nd >= (1 if K == 1 else 2)


def check_base_margin(base_margin, K):
    if K == 1:
        base_margin = check_real("base_margin", base_margin, what="a number or None")
        if abs(base_margin) > FLOAT32_MAX:
            raise ValueError(
                f"base_margin must be finite in float32 (|base_margin| <= "
                f"{FLOAT32_MAX:.7g}), got {base_margin!r}"
            )
        return float(np.float32(base_margin))
    try:
        with np.errstate(over="ignore"):  # beyond float32: inf, reported below
            b = np.asarray(base_margin, np.float32)
    except (TypeError, ValueError):
        raise TypeError(
            f"base_margin must be None or {K} numbers, got {type(base_margin).__name__}"
        ) from None
    if b.ndim == 0:
        b = np.full(K, b, np.float32)
    if b.shape != (K,) or not np.all(np.isfinite(b)):
        raise ValueError(
            f"base_margin must be {K} finite numbers (one per output, "
            f"float32: |value| <= {FLOAT32_MAX:.7g}), got {base_margin!r}"
        )
    return b


def check_side_data(loss, y, group, refit) -> None:
    """Side data in ``y`` (a dict or an ``(N, L)`` array) is for plain callable losses,
    which receive one row of it; catalogue entries, group losses and the quantile refit
    (which reads ``y - margin``) need one label per row."""
    shape = arrays.target_structure(y)
    if isinstance(loss, Objective) and loss.several_per_row and not isinstance(loss, LinkedLoss):
        if not loss.takes_label_fields(y):
            raise DataError(loss.label_fields_message(shape))
    elif isinstance(loss, Objective) and not isinstance(loss, LinkedLoss):
        raise DataError(
            f"{loss!r} takes one label per row, y of shape (N,); got y of structure "
            f"{shape}. Side data (a dict or an (N, L) array) is for losses of your own, "
            f"loss(y, pred), which receive one row of it; an (N, T) array of T >= 2 "
            f"targets for entries of one output (objectives.multi_target)"
        )
    if group is not None or is_group_objective(loss):
        raise DataError(f"group losses take one label per row, y of shape (N,); got {shape}")
    if isinstance(refit, str) and refit == "quantile" and not isinstance(loss, MultiTarget):
        raise ValueError(
            f"refit='quantile' sets leaves from y - margin, which needs one "
            f"label per row; y has structure {shape}: use refit='newton'"
        )


def is_group_objective(loss) -> bool:
    from objectives import GroupObjective

    return isinstance(loss, GroupObjective)


def check_group(group, n_rows, loss, K, mesh, eval_set, refit, hessian, eval_metric, y):
    """``(group ids, eval_metric)`` for a group loss: validated ``(N,)`` numeric ids
    (all zeros for a whole-data entry without ``group=``) and the metric list with a
    catalogue entry's default filled in. A plain loss is checked on a group of two
    rows (it must return a scalar); an entry's labels are checked (``DataError``)."""
    if isinstance(loss, Objective):
        raise TypeError(
            f"group= needs a group loss loss(y_group, pred_group, mask); {loss!r} is a per-row loss"
        )
    entry = is_group_objective(loss)
    if entry and group is None:
        if not loss.whole_data:
            raise TypeError(
                f"{loss!r} ranks the rows within queries: pass group= with "
                f"one query id per row (e.g. train({loss!r}, X, y, "
                f"group=query_ids))"
            )
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
        check_eval_labels(loss, eval_set)
        if eval_metric is None:
            eval_metric = loss.metric
    if eval_set is not None and eval_metric is None:
        raise ValueError(
            "a group loss has no per-row default metric: pass eval_metric "
            "(e.g. 'ndcg@10', with the sets' query ids as eval_group)"
        )
    if refit not in ("auto", None, False):
        raise ValueError("refit is for per-row losses; group losses use Newton leaves")
    if hessian not in ("auto", "exact", "clip", "constant"):
        raise ValueError(
            f"group losses take hessian 'exact', 'clip' or 'constant', got {hessian!r}"
        )
    try:
        given = np.asarray(group)
    except Exception:
        raise TypeError(f"group must be an array of ids, got {type(group).__name__}") from None
    ids = group_ids(given, n_rows)
    if ids is None:
        total = f" summing to {given.sum():g}" if given.dtype.kind in "iuf" else ""
        raise DataError(
            f"group must hold one id per row, shape ({n_rows},), or the sizes of "
            f"contiguous groups summing to {n_rows} (as XGBoost's set_group takes "
            f"them); got shape {given.shape}{total}"
        )
    if ids.dtype.kind not in "iuf" or (ids.dtype.kind == "f" and not np.isfinite(ids).all()):
        raise DataError(
            f"group ids (query ids, the estimators' qid) must be finite numbers, got "
            f"{ids.dtype} values; number other ids first, e.g. "
            f"np.unique(ids, return_inverse=True)[1]"
        )
    v = jnp.zeros(2, jnp.float32)
    try:
        out = jax.eval_shape(loss, v, v, jnp.ones(2, bool))
    except Exception as e:
        raise LossError(
            f"the group loss {loss_name(loss)} failed on a group of 2 rows "
            f"(called as loss(y_group, pred_group, mask)): "
            f"{type(e).__name__}: {e}",
            round=None,
        ) from None
    if getattr(out, "shape", None) != ():
        raise LossError(
            f"the group loss {loss_name(loss)} must return a scalar per group, "
            f"got shape {getattr(out, 'shape', None)}",
            round=None,
        )
    return ids, eval_metric


def check_eval_labels(loss, eval_set):
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


def feature_names_of(X, given, n_features, init_model):
    """The model's feature names: ``given``, a DataFrame's string columns, or None."""
    from_frame = frames.frame_feature_names(X)
    if given is not None:
        given = frames.check_names_list(given, n_features)
        if from_frame is not None and given != from_frame:
            raise DataError(
                f"feature_names {given} differ from the columns of the X "
                f"DataFrame {from_frame}; leave feature_names out to use the "
                f"columns"
            )
    names = given if given is not None else from_frame
    inherited = None if init_model is None else init_model.feature_names
    if names is None:
        return inherited
    if inherited is not None and names != inherited:
        raise DataError(
            f"init_model was trained on the features {inherited}, X has "
            f"{names}; continued training needs the same columns in the same "
            f"order"
        )
    return names


SCHEDULE_CHECK_ROUNDS = 100_000
"""A learning-rate schedule is checked before training for this many rounds of the run
(all of them for a shorter run); rounds beyond are checked when they are reached."""


def _eta_error(learning_rate, r):
    """The error of schedule value ``learning_rate(r)``, or None when it is usable."""
    try:
        v = float(learning_rate(r))
    except Exception as e:
        return ValueError(
            f"the learning_rate schedule failed at round {r}: {type(e).__name__}: {e}"
        ), None
    if not (math.isfinite(v) and 0 < v <= FLOAT32_MAX):
        return ValueError(
            f"the learning_rate schedule gave {v!r} at round {r}; it must "
            f"be a finite number > 0 (at most {FLOAT32_MAX:.7g}, float32)"
        ), None
    return None, v


def learning_rate_schedule(learning_rate, start_round: int = 0, n_rounds: int = 1):
    """``round -> float`` for a number or a schedule callable.

    A schedule is checked for the rounds ``start_round .. start_round + n_rounds - 1``
    of the run (at most ``SCHEDULE_CHECK_ROUNDS``) before training, so a bad value at
    round 900 is a ``ValueError`` now, not after 900 rounds: first by one call on the
    array of those round indices (optax schedules and NumPy/JAX expressions take one);
    a schedule that does not take an array, or whose array result has a bad value, is
    called once per round, and those values are kept for training. Training otherwise
    calls the schedule once per round with an ``int``, as before.
    """
    if not callable(learning_rate):
        if not is_real(learning_rate):
            raise TypeError(
                f"learning_rate must be a number or a callable of the round, "
                f"got {type(learning_rate).__name__}"
            )
        value = float(learning_rate)
        return lambda r: value

    def lr_of(r):
        if r in known:
            return known[r]
        err, v = _eta_error(learning_rate, r)
        if err is not None:
            raise err
        return v

    known = {}
    rounds = np.arange(start_round, start_round + max(1, min(n_rounds, SCHEDULE_CHECK_ROUNDS)))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            table = np.asarray(learning_rate(rounds), np.float64)
        table = np.broadcast_to(table, rounds.shape)  # shape () or (n,)
        ok = bool(np.all(np.isfinite(table) & (table > 0) & (table <= FLOAT32_MAX)))
    except Exception:  # a schedule of one round at a time
        ok = False
    if not ok:
        for r in rounds.tolist():
            err, known[r] = _eta_error(learning_rate, r)
            if err is not None:
                raise err
    return lr_of


def sampling_ratios(*values) -> np.ndarray:
    for name, v in zip(SAMPLING_FIELDS, values):
        check_real(name, v, low=0, low_open=True, high=1, what="a number in (0, 1]")
    return np.array(values, np.float32)


MAX_PARALLEL_TREES = 4096
"""The most trees ``num_parallel_tree`` may grow per output and round."""


def check_forest(num_parallel_tree, bootstrap) -> tuple:
    """``(num_parallel_tree, bootstrap)`` validated: an int in ``[1,
    MAX_PARALLEL_TREES]`` and a bool (``TypeError`` / ``ValueError``)."""
    n = check_int("num_parallel_tree", num_parallel_tree, low=1, high=MAX_PARALLEL_TREES)
    if not isinstance(bootstrap, (bool, np.bool_)):
        raise TypeError(f"bootstrap must be True or False, got {bootstrap!r}")
    return n, bool(bootstrap)


def check_init_model(init, params, n_features, K, tpr, base_margin, offsets=None):
    """``init_model`` against this training's shape. ``base_margin`` is the caller's
    (a group loss's default 0 is not one), refused unless it is per-row ``offsets``."""
    if init.n_features != n_features:
        raise DataError(f"init_model was trained on {init.n_features} features, X has {n_features}")
    if init.params.max_bin != params.max_bin:
        raise ValueError(
            f"init_model has max_bin={init.params.max_bin}; continued training needs the "
            f"same value, got {params.max_bin}"
        )
    if init.params.max_depth > params.max_depth:  # deeper layouts take its trees
        raise ValueError(
            f"init_model's trees are laid out to depth {init.params.max_depth}; continued "
            f"training needs max_depth >= {init.params.max_depth}, got {params.max_depth}"
        )
    if init.n_outputs != K or init.trees_per_round != tpr:
        raise ValueError(
            f"init_model has {init.n_outputs} output(s) and "
            f"{init.trees_per_round} tree(s) per round; this objective, "
            f"multi_strategy and num_parallel_tree give {K} and {tpr}"
        )
    if base_margin is not None and offsets is None:
        raise ValueError(
            "base_margin cannot be given with init_model (training continues "
            "from the model's margins)"
        )


@dataclasses.dataclass(frozen=True)
class Settings:
    """The validated arguments of one ``train`` call (see ``configure``).

    ``loss`` is the resolved objective (catalogue entry with its outputs fixed, or the
    callable); ``family`` and ``loss_values`` split it into what is compiled and what is
    traced (``autodiff.split_loss``). ``hessian`` and ``refit`` are resolved policies
    (no ``"auto"``); ``quantile_alpha`` the level of ``refit="quantile"``.
    """

    loss: Any
    family: Any
    loss_values: dict
    n_outputs: int
    multi_output_tree: bool
    diagonal: bool
    hessian: str
    hessian_floor: float
    refit: Optional[str]
    quantile_alpha: float
    params: TreeParams
    lr_of: Callable
    ratios: np.ndarray
    seed: int
    n_rounds: int
    start_round: int
    base_margin: Any
    init_model: Optional[Booster]
    group: Optional[np.ndarray]
    eval_metric: Any
    callbacks: tuple
    verbose: Any
    mesh: Any
    quantize: bool
    feature_names: Optional[list]
    from_auto: tuple = ()  # of "hessian", "refit": the policies resolved from "auto"
    # (N[, K]) float32 margins per row of this process's rows (base_margin given per
    # row): training starts from them instead of an intercept, and the model's base
    # margin is 0 (or the init_model's). None: none given.
    offsets: Optional[np.ndarray] = None
    weight_max: Optional[float] = None  # the largest sample weight (None: no weights)
    # Categorical features (sorted indices; () when none), the labels of DataFrame
    # categories ({index: [labels]}) and XGBoost's two categorical split parameters.
    categorical: tuple = ()
    category_labels: Optional[dict] = None
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 64
    # monotone / interaction constraints and the row minimum per child
    # (training.constraints.Constraints); None: none
    constraints: Any = None
    num_parallel_tree: int = 1  # trees per output per round (a forest when > 1)
    bootstrap: bool = False  # rows drawn with replacement instead of subsample's coin flips
    max_leaves: int = 0  # > 0: leaf-wise trees of at most this many leaves (lossguide)
    # The call's options as given (training.options): what a new option is read from.
    options: Optional[Options] = None

    @property
    def trees_per_round(self) -> int:
        per_forest = self.n_outputs if (self.n_outputs > 1 and not self.multi_output_tree) else 1
        return per_forest * self.num_parallel_tree


def check_loss_params(loss_params) -> Optional[dict]:
    """``loss_params``: a dict of hyperparameter names to finite numbers or arrays."""
    if loss_params is None:
        return None
    if not isinstance(loss_params, dict):
        raise TypeError(
            f"loss_params must be a dict of keyword hyperparameters, e.g. "
            f"{{'delta': 2.0}}, got {type(loss_params).__name__}"
        )
    out = {}
    for k, v in loss_params.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise TypeError(f"loss_params keys must be keyword names, got {k!r}")
        if isinstance(v, bool):
            raise TypeError(
                f"loss_params[{k!r}] must be a number or an array of numbers, got {v!r}"
            )
        try:
            a = np.asarray(v, np.float32)
        except (TypeError, ValueError):
            raise TypeError(
                f"loss_params[{k!r}] must be a number or an array of numbers, "
                f"got {type(v).__name__}"
            ) from None
        if not np.all(np.isfinite(a)):
            raise ValueError(f"loss_params[{k!r}] must be finite, got {v!r}")
        out[k] = float(a) if a.ndim == 0 else a
    return out


def configure(objective, X, y, a: Options):
    """Check every argument of ``train``: the objective, the data and the ``Options``
    record of its keyword arguments (``training.options``).

    Returns ``(settings, Xf, yf, wf)``: a ``Settings`` and the validated float32
    features, labels (or labels with side data, ``inputs.arrays.as_targets``) and weights
    of this process's rows.
    """
    run = _run_options(a)
    params, init_model = run["params"], run["init_model"]
    loss, link, n_outputs = split_link(resolve_objective(objective), a.link, a.n_outputs)
    # a loss (or link) written the same way as one trained before reuses its programs
    loss, link = same_code.canonical(loss), same_code.canonical(link)
    loss_params = check_loss_params(a.loss_params)
    floor = check_real("hessian_floor", a.hessian_floor, low=0, low_open=True)
    Xf, yf, wf, names, cat = _rows(X, y, a, init_model, params)
    n_rows, n_features = Xf.shape
    loss, yf = _labelled_loss(loss, y, yf, a)
    K = resolve_outputs(loss, n_outputs)
    pol = _policies(a, loss, link, K, n_rows, yf)
    multi_tree = pol["multi_tree"]
    constraints = check_constraints(
        a.monotone_constraints,
        a.interaction_constraints,
        a.min_samples_leaf,
        n_features,
        names,
        multi_output_tree=multi_tree and K > 1,
    )
    family, values = split_loss(loss, loss_params)
    family = family if family is loss else same_code.canonical(family)  # a partial's fn
    if pol["group"] is None:
        # Abstract rows (shapes and dtypes only): no array is made, so nothing compiles.
        check_loss_once(
            family,
            {k: (v if np.ndim(v) else float(v)) for k, v in values.items()},
            jax.tree.map(lambda v: jax.ShapeDtypeStruct(np.shape(v)[1:], jnp.float32), yf),
            jax.ShapeDtypeStruct(() if K == 1 else (K,), jnp.float32),
        )
    offsets, base_margin = _margins(pol["base_margin"], K, pol["group"], n_rows)
    tpr = (K if (K > 1 and not multi_tree) else 1) * run["n_parallel"]
    if init_model is not None:
        check_init_model(init_model, params, n_features, K, tpr, a.base_margin, offsets)
    alpha = quantile_level(loss, values) if pol["refit"] == "quantile" else 0.5
    model_loss = _model_loss(loss, loss_params, family, values, link, K, pol["eval_metric"])
    settings = Settings(
        loss=model_loss,
        family=family,
        loss_values=values,
        n_outputs=K,
        multi_output_tree=multi_tree,
        diagonal=pol["diagonal"],
        hessian=pol["hessian"],
        hessian_floor=floor,
        refit=pol["refit"],
        quantile_alpha=alpha,
        params=params,
        lr_of=run["lr_of"],
        ratios=run["ratios"],
        seed=run["seed"],
        n_rounds=run["n_rounds"],
        start_round=run["start_round"],
        base_margin=base_margin,
        init_model=init_model,
        group=pol["group"],
        eval_metric=pol["eval_metric"],
        callbacks=run["callbacks"],
        verbose=run["verbose"],
        mesh=a.mesh,
        quantize=a.quantize,
        feature_names=names,
        from_auto=pol["from_auto"],
        offsets=offsets,
        weight_max=None if wf is None else float(np.max(wf)),
        constraints=constraints,
        num_parallel_tree=run["n_parallel"],
        bootstrap=run["bootstrap"],
        **cat,
        options=a,
        max_leaves=check_leaf_wise(a.grow_policy, a.max_leaves, multi_tree, a.mesh),
    )
    if cat["categorical"] and multi_tree:
        raise ValueError(
            "categorical features are not supported with multi_strategy="
            "'multi_output_tree'; use 'one_output_per_tree'"
        )
    check_categorical_signs(constraints, cat["categorical"], names)
    return settings, Xf, yf, wf


def _run_options(a: Options) -> dict:
    """``configure``'s first step: the options that need no data (rounds, seed, tree
    parameters, sampling, forest, verbosity, callbacks, ``quantize``), checked in
    that order."""
    n_rounds = check_int("n_rounds", a.n_rounds, low=0)
    init_model = a.init_model
    if init_model is not None and not isinstance(init_model, Booster):
        raise TypeError(f"init_model must be a jaxboost Booster, got {type(init_model).__name__}")
    seed = a.seed
    if seed is None:
        seed = (
            init_model.train_state.get("seed", 0)
            if init_model is not None and init_model.train_state
            else 0
        )
    seed = check_int("seed", seed, low=0, high=2**31 - 1)
    start_round = 0 if init_model is None else len(init_model)
    if n_rounds > MAX_ROUNDS - start_round:
        raise ValueError(
            f"n_rounds must be <= {MAX_ROUNDS - start_round} (a model has at "
            f"most MAX_ROUNDS = 2**30 rounds, counted in int32"
            f"{f'; init_model has {start_round}' if start_round else ''}), "
            f"got {n_rounds}"
        )
    lr_of = learning_rate_schedule(a.learning_rate, start_round, n_rounds)
    params = TreeParams(
        max_depth=a.max_depth,
        max_bin=a.max_bin,
        learning_rate=lr_of(start_round),
        reg_lambda=a.reg_lambda,
        reg_alpha=a.reg_alpha,
        gamma=a.gamma,
        min_child_weight=a.min_child_weight,
        max_delta_step=a.max_delta_step,
    )
    ratios = sampling_ratios(
        a.subsample, a.colsample_bytree, a.colsample_bylevel, a.colsample_bynode
    )
    n_parallel, bootstrap = check_forest(a.num_parallel_tree, a.bootstrap)
    if a.verbose not in (True, False, "auto"):
        raise ValueError(f"verbose must be True, False or 'auto', got {a.verbose!r}")
    callbacks = list(a.callbacks or [])
    for cb in callbacks:
        if not callable(cb):
            raise TypeError(
                f"callbacks must be callables callback(env) -> bool, got {type(cb).__name__}"
            )
    if not isinstance(a.quantize, bool):
        raise TypeError(f"quantize must be True or False, got {a.quantize!r}")
    return dict(
        n_rounds=n_rounds,
        init_model=init_model,
        seed=seed,
        start_round=start_round,
        lr_of=lr_of,
        params=params,
        ratios=ratios,
        n_parallel=n_parallel,
        bootstrap=bootstrap,
        verbose=a.verbose,
        callbacks=tuple(callbacks),
    )


def _rows(X, y, a: Options, init_model, params):
    """This process's rows, validated: ``(Xf, yf, wf, names, cat)`` (``cat`` the
    ``Settings`` fields of categorical features, ``check_categorical``)."""
    # Global arrays whose rows are split over processes: each process takes its own.
    X, w = (dist.local_rows(v) for v in (X, a.sample_weight))
    y = {k: dist.local_rows(v) for k, v in y.items()} if isinstance(y, dict) else dist.local_rows(y)
    Xf = arrays.as_features(
        X,
        sparse="csc",  # sparse: binned column by column
        warn_precision=True,
    )
    if is_sparse(Xf) and dist.is_multiprocess():
        raise DataError(
            "a scipy.sparse X trains in one process; in a multi-process job "
            "pass each process's rows as a dense array (NaN = missing)"
        )
    n_rows, n_features = Xf.shape
    names = feature_names_of(X, a.feature_names, n_features, init_model)
    cat = check_categorical(a, X, Xf, names, init_model, params)
    yf = arrays.as_targets(y, n_rows)
    wf = arrays.as_weights(w, n_rows)
    return Xf, yf, wf, names, cat


def _labelled_loss(loss, y, yf, a: Options):
    """``(loss, yf)``: the loss checked against the labels (side data where the loss
    takes it, a catalogue entry's label checks and its outputs resolved from the labels,
    its classes; a label problem is a ``DataError``), and the labels: a DataFrame's
    columns as an ``(N, T)`` array of targets for an entry of one output."""
    if isinstance(loss, Objective) and not not_per_target(loss):
        yf = arrays.frame_targets(y, yf)
    if arrays.is_side_data(yf):
        loss = as_multi_target(loss, yf)
        check_side_data(loss, yf, a.group, a.refit)
    if isinstance(loss, Objective):
        try:
            loss.validate_labels(yf)
            check_classes(loss, yf)
            loss = loss.resolve_outputs(yf)
            loss.validate_labels(yf)
        except ValueError as e:
            raise DataError(str(e)) from None
    return loss, yf


def as_multi_target(loss, y):
    """``objectives.multi_target(loss, T)`` for an ``(N, T)`` array ``y`` (``T >= 2``) of
    a catalogue entry of one output and one label per row (XGBoost's multi-target
    regression from a built-in objective); ``loss`` itself otherwise."""
    if (
        isinstance(y, np.ndarray)
        and y.ndim == 2
        and y.shape[1] >= 2
        and not isinstance(loss, MultiTarget)
        and not not_per_target(loss)
    ):
        return multi_target(loss, y.shape[1])
    return loss


def _policies(a: Options, loss, link, K, n_rows, yf) -> dict:
    """Groups (ranking, survival), the Hessian policy and leaf refit, the multi-output
    strategy: ``group``, ``eval_metric``, ``hessian``, ``refit``, ``base_margin`` (0
    for a group loss unless given), ``from_auto`` (the policies ``"auto"`` chose),
    ``multi_tree`` and ``diagonal`` (vector leaves from the Hessian's diagonal)."""
    group, eval_metric, hessian, refit = a.group, a.eval_metric, a.hessian, a.refit
    base_margin = a.base_margin
    if group is not None or is_group_objective(loss):
        if link is not None:
            raise ValueError(
                "link= is for per-row losses; group losses predict margins "
                "(a group entry has its own link)"
            )
        group, eval_metric = check_group(
            group, n_rows, loss, K, a.mesh, a.eval_set, refit, hessian, eval_metric, yf
        )
        refit, hessian = None, ("exact" if hessian == "auto" else hessian)
        if base_margin is None:
            base_margin = 0.0
    from_auto = tuple(
        k for k, v in (("hessian", hessian), ("refit", refit)) if isinstance(v, str) and v == "auto"
    )
    hessian, refit = resolve_policies(loss, hessian, refit, K, a.mesh)
    if refit is not None and K > 1 and a.multi_strategy == "multi_output_tree":
        raise ValueError(
            f"refit={refit!r} sets the leaves of each target's own tree; vector leaves "
            f"(multi_strategy='multi_output_tree') take refit=None"
        )
    if a.multi_strategy not in ("one_output_per_tree", "multi_output_tree"):
        raise ValueError(
            f"multi_strategy must be 'one_output_per_tree' or "
            f"'multi_output_tree', got {a.multi_strategy!r}"
        )
    if a.multi_hessian not in ("auto", "full", "diagonal"):
        raise ValueError(
            f"multi_hessian must be 'auto', 'full' or 'diagonal', got {a.multi_hessian!r}"
        )
    return dict(
        group=group,
        eval_metric=eval_metric,
        hessian=hessian,
        refit=refit,
        base_margin=base_margin,
        from_auto=from_auto,
        multi_tree=a.multi_strategy == "multi_output_tree",
        # "auto": the diagonal where H is diagonal (several targets), else the full H
        diagonal=a.multi_hessian == "diagonal"
        or (a.multi_hessian == "auto" and isinstance(loss, MultiTarget)),
    )


def _margins(base_margin, K, group, n_rows):
    """``(offsets, base_margin)``: margins per row (``offsets``, in place of the
    intercept) or the model's checked intercept (``None``: fitted)."""
    if is_per_row(base_margin, K):
        if group is not None:
            raise ValueError("group losses take no per-row base_margin; pass a number")
        offsets = arrays.as_offsets(
            dist.local_rows(base_margin),
            n_rows,
            K,
            hint="; a number"
            + ("" if K == 1 else f" (or {K} numbers)")
            + " is the model's intercept instead",
        )
        return offsets, None
    if base_margin is not None:
        base_margin = check_base_margin(base_margin, K)
    return None, base_margin


def _model_loss(loss, loss_params, family, values, link, K, eval_metric):
    """The model's objective (the loss with its hyperparameters bound and its link
    attached; training reads only the family), its metrics' links checked."""
    model_loss = loss if loss_params is None else _concrete(family, values)
    if link is not None:
        check_link(link, K)
        model_loss = attach_link(model_loss, link, K)
    from .evaluation import check_metric_links

    check_metric_links(eval_metric, model_loss)
    return model_loss


def check_categorical(a: Options, X, Xf, names, init_model, params) -> dict:
    """The ``Settings`` fields of categorical features: their indices (a DataFrame's
    categorical columns and ``categorical_features``), the labels of DataFrame
    categories, ``max_cat_to_onehot`` and ``max_cat_threshold``; the codes of those
    columns checked (``DataError`` naming the column) and re-coded to ``init_model``'s
    labels when it has some."""
    onehot = check_int("max_cat_to_onehot", a.max_cat_to_onehot, low=1)
    threshold = check_int("max_cat_threshold", a.max_cat_threshold, low=1)
    labels = _categorical.frame_categories(X)
    cat = _categorical.resolve_categorical(a.categorical_features, X, Xf.shape[1], names, labels)
    if init_model is not None:
        have = init_model.categorical_features
        if init_model.category_labels:
            _categorical.recode(Xf, labels, init_model.category_labels)
            labels = {
                **init_model.category_labels,
                **{f: v for f, v in labels.items() if f not in init_model.category_labels},
            }
        if cat != have and (a.categorical_features is not None or labels):
            raise DataError(
                f"init_model has the categorical features {list(have)}, this "
                f"call {list(cat)}; continued training needs the same"
            )
        cat = have
    if cat and dist.is_multiprocess():
        raise ValueError(
            "categorical features train in one process for now (a mesh of local devices is fine)"
        )
    _categorical.check_codes(ColumnView(Xf) if is_sparse(Xf) else Xf, cat, params.max_bin, names)
    return dict(
        categorical=cat,
        category_labels={f: labels[f] for f in cat if f in labels} or None,
        max_cat_to_onehot=onehot,
        max_cat_threshold=threshold,
    )


def split_link(loss, link, n_outputs):
    """``(loss, link, n_outputs)``: the loss to train, the inverse link to give the model
    (None: none, or a catalogue entry's own) and ``n_outputs``.

    ``link`` (a name of ``objectives.LINKS`` or a callable) is for plain callables; a
    catalogue entry keeps its own link, so ``link`` must then be None or that same link
    (``ValueError`` otherwise). A ``LinkedLoss`` (a model's objective, e.g. a loaded
    model's) trains as its plain callable with its link and outputs.
    """
    if isinstance(loss, LinkedLoss):
        attach_link(loss, link)  # raises when link= names another link
        inner, own = unlink(loss)
        return inner, own, (loss.outputs if n_outputs is None else n_outputs)
    if isinstance(loss, Objective):
        attach_link(loss, link)  # a catalogue entry: raises on a conflicting link
        return loss, None, n_outputs
    return loss, resolve_link(link), n_outputs


GROW_POLICIES = ("depthwise", "lossguide")


def check_leaf_wise(grow_policy, max_leaves, multi_tree, mesh) -> int:
    """The ``max_leaves`` the tree kernel applies (0: level-wise trees), after checking
    ``grow_policy`` and ``max_leaves`` (XGBoost's parameters) and that leaf-wise growth
    runs here (``ValueError`` otherwise, before any work)."""
    if grow_policy not in GROW_POLICIES:
        raise ValueError(f"grow_policy must be one of {GROW_POLICIES}, got {grow_policy!r}")
    max_leaves = check_int("max_leaves", max_leaves, low=0)
    if grow_policy == "depthwise":
        if max_leaves:
            raise ValueError(
                f"max_leaves={max_leaves} limits leaf-wise trees: pass "
                f"grow_policy='lossguide' (level-wise trees are limited by "
                f"max_depth)"
            )
        return 0
    from ..engine.grow import LOSSGUIDE_WHERE

    # every split constraint is the kernel's (monotone signs next to categorical
    # features are not: grow_tree raises LOSSGUIDE_WHERE then)
    if multi_tree or mesh is not None:
        raise ValueError(LOSSGUIDE_WHERE.replace("; this training uses the XLA tree builder", ""))
    return max_leaves


def check_link(link, K) -> None:
    """The link must map ``(N,)`` (``(N, K)``) margins to an array of as many rows."""
    if link_name(link) == "softmax" and K == 1:
        raise ValueError(
            "link='softmax' is for losses of K >= 2 outputs (n_outputs=K); "
            "for one output use link='sigmoid'"
        )
    margin = jax.ShapeDtypeStruct((3,) if K == 1 else (3, K), jnp.float32)
    try:
        out = jax.eval_shape(link, margin)
    except Exception as e:
        raise TypeError(
            f"the link {link_label(link)} failed on margins of shape "
            f"{margin.shape}: {type(e).__name__}: {e}. A link is a JAX "
            f"callable margin -> response applied to the (N,) (or (N, K)) "
            f"margins"
        ) from None
    if getattr(out, "shape", (None,))[:1] != (3,):
        raise TypeError(
            f"the link {link_label(link)} must return one response per row; "
            f"on margins of shape {margin.shape} it returned "
            f"{getattr(out, 'shape', type(out).__name__)}"
        )


def _concrete(family, values):
    """The loss with its hyperparameter values bound as plain numbers (for checks, error
    messages and the model's stored objective)."""
    from ..engine.autodiff import bind_loss

    return bind_loss(family, {k: (v if np.ndim(v) else float(v)) for k, v in values.items()})
