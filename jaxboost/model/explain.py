r"""Model explanations: feature importance, a text dump of the trees, exact TreeSHAP.

``Booster.feature_importance``, ``Booster.dump`` and
``Booster.predict(X, pred_contribs=True)`` delegate here.

**Feature importance** follows XGBoost's ``get_score`` conventions: a split's gain is
its loss change :math:`S(G_L, H_L) + S(G_R, H_R) - S(G, H)` and its cover the sum of
hessians of the rows reaching the node; ``"weight"`` counts splits, ``"gain"`` and
``"cover"`` are means over a feature's splits, ``"total_gain"`` and ``"total_cover"``
sums. Features that never split are left out, as XGBoost does.

**SHAP values** are computed exactly with the path-dependent TreeSHAP algorithm of
Lundberg, Erion & Lee (2018, "Consistent individualized feature attribution for tree
ensembles"): the value of a coalition :math:`S` of features is the expected output of
the tree when the features of :math:`S` are known and at every split on an unknown
feature the two branches are averaged with the weights of their covers. For one leaf,
the path from the root holds a set :math:`U` of distinct features; feature :math:`d`
of the path has a "zero fraction" :math:`z_d` (the product of the cover ratios of the
path's edges that split on :math:`d`) and a "one fraction" :math:`o_d \in \{0, 1\}`
(whether the row follows every one of those edges; a missing value follows the default
direction). The leaf contributes

.. math:: \phi_d \mathrel{+}= v \,(o_d - z_d) \sum_{S \subseteq U \setminus d}
          \frac{|S|!\,(|U| - |S| - 1)!}{|U|!}
          \prod_{e \in S} o_e \prod_{e \in U \setminus S \setminus d} z_e,

and the sum over subsets comes from the "extend" and "unwind" recurrences of the paper
in :math:`O(|U|^2)` operations. The bias column is the base margin (or the row's own,
given per row) plus every tree's cover-weighted mean leaf value, so every row sums to its
margin.

Evaluation is vectorised over all leaf paths of the ensemble at once. Because a path's
contributions depend on the row only through its one fractions, a bit pattern of
``|U| <= max_depth`` bits, when :math:`2^{|U|}` is below the number of rows the
contributions are tabulated once per path for every pattern and each row looks its
pattern up; otherwise they are computed row by row.
"""

from __future__ import annotations

import numpy as np

from .. import native
from ..engine.categorical import N_WORDS
from ..engine.tree import breadth_first

IMPORTANCE_TYPES = ("weight", "gain", "total_gain", "cover", "total_cover")

# Elements of the largest intermediate array (float64) the SHAP evaluation builds.
_CHUNK_ELEMENTS = 1 << 22


def feature_names(booster) -> list:
    """The names reports use for the model's features: its ``feature_names``, or
    ``f0, f1, ...`` (XGBoost's default) when it has none. Feature importances are keyed
    by them."""
    names = getattr(booster, "feature_names", None)
    n = int(booster.n_features)
    if names is None or len(names) != n:
        return [f"f{i}" for i in range(n)]
    return [str(name) for name in names]


