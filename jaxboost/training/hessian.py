"""Hessians that cannot help are never used silently.

Two host-side steps around the round program, which counts the rows every round
(``engine.autodiff.hessian_census`` into each model's flag, ``engine.round.FLAG_FIELDS``):

* ``guard_start``, before round 0: a plain callable trained with ``hessian="auto"``
  whose Hessian is 0 on every row at the start margins (absolute error, pinball,
  hinge, epsilon-insensitive losses) would train a constant model (every Newton leaf
  0); it is switched to ``hessian="constant"`` (and ``refit="newton"`` for one output
  when refit is ``"auto"`` too), with a ``HessianWarning`` saying so. When instead h
  is negative on at least ``WARN_SHARE`` of the rows at the start (Tukey's biweight),
  a one-output loss with refit ``"auto"`` gets ``refit="newton"``: negative h raised to
  the floor leave Hessian sums near 0, whose Newton leaves (-G / reg_lambda) are as
  large as the summed gradient; the run's ``HessianWarning`` says so.
* ``warning``, after the rounds: the text of the one ``HessianWarning`` of a training
  call, from the model's last flag (the worst round seen over the whole call), or None.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..engine.autodiff import loss_name, start_census
from ..engine.round import uses_diagonal
from ..errors import HessianWarning
from ..parallel import distributed as dist

WARN_SHARE = 0.001
"""A ``HessianWarning`` is given when at least this share of the rows (real, weight > 0)
has a negative h, or an h of 0 where g is not, at some round; and always when no row
has positive curvature."""

OPTIONS = (
    'Options: hessian="clip" (h raised to hessian_floor), hessian="constant" '
    '(h = 1: plain gradient boosting), each best with refit="exact" (each leaf '
    "minimises the loss itself: any convex loss, absolute error and pinball "
    'included, whatever its keywords are called), refit="newton" (leaves re-solved '
    "on the loss by damped Newton steps) or, for the catalogue's quantile and "
    'absolute-error entries, refit="quantile" (leaves at the quantile of '
    "the residuals)."
)

OPTIONS_MULTI = (
    'Options: hessian="clip" (the eigenvalues of each K x K Hessian raised to '
    "hessian_floor: every leaf solve is positive definite), "
    'hessian="constant" (identity Hessians: plain gradient boosting on '
    "every output), or a larger reg_lambda (damps every leaf solve). Leaf "
    "refits are for single-output losses."
)


def _share(n, total):
    return f"{n} of {total} rows ({100.0 * n / max(total, 1):.1f}%)"


def _round(r):
    return "at the start margin (round 0)" if r == 0 else f"at round {r}"


def guard_start(s, spec, rows, margin, *, label=""):
    """The settings to train with: ``s``, or ``s`` switched to ``hessian="constant"``
    when its policy came from ``"auto"`` for a plain callable and the exact Hessian is
    0 on every row at the start ``margin`` (``(1, N[, K])``, a model axis of one, as
    training holds it; the padded training rows ``rows``) while some gradient is not (a
    ``HessianWarning`` says so)."""
    if "hessian" not in s.from_auto or s.hessian != "clip_negative" or s.group is not None:
        return s
    c = start_census(
        s.family,
        rows.y,
        margin,
        rows.w,
        rows.valid,
        hessian="exact",
        floor=s.hessian_floor,
        diagonal=uses_diagonal(spec),
        loss_params=s.loss_values,
    )
    n_bad, n_neg, n_zero, n_rows, n_pos = (int(v) for v in np.asarray(dist.local(c)))
    if (
        n_neg > 0
        and n_neg >= WARN_SHARE * n_rows
        and s.refit is None
        and "refit" in s.from_auto
        and s.n_outputs == 1
    ):
        # Negative h raised to the floor leave leaves with a Hessian sum near 0, whose
        # Newton step is -G / reg_lambda: as large as the summed gradient. Leaves are
        # re-solved on the loss instead; the HessianWarning of the run says so.
        return dataclasses.replace(s, refit="newton")
    if not (n_rows > 0 and n_pos == 0 and n_neg == 0 and n_zero > 0):
        return s
    refit = s.refit
    if refit is None and "refit" in s.from_auto and s.n_outputs == 1:
        refit = "newton"
    what = 'hessian="constant"' + (' and refit="newton"' if refit != s.refit else "")
    warnings.warn(
        f"{label}the Hessian of the loss {loss_name(s.loss)} is 0 on every row at the "
        f"start margin (g is not 0 on {_share(n_zero, n_rows)}): Newton leaves would all "
        f"be 0 and the model constant. Training with {what} instead (h = 1 per row: "
        f"the trees fit the gradient{', leaves re-solved on the loss' if refit else ''}). "
        f'Pass hessian= and refit= to choose: refit="exact" sets each leaf to the '
        f"minimiser of the loss over its rows (the residuals' median for absolute "
        f"error, their quantile for a pinball loss).",
        HessianWarning,
        stacklevel=3,
    )
    return dataclasses.replace(s, hessian="constant", refit=refit)


def warning(s, flag, *, label="") -> str | None:
    """The text of the ``HessianWarning`` for a model of settings ``s`` whose final flag
    is ``flag`` (``engine.round.FLAG_FIELDS``), or None when every Hessian could help."""
    f = [int(v) for v in np.asarray(flag)]
    neg_round, n_neg, zero_round, n_zero, n_rows, flat_round = f[2:8]
    if n_rows <= 0:
        return None
    neg = n_neg > 0 and n_neg >= WARN_SHARE * n_rows
    zero = n_zero > 0 and n_zero >= WARN_SHARE * n_rows
    if not (neg or zero or flat_round >= 0):
        return None
    K = s.n_outputs
    if K == 1:
        negative = "negative"
    elif s.multi_output_tree and not s.diagonal:
        negative = "not positive semi-definite (K x K)"
    else:
        negative = "negative on the diagonal"
    parts = []
    if neg:
        switched = s.refit == "newton" and "refit" in s.from_auto  # by guard_start
        what = {
            "clip_negative": "raised to hessian_floor="
            f"{s.hessian_floor:g} (the default of plain callables)"
            + (
                ', and leaves re-solved on the loss (refit="newton", switched on '
                "because h was negative at the start margin; pass refit=None to keep "
                "Newton leaves)"
                if switched
                else ""
            ),
            "exact": "used as they are"
            + (
                " (leaves whose Hessian sum is indefinite or nearly singular take "
                "damped steps: H + (lambda + mu) I, engine.split.MAX_CONDITION)"
                if K > 1 and negative.startswith("not")
                else " (Newton leaves of small or negative Hessian sums are unstable)"
            ),
        }.get(s.hessian, "used as they are")
        parts.append(
            f"h is {negative} on {_share(n_neg, n_rows)} {_round(neg_round)} "
            f"(the most of any round); those h were {what}"
        )
    if zero:
        parts.append(
            f"h is 0 while g is not on {_share(n_zero, n_rows)} "
            f"{_round(zero_round)} (the most of any round): those rows pull "
            f"the leaves without curvature"
        )
    if flat_round >= 0:
        parts.append(
            f"no row had positive curvature {_round(flat_round)}: every leaf of "
            f"that round is 0, and the model stops changing"
        )
    return (
        f"{label}the Hessian of the loss {loss_name(s.loss)} (hessian="
        f'"{s.hessian}") cannot help on some rows: '
        + "; ".join(parts)
        + ". "
        + (OPTIONS if K == 1 else OPTIONS_MULTI)
    )


def warn(s, flag, *, label=""):
    """Emit ``warning``'s ``HessianWarning``, if any."""
    text = warning(s, flag, label=label)
    if text is not None:
        warnings.warn(text, HessianWarning, stacklevel=4)
