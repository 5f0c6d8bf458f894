"""Categorical features on a real data set: jaxboost vs XGBoost, LightGBM and scikit-learn's
HistGradientBoosting, each with its native categorical splits.

Data: the Titanic passenger list (OpenML data set 40945, 1,309 passengers) that
scikit-learn ships as a test fixture (``sklearn/datasets/tests/data/openml/id_40945``);
nothing is downloaded. Target: ``survived``. Features: ``sex`` (2 categories),
``embarked`` (3), ``pclass`` (3, treated as categories), ``title`` (the honorific in the
passenger's name, rare ones merged: 5), ``deck`` (the letter of the cabin, 8, mostly
missing), ``ticket_prefix`` (the letters of the ticket, rare ones merged: 9), and the
numeric ``age``, ``sibsp``, ``parch``, ``fare`` (missing values kept as missing).

Protocol: stratified 5-fold cross-validation repeated 3 times (15 fits per model, the same
folds for every model); accuracy, log loss and AUC on the held-out fold, averaged; fit time
per fit, the median (jaxboost's first fit, which compiles, is reported apart). Every model:
100 rounds, depth 4, learning rate 0.1, L2 1, at most 256 bins, its other defaults. A second
jaxboost row trains on the same codes as plain numbers (no categorical splits).

    python benchmarks/categorical.py            # prints the table (about a minute)
    python benchmarks/categorical.py --json out.json
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

CATEGORICAL = ["sex", "embarked", "pclass", "title", "deck", "ticket_prefix"]
NUMERIC = ["age", "sibsp", "parch", "fare"]
ROUNDS, DEPTH, LR = 100, 4, 0.1


def titanic() -> tuple[pd.DataFrame, np.ndarray]:
    """The Titanic passengers as a DataFrame (categorical columns of dtype ``category``)
    and the 0/1 survival labels, read from scikit-learn's shipped ARFF fixture."""
    import sklearn

    path = (
        Path(sklearn.__file__).parent
        / "datasets/tests/data/openml/id_40945"
        / "data-v1-dl-16826755.arff.gz"
    )
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    names = [
        re.match(r"@attribute\s+'?([^'\s]+)'?", ln, re.I).group(1)
        for ln in lines
        if ln.lower().startswith("@attribute")
    ]
    start = next(i for i, ln in enumerate(lines) if ln.lower().startswith("@data")) + 1
    rows = list(
        csv.reader([ln for ln in lines[start:] if ln.strip()], quotechar='"', skipinitialspace=True)
    )
    raw = pd.DataFrame(rows, columns=names).replace("?", np.nan)
    y = raw["survived"].astype(int).to_numpy()
    title = raw["name"].str.extract(r",\s*([^.]+)\.")[0].str.strip()
    title = title.replace({"Mlle": "Miss", "Ms": "Miss", "Mme": "Mrs"})
    title = title.where(title.isin(["Mr", "Mrs", "Miss", "Master"]), "Rare")
    prefix = raw["ticket"].str.replace(r"[\d\s./]", "", regex=True).str.upper()
    prefix = prefix.where(prefix != "", "NUM")
    top = prefix.value_counts().index[:8]
    prefix = prefix.where(prefix.isin(top), "OTHER")
    X = pd.DataFrame(
        {
            "sex": raw["sex"],
            "embarked": raw["embarked"],
            "pclass": raw["pclass"],
            "title": title,
            "deck": raw["cabin"].str[0],
            "ticket_prefix": prefix,
        }
    )
    for c in CATEGORICAL:
        X[c] = X[c].astype("category")
    for c in NUMERIC:
        X[c] = pd.to_numeric(raw[c]).astype(np.float32)
    return X, y


def folds(y, repeats=3, k=5):
    from sklearn.model_selection import RepeatedStratifiedKFold

    return list(
        RepeatedStratifiedKFold(n_splits=k, n_repeats=repeats, random_state=0).split(
            np.zeros(len(y)), y
        )
    )