def _reachable(ens) -> np.ndarray:
    """``(T, M)`` bool: the node is reached from the root (slots below leaves are not)."""
    is_leaf = np.asarray(ens.is_leaf)
    T, M = is_leaf.shape
    reach = np.zeros((T, M), bool)
    if M:
        reach[:, 0] = True
    for i in range((M - 1) // 2):  # parents come before children in heap order
        down = reach[:, i] & ~is_leaf[:, i]
        reach[:, 2 * i + 1] = down
        reach[:, 2 * i + 2] = down
    return reach


def _splits(booster):
    ens = booster.trees.to_numpy()  # structure only: class trees as held
    split = _reachable(ens) & ~ens.is_leaf
    return ens, split


def feature_importance(booster, importance_type: str = "gain") -> dict:
    """Per-feature importance over all splits of the model.

    Args:
      booster: a ``Booster``.
      importance_type: ``"weight"`` (number of splits on the feature), ``"gain"`` (mean
        loss change of its splits), ``"total_gain"``, ``"cover"`` (mean sum of hessians
        at its splits) or ``"total_cover"``.

    Returns:
      ``{name: value}`` for the features that split at least once, in feature order;
      names are ``booster.feature_names`` when known, else ``"f0"``, ``"f1"``, ...
      (the keys of XGBoost's ``get_score``).
    """
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(
            f"importance_type must be one of {', '.join(IMPORTANCE_TYPES)}; got {importance_type!r}"
        )
    ens, split = _splits(booster)
    F = booster.n_features
    feat = np.asarray(ens.feature)[split]
    count = np.bincount(feat, minlength=F).astype(np.float64)
    if importance_type == "weight":
        score = count
    else:
        src = ens.gain if importance_type.endswith("gain") else ens.cover
        total = np.bincount(feat, weights=np.asarray(src, np.float64)[split], minlength=F)
        score = total if importance_type.startswith("total") else (total / np.maximum(count, 1))
    names = feature_names(booster)
    return {names[f]: float(score[f]) for f in range(F) if count[f] > 0}


def is_categorical_split(ens, t: int, i: int) -> bool:
    """Whether node ``i`` of tree ``t`` is a categorical split (``engine.tree``)."""
    return (
        ens.cat_bits is not None and not ens.is_leaf[t, i] and bool(np.isnan(ens.threshold[t, i]))
    )


def left_categories(booster, t: int, i: int) -> list:
    """The training category codes that categorical split ``i`` of tree ``t`` sends
    left (codes the model never saw go the default way and are not listed)."""
    from ..engine.categorical import codes_of_bits

    ens = booster.trees
    codes = codes_of_bits(ens.cat_bits[t, i])
    seen = booster.bin_edges.categories
    f = int(ens.feature[t, i])
    if seen is None:
        return codes.tolist()
    return [int(c) for c in codes if c < seen.shape[1] and seen[f, c]]


def _g(v) -> str:
    return f"{float(v):.9g}"


def dump(booster, with_stats: bool = True) -> str:
    """Every tree as indented text, in the style of XGBoost's text dump.

    A split node reads ``3:[f2<0.5] yes=7,no=8,missing=7,gain=...,cover=...`` and a leaf
    ``7:leaf=0.0123,cover=...``: node ids are heap indices (as ``predict_leaf`` gives),
    ``yes`` is the child of rows with ``x < threshold``, ``missing`` the child of rows
    with a missing value. A categorical split reads ``[f0:{1,4}]``: the training
    categories (codes) that go ``yes`` (left); the others go ``no``, and categories never
    seen in training go with ``missing`` (XGBoost's dump lists the categories that go
    right instead). Leaf values include the learning rate. Trees of multi-class models
    name their class.

    Args:
      booster: a ``Booster``.
      with_stats: add ``gain`` and ``cover``.
    """
    ens = booster.trees.to_numpy()  # class trees as held: each tree's own values
    names = feature_names(booster)
    K, tpr = booster.n_outputs, booster.trees_per_round // booster.num_parallel_tree
    lines = []
    for t in range(ens.n_trees):
        head = f"booster[{t}]"
        if K > 1 and tpr == K:
            head += f" (class {t % K})"
        lines.append(head + ":")
        value = ens.value[t]
        if K > 1 and tpr == K and value.ndim == 2:  # spread: output t % K's column
            value = value[:, t % K]
        stack = [(0, 0)]
        while stack:
            i, depth = stack.pop()
            pad = "\t" * depth
            cover = f",cover={_g(ens.cover[t, i])}" if with_stats else ""
            if ens.is_leaf[t, i]:
                v = value[i]
                text = (
                    _g(v) if np.ndim(v) == 0 else "[" + ",".join(_g(x) for x in np.ravel(v)) + "]"
                )
                lines.append(f"{pad}{i}:leaf={text}{cover}")
                continue
            yes, no = 2 * i + 1, 2 * i + 2
            missing = yes if ens.default_left[t, i] else no
            gain = f",gain={_g(ens.gain[t, i])}" if with_stats else ""
            f = int(ens.feature[t, i])
            if is_categorical_split(ens, t, i):
                test = f"{names[f]}:{{{','.join(map(str, left_categories(booster, t, i)))}}}"
            else:
                test = f"{names[f]}<{_g(ens.threshold[t, i])}"
            lines.append(f"{pad}{i}:[{test}] yes={yes},no={no},missing={missing}{gain}{cover}")
            stack += [(no, depth + 1), (yes, depth + 1)]
    return "\n".join(lines) + "\n"


TREE_COLUMNS = (
    "Tree", "Node", "ID", "Feature", "Split", "Yes", "No", "Missing", "Gain", "Cover",
    "Category",
)  # fmt: skip


def tree_rows(booster) -> dict:
    """Every reachable node of every tree as the columns of XGBoost's
    ``trees_to_dataframe`` (``TREE_COLUMNS``), a dict of equal-length lists; node ids
    are heap indices, as ``dump`` and ``predict_leaf`` give them.

    A split: ``Feature`` its feature's name, ``Split`` its threshold (rows with ``x <
    Split`` go to ``Yes``; NaN for a categorical split, whose ``Category`` lists the
    training codes that go ``Yes``), ``Yes``, ``No``, ``Missing`` the children's ``ID``
    (``"tree-node"``), ``Gain`` its loss reduction; a leaf: ``Feature`` ``"Leaf"``,
    ``Gain`` its value (learning rate included, as XGBoost's), the others NaN. Trees of
    multi-class (multi-target) models hold their own output's values.

    Raises:
      ValueError: vector-leaf trees (``multi_strategy="multi_output_tree"``), whose
        leaves hold several values.
    """
    ens = booster.trees.to_numpy()
    K, tpr = booster.n_outputs, booster.trees_per_round // booster.num_parallel_tree
    if K > 1 and ens.value.ndim == 3 and tpr != K:
        raise ValueError(
            "trees_to_dataframe lists trees of one value per leaf; this model has "
            "vector leaves (multi_strategy='multi_output_tree')"
        )
    names = feature_names(booster)
    cols: dict = {c: [] for c in TREE_COLUMNS}
    nan = float("nan")
    for t in range(ens.n_trees):
        value = ens.value[t]
        if value.ndim == 2:  # class trees held spread: output t % K's column
            value = value[:, t % K]
        stack = [0]
        while stack:
            i = stack.pop()
            leaf = bool(ens.is_leaf[t, i])
            row = dict(Tree=t, Node=i, ID=f"{t}-{i}", Cover=float(ens.cover[t, i]))
            if leaf:
                row.update(Feature="Leaf", Split=nan, Yes=nan, No=nan, Missing=nan)
                row.update(Gain=float(value[i]), Category=nan)
            else:
                yes, no = 2 * i + 1, 2 * i + 2
                cat = is_categorical_split(ens, t, i)
                row.update(
                    Feature=names[int(ens.feature[t, i])],
                    Split=nan if cat else float(ens.threshold[t, i]),
                    Yes=f"{t}-{yes}",
                    No=f"{t}-{no}",
                    Missing=f"{t}-{yes if ens.default_left[t, i] else no}",
                    Gain=float(ens.gain[t, i]),
                    Category=left_categories(booster, t, i) if cat else nan,
                )
                stack += [no, yes]
            for c in TREE_COLUMNS:
                cols[c].append(row[c])
    return cols


# --- TreeSHAP -------------------------------------------------------------------------


class _Paths:
    """Every root-to-leaf path of the ensemble, its distinct features merged.

    Element ``e`` of path ``p`` constrains feature ``feature[p, e]``: a present value
    follows the path iff ``x >= lo`` (when ``has_lo``) and ``x < hi`` (when ``has_hi``);
    a missing one iff ``missing_ok``. On a categorical feature (``is_cat``) a code
    ``0 <= x < 256`` follows iff its bit is set in ``cats`` (the intersection of the
    category sets of the path's edges on that feature); any other value iff
    ``missing_ok``. ``zero`` is the product of the cover ratios of the
    path's edges on that feature. Padding elements (``pad``) have ``zero = 1`` and are
    always followed: they are null players and change no Shapley value. A path's
    elements come first, its padding after; paths go tree by tree (``tree``).

    ``_paths_of(booster)`` gives a model's, made once and kept with it.
    """

    def __init__(self, trees, n_outputs: int, trees_per_output: int):
        ens = trees.to_numpy()  # class trees as held (_output_vector spreads)
        T = ens.n_trees
        K, tpr = n_outputs, trees_per_output
        feature, thr = np.asarray(ens.feature), np.asarray(ens.threshold)
        dleft, is_leaf = np.asarray(ens.default_left), np.asarray(ens.is_leaf)
        cover = np.asarray(ens.cover, np.float64)
        value = np.asarray(ens.value, np.float64)
        bits = None if ens.cat_bits is None else np.asarray(ens.cat_bits, np.uint32)
        all_codes = np.full(N_WORDS, 0xFFFFFFFF, np.uint32)
        rows, leaf_values, trees = [], [], []
        for t in range(T):
            # Depth-first walk; each stack entry carries the merged constraints so far:
            # {feature: [lo, hi, has_lo, has_hi, missing_ok, zero]} (insertion order).
            stack = [(0, {})]
            while stack:
                i, cons = stack.pop()
                if is_leaf[t, i]:
                    rows.append(list(cons.items()))
                    leaf_values.append(value[t, i])
                    trees.append(t)
                    continue
                f, x = int(feature[t, i]), float(thr[t, i])
                c = cover[t, i]
                is_cat = bits is not None and np.isnan(x)
                for child, left in ((2 * i + 1, True), (2 * i + 2, False)):
                    ratio = cover[t, child] / c if c > 0 else 0.5
                    lo, hi, has_lo, has_hi, miss, zero, codes = cons.get(
                        f, (-np.inf, np.inf, False, False, True, 1.0, None)
                    )
                    if is_cat:
                        side = bits[t, i] if left else ~bits[t, i]
                        codes = side if codes is None else codes & side
                    elif left:
                        hi, has_hi = (min(hi, x), True) if has_hi else (x, True)
                    else:
                        lo, has_lo = (max(lo, x), True) if has_lo else (x, True)
                    new = dict(cons)
                    new[f] = (
                        lo,
                        hi,
                        has_lo,
                        has_hi,
                        miss and bool(dleft[t, i]) == left,
                        zero * ratio,
                        codes,
                    )
                    stack.append((child, new))
        P = len(rows)
        L = max([len(r) for r in rows] + [0])
        self.n_paths, self.length = P, L
        self.tree = np.asarray(trees, np.int64)
        # Leaf values: a class tree's (one output per tree: tpr == K) as its own value
        # and output, ``column(k)`` spreading them (a 100-class model's paths would
        # otherwise keep 100 float64 values per path with the model); vector leaves as
        # (P, K).
        self.n_outputs = K
        self.output = (self.tree % K) if K > 1 and tpr == K else None
        if self.output is not None:
            own = [_own_value(v, t, K) for v, t in zip(leaf_values, trees)]
            self.own = np.asarray(own, np.float64).reshape(P)
        else:
            self.own = np.asarray(leaf_values, np.float64).reshape(P, K)
        self.feature = np.zeros((P, L), np.int64)
        self.lo = np.full((P, L), -np.inf)
        self.hi = np.full((P, L), np.inf)
        self.has_lo = np.zeros((P, L), bool)
        self.has_hi = np.zeros((P, L), bool)
        self.missing_ok = np.ones((P, L), bool)
        self.zero = np.ones((P, L))
        self.pad = np.ones((P, L), bool)
        self.is_cat = None if bits is None else np.zeros((P, L), bool)
        self.cats = None if bits is None else np.broadcast_to(all_codes, (P, L, N_WORDS)).copy()
        for p, r in enumerate(rows):
            for e, (f, (lo, hi, has_lo, has_hi, miss, zero, codes)) in enumerate(r):
                self.feature[p, e] = f
                self.lo[p, e], self.hi[p, e] = lo, hi
                self.has_lo[p, e], self.has_hi[p, e] = has_lo, has_hi
                self.missing_ok[p, e], self.zero[p, e] = miss, zero
                self.pad[p, e] = False
                if codes is not None:
                    self.is_cat[p, e], self.cats[p, e] = True, codes
        # the native kernel's view of the elements (jaxboost.native.shap_patterns)
        self.flags = (
            self.has_lo * 1 + self.has_hi * 2 + self.missing_ok * 4 + self.pad * 8
        ).astype(np.uint8)
        if self.is_cat is not None:
            self.flags |= (self.is_cat * 16).astype(np.uint8)
        self.n_trees = T

    @property
    def nbytes(self) -> int:
        """Bytes of the paths' arrays."""
        return sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray))

    def column(self, k: int) -> np.ndarray:
        """``(P,)`` float64: each path's leaf value on output ``k`` (a class tree's own
        value on its output, ``0 * value`` on the others)."""
        if self.output is None:
            return self.own[:, k]
        return np.where(self.output == k, self.own, self.own * 0.0)

    @property
    def value(self) -> np.ndarray:
        """``(P, K)`` float64 leaf values of the paths (made on each use)."""
        if self.output is None:
            return self.own
        return np.stack([self.column(k) for k in range(self.n_outputs)], axis=1)

    def first_trees(self, n: int) -> "_Paths":
        """The paths of trees ``0 .. n - 1`` (those of the model ``booster[:k]``), as
        ``_Paths`` of those trees makes them: the same arrays, padding cut to their
        longest path."""
        keep = self.tree < n
        lengths = (~self.pad[keep]).sum(axis=1)
        L = int(lengths.max()) if lengths.size else 0
        out = object.__new__(type(self))
        for name, a in vars(self).items():
            if isinstance(a, np.ndarray) and a.shape[:1] == (self.n_paths,):
                a = a[keep]
                out.__dict__[name] = a[:, :L] if a.ndim >= 2 and name != "own" else a
            else:
                out.__dict__[name] = a
        out.n_paths, out.length, out.n_trees = int(keep.sum()), L, n
        return out

    def ones(self, X, paths):
        """``(N, P', L)`` bool one fractions of the rows of ``X`` on the given paths."""
        x = X[:, self.feature[paths]]  # (N, P', L)
        with np.errstate(invalid="ignore"):
            present = (~self.has_lo[paths] | (x >= self.lo[paths])) & (
                ~self.has_hi[paths] | (x < self.hi[paths])
            )
        follow = np.where(np.isnan(x), self.missing_ok[paths], present)
        if self.is_cat is not None:
            with np.errstate(invalid="ignore"):
                ok = (x >= 0) & (x < 32 * N_WORDS)
            code = np.where(ok, x, 0).astype(np.int64)
            P, L = self.feature[paths].shape
            word = self.cats[paths][
                np.arange(P)[None, :, None], np.arange(L)[None, None, :], code >> 5
            ]
            bit = ((word >> (code & 31).astype(np.uint32)) & 1).astype(bool)
            cat = np.where(ok, bit, self.missing_ok[paths])
            follow = np.where(self.is_cat[paths], cat, follow)
        return follow | self.pad[paths]


