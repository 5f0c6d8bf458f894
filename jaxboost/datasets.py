"""Small real data sets shipped with jaxboost (see ``jaxboost/data/README.md``)."""

from __future__ import annotations

import importlib.resources
import io

import numpy as np

__all__ = ["load_breast_cancer"]


def load_breast_cancer():
    """The Wisconsin Diagnostic Breast Cancer data (WDBC), binary classification.

    569 breast masses, 30 numeric features of the cell nuclei in a fine-needle
    aspirate image (mean, standard error and "worst" of ten quantities such as
    radius, texture and concavity), no missing values. Label 1 = malignant
    (212 rows), 0 = benign (357 rows). Note: scikit-learn's loader encodes the
    opposite way (0 = malignant).

    Source: UCI Machine Learning Repository, W. H. Wolberg, W. N. Street and
    O. L. Mangasarian (1995), https://doi.org/10.24432/C5DW2B, licensed CC BY 4.0.
    Read from the package's ``data/breast_cancer.csv``; needs only NumPy.

    Returns:
      ``(X, y, feature_names)``: ``X`` float32 ``(569, 30)``, ``y`` float32 ``(569,)``
      with values 0.0 and 1.0, ``feature_names`` a list of 30 str
      (e.g. ``"mean_radius"``, ``"radius_error"``, ``"worst_radius"``).

    Example:
      >>> from jaxboost.datasets import load_breast_cancer
      >>> X, y, names = load_breast_cancer()
      >>> X.shape, X.dtype, y.shape, int(y.sum())
      ((569, 30), dtype('float32'), (569,), 212)
      >>> names[0], names[-1]
      ('mean_radius', 'worst_fractal_dimension')
    """
    text = (importlib.resources.files("jaxboost") / "data" / "breast_cancer.csv").read_text(
        encoding="utf-8"
    )
    header, _, body = text.partition("\n")
    columns = header.strip().split(",")
    if columns[-1] != "target" or len(columns) != 31:
        raise RuntimeError(f"breast_cancer.csv has an unexpected header: {columns}")
    table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
    X = np.ascontiguousarray(table[:, :-1], dtype=np.float32)
    y = np.ascontiguousarray(table[:, -1], dtype=np.float32)
    return X, y, columns[:-1]
