"""scipy.sparse input: absent entries are missing values, stored ones (explicit zeros
included) are values, as in XGBoost 3.2's DMatrix; a sparse matrix trains the model of
its dense twin with NaN in the absent places, without being densified.

(The 100k x 1,000 case with peak memory is ``benchmarks/sparse.py``.)
"""

import numpy as np
import pytest

import jaxboost
from jaxboost import DataError

sp = pytest.importorskip("scipy.sparse")

N, F = 2000, 50
KW = dict(n_rounds=5, max_depth=3, learning_rate=0.3, verbose=False)


def to_csr(dense):
    """The CSR matrix storing every non-NaN entry of ``dense`` (zeros included)."""
    rows, cols = np.nonzero(~np.isnan(dense))
    return sp.csr_matrix((dense[rows, cols], (rows, cols)), shape=dense.shape, dtype=np.float32)


def same_trees(a, b):
    return all(
        (x is None and y is None) or np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a.ensemble, b.ensemble)
    )


@pytest.fixture(scope="module")
def data():
    """A 2,000 x 50 CSR matrix, 5 % of entries stored (a fifth of them explicit zeros),
    column 0 stored in full and column 1 empty; values are half-integers, so the bins
    hold every distinct value (XGBoost's exact method sees the same candidates).
    Returns ``(csr, dense twin with NaN where absent, labels)``."""
    rng = np.random.default_rng(0)
    stored = rng.random((N, F)) < 0.05
    stored[:, 0], stored[:, 1] = True, False
    values = rng.integers(1, 25, size=(N, F)).astype(np.float32) * 0.5
    values[rng.random((N, F)) < 0.2] = 0.0  # explicit zeros: values, not missing
    dense = np.where(stored, values, np.nan).astype(np.float32)
    X = to_csr(dense)
    assert (X.data == 0).sum() > 500  # the explicit zeros survive construction
    z = (
        (values[:, 0] - 6) / 3
        + np.where(stored[:, 2], values[:, 2] - 3, 2.0)
        - 2.0 * (stored[:, 3] & (values[:, 3] == 0))
    )
    y = (rng.random(N) < 1 / (1 + np.exp(-z))).astype(np.float32)
    return X, dense, y


def test_csr_trains_the_nan_dense_model_and_matches_xgboost(data, monkeypatch):
    X, dense, y = data
    ref = jaxboost.train("logistic", dense, y, base_margin=0.0, **KW)

    def no_densifying(self, *a, **k):
        raise AssertionError("training densified the sparse matrix")

    from scipy.sparse import _compressed

    with monkeypatch.context() as m:  # training bins column by column, never densifies
        m.setattr(_compressed._cs_matrix, "toarray", no_densifying)
        m.setattr(_compressed._cs_matrix, "todense", no_densifying)
        bst = jaxboost.train("logistic", X, y, base_margin=0.0, **KW)
        from_csc = jaxboost.train("logistic", sp.csc_array(X), y, base_margin=0.0, **KW)
    assert same_trees(bst, ref) and same_trees(from_csc, ref)
    for a, b in zip(bst.bin_edges.cuts, ref.bin_edges.cuts):
        assert np.array_equal(a, b)
    assert bst.bin_edges.has_missing.tolist() == [False] + [True] * (F - 1)
    margin = bst.predict(X, output_margin=True)
    assert np.array_equal(margin, ref.predict(dense, output_margin=True))
    # XGBoost reads the same CSR the same way: absent = missing, stored zeros = values
    xgb = pytest.importorskip("xgboost")
    d = xgb.DMatrix(X, label=y)
    theirs = xgb.train(
        dict(
            objective="binary:logistic",
            tree_method="exact",
            eta=0.3,
            base_score=0.5,
            max_depth=3,
            nthread=1,
        ),
        d,
        KW["n_rounds"],
    )
    np.testing.assert_allclose(margin, theirs.predict(d, output_margin=True), atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        margin, theirs.predict(xgb.DMatrix(dense), output_margin=True), atol=1e-5, rtol=0
    )


