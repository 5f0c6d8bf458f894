"""scikit-learn estimators: ``JaxBoostRegressor`` and ``JaxBoostClassifier``.

Thin adapters over ``jaxboost.train``: ``fit`` checks the data the way scikit-learn
estimators do, encodes class labels, and calls ``train``; the trained ``Booster`` is
``booster_``. Every hyperparameter is an explicit keyword of ``__init__`` stored as
given, so the estimators work with ``clone``, ``Pipeline``, ``GridSearchCV`` and
``cross_val_score``. ``n_estimators`` is ``train``'s ``n_rounds`` and ``random_state``
its ``seed``; the other names are ``train``'s own. ``objective`` is a catalogue name,
an ``objectives`` entry, or any JAX callable ``loss(y, pred)``.

>>> import numpy as np
>>> from jaxboost.sklearn import JaxBoostClassifier
>>> X = np.random.default_rng(0).normal(size=(120, 3))
>>> y = np.where(X[:, 0] > 0, "yes", "no")
>>> clf = JaxBoostClassifier(n_estimators=5, max_depth=2).fit(X, y)
>>> clf.classes_.tolist(), clf.predict_proba(X[:2]).shape
(['no', 'yes'], (2, 2))
>>> float(clf.score(X, y))
1.0

Pickling. ``pickle.dumps(estimator)`` works: the booster travels as its JSON model text
(``jaxboost.io``) and is rebuilt, bit for bit, on unpickling; a custom loss is pickled
by reference (module and name), like any function. But **unpickling runs code named in
the file**: never unpickle (or ``joblib.load``) a file you do not trust. To share or
store a model, ``est.save_model(path)`` writes it as JSON (the booster and what ``fit``
learned of the labels, as XGBoost's ``save_model``) and ``JaxBoostClassifier().
load_model(path)`` reads it back (``jaxboost.load(path)`` reads the booster from the
same file): that format holds data only and is validated on load.
"""

from __future__ import annotations

import copy
import difflib
import functools
import inspect

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from objectives import MultiQuantile, Objective
from objectives import resolve as resolve_objective

from .. import io
from ..inputs import categorical as _categorical
from ..inputs.arrays import as_features
from ..inputs.numbers import is_int, is_real
from ..io.objective import objective_to_dict
from ..model.explain import feature_names
from ..native import thread_limit as native_thread_limit
from ..training import train
from ..training.names import hint
from ..training.options import BY_NAME as OPTIONS
from ..training.options import names
from ..training.train import check_n_jobs

__all__ = ["JaxBoostRegressor", "JaxBoostClassifier", "JaxBoostRanker"]

# scipy.sparse layouts fit and predict take as they are (others are converted to CSR).
_SPARSE = ("csr", "csc")

# Estimator parameters passed to train() under the same name: the training options
# marked sklearn=True (training.options); every other option passes through **kwargs.
_SAME_NAME = names(sklearn=True)

# The estimators' own parameters (scikit-learn's and XGBoost's names, or defaults of
# their own), before the options of _SAME_NAME: name -> default.
_OWN = {
    "objective": "squared",
    "n_estimators": 100,
    "random_state": None,
    "verbose": False,
    "link": None,
    "categorical_features": None,
    "missing": np.nan,
    "importance_type": "total_gain",
    "tree_method": "hist",
}

# train() arguments an estimator sets itself (from fit's arguments or its own
# parameters): refused in **kwargs, with the name to use instead.
_SET_BY_FIT = {
    "n_rounds": "n_estimators",
    "seed": "random_state",
    "sample_weight": "fit(sample_weight=)",
    "eval_set": "fit(eval_set=)",
    "base_margin": "fit(base_margin=)",
    "eval_base_margin": "fit(base_margin_eval_set=)",
    "feature_names": "a DataFrame's columns",
    "n_outputs": "objective",
    "eval_group": "JaxBoostRanker",
    "group": "JaxBoostRanker",
}

_PEER_RENAMES = {**_SET_BY_FIT, "the first argument (the loss)": "objective"}
"""Where the estimators take what a peer-name hint (``training.names.hint``) gives as
``train``'s name."""


IMPORTANCE_TYPES = ("total_gain", "gain", "weight", "cover", "total_cover")


def gain_importance(booster, importance_type: str = "total_gain") -> np.ndarray:
    """Importance per feature (``Booster.feature_importance``'s ``importance_type``;
    default total split gain), normalised to sum to 1 (zeros without splits).

    >>> import numpy as np, jaxboost
    >>> X = np.random.default_rng(0).normal(size=(100, 3)).astype(np.float32)
    >>> imp = gain_importance(jaxboost.train("squared", X, X[:, 1], n_rounds=3))
    >>> int(imp.argmax()), round(float(imp.sum()), 6)
    (1, 1.0)
    """
    scores = booster.feature_importance(importance_type)
    names = feature_names(booster)
    imp = np.array([scores.get(n, 0.0) for n in names], np.float64)
    s = imp.sum()
    return imp / s if s > 0 else np.zeros(booster.n_features)


def _seed(random_state):
    """``random_state`` (None, int or ``RandomState``) as ``train``'s ``seed``."""
    if random_state is None:
        return None
    if is_int(random_state):
        return int(random_state)
    return int(check_random_state(random_state).randint(2**31 - 1))


def _category_codes(X, labels=None):
    """``(X, frame_labels)``: a DataFrame's categorical columns as their category codes
    (re-coded to ``labels``, the model's, when given), a pandas DataFrame keeping the
    column names; anything else unchanged (``jaxboost.inputs.categorical``)."""
    frame = _categorical.frame_categories(X)
    if not frame:
        return X, {}
    codes = as_features(X, allow_inf=True)
    if labels:
        codes = _categorical.recode(codes, frame, labels)
    import pandas as pd

    return pd.DataFrame(codes, columns=[str(c) for c in X.columns]), frame


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x):
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _continued(xgb_model, init_model):
    """The Booster a ``fit`` continues (XGBoost's ``fit(xgb_model=)``, LightGBM's
    ``fit(init_model=)``), or None: a jaxboost ``Booster`` or fitted estimator, a saved
    jaxboost model's path, or an XGBoost model (its ``Booster``, estimator, JSON path or
    dict; read by ``from_xgboost``)."""
    import os

    from ..model.booster import Booster

    if xgb_model is not None and init_model is not None:
        raise TypeError("fit() takes xgb_model or init_model (the same thing), not both")
    model = init_model if xgb_model is None else xgb_model
    if model is None or isinstance(model, Booster):
        return model
    if isinstance(model, _JaxBoostModel):
        return model._booster()
    if isinstance(model, (str, os.PathLike)):
        try:
            return io.load(model)
        except io.ModelFormatError:
            pass  # not jaxboost's format: XGBoost's JSON?
    return io.from_xgboost(model)


