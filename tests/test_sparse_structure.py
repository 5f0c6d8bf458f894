"""Corrupt sparse structure is refused before anything reads it (issue 28, item 2).

scipy's conversions and the native code index memory with ``indices``/``indptr``
unchecked: before ``jaxboost._sparse.check_structure`` a column index of -1 trained
and predicted silently on other cells, one of 10**6 killed the process (``free():
invalid next size``), one equal to the width trained and then failed in ``predict``
with NumPy's ``IndexError``. Each corruption below is checked in train and predict, in a
subprocess where a crash would be possible, and a fuzz of random corruptions of CSR,
CSC and COO matrices must give ``DataError`` or a valid result, never a crash
(``JAXBOOST_SPARSE_FUZZ=N`` runs N cases instead of the default 300).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from jaxboost.errors import DataError  # noqa: E402
from jaxboost.inputs.sparse import as_sparse_features, check_structure  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _csr(seed=0, n=120, f=6):
    return sp.random(n, f, density=0.3, format="csr", random_state=seed, dtype=np.float32)


CORRUPTIONS = {
    "negative index": lambda X: X.indices.__setitem__(0, -1),
    "index far out": lambda X: X.indices.__setitem__(0, 10**6),
    "index equal to width": lambda X: X.indices.__setitem__(0, X.shape[1]),
    "decreasing indptr": lambda X: X.indptr.__setitem__(3, X.indptr[5] + 2),
    "indptr past nnz": lambda X: X.indptr.__setitem__(-1, X.indptr[-1] + 5),
}


@pytest.mark.parametrize("what", sorted(CORRUPTIONS))
def test_corrupt_csr_is_refused_naming_the_array(what):
    X = _csr()
    CORRUPTIONS[what](X)
    with pytest.raises(DataError, match=r"X\.(indices|indptr)"):
        check_structure(X)
    with pytest.raises(DataError):
        as_sparse_features(X)


def test_train_and_predict_refuse_corrupt_input_in_a_fresh_process():
    """The cases that crashed or passed silently, end to end, where a crash would show
    as a signal rather than take the test runner down."""
    code = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp, jaxboost
        from jaxboost.errors import DataError
        def csr():
            return sp.random(120, 6, density=0.3, format="csr", random_state=0,
                             dtype=np.float32)
        y = (np.arange(120) % 2).astype(np.float32)
        b = jaxboost.train("logistic", csr(), y, n_rounds=2, max_depth=2)
        for value in (-1, 10 ** 6, 6):
            X = csr(); X.indices[0] = value
            for call in (lambda: jaxboost.train("logistic", X, y, n_rounds=1),
                         lambda: b.predict(X)):
                try:
                    call()
                except DataError as e:
                    assert "X.indices[0]" in str(e), e
                else:
                    raise SystemExit(f"index {value} was accepted")
        print("refused")
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("refused")


def _fuzz(n_cases, seed):
    """Random corruptions of CSR/CSC/COO arrays; returns how many were refused."""
    rng = np.random.default_rng(seed)
    refused = 0
    for _ in range(n_cases):
        fmt = rng.choice(["csr", "csc", "coo"])
        X = sp.random(
            int(rng.integers(1, 30)),
            int(rng.integers(1, 9)),
            density=float(rng.uniform(0.1, 0.9)),
            format=fmt,
            random_state=int(rng.integers(1 << 30)),
            dtype=np.float32,
        )
        arrays = ["indices", "indptr"] if fmt != "coo" else ["row", "col"]
        name = arrays[int(rng.integers(len(arrays)))]
        a = getattr(X, name)
        if a.size:
            i = int(rng.integers(a.size))
            a[i] = int(
                rng.choice(
                    [
                        -1,
                        -(2**31),
                        2**31 - 1,
                        a[i] + 1,
                        a[i] - 1,
                        X.shape[0],
                        X.shape[1],
                        int(rng.integers(-50, 50)),
                    ]
                )
            )
        if rng.random() < 0.2:  # or a truncated array
            setattr(X, name, a[: max(0, a.size - 1)])
        try:
            M = as_sparse_features(X)
        except DataError:
            refused += 1
            continue
        # accepted: it must be a valid matrix whose dense form numpy can build
        M.check_format(full_check=True)
        assert M.toarray().shape == X.shape
    return refused


def test_fuzz_sparse_structure_only_data_errors():
    n = int(os.environ.get("JAXBOOST_SPARSE_FUZZ", "300"))
    code = (
        "import sys; sys.path.insert(0, 'tests'); import test_sparse_structure as t; "
        f"print('refused', t._fuzz({n}, 0), 'of', {n})"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    refused = int(out.stdout.split()[1])
    assert 0 < refused <= n  # the fuzz does corrupt: most cases are refused
