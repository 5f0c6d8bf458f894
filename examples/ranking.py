"""Learning to rank with the catalogue's group losses: RankNet, LambdaRank, ListNet.

Synthetic queries of 20 documents with graded relevance 0..4 from a noisy non-linear
score. Each loss trains on 400 queries with early stopping on held-out NDCG@10
(``eval_group`` gives the evaluation queries' ids) and is scored on 400 other queries;
XGBoost's ``rank:ndcg`` runs beside it when xgboost is installed. A random order's
NDCG@10 is the floor.

Run: python examples/ranking.py [--rounds 60] [--queries 400]
"""

import argparse
import importlib.util

import jax.numpy as jnp
import numpy as np
from jaxboost.ranking import group_index, ndcg

import jaxboost
import objectives


def queries(rng, n_q, per=20, n_features=8):
    ids = np.repeat(np.arange(n_q), per)
    X = rng.normal(size=(n_q * per, n_features)).astype(np.float32)
    score = (
        X[:, 0]
        + 0.7 * np.tanh(2 * X[:, 1])
        + 0.5 * X[:, 2] * X[:, 3]
        + 0.8 * rng.normal(size=n_q * per)
    )
    return ids, X, np.clip(np.floor(score + 1.0), 0, 4).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60, help="most boosting rounds")
    ap.add_argument("--queries", type=int, default=400, help="training (and test) queries")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.queries
    ids, X, y = queries(rng, 2 * n + 100)
    train, valid, test = ids < n, (ids >= n) & (ids < n + 100), ids >= n + 100
    idx = jnp.asarray(group_index(ids[test], int(test.sum())))

    def ndcg10(margin):
        return float(ndcg(jnp.asarray(y[test]), jnp.asarray(margin), idx, 10))

    floor = np.mean([ndcg10(rng.normal(size=int(test.sum()))) for _ in range(5)])
    print(f"random order: held-out NDCG@10 {floor:.4f}")
    kw = dict(n_rounds=args.rounds, max_depth=4, learning_rate=0.3, verbose=False)
    for entry in (objectives.ranknet, objectives.lambdarank, objectives.listnet):
        bst = jaxboost.train(
            entry,
            X[train],
            y[train],
            group=ids[train],
            eval_set=[(X[valid], y[valid])],
            eval_group=[ids[valid]],
            eval_metric="ndcg@10",
            early_stopping_rounds=10,
            **kw,
        )
        score = ndcg10(bst.predict(X[test], output_margin=True))
        print(f"{entry.name:10s} held-out NDCG@10 {score:.4f}  (best round {bst.best_iteration})")
    if importlib.util.find_spec("xgboost") is None:
        print("xgboost not installed: rank:ndcg skipped")
        return
    import xgboost as xgb

    d = xgb.DMatrix(X[train], y[train], qid=ids[train])
    dv = xgb.DMatrix(X[valid], y[valid], qid=ids[valid])
    ref = xgb.train(
        dict(
            objective="rank:ndcg", max_depth=4, eta=0.3, tree_method="hist", eval_metric="ndcg@10"
        ),
        d,
        args.rounds,
        evals=[(dv, "valid")],
        early_stopping_rounds=10,
        verbose_eval=False,
    )
    margin = ref.predict(
        xgb.DMatrix(X[test]), output_margin=True, iteration_range=(0, ref.best_iteration + 1)
    )
    print(
        f"{'xgboost':10s} held-out NDCG@10 {ndcg10(margin):.4f}  "
        f"(rank:ndcg, best round {ref.best_iteration})"
    )


if __name__ == "__main__":
    main()