def _paths_of(booster) -> _Paths:
    """The model's ``_Paths``: made once per model (its trees' layouts, shared with its
    slices ``booster[:k]``, which take their trees' paths) and kept; sklearn's breast
    cancer model (100 trees) took 9 ms to walk per call, per row block."""
    K, tpr = booster.n_outputs, booster.trees_per_round // booster.num_parallel_tree
    layouts = getattr(booster, "_padded_trees", None)
    if layouts is None:
        return _Paths(booster.trees, K, tpr)
    full = layouts.shap_paths(lambda trees: _Paths(trees, K, tpr))
    n = booster.trees.n_trees
    return full if n == full.n_trees else full.first_trees(n)


def _factors(zero, one):
    """Path-dependent Shapley factors of path elements.

    Args:
      zero: ``(L, P, 1)`` zero fractions of the ``L`` elements of ``P`` paths.
      one: ``(L, P, R)`` one fractions (0 or 1) for ``R`` rows (or bit patterns).

    Returns:
      ``(L, P, R)``: ``(o_e - z_e) * (sum of the unwound weights without e)``; times a
      leaf value, the element's SHAP contribution.
    """
    one = np.asarray(one, np.float64)
    L, P, R = one.shape
    # Extend: w[s] is the weight of coalitions with s "one" elements, the path starting
    # with a dummy element of zero = one = 1 (w = [1]), then each element in turn.
    w = np.zeros((L + 1, P, R))
    w[0] = 1.0
    for n in range(1, L + 1):  # n elements in the path so far (the dummy included)
        z, o = zero[n - 1], one[n - 1]
        s = np.arange(n + 1, dtype=np.float64)[:, None, None]
        new = z * w[: n + 1] * ((n - s) / (n + 1))
        new[1:] += o * w[:n] * (s[1:] / (n + 1))
        w[: n + 1] = new
    # Unwind each element (vectorised over elements): the sum of the weights of the
    # path without it. One fraction 1: a backward recurrence; 0: a closed form.
    n = L + 1
    total_one = np.zeros((L, P, R))
    carry = np.broadcast_to(w[L], (L, P, R))
    total_zero = np.zeros((P, R))
    for j in range(L - 1, -1, -1):
        tmp = carry * (n / (j + 1))
        total_one += tmp
        carry = w[j] - tmp * zero * ((n - j - 1) / n)
        total_zero = total_zero + w[j] * (n / (n - j - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.where(one > 0, total_one, total_zero / zero)
        out = total * (one - zero)
    return np.where((one > 0) | (zero > 0), out, 0.0)


def _pattern_bits(L, P):
    """``(L, P, 2 ** L)`` float64 one fractions of every bit pattern (bit ``e`` of
    pattern ``r``: element ``e`` is followed), the same for each of ``P`` paths."""
    R = 1 << L
    bits = ((np.arange(R)[None, :] >> np.arange(L)[:, None]) & 1).astype(np.float64)
    return np.broadcast_to(bits[:, None, :], (L, P, R))


def _pattern_table(zero, L):
    """Factors of every bit pattern of one fractions: ``(L, P, 2 ** L)``."""
    return _factors(zero, _pattern_bits(L, zero.shape[1]))


def _native_lookup(paths, ps, X, table, out):
    """``jaxboost.native.shap_patterns`` on paths ``ps``: each row of ``X`` adds its
    patterns' entries of ``table`` (``(P', 2 ** L, L[, L])``) to ``out``."""
    native.shap_patterns(
        X,
        paths.feature[ps].astype(np.int32),
        np.ascontiguousarray(paths.lo[ps]),
        np.ascontiguousarray(paths.hi[ps]),
        np.ascontiguousarray(paths.flags[ps]),
        None if paths.cats is None else np.ascontiguousarray(paths.cats[ps]),
        np.ascontiguousarray(table),
        out,
    )


def _interaction_table(zero, wts, L):
    """Interaction contributions of every bit pattern: ``(P, 2 ** L, L, L)``, entry
    ``[p, pattern, e, j]`` = path ``p``'s share of the pair (element ``e``'s feature,
    element ``j``'s) for a row of that pattern (``shap_interaction_values``' sum, with
    the row's one fractions the pattern's bits)."""
    R, P = 1 << L, zero.shape[1]
    one = _pattern_bits(L, P)
    table = np.empty((P, R, L, L))
    for e in range(L):  # the conditioned element: feature i = feat[:, e]
        z2, o2 = zero.copy(), one.copy()
        z2[e], o2[e] = 1.0, 1.0  # a padding element: a null player
        scale = 0.5 * (one[e] - zero[e]) * wts[:, None]  # (P, R)
        table[:, :, e, :] = (_factors(z2, o2) * scale[None]).transpose(1, 2, 0)
    return table


def _scatter_plan(feat):
    """Column order grouping equal features, group starts, and each group's feature."""
    order = np.argsort(feat, kind="stable")
    sorted_feat = feat[order]
    starts = np.flatnonzero(np.r_[True, sorted_feat[1:] != sorted_feat[:-1]])
    return order, starts, sorted_feat[starts]


def _contributions(paths, paths_idx, weight, X, F, use_patterns=None):
    """``(N, F)``: per feature, the sum over the given paths of ``weight * factor``."""
    N = X.shape[0]
    L = paths.length
    out = np.zeros((N, F))
    if L == 0 or paths_idx.size == 0 or N == 0:
        return out
    if use_patterns is None:
        use_patterns = (1 << L) <= N
    kernel = use_patterns and native.available()
    X = np.ascontiguousarray(X, np.float32)
    # Rows per chunk and paths per chunk bound the factor arrays ((L + 1) x paths x
    # patterns-or-rows) and the per-row arrays (rows x paths x L).
    rows = min(N, 2048 if use_patterns else 512)
    width = (1 << L) if use_patterns else rows
    chunk = max(1, _CHUNK_ELEMENTS // (2 * max((L + 1) * width, L * rows)))
    for start in range(0, paths_idx.size, chunk):
        ps = paths_idx[start : start + chunk]
        zero = paths.zero[ps].T[:, :, None]  # (L, P', 1)
        wts = weight[start : start + chunk]
        order, starts, groups = _scatter_plan(paths.feature[ps].ravel())  # path-major
        if use_patterns and kernel:  # each row's patterns looked up in C (2-8x faster)
            table = _pattern_table(zero, L) * wts[None, :, None]  # (L, P', 2 ** L)
            _native_lookup(paths, ps, X, table.transpose(1, 2, 0), out)  # (P', 2 ** L, L)
            continue
        if use_patterns:
            table = _pattern_table(zero, L) * wts[None, :, None]  # (L, P', 2 ** L)
            eidx = np.arange(L)[None, None, :]
            pidx = np.arange(ps.size)[None, :, None]
        for r0 in range(0, N, rows):
            Xr = X[r0 : r0 + rows]
            n = Xr.shape[0]
            one = paths.ones(Xr, ps)  # (n, P', L)
            if use_patterns:
                code = (one.astype(np.int64) << np.arange(L)).sum(-1)  # (n, P')
                vals = table[eidx, pidx, code[:, :, None]]  # (n, P', L)
            else:
                vals = np.transpose(
                    _factors(zero, np.transpose(one, (2, 1, 0))) * wts[None, :, None], (2, 1, 0)
                )
            vals = vals.reshape(n, -1)[:, order]
            out[r0 : r0 + n, groups] += np.add.reduceat(vals, starts, axis=1)
    return out


def shap_values(booster, X, *, use_patterns=None, base_margin=None) -> np.ndarray:
    """Exact path-dependent TreeSHAP values.

    Args:
      booster: a ``Booster``.
      X: ``(N, F)`` float32 features, already validated, NaN = missing.
      use_patterns: force (True) or forbid (False) the per-pattern tables; ``None``
        picks the cheaper evaluation.
      base_margin: optional validated ``(N,)`` (``(N, K)``) margins per row (offsets):
        they replace the model's base margin in the bias column, row by row.

    Returns:
      ``(N, F + 1)`` float32 (``(N, K, F + 1)`` for K outputs): per-feature
      contributions to the margin and, last, the bias (the base margin, or the row's
      offset, plus the trees' cover-weighted mean outputs). Each row sums to
      ``predict(X, output_margin=True, base_margin=base_margin)``.
    """
    X = np.asarray(X, np.float32)
    N, F = X.shape
    K = booster.n_outputs
    paths = _paths_of(booster)
    out = np.zeros((N, K, F + 1))
    if base_margin is None:
        bias = np.asarray(booster.base_margin, np.float64).reshape(-1) * np.ones(K)
    else:  # an offset per row (and output) in place of the intercept
        bias = np.asarray(base_margin, np.float64).reshape(N, K)
    reach = np.prod(paths.zero, axis=1) if paths.length else np.ones(paths.n_paths)
    bias = bias + (paths.value * reach[:, None]).sum(axis=0)
    out[:, :, F] = bias
    for k in range(K):
        col = paths.column(k)
        idx = np.flatnonzero(col != 0)
        out[:, k, :F] = _contributions(paths, idx, col[idx], X, F, use_patterns)
    out = out.astype(np.float32)
    return out[:, 0] if K == 1 else out


def shap_interaction_values(booster, X, *, base_margin=None) -> np.ndarray:
    r"""Exact path-dependent SHAP interaction values (Lundberg et al. 2020), as
    XGBoost's ``pred_interactions``.

    For features :math:`i \ne j`, :math:`\Phi_{ij} = \tfrac12 (\phi_j^{i\,on} -
    \phi_j^{i\,off})`: the SHAP value of ``j`` with ``i`` conditioned present minus
    absent. On a path whose (merged) element for ``i`` has zero fraction :math:`z_i`
    and one fraction :math:`o_i`, conditioning scales the leaf by :math:`o_i` (on) or
    :math:`z_i` (off) and takes ``i`` off the path, so each path adds
    :math:`\tfrac12 (o_i - z_i)\, v\, f_j(\text{path} \setminus i)` (``f_j`` the
    Shapley factor of ``j``). The diagonal is :math:`\Phi_{ii} = \phi_i - \sum_{j \ne i}
    \Phi_{ij}`; the last row and column hold the bias at ``[F, F]``. Rows sum to the
    SHAP values, and the whole matrix to the margin.

    Args:
      booster: a ``Booster``; X: ``(N, F)`` float32 features, validated, NaN = missing;
      base_margin: optional ``(N,)`` (``(N, K)``) offsets, as in ``shap_values``.

    Returns:
      ``(N, F + 1, F + 1)`` float32 (``(N, K, F + 1, F + 1)`` for K outputs).

    Example:
      >>> import numpy as np, jaxboost
      >>> X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
      >>> bst = jaxboost.train("squared", X, X[:, 0] * X[:, 1], n_rounds=5, max_depth=3)
      >>> phi = bst.predict(X[:4], pred_interactions=True)
      >>> phi.shape, bool(np.allclose(phi.sum((1, 2)), bst.predict(X[:4]), atol=1e-5))
      ((4, 4, 4), True)
    """
    X = np.asarray(X, np.float32)
    N, F = X.shape
    K = booster.n_outputs
    paths = _paths_of(booster)
    main = shap_values(booster, X, base_margin=base_margin)
    main = np.asarray(main, np.float64).reshape(N, K, F + 1)
    out = np.zeros((N, K, F + 1, F + 1))
    out[:, :, F, F] = main[:, :, F]
    L = paths.length
    rows = min(max(N, 1), 256)
    # per-pattern tables and the rows' lookups in C, as shap_values', where the
    # patterns are fewer than the rows (friedman1, 200 rows: 2.4 -> 0.2 s)
    kernel = L > 0 and (1 << L) <= N and native.available()
    X = np.ascontiguousarray(X)
    for k in range(K):
        col = paths.column(k)
        idx = np.flatnonzero(col != 0)
        inter = np.zeros((N, F * F))
        if kernel:
            chunk = max(1, _CHUNK_ELEMENTS // (L * L << L))
            for start in range(0, idx.size, chunk):
                ps = idx[start : start + chunk]
                table = _interaction_table(paths.zero[ps].T[:, :, None], col[ps], L)
                _native_lookup(paths, ps, X, table, inter.reshape(N, F, F))
        chunk = max(1, _CHUNK_ELEMENTS // (4 * max(L * rows, 1)))
        for start in range(0, idx.size if L and not kernel else 0, chunk):
            ps = idx[start : start + chunk]
            zero = paths.zero[ps].T[:, :, None]  # (L, P', 1)
            wts = col[ps]
            feat = paths.feature[ps]  # (P', L)
            for r0 in range(0, N, rows):
                Xr = X[r0 : r0 + rows]
                n = Xr.shape[0]
                one = np.transpose(paths.ones(Xr, ps), (2, 1, 0)).astype(np.float64)
                for e in range(L):  # the conditioned element: feature i = feat[:, e]
                    z2, o2 = zero.copy(), one.copy()
                    z2[e], o2[e] = 1.0, 1.0  # a padding element: a null player
                    scale = 0.5 * (one[e] - zero[e]) * wts[:, None]  # (P', n)
                    c = _factors(z2, o2) * scale[None]  # (L, P', n)
                    flat = feat[:, e][:, None] * F + feat  # (P', L): i * F + j
                    target = inter[r0 : r0 + n]
                    np.add.at(
                        target,
                        (np.arange(n)[:, None, None], flat.T[None, :, :].transpose(0, 2, 1)),
                        np.transpose(c, (2, 1, 0)),
                    )
        block = inter.reshape(N, F, F)
        np.einsum("nii->ni", block)[...] = 0.0  # the diagonal follows from the rows
        block[:, np.arange(F), np.arange(F)] = main[:, k, :F] - block.sum(axis=2)
        out[:, k, :F, :F] = block
    out = out.astype(np.float32)
    return out[:, 0] if K == 1 else out


def _output_vector(v, t: int, K: int, tpr: int) -> np.ndarray:
    """A node value of tree ``t`` as the ``(K,)`` vector it adds to the margins: itself
    for vector leaves, only output ``t % K`` when each round grows one tree per output
    (``tpr == K`` trees per round and forest member; ``v`` is then that output's value
    alone when the trees are held one output per tree, ``Booster.trees``)."""
    if K > 1 and tpr == K:
        return np.eye(K)[t % K] * _own_value(v, t, K)
    return np.reshape(v, K)


def _own_value(v, t: int, K: int):
    """Class tree ``t``'s value on its own output ``t % K``: ``v`` itself when held one
    output per tree, else its column of the spread ``(K,)`` vector."""
    return v if np.size(v) == 1 else np.reshape(v, K)[t % K]


def shap_model(booster) -> dict:
    """The model in the ``shap`` package's own tree format, for ``shap.TreeExplainer``.

    ``shap.TreeExplainer`` reads a dict ``{"trees": [...], "base_offset": ...}`` in which
    every tree gives, per node, ``children_left``/``children_right``/``children_default``
    (``-1`` at leaves), ``features``, ``thresholds`` (a row goes left when
    ``x <= threshold``), ``values`` (``(n_nodes, K)``) and ``node_sample_weight`` (the
    node's cover, the sum of hessians, which path-dependent TreeSHAP weighs branches
    with). A jaxboost split sends ``x < t`` left, so each threshold is the float32 just
    below ``t`` and the inputs are read as float32 (``input_dtype``), as shap does for
    XGBoost models; a row then follows the same leaves as in ``predict``. Trees are
    compacted to the nodes reachable from the root (heap indices are not kept).

    The explained output is the margin (``tree_output="raw_value"``), as
    ``predict(X, pred_contribs=True)``: shap's SHAP values, interaction values and
    expected value then equal jaxboost's (and XGBoost's) to float32 rounding.

    Categorical splits have no counterpart in shap's format and are refused
    (``predict(X, pred_contribs=True)`` explains such models).

    Returns:
      a dict for ``shap.TreeExplainer(model)``; ``base_offset`` is the base margin
      (``(K,)`` for ``K`` outputs). A model trained with per-row offsets is explained
      around its base margin, as ``predict`` without ``base_margin`` does.

    Example:
      >>> import numpy as np, jaxboost
      >>> X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
      >>> bst = jaxboost.train("squared", X, X[:, 0] * X[:, 1], n_rounds=3, max_depth=2)
      >>> model = bst.to_shap()  # then shap.TreeExplainer(model)
      >>> len(model["trees"]), sorted(model["trees"][0])[:3]
      (3, ['children_default', 'children_left', 'children_right'])
    """
    ens = booster.trees.to_numpy()  # class trees as held (_output_vector spreads)
    if ens.cat_bits is not None and np.any(
        np.isnan(np.asarray(ens.threshold)) & ~np.asarray(ens.is_leaf)
    ):
        raise ValueError(
            "shap's tree format has no categorical splits: explain this "
            "model with predict(X, pred_contribs=True) (or "
            "pred_interactions=True), which handle them"
        )
    K = booster.n_outputs
    tpr = booster.trees_per_round // booster.num_parallel_tree
    feature, thr = np.asarray(ens.feature), np.asarray(ens.threshold, np.float32)
    dleft, is_leaf = np.asarray(ens.default_left), np.asarray(ens.is_leaf)
    cover = np.asarray(ens.cover, np.float64)
    value = np.asarray(ens.value, np.float64)
    below = np.nextafter(thr, np.float32(-np.inf))
    trees = []
    for t in range(ens.n_trees):
        order, left, right = breadth_first(is_leaf[t])
        left, right = np.asarray(left, np.int32), np.asarray(right, np.int32)
        split = left >= 0
        nodes = np.asarray(order)
        trees.append(
            {
                "children_left": left,
                "children_right": right,
                "children_default": np.where(dleft[t, nodes], left, right).astype(np.int32),
                "features": np.where(split, feature[t, nodes], -1).astype(np.int32),
                "thresholds": np.where(split, below[t, nodes], 0.0).astype(np.float64),
                "values": np.stack([_output_vector(value[t, i], t, K, tpr) for i in order]),
                "node_sample_weight": cover[t, nodes],
            }
        )
    base = np.asarray(booster.base_margin, np.float64).reshape(-1) * np.ones(K)
    return {
        "trees": trees,
        "base_offset": base if K > 1 else float(base[0]),
        "tree_output": "raw_value",
        "input_dtype": np.float32,
        "internal_dtype": np.float64,
    }
