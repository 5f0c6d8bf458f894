"""Sparse input by stored entries: the native sparse tree kernel
(``jaxboost.native.grow_tree_sparse``) on CSC bins.

The kernel must grow the trees the dense kernel grows from the same bins with absent
entries in the missing bin (same splits, same row leaves, node sums to float64
rounding: missing-value sums come by subtraction), ``train`` on a scipy matrix must
take it and give the model the dense bins give, and a matrix with a million columns
must train in little memory (nothing of size rows x columns or columns x 254 cuts).
"""

import json
import subprocess
import sys
import textwrap
import warnings

import jax
import numpy as np
import pytest
import scipy.sparse as sp

import jaxboost
from jaxboost import native
from jaxboost.errors import DataWarning
from jaxboost.training import data as training_data

pytestmark = pytest.mark.skipif(not native.available(), reason="native kernel unavailable")

N, F, B, D = 3000, 40, 64, 5


def dense_and_sparse(seed=1, B=B):
    """Dense bins with absent entries in the missing bin ``B - 1`` and the same bins as
    CSC; uint16 with feature 3's up to 900 values when ``B`` is above 256."""
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, 20, size=(N, F)).astype(np.uint8 if B <= 256 else np.uint16)
    bins[:, 3] = rng.integers(0, 50 if B <= 256 else 900, size=N)
    bins[rng.random((N, F)) < 0.7] = B - 1  # absent: missing
    g = (rng.normal(size=N) - (bins[:, 0] < 8) + 0.7 * (bins[:, 3] == B - 1)).astype(np.float32)
    g += 0.8 * ((bins[:, 3] > 300) & (bins[:, 3] < B - 1))  # a cut past bin 255 to find
    h = rng.uniform(0.3, 1, N).astype(np.float32)
    ff, rr = np.nonzero(bins.T != B - 1)  # column by column, rows ascending
    colptr = np.concatenate([[0], np.cumsum((bins != B - 1).sum(0))]).astype(np.int32)
    csc = (colptr, rr.astype(np.int32), bins[rr, ff])
    fok = rng.random(F) < 0.5
    return bins, csc, g, h, fok


