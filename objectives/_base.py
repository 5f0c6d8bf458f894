"""The ``Objective`` record: a per-row loss plus what it needs beside the formula."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import jax.numpy as jnp
import numpy as np


def identity(margin):
    """Identity inverse link: the response is the margin."""
    return margin


@dataclasses.dataclass(frozen=True, eq=False)
class Objective:
    """A training objective: a per-row loss and its companions.

    Calling an ``Objective`` calls its loss, so a catalogue entry can be used anywhere a
    plain ``loss(y, pred)`` callable can.

    Attributes:
      name: catalogue name.
      loss: ``loss(y, pred) -> scalar`` for one row (``y`` and ``pred`` scalars).
      link: inverse link, margin -> response (used by ``Booster.predict``).
      grad_hess: optional closed form ``(y, pred) -> (g, h)`` for one row. When set it
        replaces autodiff (used where the rounding of a reference implementation
        matters, e.g. XGBoost parity); it must equal the loss's derivatives.
      check_labels: optional ``check_labels(y: np.ndarray)`` raising ``ValueError`` with
        a clear message when labels are outside the loss's domain.
      metric: name of the default evaluation metric.
    """

    name: str
    loss: Callable
    link: Callable = identity
    grad_hess: Optional[Callable] = None
    check_labels: Optional[Callable] = None
    metric: str = "rmse"

    def __call__(self, y, pred):
        return self.loss(y, pred)

    def __repr__(self):
        return f"Objective({self.name!r})"


def check_binary_labels(name):
    def check(y: np.ndarray):
        bad = (y < 0) | (y > 1)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name} needs labels y in [0, 1] (probabilities or 0/1 classes); "
                f"{int(bad.sum())} label(s) are outside, the first at row {i}: {y[i]!r}")
    return check


def sigmoid(margin):
    return 1.0 / (1.0 + jnp.exp(-margin))
