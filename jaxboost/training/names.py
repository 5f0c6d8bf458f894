"""The names XGBoost and LightGBM users type, and jaxboost's for the same thing.

``train`` and ``train_many`` refuse an unknown keyword with Python's ``TypeError``; when
the keyword is a peer library's spelling, the error names jaxboost's equivalent (or says
why there is none), so ``train(loss, X, y, num_boost_round=50)`` says to write
``n_rounds=50``.
"""

from __future__ import annotations

import functools
import inspect

EQUIVALENTS = {
    "num_boost_round": "n_rounds",
    "n_estimators": "n_rounds",
    "num_round": "n_rounds",
    "num_iterations": "n_rounds",
    "num_iteration": "n_rounds",
    "n_iter": "n_rounds",
    "num_trees": "n_rounds",
    "nrounds": "n_rounds",
    "num_rounds": "n_rounds",
    "num_tree": "n_rounds",
    "max_iter": "n_rounds",
    "eta": "learning_rate",
    "shrinkage_rate": "learning_rate",
    "lambda": "reg_lambda",
    "lambda_l2": "reg_lambda",
    "reg_l2": "reg_lambda",
    "alpha": "reg_alpha",
    "lambda_l1": "reg_alpha",
    "min_split_loss": "gamma",
    "min_gain_to_split": "gamma",
    "min_sum_hessian_in_leaf": "min_child_weight",
    "min_child_samples": "min_samples_leaf",
    "min_data_in_leaf": "min_samples_leaf",
    "bagging_fraction": "subsample",
    "feature_fraction": "colsample_bytree",
    "feature_fraction_bynode": "colsample_bynode",
    "max_bins": "max_bin",
    "random_state": "seed",
    "random_seed": "seed",
    "obj": "the first argument (the loss)",
    "objective": "the first argument (the loss)",
    "params": "keyword arguments (train(loss, X, y, max_depth=4, ...))",
    "dtrain": "X, y",
    "evals": "eval_set",
    "valid_sets": "eval_set",
    "feval": "eval_metric (a jaxboost.metrics.Metric or metrics.host(fn))",
    "custom_metric": "eval_metric",
    "metrics": "eval_metric",
    "metric": "eval_metric",
    "early_stopping_round": "early_stopping_rounds",
    "early_stopping": "early_stopping_rounds",
    "n_iter_no_change": "early_stopping_rounds",
    "verbose_eval": "verbose",
    "xgb_model": "init_model",
    "base_score": "base_margin (on the margin scale)",
    "init_score": "base_margin",
    "num_class": "n_outputs (softmax infers the classes from the labels)",
    "weight": "sample_weight",
    "nthread": "n_jobs",
    "num_threads": "n_jobs",
    "num_leaves": "max_leaves with grow_policy='lossguide'",
    "verbosity": "verbose",
    "silent": "verbose=False",
    "categorical_feature": "categorical_features",
    "cat_features": "categorical_features",
    "iterations": "n_rounds",
    "depth": "max_depth",
    "l2_leaf_reg": "reg_lambda",
    "border_count": "max_bin",
    "thread_count": "n_jobs",
    "quantile_alpha": "objectives.quantile(alpha) (several levels: "
    "objectives.multi_quantile([0.1, 0.5, 0.9]))",
    "huber_slope": "objectives.huber(delta)",
    "tweedie_variance_power": "objectives.tweedie(power)",
}
"""A peer's keyword -> what jaxboost calls it."""

ABSENT = {
    "tree_method": "jaxboost grows histogram trees ('hist') only",
    "device": "jaxboost runs on JAX's default device (jax.default_device, or mesh=)",
    "scale_pos_weight": "weight the positive rows with sample_weight (XGBoost's "
    "scale_pos_weight multiplies their gradients the same way)",
    "missing": "NaN is the missing value: replace your marker with np.nan",
    "booster": "jaxboost trains trees ('gbtree'); forests with num_parallel_tree",
    "boosting_type": "jaxboost boosts trees ('gbdt'); random forests with "
    "num_parallel_tree (with subsample and colsample_bynode)",
    "boosting": "jaxboost boosts trees ('gbdt'); random forests with "
    "num_parallel_tree (with subsample and colsample_bynode)",
    "enable_categorical": "pandas 'category' and polars Categorical columns are "
    "categorical without it; name other categorical columns with "
    "categorical_features=[...]",
    "is_unbalance": "weight the classes with sample_weight (JaxBoostClassifier: "
    "class_weight='balanced')",
    "bagging_freq": "subsample draws new rows every round (LightGBM's bagging_freq=1)",
    "subsample_freq": "subsample draws new rows every round (LightGBM's bagging_freq=1)",
    "sampling_method": "subsample draws rows uniformly (XGBoost's 'uniform')",
}
"""A peer's keyword with no jaxboost counterpart -> why, and what to do."""


def hint(name: str, renames: dict | None = None) -> str | None:
    """The hint for an unknown keyword ``name``, or None when it is no peer's;
    ``renames``: where a caller other than ``train`` takes ``train``'s names (the
    scikit-learn estimators: ``{"n_rounds": "n_estimators", ...}``).

    >>> hint("eta")
    "write learning_rate=... (jaxboost's name for XGBoost's/LightGBM's 'eta')"
    >>> hint("num_boost_round", {"n_rounds": "n_estimators"})
    "write n_estimators=... (jaxboost's name for XGBoost's/LightGBM's 'num_boost_round')"
    """
    if name in EQUIVALENTS:
        ours = (renames or {}).get(EQUIVALENTS[name], EQUIVALENTS[name])
        return (
            f"write {ours}=... (jaxboost's name for XGBoost's/LightGBM's {name!r})"
            if ours.isidentifier()
            else f"jaxboost takes it as {ours}"
        )
    if name in ABSENT:
        return ABSENT[name]
    return None


def peer_names(fn):
    """Wrap ``fn`` so that an unknown keyword argument raises a ``TypeError`` naming
    jaxboost's equivalent when it is a peer library's spelling (``hint``)."""
    known = set(inspect.signature(fn).parameters)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        unknown = [k for k in kwargs if k not in known]
        if unknown:
            hints = [f"{k!r}: {hint(k)}" for k in unknown if hint(k) is not None]
            if hints:
                raise TypeError(
                    f"{fn.__name__}() got unexpected keyword argument(s) "
                    f"{unknown}; " + "; ".join(hints)
                )
        return fn(*args, **kwargs)

    return wrapper
