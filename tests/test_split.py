"""Split finding and leaf values (jaxboost.engine.split) on hand-computed histograms.

Every expected number below is worked out by hand in the comments (lambda, alpha,
max_delta_step, min_child_weight, the 1e-6 minimum gain, the tie order of DESIGN.md's
parity rules), or comes from ``ref_best``, an independent NumPy enumeration of the
candidates in the documented order. One shape everywhere (2 features, 2 nodes, 5 bins:
value bins 0..3 and the missing bin 4), so the module compiles one program.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxboost.engine.split import (
    TreeHyper,
    calc_score,
    find_best_splits,
    is_split_worthy,
    leaf_values,
    threshold_l1,
)
from jaxboost.model.params import DYNAMIC_FIELDS

F, N_NODES, B = 2, 2, 5
V = B - 1  # value bins 0..V-1, bin V = missing
ALL = np.ones((N_NODES, F), bool)


def dyn(eta=1.0, lam=0.0, alpha=0.0, gamma=0.0, mcw=0.0, mds=0.0):
    return TreeHyper(*(np.float32(v) for v in (eta, lam, alpha, gamma, mcw, mds)))


@jax.jit
def _stage(G, H, d, forward_ok, mask):
    """Everything the tests read, from one compiled program: the best split of each node
    (general score, plain score, and without the ascending pass), the node's leaf
    value, score and split worthiness. Node totals are the sums of feature 0's bins."""
    with jax.enable_x64(True):
        G, H = G.astype(jnp.float64), H.astype(jnp.float64)
        Gp, Hp = G[0].sum(-1), H[0].sum(-1)
        s = find_best_splits(G, H, Gp, Hp, d, forward_ok, clipped=True, feature_mask=mask)
        plain = find_best_splits(G, H, Gp, Hp, d, forward_ok, clipped=False, feature_mask=mask)
        backward = find_best_splits(
            G, H, Gp, Hp, d, forward_ok, any_forward=False, feature_mask=mask
        )
        return dict(
            s,
            worthy=is_split_worthy(s["gain"]),
            leaf=leaf_values(Gp, Hp, d),
            score=calc_score(Gp, Hp, d),
            plain=plain,
            backward=backward,
        )


def run(G, H, d, forward_ok=(False, False), mask=ALL):
    out = _stage(
        np.asarray(G, np.float32),
        np.asarray(H, np.float32),
        d,
        np.asarray(forward_ok, bool),
        np.asarray(mask, bool),
    )
    return jax.tree_util.tree_map(np.asarray, out)


def hist(*nodes):
    """``(F, n, B)`` G and H from per-node, per-feature bin lists ``[(G, H), ...]`` (a
    feature given as ``None`` holds the node's rows in bin 0: a constant feature)."""
    G = np.zeros((F, N_NODES, B))
    H = np.zeros((F, N_NODES, B))
    for k, feats in enumerate(nodes):
        for f, bins in enumerate(feats):
            if bins is not None:
                G[f, k], H[f, k] = np.array(bins, float).T
        given = next(f for f, bins in enumerate(feats) if bins is not None)
        for f, bins in enumerate(feats):
            if bins is None:
                G[f, k, 0], H[f, k, 0] = G[given, k].sum(), H[given, k].sum()
    return G, H


def split_of(out, k):
    return (int(out["feature"][k]), int(out["tbin"][k]), bool(out["default_left"][k]))


# The seed-001 example: x = 1, 2, 3, 4 in bins 0..3, g = p - y = 0.5, -0.5, 0.5, -0.5,
# h = 0.25. Node 1 is its left child (x = 1, 2, 3).
SEED_ROOT = [(0.5, 0.25), (-0.5, 0.25), (0.5, 0.25), (-0.5, 0.25), (0, 0)]
SEED_LEFT = [(0.5, 0.25), (-0.5, 0.25), (0.5, 0.25), (0, 0), (0, 0)]


