"""XGBoost's per-row g and h, read from a one-round model (no API returns them).

With one feature holding the row number, the exact method, ``reg_lambda=0``, ``eta=1``
and ``min_child_weight=0``, XGBoost splits until every leaf holds one row (a split with
zero gain is not made, so a few leaves may hold several); a leaf's value is then
``-G/H`` and its cover ``H``, so ``G = -value * cover``.
"""

import json

import numpy as np


def xgb_leaf_grad_hess(xgb, params, y, f0, qid=None, bounds=None):
    """``(G, H, leaf)``: each row's leaf sums (its own g and h in a one-row leaf) and
    its leaf id, from one XGBoost round with ``params`` at start margins ``f0``.
    ``bounds``: ``(lower, upper)`` label bounds in place of ``y`` (``survival:aft``)."""
    n = f0.shape[0]
    X = np.arange(n, dtype=np.float32)[:, None]
    d = xgb.DMatrix(X, y, qid=qid)
    if bounds is not None:
        d.set_float_info("label_lower_bound", bounds[0])
        d.set_float_info("label_upper_bound", bounds[1])
    d.set_base_margin(f0)
    bst = xgb.train(
        dict(params, eta=1.0, reg_lambda=0.0, min_child_weight=0.0, tree_method="exact"), d, 1
    )
    leaves = bst.trees_to_dataframe().query("Feature == 'Leaf'").set_index("Node")
    leaf = bst.predict(xgb.DMatrix(X), pred_leaf=True).reshape(n)
    h = leaves.loc[leaf, "Cover"].to_numpy()
    return -leaves.loc[leaf, "Gain"].to_numpy() * h, h, leaf


def xgb_base_score(booster) -> float:
    """An XGBoost booster's ``base_score`` (its intercept, on the response scale), read
    from its configuration: XGBoost 3 writes a vector, ``"[1.3610857E0]"``."""
    config = json.loads(booster.save_config())
    return float(config["learner"]["learner_model_param"]["base_score"].strip("[]"))
