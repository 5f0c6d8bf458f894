"""Validated training parameters.

``TreeParams`` splits the hyperparameters into the two kinds the compiler cares about:

* static (``max_depth``, ``max_bin``): they fix array shapes, so a new value compiles
  a new program (``max_bin`` caps the bins per feature; the programs take theirs from
  the data's bucket, ``engine.binning.program_bins``, so a new ``max_bin`` compiles
  only when it moves that bucket; where the native tree kernel grows the trees, the
  round program is compiled for a bucket of depths, ``engine.grow.bucketed_depth``);
* dynamic (``learning_rate``, ``reg_lambda``, ``reg_alpha``, ``gamma``,
  ``min_child_weight``, ``max_delta_step``): passed to the compiled round as scalars,
  so a grid search over them reuses one compiled program.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._types import FLOAT32_MAX, MAX_BIN_LIMIT
from ..inputs.numbers import check_int, check_real, is_int


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
        if is_int(self.max_depth) and self.max_depth < 1:  # XGBoost 0, LightGBM -1: no bound
            raise ValueError(
                f"max_depth must be >= 1, got {self.max_depth}: jaxboost's trees need a depth "
                "bound (XGBoost's max_depth=0 and LightGBM's max_depth=-1, no bound, have no "
                "equivalent); for leaf-wise trees give grow_policy='lossguide', max_leaves "
                "and a max_depth of at most 16, e.g. max_leaves=31, max_depth=8"
            )
        max_depth = check_int("max_depth", self.max_depth, low=1)
        if max_depth > 16:
            raise ValueError(
                f"max_depth must be <= 16 for level-wise trees (2**(max_depth+1) nodes "
                f"per tree), got {max_depth}"
            )
        max_bin = check_int("max_bin", self.max_bin, low=2)
        if max_bin > MAX_BIN_LIMIT:
            raise ValueError(
                f"max_bin must be <= {MAX_BIN_LIMIT} (bins are stored as uint16), got {max_bin}"
            )
        values = dict(
            max_depth=max_depth,
            max_bin=max_bin,
            learning_rate=check_real("learning_rate", self.learning_rate, low=0, low_open=True),
        )
        for f in ("reg_lambda", "reg_alpha", "gamma", "min_child_weight", "max_delta_step"):
            values[f] = check_real(f, getattr(self, f), low=0)
        for f, v in values.items():  # the engine computes in float32
            if isinstance(v, float) and v > FLOAT32_MAX:
                raise ValueError(
                    f"{f} must be at most {FLOAT32_MAX:.7g} (the float32 "
                    f"range the trees are computed in), got {v!r}"
                )
        for f, v in values.items():
            object.__setattr__(self, f, v)

    @property
    def n_nodes(self) -> int:
        """Nodes of one tree in heap layout: ``2 ** (max_depth + 1) - 1``."""
        return 2 ** (self.max_depth + 1) - 1

    def dynamic(self):
        """The traced hyperparameters as the engine's ``split.TreeHyper`` (float32)."""
        from ..engine.split import TreeHyper

        return TreeHyper(*(np.float32(getattr(self, f)) for f in DYNAMIC_FIELDS))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


DYNAMIC_FIELDS = (
    "learning_rate",
    "reg_lambda",
    "reg_alpha",
    "gamma",
    "min_child_weight",
    "max_delta_step",
)