def test_sparse_prediction_in_row_blocks_equals_dense(data, monkeypatch):
    """predict, SHAP, staged predictions and leaves of a CSR read in dense row blocks
    (here forced to 512 rows) equal those of the NaN-dense array."""
    from jaxboost.inputs import sparse as _sparse

    X, dense, y = data
    bst = jaxboost.train("logistic", X, y, base_margin=0.0, **KW)
    monkeypatch.setattr(_sparse, "BLOCK_VALUES", 512 * F)
    assert _sparse.block_rows(F) == 512
    assert np.array_equal(bst.predict(X), bst.predict(dense))
    assert np.array_equal(bst.staged_predict(X[:700]), bst.staged_predict(dense[:700]))
    assert np.array_equal(bst.predict_leaf(X), bst.predict_leaf(dense))
    assert np.array_equal(
        bst.predict(X[:600], pred_contribs=True), bst.predict(dense[:600], pred_contribs=True)
    )
    g = bst.grad_hess(X, y, iteration=2)
    assert np.array_equal(g.g, bst.grad_hess(dense, y, iteration=2).g)


def test_sparse_weights_and_eval_sets_match_dense(data):
    """Weight-0 rows add no cuts (as in the dense path) and a sparse eval set gives the
    dense one's history."""
    X, dense, y = data
    w = np.ones(1500, np.float32)
    w[::7] = 0.0
    train = dense[:1500].copy()
    train[0, 5] = 99.0  # a value only a weight-0 row holds: no cut may come from it
    bst = jaxboost.train(
        "logistic", to_csr(train), y[:1500], sample_weight=w, eval_set=[(X[1500:], y[1500:])], **KW
    )
    ref = jaxboost.train(
        "logistic", train, y[:1500], sample_weight=w, eval_set=[(dense[1500:], y[1500:])], **KW
    )
    assert bst.bin_edges.cuts[5, bst.bin_edges.n_cuts[5] - 1] < 13
    assert same_trees(bst, ref)
    assert bst.history == ref.history


def test_sklearn_estimator_takes_sparse_input(data):
    pytest.importorskip("sklearn")
    from jaxboost.sklearn import JaxBoostClassifier

    X, dense, y = data
    clf = JaxBoostClassifier(n_estimators=5, max_depth=3).fit(X, y.astype(int))
    ref = jaxboost.train("logistic", dense, y, **KW)
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 1], ref.predict(dense))


def test_bad_sparse_input_is_refused_before_training(data):
    X, dense, y = data
    bad = X.copy()
    bad.data[3] = np.inf
    with pytest.raises(DataError, match="infinite stored value"):
        jaxboost.train("logistic", bad, y, **KW)
    with pytest.raises(DataError, match="complex"):
        jaxboost.train("logistic", X.astype(np.complex64), y, **KW)
    with pytest.raises(DataError, match="2-D"):
        jaxboost.train("logistic", sp.coo_array(np.ones(3)), y[:3], **KW)
    with pytest.raises(DataError, match="X and y have different lengths"):
        jaxboost.train("logistic", X, y[:10], **KW)


def test_duplicate_entries_are_summed_and_the_input_left_alone():
    from jaxboost.inputs.sparse import as_sparse_features

    X = sp.coo_matrix(
        (np.array([1.0, 2.0, 5.0], np.float32), (np.array([0, 0, 1]), np.array([1, 1, 0]))),
        shape=(2, 2),
    )
    M = as_sparse_features(X, layout="csc")
    assert M.toarray().tolist() == [[0.0, 3.0], [5.0, 0.0]] and M.nnz == 2
    assert X.nnz == 3  # untouched


def test_sparse_categorical_columns_match_dense(data):
    """A column of category codes in a sparse matrix (absent = missing) splits by
    category as its dense twin does; an unseen code at prediction goes the missing way."""
    X, dense, y = data
    dense = dense.copy()
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 6, size=N).astype(np.float32)
    dense[:, 4] = np.where(rng.random(N) < 0.3, codes, np.nan)
    y = (y + (dense[:, 4] == 2)).clip(0, 1).astype(np.float32)
    kw = dict(KW, categorical_features=[4])
    bst = jaxboost.train("logistic", to_csr(dense), y, **kw)
    ref = jaxboost.train("logistic", dense, y, **kw)
    assert bst.categorical_features == (4,)
    assert same_trees(bst, ref)
    test = dense[:50].copy()
    test[:10, 4] = 9.0  # never seen in training
    assert np.array_equal(bst.predict(to_csr(test)), ref.predict(test))