def test_dynamic_vector_layout():
    assert DYNAMIC_FIELDS == (
        "learning_rate",
        "reg_lambda",
        "reg_alpha",
        "gamma",
        "min_child_weight",
        "max_delta_step",
    )
    assert TreeHyper._fields == DYNAMIC_FIELDS


def test_seed_gains_and_ties_without_missing_values():
    G, H = hist([SEED_ROOT, None], [SEED_LEFT, None])
    out = run(G, H, dyn())
    # Root: x < 1.5 and x < 3.5 both give 1 + 1/3 - 0 = 4/3; x < 2.5 gives 0.
    # Left child: S(parent) = 0.25 / 0.75 = 1/3; x < 1.5: 1 + 0 - 1/3, x < 2.5: 0 + 1 - 1/3.
    np.testing.assert_allclose(out["gain"], [4 / 3, 2 / 3], rtol=1e-6)
    # No NaN in the column: the largest tied threshold wins, missing goes left.
    assert split_of(out, 0) == (0, 3, True)
    assert split_of(out, 1) == (0, 2, True)
    assert out["worthy"].tolist() == [True, True]
    # Leaf values w = -G / (H + lambda): root G = 0; left child G = 0.5, H = 0.75.
    np.testing.assert_allclose(out["leaf"], [0.0, -2 / 3], rtol=1e-6)
    np.testing.assert_allclose(out["score"], [0.0, 1 / 3], rtol=1e-6)


def test_seed_ties_when_the_column_had_missing_values():
    G, H = hist([SEED_ROOT, None], [SEED_LEFT, None])
    out = run(G, H, dyn(), forward_ok=(True, True))
    # Same gains; with NaN in the column the smallest tied threshold wins, missing right.
    np.testing.assert_allclose(out["gain"], [4 / 3, 2 / 3], rtol=1e-6)
    assert split_of(out, 0) == (0, 1, False)
    assert split_of(out, 1) == (0, 1, False)


def test_features_ascending_break_ties_and_a_better_feature_wins():
    G, H = hist([SEED_ROOT, SEED_ROOT], [None, SEED_LEFT])
    out = run(G, H, dyn())
    assert split_of(out, 0) == (0, 3, True)  # identical features: the first one
    assert split_of(out, 1) == (1, 2, True)  # feature 0 is constant in node 1
    np.testing.assert_allclose(out["gain"], [4 / 3, 2 / 3], rtol=1e-6)


def test_feature_mask_excludes_features_per_node():
    G, H = hist([SEED_ROOT, SEED_ROOT], [None, SEED_LEFT])
    out = run(G, H, dyn(), mask=[[False, True], [True, False]])
    assert split_of(out, 0)[0] == 1
    np.testing.assert_allclose(out["gain"][0], 4 / 3, rtol=1e-6)
    # Node 1 may only use its constant feature: the only candidates move no row
    # (gain exactly 0), which is not a split.
    assert out["gain"][1] == 0.0
    assert out["worthy"].tolist() == [True, False]


def test_lambda_and_alpha():
    # lambda = 1, alpha = 0.5, T(G) = sign(G) max(|G| - 0.5, 0).
    # Node 0: bins (G, H) = (-3, 2), (1, 1), (2, 1); parent (0, 4): S = 0.
    #   x-bin < 1: L (-3, 2): 2.5^2 / 3, R (3, 2): 2.5^2 / 3 -> gain 12.5 / 3;
    #   < 2: L (-2, 3): 1.5^2 / 4, R (2, 1): 1.5^2 / 2 -> 1.6875.
    # Node 1: bins (-3, 1), (0.25, 1); parent (-2.75, 2): T = -2.25, S = 2.25^2 / 3.
    #   < 1: L: 2.5^2 / 2 = 3.125, R: |0.25| < alpha, S = 0 -> gain 3.125 - 1.6875.
    G, H = hist(
        [[(-3, 2), (1, 1), (2, 1), (0, 0), (0, 0)], None],
        [[(-3, 1), (0.25, 1), (0, 0), (0, 0), (0, 0)], None],
    )
    out = run(G, H, dyn(eta=0.5, lam=1.0, alpha=0.5))
    np.testing.assert_allclose(out["gain"], [12.5 / 3, 1.4375], rtol=1e-6)
    assert split_of(out, 0) == (0, 1, True)
    assert split_of(out, 1) == (0, 1, True)
    np.testing.assert_allclose(out["score"], [0.0, 1.6875], rtol=1e-6)
    # w = -T(G) / (H + lambda) = 2.25 / 3 = 0.75; stored times eta = 0.5.
    np.testing.assert_allclose(out["leaf"], [0.0, 0.375], rtol=1e-6)