CASES = {  # min_child_weight, alpha, colsample_bynode, bins a feature
    "plain": (1.0, 0.0, None, B),
    "no_min_child_weight": (0.0, 0.0, None, B),
    "l1_colsample_bynode": (2.0, 0.3, 0.5, B),
    "uint16_bins": (1.0, 0.0, 0.5, 1024),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_kernel_grows_the_dense_kernels_tree(case):
    mcw, alpha, bynode, B = CASES[case]
    bins, csc, g, h, fok = dense_and_sparse(B=B)
    assert csc[2].dtype == bins.dtype
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    hyp = np.float32([0.3, 1, alpha, 0, mcw, 0])
    cs = None
    if bynode is not None:
        sets = np.random.default_rng(2).random((D, F)) < 0.8
        cs = (np.array([7, 9], np.uint32), sets, np.float32([bynode]))
    a = native.grow_tree(bins, g, h, hyp, root, fok, cs, D, B, n_threads=1)
    b = native.grow_tree_sparse(csc, g, h, hyp, root, fok, cs, D, B)
    assert int(np.asarray(a[0]["is_split"]).sum()) >= 15
    if B > 256:  # the wide feature's cuts past bin 255 are found
        t = np.asarray(a[0]["tbin"])[np.asarray(a[0]["feature"]) == 3]
        assert (t > 255).any(), t
    for k in a[0]:
        np.testing.assert_array_equal(np.asarray(a[0][k]), np.asarray(b[0][k]), err_msg=k)
    for x, y in ((a[1], b[1]), (a[2], b[2])):  # node sums
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(np.asarray(a[3]), np.asarray(b[3]))  # every row's leaf


def test_sparse_kernel_refuses_bad_structure():
    bins, (colptr, rows, ebin), g, h, fok = dense_and_sparse()
    hyp, root = np.float32([0.3, 1, 0, 0, 1, 0]), np.zeros(2)
    bad = rows.copy()
    bad[5] = N  # a row past the end
    with pytest.raises(Exception, match="row index out of range"):
        jax.block_until_ready(
            native.grow_tree_sparse((colptr, bad, ebin), g, h, hyp, root, fok, None, D, B)
        )
    with pytest.raises(Exception, match="missing: leave out"):
        jax.block_until_ready(
            native.grow_tree_sparse(
                (colptr, rows, np.full_like(ebin, B - 1)), g, h, hyp, root, fok, None, D, B
            )
        )


@pytest.mark.parametrize("max_bin, n_features, density", [(256, 150, 0.05), (1024, 30, 0.3)])
def test_train_on_scipy_matrix_takes_the_sparse_kernel(monkeypatch, max_bin, n_features, density):
    """``train`` keeps a scipy matrix sparse (CSC bins) and grows the model the dense
    bins give; stored NaN and absent entries are both missing values. With ``max_bin``
    1024 and ~600 stored values a column, the bins are uint16 and stay sparse (before,
    such a matrix was binned densely: N x F x 2 bytes, 76 s instead of 3.6 s on
    100,000 x 5,000 at 0.5 %)."""
    rng = np.random.default_rng(0)
    X = sp.random(2000, n_features, density=density, format="csr", random_state=0, dtype=np.float32)
    X.data[::37] = np.nan
    w = rng.normal(size=n_features)
    y = ((np.nan_to_num(X.toarray()) @ w) + 0.3 * rng.normal(size=2000) > 0).astype(np.float32)
    kw = dict(n_rounds=8, max_depth=5, colsample_bynode=0.8, seed=3, max_bin=max_bin)
    kw.update(verbose=False)
    taken = []
    real = training_data.csc_bins
    monkeypatch.setattr(training_data, "csc_bins", lambda *a: taken.append(real(*a)) or taken[-1])
    b_sparse = jaxboost.train("logistic", X, y, **kw)
    assert taken, "a scipy matrix should train on CSC bins"
    assert b_sparse.bin_edges.n_bins == max_bin
    assert taken[0][2].dtype == (np.uint8 if max_bin <= 256 else np.uint16)
    monkeypatch.setattr(training_data, "sparse_rows", lambda *a: False)
    b_dense = jaxboost.train("logistic", X, y, **kw)
    e1, e2 = b_sparse.ensemble._asdict(), b_dense.ensemble._asdict()
    for k in ("feature", "tbin", "is_leaf", "default_left"):
        np.testing.assert_array_equal(np.asarray(e1[k]), np.asarray(e2[k]), err_msg=k)
    assert (~np.asarray(e1["is_leaf"])).sum() > 40
    if max_bin > 256:  # cuts past bin 255 are used
        assert (np.asarray(e1["tbin"])[~np.asarray(e1["is_leaf"])] > 255).any()
    np.testing.assert_allclose(
        np.asarray(b_sparse.predict(X)), np.asarray(b_dense.predict(X)), rtol=1e-6, atol=1e-7
    )


WIDE = textwrap.dedent("""
    import json, numpy as np, scipy.sparse as sp, jaxboost
    def peak_mib():
        line = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]
        return int(line.split()[1]) / 1024
    rng = np.random.default_rng(0)
    n, f = 1000, 1_000_000
    # 3,000 entries in 10 columns that carry the label, 2,000 scattered over the rest
    rows = np.concatenate([rng.integers(0, n, 3000), rng.integers(0, n, 2000)])
    cols = np.concatenate([rng.integers(0, 10, 3000) * 99_991, rng.integers(0, f, 2000)])
    X = sp.csr_matrix((np.ones(5000, np.float32), (rows, cols)), shape=(n, f))
    X.sum_duplicates()
    X.data[:] = 1.0  # word present (absent: missing)
    y = (np.asarray(X[:, 0].todense()).ravel() - np.asarray(X[:, 99_991].todense()).ravel()
         + 0.3 * rng.normal(size=n) > 0).astype(np.float32)
    jaxboost.train("logistic", X[:, :50], y, n_rounds=2, max_depth=3, verbose=False)
    before = peak_mib()
    b = jaxboost.train("logistic", X, y, n_rounds=5, max_depth=6, verbose=False)
    print(json.dumps({"added_mib": peak_mib() - before,
                      "splits": int((~b.ensemble.is_leaf).sum())}))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_million_columns_with_5000_entries_train_in_under_200_mb():
    """Bag-of-words presence: before, dense (1,000 x 1M) bins and a (1M x 254) cuts
    table took over 1 GB each. (Columns with many distinct values still make the
    ``(F, bins)`` cut tables wide: see docs/limits.md.)"""
    out = subprocess.run([sys.executable, "-c", WIDE], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["splits"] > 0
    assert r["added_mib"] < 200, r


def test_sparse_input_trained_densely_warns_before_a_gib_of_bins():
    """Constraints (and categorical features, a mesh, vector leaves, train_many) keep
    the sparse kernel out: a sparse X is then binned densely, N x F bytes. From a GiB on
    a DataWarning names the setting before anything that size is allocated (turned into
    an error here, so the 1.1 GiB never is); without the setting the same matrix stays
    sparse, without the warning."""
    rng = np.random.default_rng(0)
    n, f = 20_000, 60_000  # 1.2e9 dense uint8 bins
    X = sp.csr_matrix(
        (np.ones(3 * n, np.float32), (rng.integers(0, n, 3 * n), rng.integers(0, f, 3 * n))),
        shape=(n, f),
    )
    y = (rng.random(n) < 0.5).astype(np.float32)
    kw = dict(n_rounds=1, max_depth=2, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        with pytest.raises(DataWarning, match=r"interaction constraints.*1\.1 GiB"):
            jaxboost.train("logistic", X, y, interaction_constraints=[[0, 1]], **kw)
        jaxboost.train("logistic", X, y, **kw)  # kept sparse: no warning


@pytest.mark.parametrize("max_bin", [256, 1024])
def test_monotone_constraints_train_on_the_sparse_kernel(monkeypatch, max_bin):
    """Monotone signs no longer send a sparse X to dense bins: the sparse kernel bounds
    each node's weight as the dense kernel does, so the model is the dense path's bit
    for bit (level-wise with L1 and max_delta_step, and leaf-wise), and monotone."""
    rng = np.random.default_rng(5)
    X = sp.random(3000, 12, density=0.4, format="csr", random_state=3, dtype=np.float32)
    X.data[::41] = np.nan
    Xd = np.nan_to_num(X.toarray())
    y = 2 * Xd[:, 0] - 1.5 * Xd[:, 1] + np.sin(4 * Xd[:, 2]) + 0.3 * rng.normal(size=3000)
    signs = {0: 1, 1: -1}
    for extra in (
        dict(reg_alpha=0.5, max_delta_step=0.5, colsample_bynode=0.7, seed=3),
        dict(grow_policy="lossguide", max_leaves=10, max_depth=6),
    ):
        kw = dict(n_rounds=8, max_bin=max_bin, monotone_constraints=signs, verbose=False)
        kw.update(extra)
        taken = []
        real = training_data.csc_bins
        monkeypatch.setattr(
            training_data, "csc_bins", lambda *a, t=taken, r=real: t.append(1) or r(*a)
        )
        b_sparse = jaxboost.train("squared", X, y.astype(np.float32), **kw)
        assert taken, "monotone constraints should keep the CSC bins"
        monkeypatch.setattr(training_data, "sparse_rows", lambda *a: False)
        b_dense = jaxboost.train("squared", X, y.astype(np.float32), **kw)
        monkeypatch.undo()
        e1, e2 = b_sparse.ensemble._asdict(), b_dense.ensemble._asdict()
        # every stored array: at 256 bins the dense leaf-wise tree is grown best-first,
        # the sparse one level by level, whose undone splits leave no sums behind
        for k in ("feature", "tbin", "is_leaf", "default_left", "value", "cover"):
            np.testing.assert_array_equal(np.asarray(e1[k]), np.asarray(e2[k]), err_msg=k)
        assert (~np.asarray(e1["is_leaf"])).sum() > 60
        D = X.toarray()
        D[D == 0] = np.nan  # the NaN twin: absent entries are missing values
        for f, sign in signs.items():
            lo, hi = D.copy(), D.copy()
            lo[:, f], hi[:, f] = 0.2, 0.8
            step = np.asarray(b_sparse.predict(hi)) - np.asarray(b_sparse.predict(lo))
            assert (sign * step >= 0).all(), (f, step.min(), step.max())
