"""Validated training parameters.

``TreeParams`` splits the hyperparameters into the two kinds the compiler cares about:

* static (``max_depth``, ``max_bin``): they fix array shapes, so a new value compiles
  a new program;
* dynamic (``learning_rate``, ``reg_lambda``, ``reg_alpha``, ``gamma``,
  ``min_child_weight``, ``max_delta_step``): passed to the compiled round as scalars,
  so a grid search over them reuses one compiled program.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from ._types import MAX_BIN_LIMIT


def _check_number(name, value, *, low=None, low_open=False, integer=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = "an integer" if integer else "a number"
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__} {value!r}")
    if integer and not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None:
        bad = value <= low if low_open else value < low
        if bad:
            rel = ">" if low_open else ">="
            raise ValueError(f"{name} must be {rel} {low}, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class TreeParams:
    """Hyperparameters of one tree, validated on construction.

    Names and meanings follow XGBoost's. Hashable, so it can be a jit-static argument.
    """

    max_depth: int = 6
    max_bin: int = 256
    learning_rate: float = 0.3
    reg_lambda: float = 1.0
    reg_alpha: float = 0.0
    gamma: float = 0.0
    min_child_weight: float = 1.0
    max_delta_step: float = 0.0

    def __post_init__(self):
        _check_number("max_depth", self.max_depth, low=1, integer=True)
        if self.max_depth > 16:
            raise ValueError(
                f"max_depth must be <= 16 for level-wise trees (2**(max_depth+1) nodes "
                f"per tree), got {self.max_depth}"
            )
        _check_number("max_bin", self.max_bin, low=2, integer=True)
        if self.max_bin > MAX_BIN_LIMIT:
            raise ValueError(
                f"max_bin must be <= {MAX_BIN_LIMIT} (bins are stored as uint8), "
                f"got {self.max_bin}"
            )
        _check_number("learning_rate", self.learning_rate, low=0, low_open=True)
        _check_number("reg_lambda", self.reg_lambda, low=0)
        _check_number("reg_alpha", self.reg_alpha, low=0)
        _check_number("gamma", self.gamma, low=0)
        _check_number("min_child_weight", self.min_child_weight, low=0)
        _check_number("max_delta_step", self.max_delta_step, low=0)
        for f in ("max_depth", "max_bin"):
            object.__setattr__(self, f, int(getattr(self, f)))
        for f in ("learning_rate", "reg_lambda", "reg_alpha", "gamma",
                  "min_child_weight", "max_delta_step"):
            object.__setattr__(self, f, float(getattr(self, f)))

    @property
    def n_nodes(self) -> int:
        """Nodes of one tree in heap layout: ``2 ** (max_depth + 1) - 1``."""
        return 2 ** (self.max_depth + 1) - 1

    def dynamic(self):
        """The traced hyperparameters as the engine's ``split.TreeHyper`` (float32)."""
        from .engine.split import TreeHyper

        return TreeHyper(*(np.float32(getattr(self, f)) for f in DYNAMIC_FIELDS))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


DYNAMIC_FIELDS = ("learning_rate", "reg_lambda", "reg_alpha", "gamma",
                  "min_child_weight", "max_delta_step")
