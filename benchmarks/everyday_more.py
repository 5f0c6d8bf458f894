"""Everyday data beyond W6's table: the settings and tasks a notebook meets next, against
XGBoost ``hist``, in one process, warm (the median of ``--repeats`` after one call
that compiles), with a held-out figure for each fit so that a fast wrong model shows.

``everyday.py`` (W6) is the acceptance table, each row in fresh processes, cold and
warm, with peak memory. This script is the wider net BENCHMARKS.md asks for before a
speed claim ("never from one workload"): it finds the next workload that is slow, it
does not replace W6.

Rows (depth 6, learning rate 0.1, 256 bins, ``reg_lambda=1``, 2 threads unless said;
80 % train, 20 % held out):

==================  ===================================================================
diabetes            ``load_diabetes`` (442 x 10), squared error, 100 rounds
iris                ``load_iris`` (150 x 4), 3-class softmax, 100 rounds
classes_50          ``make_classification`` 20k x 20, 50 classes, 20 rounds
depth_10            ``make_regression`` 100k x 20, depth 10, 50 rounds
lossguide_255       the same data, leaf-wise, 255 leaves, depth at most 12, 50 rounds
early_stopping      ``make_classification`` 60k x 20, learning rate 0.05, up to 1,000
                    rounds, stopping after 50 without a better held-out log loss
subsample           ``make_classification`` 100k x 30, subsample and colsample_bytree
                    0.8, 100 rounds
wide                2k x 1,000 normal features (5 informative), logistic, 100 rounds
ranking             100k x 40 in 2,000 queries, LambdaMART NDCG, 50 rounds
poisson             200k x 15 Poisson counts, 100 rounds
estimator           ``JaxBoostClassifier`` / ``XGBClassifier`` fit, 5k x 20, 100 rounds
predict_1 ...       ``predict`` of the subsample row's model (100 trees) on 1, 100 and
predict_100k        100k rows (XGBoost ``inplace_predict``)
contribs_1k         SHAP values of 1,000 rows (``pred_contribs``)
==================  ===================================================================

    python benchmarks/everyday_more.py [--rows diabetes,iris] [--repeats 3] [--threads 2]

Prints one table (seconds, the ratio to XGBoost, the held-out figure of each) and
writes ``benchmarks/results/everyday-more-<timestamp>.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _timing import timed, write_results  # noqa: E402  (benchmarks/_timing.py)

TREE = dict(max_depth=6, learning_rate=0.1, reg_lambda=1.0, min_child_weight=1.0, max_bin=256)


def _split(X, y):
    n = int(0.8 * len(y))
    return X[:n], y[:n], X[n:], y[n:]


def _data():
    """name -> (X_train, y_train, X_test, y_test); built lazily, once."""
    from sklearn.datasets import (
        load_diabetes,
        load_iris,
        make_classification,
        make_regression,
    )

    def shuffled(X, y):
        p = np.random.default_rng(1).permutation(len(y))
        return X[p].astype(np.float32), y[p]

    def wide():
        rng = np.random.default_rng(0)  # each data set its own seed: any --rows, same data
        X = rng.normal(size=(2500, 1000)).astype(np.float32)
        y = (X[:, :5].sum(1) + rng.normal(size=2500) > 0).astype(np.float32)
        return _split(X, y)

    def ranking():
        n, q = 125_000, 2_500
        rng = np.random.default_rng(1)
        X = rng.normal(size=(n, 40)).astype(np.float32)
        qid = np.sort(rng.integers(0, q, n))
        rel = np.clip(np.round(X[:, :3].sum(1) + rng.normal(size=n)), 0, 4).astype(np.float32)
        cut = np.searchsorted(qid, 2_000)  # whole queries on each side
        return X[:cut], rel[:cut], X[cut:], rel[cut:], qid[:cut], qid[cut:]

    def poisson():
        rng = np.random.default_rng(2)
        X = rng.normal(size=(250_000, 15)).astype(np.float32)
        y = rng.poisson(np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] + 0.1 * X[:, 2] * X[:, 3]))
        return _split(X, y.astype(np.float32))

    return {
        "diabetes": lambda: _split(*shuffled(*load_diabetes(return_X_y=True))),
        "iris": lambda: _split(*shuffled(*load_iris(return_X_y=True))),
        "classes_50": lambda: _split(
            *shuffled(
                *make_classification(25_000, 20, n_informative=15, n_classes=50, random_state=0)
            )
        ),
        "regression": lambda: _split(
            *shuffled(*make_regression(125_000, 20, noise=1.0, random_state=0))
        ),
        "binary_60k": lambda: _split(*shuffled(*make_classification(75_000, 20, random_state=0))),
        "binary_100k": lambda: _split(*shuffled(*make_classification(125_000, 30, random_state=0))),
        "binary_5k": lambda: _split(*shuffled(*make_classification(6_250, 20, random_state=0))),
        "wide": wide,
        "ranking": ranking,
        "poisson": poisson,
    }


# row -> (data set, task, jaxboost train options, XGBoost params, rounds)
ROWS = {
    "diabetes": ("diabetes", "squared", {}, {}, 100),
    "iris": ("iris", "softmax", {}, {}, 100),
    "classes_50": ("classes_50", "softmax", {}, {}, 20),
    "depth_10": ("regression", "squared", {"max_depth": 10}, {"max_depth": 10}, 50),
    "lossguide_255": (
        "regression",
        "squared",
        {"grow_policy": "lossguide", "max_leaves": 255, "max_depth": 12},
        {"grow_policy": "lossguide", "max_leaves": 255, "max_depth": 12},
        50,
    ),
    "early_stopping": ("binary_60k", "logistic", {"learning_rate": 0.05}, {"eta": 0.05}, 1000),
    "subsample": (
        "binary_100k",
        "logistic",
        {"subsample": 0.8, "colsample_bytree": 0.8},
        {"subsample": 0.8, "colsample_bytree": 0.8},
        100,
    ),
    "wide": ("wide", "logistic", {}, {}, 100),
    "ranking": ("ranking", "lambdarank", {}, {}, 50),
    "poisson": ("poisson", "poisson", {}, {}, 100),
    "estimator": ("binary_5k", "logistic", {}, {}, 100),
}
PREDICT_ROWS = {"predict_1": 1, "predict_100": 100, "predict_100k": 100_000, "contribs_1k": 1000}

XGB_OBJECTIVE = {
    "squared": "reg:squarederror",
    "logistic": "binary:logistic",
    "softmax": "multi:softprob",
    "lambdarank": "rank:ndcg",
    "poisson": "count:poisson",
}


def held_out(task, y, pred, qid=None) -> tuple[str, float]:
    """The held-out figure of a fit: (name, value)."""
    from sklearn.metrics import log_loss, mean_squared_error, ndcg_score

    pred = np.asarray(pred, dtype=np.float64)
    if task == "squared":
        return "rmse", float(np.sqrt(mean_squared_error(y, pred)))
    if task == "logistic":
        return "logloss", float(log_loss(y, np.clip(pred, 1e-7, 1 - 1e-7)))
    if task == "softmax":
        return "mlogloss", float(log_loss(y, pred, labels=np.arange(pred.shape[1])))
    if task == "poisson":
        return "poisson_dev", float(
            2 * np.mean(pred - y + y * np.log(np.where(y > 0, y / pred, 1)))
        )
    # ranking: the mean NDCG@10 over queries of at least two rows
    scores = []
    for q in np.unique(qid):
        m = qid == q
        if m.sum() > 1:
            scores.append(ndcg_score(y[m][None], pred[m][None], k=10))
    return "ndcg@10", float(np.mean(scores))


def _xgb_params(task, extra, threads, n_classes):
    p = dict(
        tree_method="hist",
        max_depth=TREE["max_depth"],
        eta=TREE["learning_rate"],
        reg_lambda=TREE["reg_lambda"],
        min_child_weight=TREE["min_child_weight"],
        max_bin=TREE["max_bin"],
        nthread=threads,
        objective=XGB_OBJECTIVE[task],
    )
    if task == "softmax":
        p["num_class"] = n_classes
    if task == "logistic":
        p["eval_metric"] = "logloss"
    return {**p, **extra}


def fit_jaxboost(row, d, threads):
    import jaxboost

    _, task, extra, _, rounds = ROWS[row]
    Xt, yt, Xv, yv = d[:4]
    if row == "estimator":
        from jaxboost.sklearn import JaxBoostClassifier

        est = JaxBoostClassifier(n_estimators=rounds, n_jobs=threads, **TREE).fit(Xt, yt)
        return est, est.predict_proba(Xv)[:, 1]
    kw = dict(TREE, n_rounds=rounds, n_jobs=threads, verbose=False, **extra)
    if row == "early_stopping":
        kw.update(eval_set=[(Xv, yv)], early_stopping_rounds=50)
    if task == "lambdarank":
        kw["group"] = np.bincount(d[4])[np.unique(d[4])]
    booster = jaxboost.train(task, Xt, yt, **kw)
    return booster, booster.predict(Xv)


def fit_xgboost(row, d, threads):
    import xgboost as xgb

    _, task, _, extra, rounds = ROWS[row]
    Xt, yt, Xv, yv = d[:4]
    n_classes = int(np.max(yt)) + 1
    if row == "estimator":
        est = xgb.XGBClassifier(
            n_estimators=rounds,
            n_jobs=threads,
            tree_method="hist",
            max_depth=TREE["max_depth"],
            learning_rate=TREE["learning_rate"],
            max_bin=TREE["max_bin"],
        ).fit(Xt, yt)
        return est, est.predict_proba(Xv)[:, 1]
    params = _xgb_params(task, extra, threads, n_classes)
    dt = xgb.QuantileDMatrix(Xt, yt, qid=d[4] if task == "lambdarank" else None)
    kw = {}
    if row == "early_stopping":
        dv = xgb.QuantileDMatrix(Xv, yv, ref=dt)
        kw = dict(evals=[(dv, "test")], early_stopping_rounds=50, verbose_eval=False)
    booster = xgb.train(params, dt, rounds, **kw)
    end = booster.best_iteration + 1 if row == "early_stopping" else 0
    return booster, booster.inplace_predict(Xv, iteration_range=(0, end))


def run_fit(row, data, threads, repeats):
    name, task = ROWS[row][:2]
    d = data[name]
    out = {}
    for lib, fit in (("jaxboost", fit_jaxboost), ("xgboost", fit_xgboost)):
        secs, (model, pred) = timed(lambda f=fit: f(row, d, threads), repeats)
        metric, value = held_out(task, d[3], pred, d[5] if task == "lambdarank" else None)
        rounds = model.num_boosted_rounds() if hasattr(model, "num_boosted_rounds") else None
        out[lib] = dict(seconds=secs, metric=metric, value=value, rounds=rounds, model=model)
    return out


def run_predict(row, models, data, repeats):
    """Prediction with the ``subsample`` row's models (100 trees of depth 6)."""
    X = data["binary_100k"][0]
    n = PREDICT_ROWS[row]
    Xs = np.ascontiguousarray(X[:n])
    bj, bx = models["jaxboost"]["model"], models["xgboost"]["model"]
    if row.startswith("contribs"):
        import xgboost as xgb

        jax_fn = lambda: np.asarray(bj.predict(Xs, pred_contribs=True))  # noqa: E731
        xgb_fn = lambda: bx.predict(xgb.DMatrix(Xs), pred_contribs=True)  # noqa: E731
    else:
        jax_fn = lambda: np.asarray(bj.predict(Xs))  # noqa: E731
        xgb_fn = lambda: bx.inplace_predict(Xs)  # noqa: E731
    reps = max(repeats, 5)
    tj, _ = timed(jax_fn, reps)
    tx, _ = timed(xgb_fn, reps)
    return {
        "jaxboost": dict(seconds=tj, metric="rows", value=float(n), rounds=None),
        "xgboost": dict(seconds=tx, metric="rows", value=float(n), rounds=None),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(list(ROWS) + list(PREDICT_ROWS)))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    chosen = args.rows.split(",")
    unknown = [r for r in chosen if r not in ROWS and r not in PREDICT_ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; rows: {list(ROWS) + list(PREDICT_ROWS)}")
    if any(r in PREDICT_ROWS for r in chosen) and "subsample" not in chosen:
        chosen.insert(0, "subsample")  # the models prediction is timed on
    builders = _data()
    data = {}
    results, fitted = [], {}
    for row in chosen:
        if row in ROWS:
            name = ROWS[row][0]
            if name not in data:
                data[name] = builders[name]()
            res = run_fit(row, data, args.threads, args.repeats)
            fitted[row] = res
        else:
            res = run_predict(row, fitted["subsample"], data, args.repeats)
        for lib, r in res.items():
            results.append(
                dict(row=row, library=lib, **{k: v for k, v in r.items() if k != "model"})
            )
        j, x = res["jaxboost"]["seconds"], res["xgboost"]["seconds"]
        q = res["jaxboost"]
        print(
            f"{row:15s} jaxboost {j:8.4f} s  xgboost {x:8.4f} s  ratio {j / x:5.2f}   "
            f"{q['metric']} {q['value']:.4g} / {res['xgboost']['value']:.4g}"
            + (
                f"   rounds {q['rounds']} / {res['xgboost']['rounds']}"
                if row == "early_stopping"
                else ""
            ),
            flush=True,
        )
    for r in results:
        if r["library"] == "jaxboost":
            base = next(
                b["seconds"] for b in results if b["row"] == r["row"] and b["library"] == "xgboost"
            )
            r["ratio"] = r["seconds"] / base
    write_results("everyday-more", args, results)


if __name__ == "__main__":
    main()