class _JaxBoostModel(BaseEstimator):
    """What the regressor and the classifier share: fitting, state, pickling."""

    _y_numeric = True  # validate_data(y_numeric=...): False for the classifier

    # --- fitting ------------------------------------------------------------------
    def _validate_X(self, X, reset, labels=False):
        """``X`` checked as scikit-learn does; DataFrame categories as codes, re-coded to
        ``labels`` (default: the fitted booster's)."""
        if labels is False:
            labels = getattr(getattr(self, "booster_", None), "category_labels", None)
        X, _ = _category_codes(X, labels)
        X = validate_data(
            self,
            X,
            reset=reset,
            dtype=np.float32,
            ensure_all_finite="allow-nan",
            accept_sparse=_SPARSE,
        )
        return self._mark_missing(X)

    def _mark_missing(self, X):
        """``X`` with the entries equal to ``missing`` (XGBoost's parameter) set to NaN,
        jaxboost's missing value (a copy; absent entries of a sparse X stay missing)."""
        m = self.missing
        if m is None or (is_real(m) and np.isnan(float(m))):
            return X
        if not is_real(m):
            raise TypeError(
                f"missing must be a number (the value that marks a missing entry) or NaN, got {m!r}"
            )
        X = X.copy()
        values = X if isinstance(X, np.ndarray) else X.data
        values[values == np.float32(m)] = np.nan
        return X

    def _check_peer_params(self):
        """XGBoost's estimator parameters that jaxboost takes with a restriction."""
        if self.tree_method not in (None, "hist", "auto"):
            raise ValueError(
                f"tree_method={self.tree_method!r}: jaxboost grows histogram "
                f"trees only (tree_method='hist', the default)"
            )
        if self.importance_type not in IMPORTANCE_TYPES:
            raise ValueError(
                f"importance_type must be one of {IMPORTANCE_TYPES}, got {self.importance_type!r}"
            )

    # --- parameters: the named ones and **kwargs, as XGBoost's estimators ----------
    def get_params(self, deep=True):
        params = super().get_params(deep)
        params.update(getattr(self, "_kwargs", {}))
        return params

    def set_params(self, **params):
        named = set(self._get_param_names())
        for k in [k for k in params if k not in named]:  # checked by fit, as in __init__
            self._kwargs = {**getattr(self, "_kwargs", {}), k: params.pop(k)}
        return super().set_params(**params)

    def _train_kwargs(self):
        kw = {name: getattr(self, name) for name in _SAME_NAME}
        for name, value in getattr(self, "_kwargs", {}).items():
            _check_kwarg(type(self).__name__, name, self._get_param_names())
            kw[name] = value
        n = self.n_estimators
        if not is_int(n) or n < 0:
            raise ValueError(f"n_estimators must be an integer >= 0, got {n!r}")
        kw["n_rounds"] = int(n)
        kw["seed"] = _seed(self.random_state)
        return kw

    def _fit(
        self,
        X,
        y,
        sample_weight,
        eval_set,
        encode,
        base_margin=None,
        base_margin_eval_set=None,
        verbose=None,
        label_columns=False,
        init_model=None,
    ):
        """Validate the data, then ``train``.

        ``encode(y, sample_weight)`` returns ``(objective, n_outputs, labels, link)``
        for ``train`` (the classifier encodes its labels there). ``base_margin`` and
        ``base_margin_eval_set`` are margins per row, passed to ``train`` as
        ``base_margin`` and ``eval_base_margin``. ``init_model``: the model to continue
        (``_continued``'s Booster, or None). ``label_columns``: ``y`` is an ``(N,
        L)`` array of an entry's ``label_fields`` (``aft``'s intervals, with ``inf``
        for an open end), checked by ``train`` rather than by scikit-learn.
        """
        self._check_peer_params()
        X, frame = _category_codes(X)
        if label_columns:
            X = validate_data(
                self, X, dtype=np.float32, ensure_all_finite="allow-nan", accept_sparse=_SPARSE
            )
            y = np.asarray(y, np.float32)
            if y.shape[0] != X.shape[0]:
                raise ValueError(f"y has {y.shape[0]} rows, X {X.shape[0]}")
        else:
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float32,
                ensure_all_finite="allow-nan",
                y_numeric=self._y_numeric,
                accept_sparse=_SPARSE,
                multi_output=self._multi_output(y),
            )
        X = self._mark_missing(X)
        if sample_weight is not None:
            # shape, finite, >= 0 and not all zero, with scikit-learn's messages
            sample_weight = _check_sample_weight(
                sample_weight, X, dtype=np.float32, ensure_non_negative=True
            )
        objective, n_outputs, y_train, link = encode(y, sample_weight)
        sample_weight = self._class_weights(y_train, sample_weight)
        evals = None
        if eval_set is not None:
            if not isinstance(eval_set, (list, tuple)):
                raise TypeError(
                    f"eval_set must be a list of (X, y) or (X, y, "
                    f"sample_weight) tuples, got {type(eval_set).__name__}"
                )
            evals = []
            for i, item in enumerate(eval_set):
                if not isinstance(item, (list, tuple)) or len(item) not in (2, 3):
                    raise TypeError(f"eval_set[{i}] must be (X, y) or (X, y, sample_weight)")
                Xe = self._validate_X(item[0], reset=False, labels=frame)
                ye = self._encode_eval_labels(np.asarray(item[1]), i)
                evals.append((Xe, ye) + tuple(item[2:]))
        if base_margin_eval_set is not None and evals is None:
            raise ValueError("base_margin_eval_set is given without eval_set")
        if base_margin is not None and is_real(base_margin):
            raise TypeError(
                "base_margin of fit() is one margin per row, (N,) or (N, K), "
                "as in XGBoost; got a number"
            )
        names = getattr(self, "feature_names_in_", None)
        kw = self._train_kwargs()
        if verbose is not None:
            kw["verbose"] = verbose
        given = [] if self.categorical_features is None else list(self.categorical_features)
        cat = given + [
            f for f in sorted(frame) if f not in given and (names is None or names[f] not in given)
        ]
        booster = train(
            objective,
            X,
            y_train,
            sample_weight=sample_weight,
            eval_set=evals,
            n_outputs=n_outputs,
            link=link,
            feature_names=None if names is None else list(names),
            base_margin=base_margin,
            eval_base_margin=base_margin_eval_set,
            categorical_features=cat or None,
            init_model=init_model,
            **kw,
        )
        booster.category_labels = frame or None  # predict re-codes DataFrames by them
        self.booster_ = booster
        return self

    def _multi_output(self, y) -> bool:
        """Whether ``fit`` takes ``y`` as several targets (the regressor, ``(N, T)``)."""
        return False

    def _encode_eval_labels(self, y, i):
        return y

    def _class_weights(self, y_train, sample_weight):
        return sample_weight

    # --- fitted state ---------------------------------------------------------------
    def _booster(self):
        check_is_fitted(self, "booster_")
        return self.booster_

    def _thread_cap(self):
        """A block whose native kernels (prediction) run on at most ``n_jobs`` threads,
        as ``fit`` does (XGBoost's estimators predict under their ``n_jobs`` too)."""
        return native_thread_limit(check_n_jobs(self.n_jobs))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance per feature by ``importance_type`` (default ``"total_gain"``:
        total split gain; XGBoost's estimators default to ``"gain"``, the mean gain per
        split), normalised to sum to 1."""
        return gain_importance(self._booster(), self.importance_type)

    @property
    def best_iteration(self):
        """The best round (0-based) found by early stopping, else None."""
        return self._booster().best_iteration

    @property
    def best_score(self):
        """The watched metric at ``best_iteration`` (early stopping), else None."""
        return self._booster().best_score

    def evals_result(self) -> dict:
        """Evaluation history ``{data_name: {metric: [per round]}}`` of the ``eval_set``
        given to ``fit`` (sets named ``validation_0``, ``validation_1``, ...)."""
        return copy.deepcopy(self._booster().history)

    def apply(self, X, iteration_range=None) -> np.ndarray:
        """The leaf (heap node index) each row reaches in each tree, ``(N, n_trees)``
        int32, as XGBoost's ``apply``; ``iteration_range``: ``(0, end)``, the trees of
        the first ``end`` rounds."""
        booster = self._booster()
        end = booster.rounds_of(iteration_range)
        with self._thread_cap():
            return booster[:end].predict_leaf(self._validate_X(X, reset=False))

    def get_booster(self):
        """The trained ``jaxboost.Booster`` (same as ``booster_``)."""
        return self._booster()

    def to_shap(self) -> dict:
        """The fitted model in the ``shap`` package's tree format, for
        ``shap.TreeExplainer(est.to_shap())`` (see ``jaxboost.Booster.to_shap``)."""
        return self._booster().to_shap()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN = missing, routed by learned defaults
        tags.input_tags.sparse = True  # scipy.sparse: absent entries are missing
        return tags

    # --- model files: the booster and what the estimator learned of its labels -----
    def save_model(self, path) -> None:
        """Write the fitted estimator's model to ``path`` as JSON, as XGBoost's
        ``save_model``: the booster (jaxboost's model format, which ``jaxboost.load``
        reads from this file too) beside what ``fit`` learned of the labels
        (``classes_``, ``multilabel_``) and the features (``n_features_in_``,
        ``feature_names_in_``); written atomically, never pickled. Constructor
        parameters are not stored (``get_params`` of a new estimator)."""
        import json

        from ..io.files import atomic_write
        from ..io.format import ESTIMATOR_FORMAT, to_dict

        booster = self._booster()
        names = getattr(self, "feature_names_in_", None)
        fitted = {
            "n_features_in": int(self.n_features_in_),
            "feature_names_in": None if names is None else [str(n) for n in names],
        }
        if hasattr(self, "classes_"):
            fitted.update(
                classes=np.asarray(self.classes_).tolist(),
                multilabel=bool(getattr(self, "multilabel_", False)),
                label_dtype=np.dtype(getattr(self, "_label_dtype", "int64")).str,
            )
        d = dict(
            format=ESTIMATOR_FORMAT,
            format_version=1,
            estimator=type(self).__name__,
            fitted=fitted,
            model=to_dict(booster),
        )
        atomic_write(path, json.dumps(d, allow_nan=False).encode("utf-8"))

    def load_model(self, path):
        """Read a file of ``save_model`` into this estimator (of the same class), as
        XGBoost's ``load_model``: its booster and learned attributes, validated on load
        (``jaxboost.ModelFormatError`` naming the field). A model of a loss of your own
        needs this estimator's ``objective`` to be that loss. Returns ``self``."""
        from ..io.checks import as_object, check_keys, fail
        from ..io.files import read_json
        from ..io.format import ESTIMATOR_FORMAT, from_dict

        d = read_json(path)
        as_object(d, "estimator file")
        if d.get("format") != ESTIMATOR_FORMAT:
            fail("format", f'"{ESTIMATOR_FORMAT}" (a file of save_model)', d.get("format"))
        check_keys(
            d, "estimator file", ("format", "format_version", "estimator", "fitted", "model")
        )
        if d["format_version"] != 1:
            fail("format_version", "1", d["format_version"])
        if d["estimator"] != type(self).__name__:
            raise ValueError(
                f"this file holds a {d['estimator']!r}; load it into that estimator, "
                f"not a {type(self).__name__}"
            )
        fitted = _read_fitted(d["fitted"], hasattr(type(self), "predict_proba"))
        custom = self.objective if callable(self.objective) else None
        booster = from_dict(d["model"], objective=custom if custom is not None else None)
        if booster.n_features != fitted["n_features_in"]:
            fail(
                "fitted.n_features_in", f"the model's {booster.n_features}", fitted["n_features_in"]
            )
        self.booster_ = booster
        self.n_features_in_ = fitted["n_features_in"]
        if fitted["feature_names_in"] is not None:
            self.feature_names_in_ = np.asarray(fitted["feature_names_in"], dtype=object)
        if "classes" in fitted:
            self.classes_ = np.asarray(fitted["classes"])
            self.n_classes_ = len(self.classes_)
            self.multilabel_ = fitted["multilabel"]
            self._label_dtype = np.dtype(fitted["label_dtype"])
        return self

    # --- pickling: the booster as validated JSON text -------------------------------
    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: never edit the live __dict__
        booster = state.pop("booster_", None)
        if booster is not None:
            state["_booster_json"] = io.dumps(booster)
            if objective_to_dict(booster.objective)["kind"] == "callable":
                state["_booster_loss"] = booster.objective  # pickled by reference
        return state

    def __setstate__(self, state):
        state = dict(state)
        text = state.pop("_booster_json", None)
        loss = state.pop("_booster_loss", None)
        super().__setstate__(state)
        if text is not None:
            self.booster_ = io.loads(text, objective=loss)


