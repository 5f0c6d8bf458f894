"""Boosters, estimators and catalogue objectives pickle (issue 28, item 12).

A Booster trained with "logistic" or "focal" could not be pickled (``Can't pickle local
object 'check_binary_labels.<locals>.check'``), nor an estimator holding
``objectives.huber(delta=2.0)`` (``real_hyper.<locals>.check``): none could go to a
spawn ``multiprocessing.Pool``. The checks are module-level callables now
(``objectives._checks``), compared by value.
"""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import jaxboost
import objectives


@pytest.mark.parametrize("name", sorted(objectives.CATALOGUE) + sorted(objectives.GROUP_CATALOGUE))
def test_every_catalogue_entry_pickles_and_compares_equal(name):
    entry = objectives.CATALOGUE.get(name) or objectives.GROUP_CATALOGUE[name]
    again = pickle.loads(pickle.dumps(entry))
    assert again == entry
    if entry.params:  # a variant with its hyperparameters
        variant = entry.with_params(**dict(entry.params))
        assert pickle.loads(pickle.dumps(variant)) == variant


def _predict(args):
    booster, X = args
    return booster.predict(X)


def test_boosters_and_estimators_cross_a_spawn_pool():
    from jaxboost.sklearn import JaxBoostRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    boosters = [
        jaxboost.train(loss, X, y, n_rounds=2, max_depth=2)
        for loss in ("logistic", objectives.focal(gamma=2.0))
    ]
    for b in boosters:
        again = pickle.loads(pickle.dumps(b))
        np.testing.assert_array_equal(again.predict(X), b.predict(X))
    est = JaxBoostRegressor(objective=objectives.huber(delta=2.0), n_estimators=2)
    assert pickle.loads(pickle.dumps(est)).get_params()["objective"] == objectives.huber(delta=2.0)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out = pool.map(_predict, [(boosters[0], X)])
    np.testing.assert_allclose(out[0], boosters[0].predict(X), rtol=1e-6)
