"""``train``'s constraint arguments checked once: ``check_constraints``.

``monotone_constraints``, ``interaction_constraints`` and ``min_samples_leaf`` become
one frozen ``Constraints`` record (features as indices), or ``None`` when none is set,
so the default round program stays the one compiled without them. Mistakes raise
before any work: ``TypeError`` for a value of the wrong kind, ``ValueError`` for a
wrong length, a sign other than -1/0/1, a feature index out of range or an unknown
feature name. The tree-building rules are in ``jaxboost.engine.constraints``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

import numpy as np

from ..engine.constraints import ConstraintSpec, ConstraintValues
from ..inputs.numbers import is_int

MAX_MIN_SAMPLES_LEAF = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class Constraints:
    """Validated constraints of one ``train`` call.

    ``monotone``: ``F`` signs in {-1, 0, 1} (None when every sign is 0);
    ``interaction``: sets of feature indices, each sorted (None: no constraint);
    ``min_samples_leaf``: the fewest rows a child may hold (1: no constraint);
    ``n_features``: ``F``.
    """

    n_features: int
    monotone: Optional[tuple] = None
    interaction: Optional[tuple] = None
    min_samples_leaf: int = 1

    def spec(self) -> Optional[ConstraintSpec]:
        """The static part for the round program (None when nothing is constrained)."""
        spec = ConstraintSpec(
            monotone=self.monotone is not None,
            n_sets=0 if self.interaction is None else set_rows(len(self.interaction)),
            min_leaf=self.min_samples_leaf > 1,
        )
        return None if spec == ConstraintSpec() else spec

    def values(self) -> ConstraintValues:
        """The traced part, as host arrays."""
        n_features = self.n_features
        signs = np.zeros(n_features, np.int32)
        if self.monotone is not None:
            signs[:] = self.monotone
        sets = np.zeros((set_rows(len(self.interaction or ())), n_features), bool)
        for j, s in enumerate(self.interaction or ()):
            sets[j, list(s)] = True
        return ConstraintValues(signs, sets, np.int32(self.min_samples_leaf))

    def train_state(self) -> dict:
        """What a model file records of them (``Booster.train_state``; JSON scalars):
        XGBoost's string forms ``"(1,0,-1)"`` and ``"[[0,1],[2]]"``, the row minimum."""
        out: dict[str, str | int] = {}
        if self.monotone is not None:
            out["monotone_constraints"] = "(" + ",".join(str(c) for c in self.monotone) + ")"
        if self.interaction is not None:
            out["interaction_constraints"] = json.dumps(
                [list(s) for s in self.interaction], separators=(",", ":")
            )
        if self.min_samples_leaf > 1:
            out["min_samples_leaf"] = self.min_samples_leaf
        return out


def set_rows(n_sets: int) -> int:
    """Rows of the interaction-set matrix: ``n_sets`` padded to a power of two (at
    least 2) with empty sets, so that 1 to 8 sets, say, share 4 compiled programs. An
    empty set never holds a non-empty path, so the padding allows nothing.

    >>> [set_rows(n) for n in (1, 2, 3, 5, 9)]
    [2, 2, 4, 8, 16]
    """
    return max(2, 1 << (max(1, n_sets) - 1).bit_length())


def _feature_index(key, n_features, names, what):
    """A feature given by index or by name, as an index."""
    if isinstance(key, str):
        if names is None:
            raise ValueError(
                f"{what} names the feature {key!r}, but the features have no "
                f"names: pass a DataFrame or feature_names=, or use indices"
            )
        if key not in names:
            raise ValueError(
                f"{what} names an unknown feature {key!r}; the features are {list(names)}"
            )
        return names.index(key)
    if not is_int(key):
        raise TypeError(
            f"{what} takes features as indices or names, got {type(key).__name__} {key!r}"
        )
    if not 0 <= int(key) < n_features:
        raise ValueError(
            f"{what} has the feature index {int(key)}, outside [0, "
            f"{n_features}) for data of {n_features} features"
        )
    return int(key)


def _sign(v, where):
    if isinstance(v, (bool, np.bool_)) or not is_int(v) or int(v) not in (-1, 0, 1):
        raise ValueError(
            f"monotone_constraints{where} must be -1 (decreasing), 0 (none) "
            f"or 1 (increasing), got {v!r}"
        )
    return int(v)


def _parse_tuple_string(text):
    """XGBoost's ``"(1,0,-1)"`` form (brackets also accepted) as a list of strings."""
    body = text.strip()
    if body[:1] in "([" and body[-1:] in ")]":
        body = body[1:-1]
    parts = [p.strip() for p in body.split(",")] if body.strip() else []
    out = []
    for p in parts:
        try:
            out.append(int(p))
        except ValueError:
            raise ValueError(
                f"monotone_constraints {text!r} is not of XGBoost's form "
                f'"(1,0,-1)": {p!r} is not an integer'
            ) from None
    return out