def _read_fitted(d, classifier: bool) -> dict:
    """The ``fitted`` block of an estimator file, checked (``ModelFormatError``)."""
    from ..io.checks import as_int, as_object, check_keys, fail

    where = "fitted"
    as_object(d, where)
    label_keys = ("classes", "multilabel", "label_dtype")
    check_keys(d, where, ("n_features_in", "feature_names_in"), label_keys if classifier else ())
    out = {"n_features_in": as_int(d["n_features_in"], f"{where}.n_features_in", lo=1)}
    names = d["feature_names_in"]
    if names is not None and (
        not isinstance(names, list)
        or len(names) != out["n_features_in"]
        or not all(isinstance(n, str) for n in names)
    ):
        fail(f"{where}.feature_names_in", "null or a list of n_features_in strings", names)
    out["feature_names_in"] = names
    if not classifier:
        return out
    classes = d["classes"]
    scalar = (str, int, float)
    if (
        not isinstance(classes, list)
        or not classes
        or not all(isinstance(c, scalar) and not isinstance(c, bool) for c in classes)
        or len({type(c) for c in classes}) != 1
        or len(set(classes)) != len(classes)
    ):
        fail(f"{where}.classes", "a non-empty list of distinct labels of one type", classes)
    if not isinstance(d["multilabel"], bool):
        fail(f"{where}.multilabel", "true or false", d["multilabel"])
    dtype = d["label_dtype"]
    try:
        ok = isinstance(dtype, str) and np.dtype(dtype).kind in "biuf"
    except TypeError:
        ok = False
    if not ok:
        fail(f"{where}.label_dtype", "a NumPy dtype of numbers", dtype)
    out.update(classes=classes, multilabel=d["multilabel"], label_dtype=dtype)
    return out


