"""From validated settings to the engine's records: ``RoundSpec`` and ``Hyper``.

``round_spec`` collects what fixes the round program's structure (static), and
``hyper`` the numbers that are traced, so that a sweep over any of them reuses the
compiled program. ``stack`` puts the ``Hyper`` s of a group of models on a leading axis.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from ..engine.groups import EXACT_MAX_GROUP
from ..engine.grow import bucketed_depth, native_tree_takes
from ..engine.round import Hyper, RoundSpec
from .data import group_row_order


def round_spec(
    s, prep, *, native_threads=None, clipped=None, row_sampling=None, col_sampling=None
) -> RoundSpec:
    """The static record of settings ``s`` on prepared data ``prep``. ``clipped`` and
    the sampling switches may be forced on (``train_many`` shares one program between
    models that differ in them). Its ``max_bin`` is the data's bin bucket
    ``prep.edges.n_bins`` (``engine.binning.program_bins``), at most ``s.params.max_bin``."""
    p = s.params
    bucket = depth_bucket_applies(s, prep)
    kinds = tuple(bool(r < 1) for r in s.ratios[1:])  # column draws: tree, level, node
    return RoundSpec(
        loss=s.family,
        max_depth=program_depth(s, prep) if bucket else p.max_depth,
        max_bin=prep.edges.n_bins,
        n_outputs=s.n_outputs,
        multi_output_tree=s.multi_output_tree,
        diagonal=s.diagonal,
        hessian=s.hessian,
        refit=s.refit,
        clipped=p.max_delta_step > 0 if clipped is None else clipped,
        any_forward=prep.any_forward,
        native=prep.native,
        native_threads=native_threads,
        row_sampling=bool(s.ratios[0] < 1) if row_sampling is None else row_sampling,
        col_sampling=any(kinds) if col_sampling is None else col_sampling,
        col_kinds=kinds if col_sampling is None else (True,) * 3,
        exact=s.quantize,
        group_max=None if s.group is None else EXACT_MAX_GROUP,
        group_rows_in_order=group_row_order(s) is not None,
        constraints=None if s.constraints is None else s.constraints.spec(),
        num_parallel_tree=s.num_parallel_tree,
        bootstrap=s.bootstrap,
        subtract=use_subtraction(prep.native),
        max_leaves=s.max_leaves,
        depth_bucket=bucket,
        # XGBoost's rule: the step quantile with sample weights, else interpolated; a
        # bootstrap's draw counts are weights too (round._refit)
        weighted_quantile=s.refit != "quantile" or s.weight_max is not None or s.bootstrap,
    )


def depth_bucket_applies(s, prep) -> bool:
    """Whether the round program is compiled for a bucket of depths
    (``grow.bucketed_depth``; ``Hyper.depth`` says what each model grows): where the
    native whole-tree kernel grows the trees (dense bins on one CPU device, numeric
    and categorical splits, no constraints, one output per tree). Every depth of a
    bucket then shares one program (the flag is set for the bucket's own depth too)."""
    from .. import native as native_kernel

    return bool(
        prep.native
        and native_kernel.tree_enabled()
        and not isinstance(prep.rows.bins, tuple)  # CSC bins: the sparse kernel
        and prep.layout.mesh is None
        and not prep.layout.multi
        and s.constraints is None
        and not (s.multi_output_tree and s.n_outputs > 1)
        and s.params.max_depth > 0
        # the native kernel takes the tree's features whole (grow.grow_tree decides
        # so on the same rows, features, depth and bins)
        and native_tree_takes(
            prep.rows.bins.shape[0],
            prep.n_features,
            program_depth(s, prep),
            prep.edges.n_bins,
            max_leaves=s.max_leaves,
        )
    )


def program_depth(s, prep) -> int:
    """``grow.bucketed_depth`` of ``s``'s ``max_depth`` on ``prep``'s features and bins."""
    return bucketed_depth(s.params.max_depth, prep.n_features, prep.edges.n_bins)


SUBTRACT_ENV = "JAXBOOST_SUBTRACT"


def use_subtraction(native: bool) -> bool:
    """Whether the pure-JAX tree builder histograms only the smaller child of each
    split (its sibling = parent - child; ``grow.TreeSpec.subtract``).

    On by default off CPU: the accelerators' histograms (``engine.histogram``) drop the
    rows outside the children they build at the cost of a comparison, so this halves
    their work at least. Off on CPU without the native kernel: the complex128 scatter
    costs per row either way, and the direct sums keep the models bit-identical to
    XGBoost's. ``JAXBOOST_SUBTRACT=1`` / ``0`` forces it on / off (benchmarks); with the
    native kernel it is always on (``native`` implies it).
    """
    forced = os.environ.get(SUBTRACT_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1" and not native
    return not native and jax.default_backend() != "cpu"


def hyper(s) -> Hyper:
    """The traced numbers of settings ``s`` (host arrays)."""
    p = s.params
    f32 = np.float32
    return Hyper(
        f32(p.reg_lambda),
        f32(p.reg_alpha),
        f32(p.gamma),
        f32(p.min_child_weight),
        f32(p.max_delta_step),
        f32(s.hessian_floor),
        f32(s.quantile_alpha),
        np.asarray(s.ratios, f32),
        np.int32(s.seed),
        {k: np.asarray(v, f32) for k, v in s.loss_values.items()},
        None if s.constraints is None else s.constraints.values(),
        np.int32(p.max_depth),
    )


def stack(hypers, put_tree=jax.device_put):
    """``Hyper`` s of one group stacked on a leading model axis, on the device(s) by
    ``put_tree`` (the whole tree at once: one batched transfer)."""
    return put_tree(jax.tree.map(lambda *a: np.stack(a), *hypers))