def check_monotone(value, n_features: int, names=None) -> Optional[tuple]:
    """``F`` signs from a sequence of ``F`` numbers in {-1, 0, 1}, a dict ``{feature index
    or name: sign}`` (others 0) or XGBoost's string ``"(1,0,-1)"``; None when none is
    given or every sign is 0.

    >>> check_monotone({"b": -1}, 3, ["a", "b", "c"]), check_monotone("(1,0,0)", 3)
    ((0, -1, 0), (1, 0, 0))
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = _parse_tuple_string(value)
    if isinstance(value, dict):
        signs = [0] * n_features
        for key, v in value.items():
            i = _feature_index(key, n_features, names, "monotone_constraints")
            signs[i] = _sign(v, f"[{key!r}]")
    else:
        try:
            items = (
                list(np.asarray(value).tolist()) if isinstance(value, np.ndarray) else list(value)
            )
        except TypeError:
            raise TypeError(
                f"monotone_constraints must be a sequence of {n_features} signs, "
                f'a dict {{feature: sign}} or a string "(1,0,-1)", got '
                f"{type(value).__name__}"
            ) from None
        if len(items) != n_features:
            raise ValueError(
                f"monotone_constraints has {len(items)} entries; the data has "
                f"{n_features} features (one sign each, 0 for none)"
            )
        signs = [_sign(v, f"[{i}]") for i, v in enumerate(items)]
    return tuple(signs) if any(signs) else None


def check_interaction(value, n_features: int, names=None) -> Optional[tuple]:
    """Interaction sets from a list of feature collections (indices or names) or
    XGBoost's string ``"[[0,1],[2,3]]"``: a tuple of sorted index tuples, or None.

    >>> check_interaction([["a", "b"], [2]], 3, ["a", "b", "c"])
    ((0, 1), (2,))
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(
                f'interaction_constraints {value!r} is not of XGBoost\'s form "[[0,1],[2,3]]"'
            ) from None
    if isinstance(value, (dict, np.ndarray)) or not isinstance(value, (list, tuple)):
        raise TypeError(
            f"interaction_constraints must be a list of feature sets (lists "
            f"of indices or names), got {type(value).__name__}"
        )
    if not value:
        raise ValueError(
            "interaction_constraints is empty: give at least one set of "
            "features, or None for no constraint"
        )
    sets = []
    for j, group in enumerate(value):
        if isinstance(group, (str, dict)) or not isinstance(group, (list, tuple, set, frozenset)):
            raise TypeError(
                f"interaction_constraints[{j}] must be a list of features "
                f"(indices or names), got {type(group).__name__} {group!r}"
            )
        if not group:
            raise ValueError(f"interaction_constraints[{j}] is an empty set of features")
        idx = sorted(
            {_feature_index(f, n_features, names, f"interaction_constraints[{j}]") for f in group}
        )
        sets.append(tuple(idx))
    return tuple(sets)


def check_min_samples_leaf(value) -> int:
    """An int >= 1 (1: no constraint)."""
    if isinstance(value, (bool, np.bool_)) or not is_int(value):
        raise TypeError(
            f"min_samples_leaf must be an integer >= 1 (rows per child), got "
            f"{type(value).__name__} {value!r}"
        )
    if not 1 <= int(value) <= MAX_MIN_SAMPLES_LEAF:
        raise ValueError(
            f"min_samples_leaf must be an integer in [1, {MAX_MIN_SAMPLES_LEAF}], got {int(value)}"
        )
    return int(value)


def check_constraints(
    monotone,
    interaction,
    min_samples_leaf,
    n_features: int,
    names=None,
    *,
    multi_output_tree: bool = False,
) -> Optional[Constraints]:
    """The validated ``Constraints`` of a ``train`` call, or None when nothing is
    constrained."""
    c = Constraints(
        n_features,
        check_monotone(monotone, n_features, names),
        check_interaction(interaction, n_features, names),
        check_min_samples_leaf(min_samples_leaf),
    )
    if c.spec() is None:
        return None
    if multi_output_tree:
        raise ValueError(
            "monotone_constraints, interaction_constraints and "
            "min_samples_leaf apply to trees of one output; with "
            "multi_strategy='multi_output_tree' leave them out (or use "
            "'one_output_per_tree')"
        )
    return c


def check_categorical_signs(constraints: Optional[Constraints], categorical, names=None):
    """Refuse a monotone sign on a categorical feature (``ValueError`` naming it):
    categories have no order for predictions to follow. A sign on a numeric feature
    next to categorical ones is fine (their splits then obey the same scores and
    bounds; see ``jaxboost.engine.categorical.find_best_splits``).

    >>> c = Constraints(3, monotone=(0, 1, 0))
    >>> check_categorical_signs(c, (0, 2))  # no sign on features 0 and 2: fine
    >>> try:
    ...     check_categorical_signs(c, (1,), ["a", "b", "c"])
    ... except ValueError as e:
    ...     print(str(e).split(";")[0])
    monotone_constraints gives the categorical feature 'b' (index 1) the sign 1
    """
    if constraints is None or constraints.monotone is None:
        return
    for f in categorical:
        sign = constraints.monotone[f]
        if sign:
            name = f"{names[f]!r} (index {f})" if names is not None else f"{f}"
            raise ValueError(
                f"monotone_constraints gives the categorical feature {name} "
                f"the sign {sign}; categories have no order, so a categorical "
                f"feature takes sign 0 (leave it out of the constraints, or "
                f"treat it as numeric)"
            )