@functools.lru_cache(maxsize=64)
def _logit_slopes(loss):
    """``(slope at margin 4 for label 1, at -4 for label 0)`` of a plain loss, or None
    where it cannot be called so (side data, other label shapes: left to train's
    checks). Once per loss: two eager gradients cost ~1.7 ms, a tenth of a small fit."""
    import jax
    import jax.numpy as jnp

    try:
        g1 = float(jax.grad(lambda f: loss(jnp.float32(1.0), f))(jnp.float32(4.0)))
        g0 = float(jax.grad(lambda f: loss(jnp.float32(0.0), f))(jnp.float32(-4.0)))
    except Exception:
        return None
    return g1, g0


def _warn_unless_logits(loss) -> None:
    """Warn when a two-class plain loss is not one of logits (``link="auto"`` reads its
    margins through the sigmoid): a loss on logits still falls beyond margin 4 for label
    1 and below -4 for label 0 (logistic, exponential); one on probabilities (squared
    error on 0/1) has its minimum at a finite margin, and the sigmoid squashes it."""
    import warnings

    from ..engine.autodiff import loss_name
    from ..errors import user_stacklevel

    try:
        slopes = _logit_slopes(loss)
    except TypeError:  # an unhashable callable: checked each time
        slopes = _logit_slopes.__wrapped__(loss)
    if slopes is None or (slopes[0] < 0 and slopes[1] > 0):
        return
    g1, g0 = slopes
    warnings.warn(
        f"JaxBoostClassifier reads the margins of the loss {loss_name(loss)} as logits "
        f"(link='auto' is the sigmoid for a plain callable), but the loss is least at a "
        f"finite margin (its slope at margin 4 for label 1 is {g1:.3g}, at -4 for label 0 "
        f"{g0:.3g}): a loss written on probabilities, such as squared error on 0/1, "
        f"which the sigmoid would squash. Pass link='identity' to read the margins as "
        f"probabilities, or link='sigmoid' to keep logits and silence this",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _check_kwarg(estimator: str, name: str, named=()) -> None:
    """A keyword beyond the named parameters must be a ``train`` option (``TypeError``,
    with the peer library's hint, or the closest of the estimator's own parameter names
    ``named`` and the options)."""
    if name in _SET_BY_FIT:
        raise TypeError(f"{estimator} sets train()'s {name!r} itself: use {_SET_BY_FIT[name]}")
    if name not in OPTIONS:
        peer = hint(name, _PEER_RENAMES)
        if peer is None:
            names = [n for n in list(named) + list(OPTIONS) if n not in _SET_BY_FIT]
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
            peer = f"did you mean {close[0]!r}?" if close else None
        raise TypeError(
            f"{estimator}() got an unexpected keyword argument {name!r}"
            + (f": {peer}" if peer else "")
        )


def _estimator_init(own: dict):
    """``__init__(self, *, <own>, <_SAME_NAME options>, **kwargs)``: its signature built
    from ``own`` and the options table (scikit-learn's ``get_params`` reads it), the
    arguments stored unmodified (scikit-learn's convention) and the other ``train``
    options kept in ``_kwargs`` (``get_params`` returns them and ``fit`` passes them to
    ``train``, as XGBoost's estimators do; a name that is no option fails in ``fit``)."""
    named = dict(own, **{n: OPTIONS[n].default for n in _SAME_NAME if n not in own})

    def __init__(self, **kwargs):
        for name, default in named.items():
            setattr(self, name, kwargs.pop(name, default))
        self._kwargs = kwargs  # checked by fit (scikit-learn: __init__ only stores)

    kw = inspect.Parameter.KEYWORD_ONLY
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, kw, default=d) for n, d in named.items()]
        + [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
    )
    return __init__


def _is_cox(objective) -> bool:
    """Whether an estimator's ``objective`` is the catalogue's Cox entry (a variant or
    its name)."""
    from objectives import GroupObjective

    try:
        entry = resolve_objective(objective)
    except (TypeError, ValueError):
        return False
    return isinstance(entry, GroupObjective) and entry.name == "cox"


def _label_fields_entry(objective):
    """The catalogue entry of an estimator's ``objective`` when it takes several label
    fields per row (``aft``: ``("lower", "upper")``), else None."""
    from objectives import Objective

    try:
        entry = resolve_objective(objective)
    except (TypeError, ValueError):
        return None
    return entry if isinstance(entry, Objective) and entry.label_fields else None


def _label_columns(entry, y) -> bool:
    """Whether ``fit``'s ``y`` holds ``entry``'s label fields as columns; a dict is
    refused (scikit-learn splits rows of arrays, not of dicts)."""
    if entry is None:
        return False
    fields = entry.label_fields
    if isinstance(y, dict):
        raise ValueError(
            f"the estimators take {entry!r}'s {len(fields)} numbers per row as an (N, "
            f"{len(fields)}) array with the columns [{', '.join(fields)}] (scikit-learn "
            f"splits arrays into folds, not dicts); or train on the dict with "
            f"jaxboost.train"
        )
    return np.ndim(y) == 2


