"""Categorical features in jaxboost's model file: written and checked on load.

Three optional parts of a format-1 file (``jaxboost.io.format``), present only in models
with categorical features, so files of numeric models are unchanged and readers older
than them refuse such files (unknown keys) rather than predict something else:

``bin_edges.categorical`` (list of ints) and ``bin_edges.categories`` (list of lists)
    The categorical features, ascending in ``[0, F)``, and for each the category codes
    seen in training, ascending, unique, in ``[0, max_bin - 2]``. Its ``cuts`` are then
    ``0.5, 1.5, ..., C - 1.5`` with ``C`` the largest code plus one (none without codes).
``trees.categories`` (``T`` lists of ``M`` entries)
    ``null`` except at categorical splits: the codes the split sends left, each one of
    the feature's training codes (ascending, unique). Codes not seen in training go the
    node's ``default_left`` way and are not listed. A split node on a categorical
    feature has ``threshold`` null and ``tbin`` 0; a split on a numeric feature has a
    number.
``category_labels`` (list of objects)
    ``{"feature": int, "labels": [str | number | bool, ...]}`` for the categorical features that
    came from DataFrame categories: code ``c`` stands for ``labels[c]`` (so at least
    ``C`` unique labels).

Every check raises ``ModelFormatError`` naming the key: a code out of range, unseen or
repeated, a categorical split on a numeric feature, a threshold where there is none.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..engine.categorical import bits_of_codes
from ..errors import ModelFormatError
from .checks import as_int, fail


def edges_to_dict(edges) -> dict:
    """The ``bin_edges`` keys of categorical features (``{}`` for a numeric model)."""
    if not edges.is_categorical:
        return {}
    cat = np.flatnonzero(edges.categorical)
    return {
        "categorical": cat.tolist(),
        "categories": [np.flatnonzero(edges.categories[f]).tolist() for f in cat],
    }


def _int_list(v, where, lo, hi):
    if not isinstance(v, list):
        fail(where, "a list of integers", v)
    out = [as_int(x, f"{where}[{i}]", lo=lo, hi=hi) for i, x in enumerate(v)]
    for i in range(1, len(out)):
        if out[i] <= out[i - 1]:
            fail(
                f"{where}[{i}]", f"an integer greater than {out[i - 1]} (ascending, unique)", out[i]
            )
    return out


def read_edges(d, edges):
    """``edges`` with the categorical features of ``bin_edges`` dict ``d`` (checked)."""
    where = "bin_edges"
    if "categorical" not in d and "categories" not in d:
        return edges
    if "categorical" not in d or "categories" not in d:
        raise ModelFormatError(f"{where}: 'categorical' and 'categories' come together")
    F, max_bin = edges.n_features, edges.max_bin
    cat = _int_list(d["categorical"], f"{where}.categorical", 0, F - 1)
    rows = d["categories"]
    if not isinstance(rows, list) or len(rows) != len(cat):
        fail(
            f"{where}.categories", f"a list of {len(cat)} lists (one per categorical feature)", rows
        )
    mask = np.zeros(F, bool)
    mask[cat] = True
    seen = np.zeros((F, max_bin), bool)
    for k, (f, row) in enumerate(zip(cat, rows)):
        w = f"{where}.categories[{k}]"
        codes = _int_list(row, w, 0, max_bin - 2)
        seen[f, codes] = True
        n = codes[-1] if codes else 0
        want = np.arange(n, dtype=np.float32) + np.float32(0.5)
        have = edges.cuts[f, : edges.n_cuts[f]]
        if have.shape != want.shape or not np.array_equal(have, want):
            fail(
                f"{where}.cuts[{f}]",
                f"the cuts of categorical feature {f}: 0.5, 1.5, "
                f"..., {n - 0.5} ({n} of them, its largest code being {n})",
                have.tolist(),
                show_got=False,
            )
        if int(edges.n_distinct[f]) != len(codes):
            fail(
                f"{where}.n_distinct[{f}]",
                f"{len(codes)}, the number of categories of categorical feature {f}",
                int(edges.n_distinct[f]),
            )
    return dataclasses.replace(edges, categories=seen, categorical=mask)


def trees_to_list(booster):
    """``trees.categories``: per tree and node, the training codes a categorical split
    sends left, else None."""
    from ..model.explain import is_categorical_split, left_categories

    ens = booster.trees
    T, M = np.shape(ens.feature)
    out = []
    for t in range(T):
        out.append(
            [
                left_categories(booster, t, i) if is_categorical_split(ens, t, i) else None
                for i in range(M)
            ]
        )
    return out


def read_trees(d, arrays, edges, split):
    """``cat_bits`` ``(T, M, N_WORDS)`` uint32 of the trees dict ``d`` (None for a
    numeric model), after checking every categorical split against ``edges``.

    ``arrays``: the trees' checked fields (``feature``, ``tbin``, ``threshold``,
    ``default_left``); ``split``: ``(T, M)`` bool, the split nodes.
    """
    where = "trees"
    feature, threshold = arrays["feature"], arrays["threshold"]
    cat_f = (
        np.zeros(edges.n_features, bool)
        if edges.categorical is None
        else np.asarray(edges.categorical, bool)
    )
    on_cat = split & cat_f[feature]
    no_thr = split & np.isnan(threshold)
    bad = no_thr & ~on_cat
    if bad.any():
        t, i = (int(j) for j in np.argwhere(bad)[0])
        fail(
            f"{where}.threshold[{t}][{i}]",
            f"a number: feature {int(feature[t, i])} is numeric",
            None,
        )
    bad = on_cat & ~no_thr
    if bad.any():
        t, i = (int(j) for j in np.argwhere(bad)[0])
        fail(
            f"{where}.threshold[{t}][{i}]",
            f"null: feature {int(feature[t, i])} is "
            f"categorical (its splits are sets of categories, trees.categories)",
            float(threshold[t, i]),
        )
    bad = on_cat & (arrays["tbin"] != 0)
    if bad.any():
        t, i = (int(j) for j in np.argwhere(bad)[0])
        fail(f"{where}.tbin[{t}][{i}]", "0 at a categorical split", int(arrays["tbin"][t, i]))
    if not edges.is_categorical:
        if "categories" in d:
            raise ModelFormatError(
                f"{where}.categories: the model has no categorical features (bin_edges.categorical)"
            )
        return None
    if "categories" not in d:
        raise ModelFormatError(
            f"{where}: missing key 'categories' (the model has categorical features)"
        )
    rows = d["categories"]
    T, M = feature.shape
    if not isinstance(rows, list) or len(rows) != T:
        fail(f"{where}.categories", f"a list of {T} trees", rows)
    bits = np.zeros((T, M, 8), np.uint32)
    for t, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != M:
            fail(f"{where}.categories[{t}]", f"a list of {M} nodes", row)
        for i, codes in enumerate(row):
            w = f"{where}.categories[{t}][{i}]"
            if not on_cat[t, i]:
                if codes is not None:
                    fail(w, "null (not a categorical split)", codes)
                continue
            if codes is None:
                fail(w, "the list of codes the categorical split sends left", codes)
            f = int(feature[t, i])
            codes = _int_list(codes, w, 0, edges.max_bin - 2)
            unseen = [c for c in codes if not edges.categories[f, c]]
            if unseen:
                fail(
                    w,
                    f"codes of categorical feature {f} seen in training (bin_edges.categories)",
                    unseen[0],
                )
            bits[t, i] = bits_of_codes(
                codes, bool(arrays["default_left"][t, i]), edges.categories[f]
            )
    return bits


def labels_to_list(booster):
    labels = getattr(booster, "category_labels", None)
    if not labels:
        return None
    return [{"feature": int(f), "labels": list(v)} for f, v in sorted(labels.items())]


def read_labels(v, edges):
    """``{feature: labels}`` from ``category_labels`` (checked), or None."""
    where = "category_labels"
    if v is None:
        return None
    if not isinstance(v, list):
        fail(where, 'a list of {"feature": int, "labels": list} objects', v)
    out = {}
    for k, item in enumerate(v):
        w = f"{where}[{k}]"
        if not isinstance(item, dict) or set(item) != {"feature", "labels"}:
            fail(w, "an object with keys 'feature' and 'labels'", item)
        f = as_int(item["feature"], f"{w}.feature", lo=0, hi=edges.n_features - 1)
        if edges.categorical is None or not edges.categorical[f] or f in out:
            fail(f"{w}.feature", "a categorical feature (bin_edges.categorical) named once", f)
        labels = item["labels"]
        # booleans too: a frame's bool categories (pd.Categorical([True, False])) save as
        # JSON true/false; refusing them made a model's own file unreadable
        if not isinstance(labels, list) or not all(
            isinstance(x, (str, int, float, bool)) for x in labels
        ):
            fail(f"{w}.labels", "a list of strings, numbers or booleans", labels)
        if len(set(labels)) != len(labels):
            fail(f"{w}.labels", "unique labels", labels)
        n = int(edges.n_cuts[f]) + 1 if edges.categories[f].any() else 0
        if len(labels) < n:
            fail(f"{w}.labels", f"at least {n} labels (one per code 0 .. {n - 1})", labels)
        out[f] = labels
    return out or None
