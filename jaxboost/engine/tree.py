"""Trees as flat arrays in heap layout, an ensemble as one stacked pytree, prediction.

Node ``i`` of a tree has children ``2 i + 1`` (left) and ``2 i + 2`` (right); a tree of
depth ``D`` has ``M = 2 ** (D + 1) - 1`` slots, unused ones marked as leaves. A present
value ``x`` of feature ``feature[i]`` goes left when ``x < threshold[i]``; a missing
value (NaN) goes left when ``default_left[i]``.

A categorical split (``jaxboost.engine.categorical``) is a split node whose
``threshold`` is NaN: a category code ``c`` (an integer ``0 <= c < 256``) goes left when
bit ``c`` of the node's ``cat_bits`` is set, any other value (NaN, a code beyond 255,
a negative or fractional number) when ``default_left[i]``. Models without categorical
features have ``cat_bits = None`` and compile the programs they always did.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._types import FLOAT_DTYPE, INDEX_DTYPE, MAX_BIN_LIMIT, bucket_rows
from .categorical import N_WORDS
from .compile import backend_jit

BLANK_NODE = dict(
    feature=0,
    tbin=0,
    threshold=np.nan,
    default_left=False,
    is_leaf=True,
    value=0.0,
    gain=0.0,
    cover=0.0,
)
"""What a node no split reaches holds in every field: the padding trees are made of it,
and model files leave such nodes out (``jaxboost.io.format``'s compact layout; the
threshold NaN is ``null`` there, the floats +0.0)."""


class Ensemble(NamedTuple):
    """Stacked trees: every field is ``(T, M)``.

    Fields: ``feature`` int32, ``tbin`` int32 (bins ``< tbin`` go left),
    ``threshold`` float32 (NaN at categorical splits), ``default_left`` bool,
    ``is_leaf`` bool, ``value`` float32 (learning rate applied; ``(T, M, K)`` for models
    of ``K`` outputs), ``gain`` float32 (0 at leaves), ``cover`` float32 (sum of h in
    the node); ``cat_bits``: None, or ``(T, M, N_WORDS)`` uint32, the category codes a
    categorical split sends left (0 elsewhere; see the module docstring).

    **Class trees held one output per tree.** Trees of a model of ``K > 1`` outputs
    that each hold one output's values (softmax's class trees: tree ``t`` is output
    ``t mod K``'s, the other outputs 0 with the value's sign, as training stores them,
    ``w * one_hot``) may hold ``value`` as ``(T, M)``: tree ``t``'s own output's values
    only, ``K`` times less memory (a 100-class softmax of 50 rounds at depth 6: 242 MiB
    -> 2.4 MiB). :meth:`one_output_per_tree` gives that layout, :meth:`spread` the
    ``(T, M, K)`` one; the number of outputs tells them apart from one-output trees.
    Such trees are sliced from tree 0 (``trees[:n]``) or at multiples of ``K``. Boosters
    hold their class trees this way (``Booster.trees``); ``Booster.ensemble`` shows them
    spread.
    """

    # JAX arrays, or NumPy arrays on the host (to_numpy, concat, padded, io)
    feature: Any
    tbin: Any
    threshold: Any
    default_left: Any
    is_leaf: Any
    value: Any
    gain: Any
    cover: Any
    cat_bits: Any = None

    @property
    def n_trees(self) -> int:
        return self.feature.shape[0]

    def held_one_output_per_tree(self, n_outputs: int) -> bool:
        """Whether these are class trees of ``n_outputs`` outputs held one output per
        tree (``value`` ``(T, M)`` with ``n_outputs > 1``; see the class docstring)."""
        return n_outputs > 1 and np.ndim(self.value) == 2

    def spread(self, n_outputs: int) -> "Ensemble":
        """The ``(T, M, K)`` value layout (``K = n_outputs``) of class trees held one
        output per tree: entry ``[t, i, k]`` is ``value[t, i]`` for ``k == t mod K`` and
        ``0 * value[t, i]`` (0 with its sign) elsewhere, exactly what training stored.
        Other trees are returned as they are.

        >>> one = Ensemble(*(np.zeros((2, 1), t) for t in (np.int32,) * 2 + (np.float32,)
        ...     + (bool,) * 2 + (np.float32,) * 3))._replace(value=np.float32([[0.5], [-2.0]]))
        >>> one.spread(2).value.tolist()
        [[[0.5, 0.0]], [[-0.0, -2.0]]]
        """
        if not self.held_one_output_per_tree(n_outputs):
            return self
        return self._replace(value=_spread_values(self.value, 0, n_outputs))

    def one_output_per_tree(self, n_outputs: int) -> "Ensemble | None":
        """These class trees held one output per tree (``value`` ``(T, M)``: tree ``t``'s
        values of output ``t mod K``, ``K = n_outputs``) when that restores them bit for
        bit (:meth:`spread`), else None (vector leaves, values edited by hand). Trees
        held so already are returned as they are.

        >>> one = Ensemble(*(np.zeros((2, 1), t) for t in (np.int32,) * 2 + (np.float32,)
        ...     + (bool,) * 2 + (np.float32,) * 3))._replace(value=np.float32([[0.5], [-2.0]]))
        >>> full = one.spread(2)
        >>> full.one_output_per_tree(2).value.tolist()
        [[0.5], [-2.0]]
        >>> full._replace(value=full.value[::-1]).one_output_per_tree(2) is None
        True
        """
        K, T = int(n_outputs), self.n_trees
        if self.held_one_output_per_tree(K):
            return self
        value = np.asarray(self.value)
        if K < 2 or value.shape != (T, np.shape(self.feature)[1], K):
            return None
        if value.dtype != np.float32:
            return None
        if T == 0:  # no trees (n_rounds=0): nothing to check
            return self._replace(value=value[:, :, 0])
        own = value[np.arange(T), :, np.arange(T) % K]
        step = K * max(1, (1 << 20) // max(1, K * value[0].size))  # scratch ~4 MiB
        for t in range(0, T, step):  # the spread of the own values is the whole
            spread = _spread_values(own[t : t + step], t, K)
            if not np.array_equal(spread.view(np.int32), value[t : t + step].view(np.int32)):
                return None
        return self._replace(value=own)

    def __getitem__(self, key) -> Any:  # slicing by tree, applied to every field
        if isinstance(key, int):  # keep NamedTuple field access by position intact
            return tuple.__getitem__(self, key)
        return Ensemble(*(None if a is None else a[key] for a in self))

    @staticmethod
    def concat(parts: list, n_trees: int | None = None, consume: bool = False) -> "Ensemble":
        """Concatenate ensembles along the tree axis, on the host (NumPy): the first
        ``n_trees`` trees of ``parts`` (all by default). Parts without categorical
        splits get empty category sets when another part has some.

        One part is read, not copied (a CPU device array's NumPy view, read-only): a
        fit's trees are then never held twice (sklearn's digits, softmax, 100 rounds:
        7.7 MiB). With ``consume=True`` the list ``parts`` is emptied as it is read, so
        that a part the caller holds nowhere else is freed once it is copied: the trees
        of several chunks are then held about once, not twice, at the end of a fit.

        >>> e = Ensemble(*(np.zeros((2, 3), t) for t in (np.int32,) * 2 + (np.float32,)
        ...     + (bool,) * 2 + (np.float32,) * 3))
        >>> Ensemble.concat([e, e, e], n_trees=5).n_trees
        5
        """
        total = sum(int(np.shape(p.feature)[0]) for p in parts)
        n = total if n_trees is None else min(int(n_trees), total)
        if len(parts) == 1:
            one = parts.pop() if consume else parts[0]
            return one.to_numpy() if n == total else one.to_numpy()[:n]
        cat = any(p.cat_bits is not None for p in parts)
        if len({np.ndim(p.value) for p in parts}) > 1:
            raise ValueError("parts held one output per tree and parts spread: spread them")
        first = parts[0]
        out = {
            f: np.empty(
                (n,) + np.shape(getattr(first, f))[1:],
                np.result_type(*(np.asarray(getattr(p, f)).dtype for p in parts)),
            )
            for f in Ensemble._fields
            if f != "cat_bits"
        }
        bits = np.zeros((n,) + np.shape(first.feature)[1:] + (N_WORDS,), np.uint32) if cat else None
        at, k = 0, 0
        while at < n and k < len(parts):
            if consume:
                p, k = parts.pop(0), 0
            else:
                p, k = parts[k], k + 1
            take = min(int(np.shape(p.feature)[0]), n - at)
            for f, a in out.items():
                a[at : at + take] = np.asarray(getattr(p, f))[:take]
            if bits is not None and p.cat_bits is not None:
                bits[at : at + take] = np.asarray(p.cat_bits)[:take]
            at += take
            del p  # a consumed part is freed here, before the next one is read
        if consume:
            parts.clear()
        return Ensemble(**out, cat_bits=bits)

    def padded(self) -> "Ensemble":
        """Pad with empty trees (one leaf of value 0) to a bucketed tree count.

        The buckets are those of prediction's rows (``_types.bucket_rows``, at least 8
        trees, at most 25 % padding), so predicting with ``booster[:k]`` for many ``k``
        compiles a handful of programs, not one per ``k``.
        """
        T = self.n_trees
        pad = bucket_rows(T, minimum=8) - T
        return self if pad == 0 else self._blank_appended(pad, axis=0)

    def _blank_appended(self, n: int, axis: int) -> "Ensemble":
        """``n`` blank trees (``axis=0``) or nodes (``axis=1``, each tree's) appended:
        every field filled with ``BLANK_NODE``'s value (``cat_bits`` 0)."""
        fill = dict(BLANK_NODE, cat_bits=0)

        def grow(f, a):
            a = np.asarray(a)
            shape = list(a.shape)
            shape[axis] = n
            return np.concatenate([a, np.full(shape, fill[f], a.dtype)], axis=axis)

        return Ensemble(
            *(None if a is None else grow(f, a) for f, a in zip(Ensemble._fields, self))
        )

    def deepened(self, max_depth: int) -> "Ensemble":
        """These trees in the heap layout of ``max_depth`` (at least their own depth):
        heap positions do not depend on the depth (node ``i``'s children are ``2i + 1``
        and ``2i + 2``), so the deeper layout's extra nodes are appended, blank
        (``BLANK_NODE``: unused leaves of value 0, as grown trees' unused nodes)."""
        extra = 2 ** (max_depth + 1) - 1 - np.shape(self.feature)[1]
        if extra < 0:
            raise ValueError(f"trees of {np.shape(self.feature)[1]} nodes exceed depth {max_depth}")
        return self._blank_appended(extra, axis=1)

    def to_numpy(self) -> "Ensemble":
        return Ensemble(*(None if a is None else np.asarray(a) for a in self))


def _spread_values(own, first_tree: int, K: int) -> np.ndarray:
    """``(T, M)`` values of class trees ``first_tree ..`` -> ``(T, M, K)``: tree ``t``'s on
    output ``t mod K``, ``0 * value`` on the others (training's ``w * one_hot``)."""
    eye = np.eye(K, dtype=np.float32)[(first_tree + np.arange(np.shape(own)[0])) % K]
    return np.asarray(own, np.float32)[..., None] * eye[:, None, :]


def breadth_first(is_leaf) -> tuple:
    """The nodes of one heap-layout tree reachable from the root, breadth first:
    ``(order, left, right)`` with ``order`` the heap indices in that order and
    ``left``/``right`` each node's children as positions in ``order`` (-1 at leaves).
    The compact node arrays of the XGBoost export and of shap's tree format.

    >>> order, left, right = breadth_first(np.array([False, True, False, 0, 0, True, True]))
    >>> order, left, right
    ([0, 1, 2, 5, 6], [1, -1, 3, -1, -1], [2, -1, 4, -1, -1])
    """
    order = [0]
    for h in order:  # grows while it is read
        if not is_leaf[h]:
            order += [2 * h + 1, 2 * h + 2]
    position = {h: k for k, h in enumerate(order)}
    left = [position[2 * h + 1] if not is_leaf[h] else -1 for h in order]
    right = [position[2 * h + 2] if not is_leaf[h] else -1 for h in order]
    return order, left, right


def _initial(X, base_margin, value_ndim):
    """The margins before the first tree: ``base_margin`` broadcast over the rows of
    ``X``, or as it is when it gives one margin per row (``(N,)``, or ``(N, K)`` for
    ``K`` outputs: one dimension more than a leaf value; ``value_ndim``: 3 for the
    trees' ``(T, M, K)`` leaf values, also when held one output per tree, else 2)."""
    base = jnp.asarray(base_margin, FLOAT_DTYPE)
    if base.ndim == value_ndim - 1:  # per row (static: shapes are known when tracing)
        return base
    return jnp.broadcast_to(base, (X.shape[0],) + base.shape)


def categorical_left(x, bits, default_left):
    """Whether raw values ``x`` go left at categorical splits with category sets
    ``bits`` (``(..., N_WORDS)`` uint32): bit ``x`` for codes ``0 <= x < 256`` (integers;
    a fraction is read as its integer part), ``default_left`` for anything else (NaN
    included).

    >>> import numpy as np
    >>> bits = np.zeros((3, 8), np.uint32); bits[:, 0] = 0b101   # codes 0 and 2 go left
    >>> categorical_left(np.float32([2, 1, 300]), bits, np.array([False, False, True]))
    Array([ True, False,  True], dtype=bool)
    """
    width = 32 * N_WORDS
    ok = (x >= 0) & (x < width)  # False for NaN
    code = jnp.where(ok, x, 0).astype(INDEX_DTYPE)
    word = jnp.take_along_axis(bits, (code >> 5)[..., None], axis=-1)[..., 0]
    bit = (word >> (code & 31).astype(jnp.uint32)) & jnp.uint32(1)
    return jnp.where(ok, bit == 1, default_left)


def _tree_leaf(tree, X, max_depth):
    N = X.shape[0]
    node = jnp.zeros(N, INDEX_DTYPE)
    for _ in range(max_depth):
        f = tree.feature[node]
        x = jnp.take_along_axis(X, f[:, None], axis=1)[:, 0]
        left = jnp.where(jnp.isnan(x), tree.default_left[node], x < tree.threshold[node])
        if tree.cat_bits is not None:  # categorical splits: NaN thresholds
            cat = jnp.isnan(tree.threshold[node])
            left = jnp.where(
                cat, categorical_left(x, tree.cat_bits[node], tree.default_left[node]), left
            )
        child = 2 * node + 1 + (~left).astype(INDEX_DTYPE)
        node = jnp.where(tree.is_leaf[node], node, child)
    return node


# --- the split rule on bins ---------------------------------------------------------------
# Training (grow.route), evaluation on training bins (binned_leaf) and the children's
# histogram sums (grow) decide "left or right" on a row's bin of the split feature with
# this one rule; prediction decides on raw values (_tree_leaf), which is the same
# decision because threshold is the bin edge of (feature, tbin).


def bin_goes_left(b, tbin, default_left, max_bin: int):
    """Whether bin ``b`` goes left at a split ``(tbin, default_left)``: a present bin
    when ``b < tbin``, the missing-value bin ``max_bin - 1`` when ``default_left``.

    >>> bool(bin_goes_left(2, 3, False, 256)), bool(bin_goes_left(255, 3, False, 256))
    (True, False)
    """
    return jnp.where(b == max_bin - 1, default_left, b < tbin)


def tbin_bits(max_bin: int) -> int:
    """Bits of a ``split_code`` that hold ``tbin <= max_bin - 1``: 9 up to 256 bins (so
    codes fit int32 for up to 2**21 features), 17 up to ``MAX_BIN_LIMIT`` (2**13 - 1 =
    8,191 features: ``max_features_for_bins``).

    >>> tbin_bits(256), tbin_bits(257), tbin_bits(65536)
    (9, 17, 17)
    """
    return 9 if max_bin <= 256 else 17


assert MAX_BIN_LIMIT <= 1 << tbin_bits(MAX_BIN_LIMIT)


def max_features_for_bins(max_bin: int) -> int:
    """The most features whose split codes fit int32 at ``max_bin`` bins per feature.

    >>> max_features_for_bins(256), max_features_for_bins(1024)
    (2097152, 8192)
    """
    return 1 << (31 - tbin_bits(max_bin) - 1)


def split_code(is_split, feature, tbin, default_left, max_bin: int = 256):
    """One int32 per node packing its split, ``-1`` where ``is_split`` is false:
    ``(feature << (k + 1)) + tbin * 2 + default_left`` with ``k = tbin_bits(max_bin)``
    (``feature * 1024 + ...`` up to 256 bins).

    Routing a row is then one lookup in a small table and one read of its bin, several
    times faster than gathering the three fields one by one.
    """
    return jnp.where(
        is_split,
        feature * (2 << tbin_bits(max_bin)) + tbin * 2 + default_left.astype(INDEX_DTYPE),
        -1,
    )


def code_feature(code, max_bin: int = 256):
    """The split feature of a ``split_code`` (feature 0 for a leaf's ``-1``, whose bin
    read is ignored)."""
    return jnp.maximum(code, 0) >> (tbin_bits(max_bin) + 1)


def code_goes_left(b, code, max_bin: int):
    """``bin_goes_left`` for a node given by its ``split_code``."""
    k = tbin_bits(max_bin)
    return bin_goes_left(b, (code >> 1) & ((1 << k) - 1), (code & 1) == 1, max_bin)


def binned_leaf(tree, bins, *, max_depth: int, max_bin: int):
    """Leaf of every row of already-binned data (row-major ``(N, F)`` uint8 or uint16
    bins).

    The training-side twin of the raw-feature routing in ``predict_margin``: a row goes
    left when its bin ``< tbin`` (missing bin: ``default_left``), which is the same
    decision as ``x < threshold`` on the raw value. At a categorical split (a tree with
    ``cat_bits``, NaN threshold) bin ``b`` is code ``b``, read in the category set (the
    missing bin's bit is the default direction; past code 255, with more than 256 bins,
    the missing bin goes the ``default_left`` way).
    """
    code = split_code(
        ~tree["is_leaf"], tree["feature"], tree["tbin"], tree["default_left"], max_bin
    )
    rows = jnp.arange(bins.shape[0], dtype=INDEX_DTYPE)
    node = jnp.zeros(bins.shape[0], INDEX_DTYPE)
    cat_bits = tree.get("cat_bits") if isinstance(tree, dict) else tree.cat_bits
    for _ in range(max_depth):
        c = code[node]
        b = bins[rows, code_feature(c, max_bin)].astype(INDEX_DTYPE)
        left = code_goes_left(b, c, max_bin)
        if cat_bits is not None:
            cat = jnp.isnan(tree["threshold"][node])
            dl = tree["default_left"][node]
            left = jnp.where(cat, categorical_left(b, cat_bits[node], dl), left)
        node = jnp.where(c < 0, node, 2 * node + 1 + (~left).astype(INDEX_DTYPE))
    return node


@functools.partial(jax.jit, static_argnames=("max_depth", "link", "n_outputs"))
def predict_margin(
    ensemble: Ensemble, X, base_margin, n_trees=None, *, max_depth: int, link=None, n_outputs=None
):
    """Sum of the first ``n_trees`` tree outputs plus the base margin.

    Args:
      ensemble: ``Ensemble`` of ``T`` trees (possibly padded).
      X: ``(N, F)`` float32 raw features, NaN = missing.
      base_margin: float32 scalar, or ``(K,)`` for models of K outputs; or margins per
        row (offsets), ``(N,)`` or ``(N, K)``, that replace it.
      n_trees: dynamic number of leading trees to use (default all ``T``): models
        ``booster[:k]`` for every ``k`` share one compiled program, and cost in
        proportion to ``k``.
      max_depth: static depth of the trees.
      link: optional static inverse link applied to the margins.
      n_outputs: static ``K``; needed for class trees held one output per tree
        (``(T, M)`` values of ``K > 1`` outputs, ``Ensemble``), whose values are added
        as the ``(T, M, K)`` layout's would be, bit for bit.

    Returns:
      ``(N,)`` (or ``(N, K)``) float32 margins (accumulated in float32 tree by tree, as
      XGBoost does), or ``link(margins)``.
    """
    X = X.astype(FLOAT_DTYPE)
    T = ensemble.feature.shape[0]
    n = T if n_trees is None else jnp.minimum(n_trees, T)
    held = n_outputs is not None and ensemble.held_one_output_per_tree(n_outputs)

    def add_tree(t, margin):
        tree = Ensemble(*(None if a is None else a[t] for a in ensemble))
        leaf = _tree_leaf(tree, X, max_depth)
        return margin + values_at_leaves(tree.value, leaf, t, n_outputs if held else None)

    init = _initial(X, base_margin, 3 if held else ensemble.value.ndim)
    margin = jax.lax.fori_loop(0, n, add_tree, init)
    return margin if link is None else link(margin)


def native_predict_enabled() -> bool:
    """Whether ``predict_margin_host`` runs the native CPU kernel: JAX's default backend
    is the CPU and the kernel is available (``JAXBOOST_NATIVE=0`` turns it off). On
    other backends prediction stays a compiled ``predict_margin`` on the device."""
    if jax.default_backend() != "cpu":
        return False
    from .. import native

    return native.available()


@backend_jit(static_argnames=("link",))
def _apply_link(margin, *, link):
    # with the round's CPU options (no fusion emitters): after training, the first
    # prediction then runs no code generator the process has not run yet (sklearn's
    # digits: 4-10 MiB less at its first predict), with the same numbers
    return link(margin)


def predict_margin_host(
    ensemble: Ensemble, X, base_margin, *, max_depth: int, link=None, n_outputs=None, packed=None
):
    """``predict_margin`` of every tree of a host ``ensemble`` (NumPy fields, no padding
    trees needed) by the native CPU kernel (``jaxboost.native.predict``), equal to it
    bit for bit: the same routing, and float32 sums of the base margin and the trees'
    leaf values in tree order. Nothing is compiled but ``link``'s small program (on
    rows padded to a size bucket, so new row counts mostly reuse it). Call it where
    ``native_predict_enabled()``.

    Args:
      ensemble: ``Ensemble`` of ``T`` trees, NumPy fields.
      X: ``(N, F)`` array of raw features (cast to float32; NaN = missing), or a
        canonical float32 CSR matrix (absent = missing; ``jaxboost.native.predict_csr``).
      base_margin: as for ``predict_margin``: a scalar or ``(K,)`` intercept, or
        ``(N,)`` / ``(N, K)`` margins per row.
      max_depth: the trees' depth; link: optional inverse link applied at the end.
      n_outputs: the model's ``K``; needed for class trees held one output per tree
        (``Ensemble``'s ``(T, M)`` values of ``K > 1`` outputs), else read from
        ``value``.
      packed: ``jaxboost.native.pack_trees`` of ``ensemble`` or of a model whose first
        trees it is, made once and kept by the caller (``None``: packed here).

    Returns:
      ``(N,)`` or ``(N, K)`` float32 NumPy margins, or ``link(margins)``.

    Example:
      >>> import numpy as np
      >>> stump = Ensemble(feature=np.int32([[0, 0, 0]]), tbin=np.int32([[1, 0, 0]]),
      ...     threshold=np.float32([[0.5, 0, 0]]), default_left=np.array([[True, 0, 0]], bool),
      ...     is_leaf=np.array([[False, True, True]]), value=np.float32([[0, -1, 2]]),
      ...     gain=np.zeros((1, 3), np.float32), cover=np.zeros((1, 3), np.float32))
      >>> if native_predict_enabled():
      ...     m = predict_margin_host(stump, np.array([[0.0], [1.0]]), np.float32(0.5),
      ...                             max_depth=1)
      ...     assert m.tolist() == [-0.5, 2.5]
    """
    from .. import native
    from ..inputs.sparse import is_sparse

    trees = ensemble if packed is None else packed
    if is_sparse(X):  # a canonical float32 CSR matrix: by its stored entries
        margin = _host_start(X, base_margin, ensemble, n_outputs)
        native.predict_csr(X, trees, margin, max_depth, n_trees=ensemble.n_trees)
    else:
        X = np.ascontiguousarray(X, np.float32)
        margin = _host_start(X, base_margin, ensemble, n_outputs)
        native.predict(X, trees, margin, max_depth, n_trees=ensemble.n_trees)
    if link is None:
        return margin
    return _link_on_bucket(_apply_link, margin, link, axis=0, pow2=True)


LINK_POW2_ROWS = 1 << 20
"""Up to this many rows a prediction's link runs on rows padded to a power of two (one
compiled program per octave: a notebook predicting on batches of new sizes compiled
a 25-30 ms program for each of ``bucket_rows``' 8 buckets per octave; the link is
elementwise, so the padding costs little); above, on ``bucket_rows``."""


def _link_on_bucket(program, margins, link, axis, pow2=False):
    """``program(margins, link=link)`` with the rows (``axis``) padded to a size bucket
    (``pow2``: a power of two up to ``LINK_POW2_ROWS`` rows), so new row counts mostly
    reuse the link's compiled program; the rows cut back."""
    n = margins.shape[axis]
    shape = list(margins.shape)
    shape[axis] = bucket_rows(n, pow2_up_to=LINK_POW2_ROWS if pow2 else 0)
    padded = np.zeros(shape, np.float32)
    rows = (slice(None),) * axis + (slice(0, n),)
    padded[rows] = margins
    return np.asarray(program(padded, link=link))[rows]


def staged_margins_host(
    ensemble: Ensemble,
    X,
    base_margin,
    *,
    max_depth: int,
    link=None,
    n_outputs=None,
    packed=None,
    every: int = 1,
):
    """``staged_margins`` by the native CPU kernel (``jaxboost.native.predict_stages``),
    equal to it bit for bit: ``(T, N)`` or ``(T, N, K)`` float32 NumPy margins after
    every tree (or ``link`` of them, compiled once per row bucket and tree count);
    ``every=k``: after every ``k``-th tree only, ``(T // k, N[, K])`` (a model's rounds).
    Other arguments as for ``predict_margin_host``; call it where
    ``native_predict_enabled()``.
    """
    from .. import native

    X = np.ascontiguousarray(X, np.float32)
    margin = _host_start(X, base_margin, ensemble, n_outputs)
    trees = ensemble if packed is None else packed
    stages = native.predict_stages(
        X, trees, margin, max_depth, n_trees=ensemble.n_trees, every=every
    )
    if link is None:
        return stages
    return _link_on_bucket(_apply_link_stages, stages, link, axis=1)


@functools.partial(jax.jit, static_argnames=("link",))
def _apply_link_stages(stages, *, link):
    # stage by stage, as staged_margins' scan applies it: a softmax over (T, N, K) at
    # once rounded some probabilities differently in the last bit
    return jax.lax.map(link, stages)


def _host_start(X, base_margin, ensemble, n_outputs=None):
    """``_initial`` on the host: a fresh, writable float32 ``(N[, K])`` array."""
    base = np.asarray(base_margin, np.float32)
    value_ndim = np.ndim(ensemble.value)
    if n_outputs is not None and ensemble.held_one_output_per_tree(n_outputs):
        value_ndim = 3
    if base.ndim != value_ndim - 1:  # an intercept: broadcast over the rows
        base = np.broadcast_to(base, (X.shape[0],) + base.shape)
    return np.array(base, np.float32, order="C")


@functools.partial(jax.jit, static_argnames=("max_depth", "link", "n_outputs"))
def staged_margins(
    ensemble: Ensemble, X, base_margin, *, max_depth: int, link=None, n_outputs=None
):
    """Margins after every tree: ``(T, N)`` (or ``(T, N, K)``) float32, row ``t`` = base +
    trees ``0..t`` (``base_margin`` as in ``predict_margin``: the intercept, or per row;
    ``n_outputs`` as there).

    One pass over the trees (a scan carrying the running margin), so a learning curve
    costs what one prediction costs. ``link`` (static) is applied to every row.
    """
    X = X.astype(FLOAT_DTYPE)
    held = n_outputs is not None and ensemble.held_one_output_per_tree(n_outputs)

    def add_tree(margin, tree_t):
        tree, t = tree_t
        leaf = _tree_leaf(tree, X, max_depth)
        margin = margin + values_at_leaves(tree.value, leaf, t, n_outputs if held else None)
        return margin, margin if link is None else link(margin)

    init = _initial(X, base_margin, 3 if held else ensemble.value.ndim)
    ts = jnp.arange(ensemble.feature.shape[0], dtype=INDEX_DTYPE)
    _, stages = jax.lax.scan(add_tree, init, (ensemble, ts))
    return stages


def values_at_leaves(value, leaf, t, n_outputs=None):
    """Tree ``t``'s values at rows' leaves ``leaf``: ``value[leaf]``, ``(N[, K])``; for a
    class tree held one output per tree (``n_outputs`` = K, ``value`` ``(M,)``) spread
    over the K outputs as the ``(T, M, K)`` layout holds them (``v * one_hot(t % K)``:
    0 with ``v``'s sign elsewhere), so the sums are the same bit for bit. Prediction
    and evaluation (``training.evaluation.chunk_margins``) both add these."""
    v = value[leaf]
    if n_outputs is None:
        return v
    return v[:, None] * jax.nn.one_hot(t % n_outputs, n_outputs, dtype=v.dtype)


@functools.partial(jax.jit, static_argnames=("max_depth",))
def predict_leaf(ensemble: Ensemble, X, *, max_depth: int):
    """Leaf index of every row in every tree: ``(N, T)`` int32."""
    X = X.astype(FLOAT_DTYPE)
    _, leaves = jax.lax.scan(lambda c, t: (c, _tree_leaf(t, X, max_depth)), None, ensemble)
    return leaves.T