class JaxBoostRegressor(RegressorMixin, _JaxBoostModel):
    """Gradient-boosted trees for regression on any per-row JAX loss.

    Parameters are ``jaxboost.train``'s (see its docstring), with scikit-learn's names
    for two of them: ``n_estimators`` (``n_rounds``) and ``random_state`` (``seed``;
    an int, None, or a ``RandomState`` to draw one from), and XGBoost's estimator
    parameters where the meaning is the same: ``missing`` (a value read as missing,
    besides NaN), ``importance_type`` (of ``feature_importances_``: ``"total_gain"``,
    the default, or XGBoost's default ``"gain"``, ``"weight"``, ``"cover"``,
    ``"total_cover"``), ``tree_method`` (``"hist"`` only), ``n_jobs`` (``train``'s:
    the native kernel's and the binning's threads), the classifier's
    ``scale_pos_weight`` (two classes: the positive rows' weight), its
    ``class_weight`` (scikit-learn's and LightGBM's: ``"balanced"`` or ``{label:
    weight}``) and
    ``fit(verbose=)``; ``num_parallel_tree`` and
    ``bootstrap`` grow forests (``n_estimators=1, learning_rate=1,
    num_parallel_tree=100, subsample=0.8, colsample_bynode=0.8``: a random forest, as
    XGBoost's ``XGBRFRegressor``). ``X`` may be a ``scipy.sparse`` matrix, whose absent
    entries are missing values (as in XGBoost, not zeros). ``objective`` defaults to
    ``"squared"``; ``predict`` returns the objective's response (its inverse link of
    the margin, e.g. ``exp`` for ``"poisson"``); ``link`` gives a plain callable
    ``objective`` one, as ``train``'s ``link`` (default None: its margin is the
    prediction). ``score`` is R², and Harrell's concordance index for
    ``objective="cox"`` (``jaxboost.survival.concordance_index`` of the predicted
    hazard ratios, as scikit-survival's estimators score; R² of hazards against signed
    times would mean nothing), so ``cross_val_score`` and ``GridSearchCV`` rank Cox
    models by C. ``objective="aft"`` takes event times ``(N,)`` or intervals as an
    ``(N, 2)`` array ``[lower, upper]`` (``inf`` an open end) and scores by the mean
    log-likelihood per row. ``categorical_features``, ``max_cat_to_onehot`` and
    ``max_cat_threshold`` are ``train``'s (pandas ``category`` columns are categorical
    without being named; ``predict`` re-codes them by the training categories). Any
    other ``train`` option (``hessian_floor=1e-3``, ...) passes through ``**kwargs``,
    as in XGBoost's estimators: stored, returned by ``get_params`` and given to
    ``train``.

    Attributes:
      booster_: the trained ``jaxboost.Booster``.
      n_features_in_, feature_names_in_: as in scikit-learn (the latter only after
        fitting on a DataFrame with string column names).
      feature_importances_: total split gain per feature, normalised to sum 1.
      best_iteration, best_score: early-stopping result (None without it).

    Example:
      >>> import numpy as np
      >>> from jaxboost.sklearn import JaxBoostRegressor
      >>> X = np.random.default_rng(0).normal(size=(200, 2))
      >>> reg = JaxBoostRegressor(n_estimators=20, max_depth=3).fit(X, 2 * X[:, 0])
      >>> bool(reg.score(X, 2 * X[:, 0]) > 0.9), reg.predict(X[:3]).shape
      (True, (3,))
    """

    __init__ = _estimator_init(_OWN)

    def _multi_output(self, y) -> bool:
        shape = np.asarray(y).shape  # through __array__: y may be any array-like
        return len(shape) == 2 and shape[1] >= 2

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # (N, T) y: T targets (multi_target)
        return tags

    def fit(
        self,
        X,
        y,
        sample_weight=None,
        eval_set=None,
        base_margin=None,
        base_margin_eval_set=None,
        verbose=None,
        xgb_model=None,
        init_model=None,
    ):
        """Train on ``X`` (array or DataFrame, NaN = missing) and ``y``: ``(N,)``, or
        ``(N, T)`` for ``T`` targets at once (an objective of one output trained on
        each column, ``objectives.multi_target``; ``predict`` returns ``(N, T)`` and
        ``score`` the mean R² over the targets, as scikit-learn's multi-output
        regressors).

        Args:
          sample_weight: optional non-negative weight per row.
          eval_set: optional list of ``(X, y)`` or ``(X, y, sample_weight)`` evaluated
            after every round (``evals_result()``; early stopping watches the last).
          base_margin: optional margins per row (offsets), ``(N,)`` (``(N, K)`` for K
            outputs), as XGBoost's: training starts from them instead of an intercept
            (see ``jaxboost.train``); pass the rows' offsets to ``predict`` too.
          base_margin_eval_set: optional list of margins per row, one per ``eval_set``
            entry (or None).
          verbose: as XGBoost's ``fit(verbose=)``: overrides the estimator's
            ``verbose`` for this fit (None keeps it).
          xgb_model, init_model: a model to continue (XGBoost's and LightGBM's names):
            ``n_estimators`` more rounds on top of a jaxboost ``Booster`` or fitted
            estimator, a saved model's path, or an XGBoost model (its ``Booster``,
            estimator or JSON; imported cuts are merged with ``X``'s, see
            ``jaxboost.train``'s ``init_model``).

        Returns:
          self.

        Example:
          >>> import numpy as np
          >>> from jaxboost.sklearn import JaxBoostRegressor
          >>> X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
          >>> first = JaxBoostRegressor(n_estimators=5, max_depth=2).fit(X, X[:, 0])
          >>> more = JaxBoostRegressor(n_estimators=5, max_depth=2).fit(
          ...     X, X[:, 0], xgb_model=first)
          >>> more.get_booster().num_boosted_rounds()
          10
        """

        columns = _label_columns(_label_fields_entry(self.objective), y)

        def encode(y, sample_weight):
            return self.objective, None, y, self.link

        return self._fit(
            X,
            y,
            sample_weight,
            eval_set,
            encode,
            base_margin,
            base_margin_eval_set,
            verbose,
            label_columns=columns,
            init_model=_continued(xgb_model, init_model),
        )

    def predict(
        self, X, base_margin=None, *, output_margin=False, iteration_range=None
    ) -> np.ndarray:
        """The objective's response for each row: ``(N,)`` (``(N, K)`` for K outputs);
        ``base_margin``: optional margins per row, as given to ``fit``;
        ``output_margin``: the margins instead; ``iteration_range``: ``(0, end)``, the
        model of its first ``end`` rounds (XGBoost's ``predict`` options)."""
        booster = self._booster()
        with self._thread_cap():
            return booster.predict(
                self._validate_X(X, reset=False),
                output_margin=output_margin,
                base_margin=base_margin,
                iteration_range=iteration_range,
            )

    def score(self, X, y, sample_weight=None) -> float:
        """R² of ``predict(X)`` against ``y`` (scikit-learn's regressor score); for
        ``objective="cox"`` Harrell's concordance index of the predicted hazard ratios
        (``y``: Cox labels, > 0 an event at that time, < 0 censored), in [0, 1], 0.5 for
        a random order; for ``objective="aft"`` the mean log-likelihood per row of the
        event times ``(N,)`` or intervals ``(N, 2)`` ``y`` (minus the mean
        ``aft-nloglik``: higher is better, as scikit-learn's scores are); for
        ``objectives.multi_quantile`` minus the mean pinball loss per row, summed over
        the levels.

        Example:
          >>> import numpy as np
          >>> rng = np.random.default_rng(0)
          >>> X = rng.normal(size=(300, 2))
          >>> t = rng.exponential(size=300) * np.exp(-X[:, 0])  # X[:, 0] raises the hazard
          >>> cox = JaxBoostRegressor(objective="cox", n_estimators=20, max_depth=2)
          >>> bool(cox.fit(X, t).score(X, t) > 0.7)
          True
        """
        if _is_cox(self.objective):
            from ..metrics.survival import concordance_index

            return concordance_index(y, self.predict(X), sample_weight)
        entry = _label_fields_entry(self.objective)
        if entry is not None:
            return self._mean_log_likelihood(entry, X, y, sample_weight)
        if isinstance(getattr(self._booster(), "objective", None), MultiQuantile):
            return self._mean_log_likelihood(None, X, y, sample_weight)  # -mean pinball
        return super().score(X, y, sample_weight=sample_weight)

    def _mean_log_likelihood(self, entry, X, y, sample_weight) -> float:
        """Minus the weighted mean of the model's own loss at its margins (``aft``: the
        mean log-likelihood of the times or intervals ``y``)."""
        import jax.numpy as jnp

        from ..inputs.arrays import as_targets, as_weights
        from ..metrics.custom import objective_metric

        booster = self._booster()
        with self._thread_cap():
            margin = booster.predict(self._validate_X(X, reset=False), output_margin=True)
        n = margin.shape[0]
        if isinstance(y, dict):
            _label_columns(entry, y)  # the same error as fit's
        yt, w = as_targets(np.asarray(y), n), as_weights(sample_weight, n)
        booster.objective.validate_labels(yt)
        w = jnp.ones(n, jnp.float32) if w is None else jnp.asarray(w)
        yj = jnp.asarray(yt)
        return -float(objective_metric(booster.objective).fn(yj, jnp.asarray(margin), w))