def fit_jaxboost(categorical=True):
    import jaxboost

    def fit(X, y):
        if not categorical:
            X = X.assign(
                **{c: X[c].cat.codes.replace(-1, np.nan).astype(np.float32) for c in CATEGORICAL}
            )
        bst = jaxboost.train(
            "logistic",
            X,
            y.astype(np.float32),
            n_rounds=ROUNDS,
            max_depth=DEPTH,
            learning_rate=LR,
            reg_lambda=1.0,
            verbose=False,
        )

        def predict(Xt):
            if not categorical:
                Xt = Xt.assign(
                    **{
                        c: Xt[c].cat.codes.replace(-1, np.nan).astype(np.float32)
                        for c in CATEGORICAL
                    }
                )
            return bst.predict(Xt)

        return predict

    return fit


def fit_xgboost(X, y):
    import xgboost as xgb

    m = xgb.XGBClassifier(
        n_estimators=ROUNDS,
        max_depth=DEPTH,
        learning_rate=LR,
        reg_lambda=1.0,
        tree_method="hist",
        max_bin=256,
        enable_categorical=True,
    ).fit(X, y)
    return lambda Xt: m.predict_proba(Xt)[:, 1]


def fit_lightgbm(X, y):
    import lightgbm as lgb

    m = lgb.LGBMClassifier(
        n_estimators=ROUNDS,
        max_depth=DEPTH,
        num_leaves=2**DEPTH,
        learning_rate=LR,
        reg_lambda=1.0,
        max_bin=255,
        verbose=-1,
    ).fit(X, y, categorical_feature=CATEGORICAL)
    return lambda Xt: m.predict_proba(Xt)[:, 1]


def fit_hgb(X, y):
    from sklearn.ensemble import HistGradientBoostingClassifier

    m = HistGradientBoostingClassifier(
        max_iter=ROUNDS,
        max_depth=DEPTH,
        learning_rate=LR,
        l2_regularization=1.0,
        max_bins=255,
        categorical_features="from_dtype",
        early_stopping=False,
    ).fit(X, y)
    return lambda Xt: m.predict_proba(Xt)[:, 1]


def evaluate(fit, X, y, splits):
    from sklearn.metrics import accuracy_score, log_loss, roc_auc_score

    acc, ll, auc, times = [], [], [], []
    for tr, te in splits:
        t0 = time.perf_counter()
        predict = fit(X.iloc[tr], y[tr])
        times.append(time.perf_counter() - t0)
        p = np.clip(np.asarray(predict(X.iloc[te]), np.float64), 1e-7, 1 - 1e-7)
        acc.append(accuracy_score(y[te], p > 0.5))
        ll.append(log_loss(y[te], p))
        auc.append(roc_auc_score(y[te], p))
    return dict(
        accuracy=float(np.mean(acc)),
        accuracy_sd=float(np.std(acc)),
        logloss=float(np.mean(ll)),
        auc=float(np.mean(auc)),
        first_fit_s=times[0],
        fit_s=float(np.median(times[1:])),
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    X, y = titanic()
    splits = folds(y, repeats=args.repeats)
    print(
        f"Titanic (scikit-learn's OpenML 40945 fixture): {len(y)} rows, "
        f"{len(CATEGORICAL)} categorical columns "
        f"({', '.join(f'{c} {X[c].cat.categories.size}' for c in CATEGORICAL)}), "
        f"{len(NUMERIC)} numeric; {len(splits)} folds"
    )
    runs = [
        ("jaxboost", fit_jaxboost(True)),
        ("jaxboost, codes as numbers", fit_jaxboost(False)),
        ("xgboost hist", fit_xgboost),
        ("lightgbm", fit_lightgbm),
        ("sklearn HGB", fit_hgb),
    ]
    results = {}
    for name, fit in runs:
        try:
            results[name] = evaluate(fit, X, y, splits)
        except ImportError as e:
            print(f"{name}: skipped ({e})")
    print(f"\n{'model':<28}{'accuracy':>16}{'log loss':>10}{'AUC':>8}{'fit s':>9}{'1st fit s':>11}")
    for name, r in results.items():
        print(
            f"{name:<28}{r['accuracy']:>9.4f} ±{r['accuracy_sd']:.3f}{r['logloss']:>10.4f}"
            f"{r['auc']:>8.4f}{r['fit_s']:>9.3f}{r['first_fit_s']:>11.3f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