def test_soft_threshold():
    got = np.asarray(threshold_l1(jnp.array([-3.0, -0.5, -0.25, 0.0, 0.25, 0.5, 3.0]), 0.5))
    np.testing.assert_array_equal(got, [-2.5, 0.0, 0.0, 0.0, 0.0, 0.0, 2.5])


def test_max_delta_step_clips_the_weight_and_scores_it_with_raw_gradients():
    # lambda = 1, max_delta_step = 0.5. Node 0: bins (-3, 1), (3, 1); parent (0, 2): w = 0.
    #   Left: w = 3 / 2 -> clipped 0.5, S = -(2 (-3)(0.5) + 2 (0.25)) = 2.5; right alike.
    #   gain 5 (the unclipped score would give 4.5 + 4.5 = 9).
    # Node 1: (-3, 1) in one bin: leaf 0.5 (not 1.5), score 2.5.
    G, H = hist(
        [[(-3, 1), (3, 1), (0, 0), (0, 0), (0, 0)], None],
        [[(-3, 1), (0, 0), (0, 0), (0, 0), (0, 0)], None],
    )
    out = run(G, H, dyn(lam=1.0, mds=0.5))
    np.testing.assert_allclose(out["gain"][0], 5.0, rtol=1e-6)
    assert split_of(out, 0) == (0, 1, True)
    np.testing.assert_allclose(out["leaf"], [0.0, 0.5], rtol=1e-6)
    np.testing.assert_allclose(out["score"], [0.0, 2.5], rtol=1e-6)
    # alpha enters only through w: alpha = 1, lambda = 1, max_delta_step = 2 (no clip):
    # node 1: w = 2 / 2 = 1, S = -(2 (-3)(1) + 2 (1)) = 4, not T^2 / (H + lambda) = 2.
    # Node 0: S(left) = S(right) = 4, parent 0 -> gain 8.
    out = run(G, H, dyn(lam=1.0, alpha=1.0, mds=2.0))
    np.testing.assert_allclose(out["leaf"], [0.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(out["score"], [0.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(out["gain"][0], 8.0, rtol=1e-6)


def test_min_child_weight_is_inclusive():
    # lambda = 0. Node 0: bins (-1, 1), (1, 1), (0.5, 1.5); parent (0.5, 3.5).
    #   < 1: L (-1, 1): 1, R (1.5, 2.5): 0.9 -> 1.9 - 0.25 / 3.5;
    #   < 2: L (0, 2): 0, R (0.5, 1.5): 1/6 -> 1/6 - 0.25 / 3.5.
    # Node 1: (-1, 1) in one bin: H = 1 exactly.
    G, H = hist(
        [[(-1, 1), (1, 1), (0.5, 1.5), (0, 0), (0, 0)], None],
        [[(-1, 1), (0, 0), (0, 0), (0, 0), (0, 0)], None],
    )
    s_parent = 0.25 / 3.5
    out = run(G, H, dyn(mcw=1.0))
    np.testing.assert_allclose(out["gain"][0], 1.9 - s_parent, rtol=1e-6)
    assert split_of(out, 0) == (0, 1, True)  # its left child has H = 1 = min_child_weight
    assert out["leaf"][1] == 1.0  # H = 1 >= min_child_weight: w = 1 / 1
    assert out["gain"][1] == -np.inf  # one row: every candidate has an empty side
    assert out["worthy"][1] == np.False_
    above = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    out = run(G, H, dyn(mcw=above))
    np.testing.assert_allclose(out["gain"][0], 1 / 6 - s_parent, rtol=1e-5)
    assert split_of(out, 0) == (0, 2, True)
    assert out["leaf"][1] == 0.0  # H < min_child_weight: w = 0


def test_minimum_split_gain():
    # lambda = 0; bins (a, 1), (-a, 1); parent 0: gain = 2 a^2.
    a0, a1 = 5e-4, 1e-3  # gains 5e-7 (not a split) and 2e-6 (a split)
    G, H = hist(
        [[(a0, 1), (-a0, 1), (0, 0), (0, 0), (0, 0)], None],
        [[(a1, 1), (-a1, 1), (0, 0), (0, 0), (0, 0)], None],
    )
    out = run(G, H, dyn())
    np.testing.assert_allclose(out["gain"], [5e-7, 2e-6], rtol=1e-5)
    assert out["worthy"].tolist() == [False, True]
    eps = np.float32(1e-6)
    gains = np.array([0.0, eps, np.nextafter(eps, np.float32(1)), -np.inf], np.float32)
    assert np.asarray(is_split_worthy(gains)).tolist() == [False, False, True, False]


def test_missing_values_go_to_the_better_side():
    # lambda = 0. Node 0: bins (-1, 1), (1, 1), missing (-2, 1); parent (-2, 3): 4/3.
    #   bin < 1, missing left: L (-3, 2): 4.5, R (1, 1): 1 -> 5.5 - 4/3 (best);
    #   bin < 1, missing right: L (-1, 1): 1, R (-1, 2): 0.5 -> 1.5 - 4/3.
    # Node 1: bins (1, 1), (1, 1), missing (-2, 2); parent (0, 4): 0. Present rows vs
    #   missing rows: 2 + 2 = 4, reachable as "bins < 2, 3 or 4, missing right" (when
    #   the column had NaN) and as "bins < 0, missing left".
    G, H = hist(
        [[(-1, 1), (1, 1), (0, 0), (0, 0), (-2, 1)], None],
        [[(1, 1), (1, 1), (0, 0), (0, 0), (-2, 2)], None],
    )
    out = run(G, H, dyn(), forward_ok=(True, False))
    np.testing.assert_allclose(out["gain"], [5.5 - 4 / 3, 4.0], rtol=1e-6)
    assert split_of(out, 0) == (0, 1, True)
    assert split_of(out, 1) == (0, 2, False)  # ascending pass, smallest tied threshold
    out = run(G, H, dyn(), forward_ok=(False, False))
    assert split_of(out, 0) == (0, 1, True)
    assert split_of(out, 1) == (0, 0, True)  # "missing left, all present values right"


# --- an independent reference ---------------------------------------------------------
def ref_score(G, H, lam, alpha):
    if H <= 0:
        return np.float32(0.0)
    T = np.sign(G) * max(abs(G) - alpha, 0.0)
    return np.float32(T * T / (H + lam))


def ref_best(G, H, d, forward_ok, mask):
    """Per node: (gain, feature, tbin, default_left) of the first strictly best candidate,
    in DESIGN.md's order; plain scores (max_delta_step = 0)."""
    lam, alpha, mcw = float(d.reg_lambda), float(d.reg_alpha), float(d.min_child_weight)
    out = []
    for k in range(G.shape[1]):
        Gp, Hp = G[0, k].sum(), H[0, k].sum()
        sp = ref_score(Gp, Hp, lam, alpha)
        best = (-np.inf, None, None, None)
        for f in range(G.shape[0]):
            cands = []
            if forward_ok[f]:  # thresholds ascending, missing right
                cands += [(t, False, G[f, k, :t].sum(), H[f, k, :t].sum()) for t in range(1, V + 1)]
            for t in range(V - 1, -1, -1):  # thresholds descending, missing left
                cands.append((t, True, Gp - G[f, k, t:V].sum(), Hp - H[f, k, t:V].sum()))
            for t, left, GL, HL in cands:
                GR, HR = Gp - GL, Hp - HL
                if not mask[k, f] or HL < mcw or HR < mcw:
                    continue
                gain = (ref_score(GL, HL, lam, alpha) + ref_score(GR, HR, lam, alpha)) - sp
                if gain > best[0]:
                    best = (gain, f, t, left)
        out.append(best)
    return out


def test_random_histograms_match_the_reference():
    rng = np.random.default_rng(0)
    settings = [
        dyn(),
        dyn(lam=1.0),
        dyn(lam=0.5, alpha=0.5),
        dyn(lam=1.0, mcw=1.0),
        dyn(alpha=0.25, mcw=0.5),
    ]
    checked = 0
    for trial in range(40):
        # Rows with dyadic g and h (exact sums), 30 % of bins empty (tied candidates).
        n_rows = 24
        bins = rng.integers(0, B, size=(F, n_rows))
        bins[rng.random((F, n_rows)) < 0.3] = V if trial % 2 else 0
        node = rng.integers(0, N_NODES, size=n_rows)
        g = rng.integers(-8, 9, size=n_rows) / 8.0
        h = rng.integers(0, 5, size=n_rows) / 4.0
        G = np.zeros((F, N_NODES, B))
        H = np.zeros((F, N_NODES, B))
        for f in range(F):
            np.add.at(G[f], (node, bins[f]), g)
            np.add.at(H[f], (node, bins[f]), h)
        d = settings[trial % len(settings)]
        forward_ok = rng.random(F) < 0.5
        mask = rng.random((N_NODES, F)) < 0.8
        out = run(G, H, d, forward_ok, mask)
        for k, (gain, f, t, left) in enumerate(ref_best(G, H, d, forward_ok, mask)):
            assert out["gain"][k] == np.float32(gain), (trial, k)
            if f is not None:
                assert split_of(out, k) == (f, t, left), (trial, k)
                checked += 1
            # The cheaper variants agree: plain score (max_delta_step = 0), and without
            # the ascending pass when no column had missing values.
            assert out["plain"]["gain"][k] == out["gain"][k]
            assert split_of(out["plain"], k) == split_of(out, k)
            if not forward_ok.any() and f is not None:
                assert out["backward"]["gain"][k] == out["gain"][k]
                assert split_of(out["backward"], k) == split_of(out, k)
        np.testing.assert_allclose(
            out["leaf"],
            [ref_leaf(G[0, k].sum(), H[0, k].sum(), d) for k in range(N_NODES)],
            rtol=1e-6,
            atol=1e-7,
        )
    assert checked > 50


def ref_leaf(G, H, d):
    if H < d.min_child_weight or H <= 0:
        return 0.0
    T = np.sign(G) * max(abs(G) - float(d.reg_alpha), 0.0)
    return float(np.float32(-T / (H + float(d.reg_lambda)))) * float(d.learning_rate)


@pytest.mark.parametrize("G,H,expected", [(-3.0, 1.0, 0.5), (3.0, 1.0, -0.5), (0.2, 1.0, -0.1)])
def test_leaf_clip(G, H, expected):
    # max_delta_step = 0.5, lambda = 1: w = -G / 2 clipped to [-0.5, 0.5]; eta = 1.
    Gh, Hh = hist(
        [[(G, H), (0, 0), (0, 0), (0, 0), (0, 0)], None],
        [[(G, H), (0, 0), (0, 0), (0, 0), (0, 0)], None],
    )
    out = run(Gh, Hh, dyn(lam=1.0, mds=0.5))
    np.testing.assert_allclose(out["leaf"], [expected] * 2, rtol=1e-6)