class JaxBoostClassifier(ClassifierMixin, _JaxBoostModel):
    """Gradient-boosted trees for binary and multi-class classification.

    Labels may be any values (strings, ints, ...): they are encoded as ``0..K-1`` in
    the order of ``classes_`` and ``predict`` returns the original labels.
    ``objective="auto"`` (the default) trains ``"logistic"`` for two classes and
    ``"softmax"`` for more; any catalogue name, ``objectives`` entry or callable works
    too. ``predict_proba`` goes through the model's inverse link (two classes: columns
    ``[1 - p, p]``). ``link`` is ``train``'s: ``"auto"`` (the default) keeps a catalogue
    entry's own link and gives a plain callable ``"sigmoid"`` for two classes or
    ``"softmax"`` over ``K`` margins for more (``n_outputs=K`` passed to ``train``), so
    its margins are read as logits by ``predict_proba``, its evaluation metrics and early
    stopping alike, and a saved ``booster_`` predicts the same probabilities. (A plain
    callable trained with ``link=None`` has no link; ``predict_proba`` still reads its
    margins as logits. A two-class plain loss least at a finite margin, as squared error
    on 0/1, warns: ``link="identity"`` reads its margins as probabilities.) ``score``
    is accuracy. Multi-label data, an ``(N, T)`` indicator matrix ``y`` of 0 and 1,
    trains ``logistic`` on each label (one tree per label per round, as XGBoost's
    classifier; ``objectives.multi_target``):
    ``predict_proba`` gives each label's probability ``(N, T)``, ``predict`` the
    indicator matrix, ``score`` the subset accuracy. Other parameters as in
    ``JaxBoostRegressor``.

    Attributes:
      classes_, n_classes_: the labels seen in ``fit``, sorted, and their number
        (multi-label data: ``0 .. T-1``, the columns of ``y``, and ``T``).
      multilabel_: whether ``fit`` got multi-label data.
      booster_, best_iteration, best_score: as in ``JaxBoostRegressor``.
      n_features_in_, feature_names_in_, feature_importances_: as in ``JaxBoostRegressor``.

    Example:
      >>> import numpy as np
      >>> from jaxboost.sklearn import JaxBoostClassifier
      >>> X = np.random.default_rng(0).normal(size=(300, 2))
      >>> y = np.digitize(X[:, 0], [-0.5, 0.5])          # three classes 0, 1, 2
      >>> clf = JaxBoostClassifier(n_estimators=10, max_depth=2).fit(X, y)
      >>> proba = clf.predict_proba(X)
      >>> proba.shape, bool(np.allclose(proba.sum(axis=1), 1.0))
      ((300, 3), True)
    """

    _y_numeric = False

    __init__ = _estimator_init(
        dict(_OWN, objective="auto", link="auto", scale_pos_weight=1.0, class_weight=None)
    )

    def _resolved_objective(self, n_classes):
        """(objective for train, n_outputs for train)."""
        if isinstance(self.objective, str) and self.objective == "auto":
            objective = resolve_objective("logistic" if n_classes == 2 else "softmax")
        else:
            objective = resolve_objective(self.objective)
        if isinstance(objective, Objective):
            if objective.outputs is None and isinstance(objective.n_outputs, str):
                objective = objective.with_params(**{objective.n_outputs: n_classes})
            return objective, None
        return objective, (None if n_classes == 2 else n_classes)

    def _resolved_link(self, objective, n_classes):
        """``link`` for train: ``"auto"`` is the objective's own for a catalogue entry
        (None), and ``"sigmoid"`` (two classes) or ``"softmax"`` for a plain callable."""
        if isinstance(self.link, str) and self.link == "auto":
            if isinstance(objective, Objective):
                return None
            if n_classes == 2:
                _warn_unless_logits(objective)
            return "sigmoid" if n_classes == 2 else "softmax"
        return self.link

    def fit(
        self,
        X,
        y,
        sample_weight=None,
        eval_set=None,
        base_margin=None,
        base_margin_eval_set=None,
        verbose=None,
        xgb_model=None,
        init_model=None,
    ):
        """Train on ``X`` (array or DataFrame, NaN = missing) and labels ``y``.

        Args:
          sample_weight: optional non-negative weight per row.
          eval_set: optional list of ``(X, y)`` or ``(X, y, sample_weight)``, labels
            from ``classes_``; evaluated after every round (``evals_result()``).
          base_margin, base_margin_eval_set: optional margins per row (logits), as in
            ``JaxBoostRegressor.fit``; ``(N, n_classes)`` for more than two classes.
          verbose: overrides the estimator's ``verbose`` for this fit (None keeps it).
          xgb_model, init_model: a model to continue, as in ``JaxBoostRegressor.fit``
            (the same classes: its outputs must be this fit's).

        Returns:
          self.
        """

        def encode(y, sample_weight):
            check_classification_targets(y)
            self.multilabel_ = self._multi_output(y)
            if self.multilabel_:
                return self._encode_multilabel(y)
            classes, codes = np.unique(y, return_inverse=True)
            present = classes if sample_weight is None else np.unique(y[sample_weight > 0])
            if len(present) < 2:
                where = "" if sample_weight is None else " with a positive sample_weight"
                raise ValueError(
                    f"{type(self).__name__} needs at least 2 classes in y"
                    f"{where}; got 1 class: {present[0]!r}"
                )
            self.classes_ = classes
            self.n_classes_ = len(classes)
            objective, n_outputs = self._resolved_objective(len(classes))
            return (
                objective,
                n_outputs,
                codes.astype(np.float32),
                self._resolved_link(objective, len(classes)),
            )

        return self._fit(
            X,
            y,
            sample_weight,
            eval_set,
            encode,
            base_margin,
            base_margin_eval_set,
            verbose,
            init_model=_continued(xgb_model, init_model),
        )

    def _multi_output(self, y) -> bool:
        """Whether ``y`` is a multi-label indicator matrix, ``(N, T)`` of 0 and 1."""
        from sklearn.utils.multiclass import type_of_target

        try:
            return type_of_target(y) == "multilabel-indicator"
        except ValueError:
            return False

    def _encode_multilabel(self, y):
        """``encode`` of an ``(N, T)`` 0/1 ``y``: ``T`` labels per row, each a binary
        target (``objective="auto"``: ``logistic`` on every column,
        ``objectives.multi_target``), as XGBoost's classifier takes multi-label data."""
        T = y.shape[1]
        self.classes_ = np.arange(T)
        self.n_classes_ = T
        self._label_dtype = y.dtype
        auto = isinstance(self.objective, str) and self.objective == "auto"
        objective = resolve_objective("logistic" if auto else self.objective)
        plain = not isinstance(objective, Objective)
        link = self.link
        if isinstance(link, str) and link == "auto":
            link = "sigmoid" if plain else None
        return objective, (T if plain else None), np.asarray(y, np.float32), link

    def _class_weights(self, y_train, sample_weight):
        """``sample_weight`` times ``class_weight``'s weight of each row's class
        (scikit-learn's and LightGBM's: a dict ``{label: weight}`` or ``"balanced"``,
        ``N / (n_classes * count of the class)``), and the positive class's rows scaled
        by ``scale_pos_weight`` (XGBoost's: it multiplies their g and h, two classes)."""
        cw = self.class_weight
        if cw is not None:
            from sklearn.utils.class_weight import compute_sample_weight

            if self.multilabel_:
                raise ValueError(
                    "class_weight is for classes; y is a multi-label indicator matrix: "
                    "pass sample_weight per row instead"
                )
            if not (isinstance(cw, dict) or (isinstance(cw, str) and cw == "balanced")):
                raise ValueError(
                    f"class_weight must be None, 'balanced' or a dict {{label: weight}}, got {cw!r}"
                )
            per_row = compute_sample_weight(cw, self.classes_[y_train.astype(np.int64)])
            w = 1.0 if sample_weight is None else sample_weight
            sample_weight = (w * per_row).astype(np.float32)
        return self._positive_weights(y_train, sample_weight)

    def _positive_weights(self, y_train, sample_weight):
        spw = self.scale_pos_weight
        if not is_real(spw) or not np.isfinite(float(spw)) or float(spw) <= 0:
            raise ValueError(f"scale_pos_weight must be a finite number > 0, got {spw!r}")
        if float(spw) == 1.0:
            return sample_weight
        if self.multilabel_:
            raise ValueError(
                "scale_pos_weight is for two classes; y is a multi-label indicator "
                "matrix: pass sample_weight per row instead"
            )
        if self.n_classes_ != 2:
            raise ValueError(
                f"scale_pos_weight is for two classes; y has "
                f"{self.n_classes_}: pass sample_weight per row instead"
            )
        w = np.ones(len(y_train), np.float32) if sample_weight is None else sample_weight
        return (w * np.where(y_train == 1, np.float32(spw), np.float32(1))).astype(np.float32)

    def _encode_eval_labels(self, y, i):
        if self.multilabel_:
            if y.ndim != 2 or y.shape[1] != self.n_classes_ or not np.isin(y, (0, 1)).all():
                raise ValueError(
                    f"eval_set[{i}] must be a multi-label indicator matrix of "
                    f"{self.n_classes_} columns of 0 and 1, as y; got shape {y.shape}"
                )
            return y.astype(np.float32)
        y = np.ravel(y)
        codes = np.searchsorted(self.classes_, y)
        codes = np.clip(codes, 0, len(self.classes_) - 1)
        unknown = self.classes_[codes] != y
        if unknown.any():
            raise ValueError(
                f"eval_set[{i}] has labels not seen in y: {np.unique(y[unknown])[:10].tolist()}"
            )
        return codes.astype(np.float32)

    def predict_proba(self, X, base_margin=None, *, iteration_range=None) -> np.ndarray:
        """Class probabilities ``(N, n_classes)``, columns in the order of ``classes_``;
        for multi-label data each label's probability ``(N, T)`` (rows need not sum to
        1); ``base_margin``: optional margins per row, as given to ``fit``;
        ``iteration_range``: ``(0, end)``, the model of its first ``end`` rounds."""
        booster = self._booster()
        X = self._validate_X(X, reset=False)
        multilabel = getattr(self, "multilabel_", False)
        kw = dict(base_margin=base_margin, iteration_range=iteration_range)
        with self._thread_cap():
            if isinstance(booster.objective, Objective):
                out = np.asarray(booster.predict(X, **kw), np.float64)
            else:  # a plain callable: margins read as logits
                margin = np.asarray(booster.predict(X, output_margin=True, **kw), np.float64)
                soft = margin.ndim == 2 and not multilabel
                out = _softmax(margin) if soft else _sigmoid(margin)
        if multilabel:
            return np.clip(out, 0.0, 1.0)
        if out.ndim == 1:
            p = np.clip(out, 0.0, 1.0)
            return np.stack([1.0 - p, p], axis=1)
        out = np.clip(out, 0.0, None)
        return out / out.sum(axis=1, keepdims=True)

    def predict(
        self, X, base_margin=None, *, output_margin=False, iteration_range=None
    ) -> np.ndarray:
        """The most probable class of each row, as one of ``classes_``; for multi-label
        data the ``(N, T)`` indicator matrix of the labels whose probability is above
        1/2; ``output_margin``: the margins (logits) instead, as XGBoost's
        ``predict(output_margin=True)``; ``iteration_range`` as in ``predict_proba``."""
        if output_margin:
            booster = self._booster()
            with self._thread_cap():
                return booster.predict(
                    self._validate_X(X, reset=False),
                    output_margin=True,
                    base_margin=base_margin,
                    iteration_range=iteration_range,
                )
        proba = self.predict_proba(X, base_margin, iteration_range=iteration_range)
        if getattr(self, "multilabel_", False):
            return (proba > 0.5).astype(self._label_dtype)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True  # (N, T) 0/1 y: logistic per label
        return tags


class JaxBoostRanker(_JaxBoostModel):
    """Learning to rank with the catalogue's ranking losses, as XGBoost's ``XGBRanker``
    and LightGBM's ``LGBMRanker``.

    ``objective`` defaults to ``"lambdarank"`` (also ``"ranknet"``, ``"listnet"``, an
    entry with hyperparameters, ``objectives.lambdarank(k=10)``, or a group loss of your
    own, ``loss(y_group, pred_group, mask)``); ``fit`` takes the queries as ``qid`` (a
    query id per row, XGBRanker's) or ``group`` (the sizes of contiguous queries,
    LightGBM's and XGBoost's ``set_group``); ``predict`` returns a score per row (higher
    ranks first) and ``score`` the mean NDCG over the queries. Other parameters as in
    ``JaxBoostRegressor``.

    Example:
      >>> import numpy as np
      >>> from jaxboost.sklearn import JaxBoostRanker
      >>> rng = np.random.default_rng(0)
      >>> qid = np.repeat(np.arange(40), 10)                  # 40 queries of 10 rows
      >>> X = rng.normal(size=(400, 3))
      >>> y = np.clip(np.round(X[:, 0] + 1), 0, 3)          # graded relevance 0..3
      >>> ranker = JaxBoostRanker(n_estimators=20, max_depth=3).fit(X, y, qid=qid)
      >>> bool(ranker.score(X, y, qid=qid) > 0.9), ranker.predict(X[:2]).shape
      (True, (2,))
    """

    _estimator_type = "ranker"
    __init__ = _estimator_init(dict(_OWN, objective="lambdarank"))

    def fit(
        self,
        X,
        y,
        *,
        qid=None,
        group=None,
        sample_weight=None,
        eval_set=None,
        eval_qid=None,
        eval_group=None,
        verbose=None,
        xgb_model=None,
        init_model=None,
    ):
        """Train on ``X`` and graded relevance labels ``y`` (``>= 0``) of queries.

        Args:
          qid: ``(N,)`` query id of each row; or ``group``: the sizes of contiguous
            queries, summing to N (one of the two).
          sample_weight: optional weight per row.
          eval_set: optional list of ``(X, y)``, with ``eval_qid`` (or ``eval_group``):
            one query-id array (sizes) per set; evaluated after every round with the
            objective's metric (``ndcg@10`` for the catalogue's) unless ``eval_metric``
            says otherwise.
          verbose, xgb_model, init_model: as ``JaxBoostRegressor.fit``'s.

        Returns:
          self.
        """
        queries = _queries(qid, group, "qid", "group")
        if queries is None:
            raise TypeError(
                "JaxBoostRanker.fit needs the queries: qid= (a query id per row) or "
                "group= (the sizes of contiguous queries)"
            )
        self._queries = {"group": queries}
        if eval_set is not None:
            given = _queries(eval_qid, eval_group, "eval_qid", "eval_group")
            if given is None or len(given) != len(eval_set):
                raise ValueError(
                    "eval_set needs the queries of each set: eval_qid (or eval_group), "
                    f"a list of {len(eval_set)} array(s)"
                )
            self._queries["eval_group"] = list(given)
        try:
            return self._fit(
                X,
                y,
                sample_weight,
                eval_set,
                lambda y, w: (self.objective, None, y, None),
                verbose=verbose,
                init_model=_continued(xgb_model, init_model),
            )
        finally:
            del self._queries

    def _train_kwargs(self):
        kw = super()._train_kwargs()
        kw.update(getattr(self, "_queries", {}))
        return kw

    def predict(self, X, base_margin=None, *, iteration_range=None) -> np.ndarray:
        """A score per row ``(N,)``: within a query, higher ranks first;
        ``iteration_range``: ``(0, end)``, the model of its first ``end`` rounds."""
        booster = self._booster()
        with self._thread_cap():
            return booster.predict(
                self._validate_X(X, reset=False),
                base_margin=base_margin,
                output_margin=True,
                iteration_range=iteration_range,
            )

    def score(self, X, y, qid=None, group=None, sample_weight=None) -> float:
        """Mean NDCG over the queries (every row of a query, gain ``2**y - 1``) of
        ``predict(X)``; ``qid`` or ``group`` as in ``fit``; ``sample_weight`` is
        refused (queries, not rows, carry the weight of a ranking score)."""
        import jax.numpy as jnp

        from ..engine.groups import group_index
        from ..metrics.ranking import ndcg

        if sample_weight is not None:
            raise TypeError("JaxBoostRanker.score takes no sample_weight")
        ids = _queries(qid, group, "qid", "group")
        if ids is None:
            raise TypeError("score needs the queries: qid= (or group=)")
        y = np.asarray(y, np.float32)
        ids = np.asarray(ids)
        if ids.shape != y.shape:  # sizes of contiguous queries
            ids = np.repeat(np.arange(len(ids)), ids.astype(np.int64))
        idx = jnp.asarray(group_index(ids, y.shape[0]))
        return float(ndcg(jnp.asarray(y), jnp.asarray(self.predict(X)), idx))

    def _encode_eval_labels(self, y, i):
        return np.asarray(y, np.float32)


def _queries(qid, group, qid_name, group_name):
    """The query argument ``train`` takes (ids per row or sizes): ``qid`` or ``group``,
    not both."""
    if qid is not None and group is not None:
        raise TypeError(f"give {qid_name} or {group_name}, not both")
    return qid if qid is not None else group
