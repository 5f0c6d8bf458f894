"""Multi-target training of a per-row entry: one output per column of a 2-D ``y``.

``multi_target(entry, T)`` is the entry applied to each of ``T`` targets and summed,

.. math:: \\ell(y, f) = \\sum_{t=1}^{T} \\ell_{entry}(y_t, f_t),

for ``y`` and ``f`` of ``T`` numbers per row. Its Hessian is diagonal (the targets do
not interact), so its ``g`` and ``h`` are the entry's, target by target: one tree per
target per round (the default ``multi_strategy``) grows exactly the trees ``T`` separate
models of the entry grow, and ``multi_strategy="multi_output_tree"`` grows one tree with
``T`` values per leaf, as XGBoost's multi-target regression does. The link, label check,
start margin (the entry's closed form column by column) and metric are the entry's,
applied to each target.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Objective


class _PerTarget:
    """Base of the wrappers: a function of one target, compared and hashed by it (so two
    equal multi-target objectives share compiled programs), with its signature (the
    entry's keyword hyperparameters stay visible to ``Objective.with_params``)."""

    def __init__(self, fn):
        self.fn = fn
        try:
            self.__signature__ = inspect.signature(fn)
        except (TypeError, ValueError):  # pragma: no cover - a builtin without one
            pass

    def __eq__(self, other):
        return type(other) is type(self) and other.fn == self.fn

    def __hash__(self):
        return hash((type(self), self.fn))

    def _mapped(self, y, pred, kw):
        return jax.vmap(lambda a, b: self.fn(a, b, **kw))(y, pred)


class SummedLoss(_PerTarget):
    """``loss(y, pred) = sum_t entry_loss(y[t], pred[t])`` for one row."""

    def __call__(self, y, pred, **kw):
        return jnp.sum(self._mapped(y, pred, kw))


class TargetGradHess(_PerTarget):
    """``(g, H)``: the entry's ``(g_t, h_t)`` per target, ``H = diag(h)``."""

    def __call__(self, y, pred, **kw):
        g, h = self._mapped(y, pred, kw)
        return g, jnp.diag(h)


class TargetGradHessDiag(_PerTarget):
    """``(g, d)``: the entry's ``(g_t, h_t)`` per target (the diagonal of ``H``)."""

    def __call__(self, y, pred, **kw):
        return self._mapped(y, pred, kw)


class TargetExpectedHessian(_PerTarget):
    """``diag(e)``, ``e_t`` the entry's expected Hessian of target ``t``."""

    def __call__(self, y, pred, **kw):
        return jnp.diag(self._mapped(y, pred, kw))


class ScalarGradHess(_PerTarget):
    """The entry's ``(g, h)`` of one target by autodiff (a forward-over-reverse pass,
    as training computes them for the entry alone) where it has no closed form."""

    def __call__(self, y, pred, **kw):
        d_loss = jax.grad(lambda a, b: self.fn(a, b, **kw), argnums=1)
        return jax.jvp(lambda p: d_loss(y, p), (pred,), (jnp.ones_like(pred),))


class TargetLabels(_PerTarget):
    """The entry's label check on each column of ``(N, T)`` labels; a failure names the
    target (column)."""

    def __call__(self, y, **kw):
        y = np.asarray(y)
        if y.ndim != 2:
            raise ValueError(f"multi-target labels must be an (N, T) array, got shape {y.shape}")
        for t in range(y.shape[1]):
            try:
                self.fn(y[:, t], **kw)
            except ValueError as e:
                raise ValueError(f"target {t} (column {t} of y): {e}") from None


@dataclasses.dataclass(frozen=True, repr=False)
class MultiTarget(Objective):
    """A per-row entry trained on ``T`` targets at once (see the module docstring and
    ``multi_target``). ``entry`` is the single-target entry (its hyperparameters live
    in ``params``, as any entry's)."""

    entry: Optional[Objective] = None

    def __repr__(self):
        inner = self.entry.with_params(**dict(self.params)) if self.params else self.entry
        return f"objectives.multi_target({inner!r}, {self.n_outputs})"

    @property
    def label(self) -> str:
        """The name messages use: ``objectives.multi_target(objectives.squared, 3)``."""
        return repr(self)

    @property
    def single(self) -> Objective:
        """The single-target entry with this objective's hyperparameters."""
        return dataclasses.replace(self.entry, params=self.params)

    @property
    def several_per_row(self) -> bool:
        return True

    def target(self, k, y):
        """``(loss, y, alpha)`` of output ``k``'s tree (``k`` may be traced): the entry
        on label column ``k``; ``alpha`` None (a quantile refit's level is the
        entry's)."""
        return self.single, y[:, k], None

    def takes_label_fields(self, y) -> bool:
        """An ``(N, T)`` array of this objective's ``T`` targets (not a dict)."""
        return not isinstance(y, dict) and np.ndim(y) == 2 and np.shape(y)[1] == self.n_outputs

    def label_fields_message(self, structure: str) -> str:
        T = self.n_outputs
        return (
            f"{self!r} takes y as an (N, {T}) array, one column per target; got y of "
            f"structure {structure}"
        )

    def start_margin(self, y, w):
        """The entry's closed-form start margin of each column of ``y`` ``(N, T)``:
        ``(T,)`` float32, or None when a column has none."""
        y = np.asarray(y, np.float64)
        if y.ndim != 2 or y.shape[1] != self.n_outputs:
            return None
        single = self.single
        cols = [single.start_margin(y[:, t], w) for t in range(y.shape[1])]
        if any(c is None for c in cols):
            return None
        return np.asarray(cols, np.float32)


def multi_target(entry, n_targets: int) -> MultiTarget:
    """``entry`` (a per-row catalogue entry of one output) trained on ``n_targets``
    targets at once: ``loss(y, f) = sum_t entry(y[t], f[t])`` with ``y`` and ``f`` of
    ``n_targets`` numbers per row.

    ``jaxboost.train(entry, X, Y)`` with a 2-D ``Y`` of shape ``(N, T)`` (``T >= 2``)
    makes this objective itself, as XGBoost's multi-target regression does with its
    built-in objectives; the model predicts ``(N, T)``. Entries whose leaves are refit
    (``absolute``, ``quantile``, ``huber``, ...) refit each target's tree on its own
    column (one tree per target; vector leaves take ``refit=None``).

    Args:
      entry: an ``Objective`` with one output and one label per row (not ``softmax``,
        ``gaussian_nll`` or ``aft``), or its catalogue name (``objectives.multi_target``
        reads names).
      n_targets: ``T >= 1``, the columns of ``y``.

    Raises:
      TypeError: ``entry`` is not such an objective.

    Example:
      >>> import objectives, jax.numpy as jnp
      >>> m = objectives.multi_target(objectives.squared, 2); m
      objectives.multi_target(objectives.squared, 2)
      >>> float(m(jnp.array([1.0, 2.0]), jnp.array([0.0, 0.0])))  # (1 + 4) / 2
      2.5
    """
    if isinstance(entry, MultiTarget):
        entry = entry.single
    problem = not_per_target(entry)
    if problem:
        raise TypeError(problem)
    if isinstance(n_targets, bool) or not isinstance(n_targets, (int, np.integer)):
        raise TypeError(f"n_targets must be an int, got {n_targets!r}")
    if n_targets < 1:
        raise ValueError(f"n_targets must be >= 1, got {n_targets}")
    gh = _scalar_grad_hess(entry)
    expected = entry.expected_hessian
    return MultiTarget(
        name=entry.name,
        loss=SummedLoss(entry.loss),
        link=entry.link,
        params=entry.params,
        grad_hess=TargetGradHess(gh),
        grad_hess_diag=TargetGradHessDiag(gh),
        expected_hessian=None if expected is None else TargetExpectedHessian(expected),
        check_labels=None if entry.check_labels is None else TargetLabels(entry.check_labels),
        metric=entry.metric,
        hessian=entry.hessian,
        refit=entry.refit,
        n_outputs=int(n_targets),
        h_sign=entry.h_sign,
        check_params=entry.check_params,
        value_check=entry.value_check,
        intercept=entry.intercept,  # of one target: start_margin applies it per column
        entry=dataclasses.replace(entry, params=()),
    )


def _scalar_grad_hess(entry):
    """The entry's ``(g, h)`` of one target: its closed form, else autodiff's (what
    training of the entry alone computes)."""
    return entry.grad_hess if entry.grad_hess is not None else ScalarGradHess(entry.loss)


def not_per_target(entry) -> str:
    """Why ``entry`` cannot be trained on several targets ("" when it can)."""
    from ._link import LinkedLoss

    if not isinstance(entry, Objective) or isinstance(entry, LinkedLoss):
        return (
            f"multi_target takes a per-row catalogue entry (objectives.squared, "
            f"objectives.logistic, ...), got {entry!r}; for a loss of your own, sum it "
            f"over the outputs and pass n_outputs=T"
        )
    if entry.label_fields or isinstance(entry.n_outputs, str) or entry.outputs != 1:
        return (
            f"{entry!r} has {'its own label fields' if entry.label_fields else 'several outputs'}"
            f"; multi_target takes an entry of one output and one label per row "
            f"(objectives.squared, objectives.logistic, objectives.poisson, ...)"
        )
    return ""


class _PerLevel(_PerTarget):
    """Base of the multi-quantile wrappers: the entry's function at each level
    ``alphas[k]`` (its own ``alpha`` keyword replaced), on the one label ``y``."""

    def __init__(self, fn, alphas):
        super().__init__(fn)
        self.alphas = tuple(alphas)

    def __eq__(self, other):
        return super().__eq__(other) and other.alphas == self.alphas

    def __hash__(self):
        return hash((type(self), self.fn, self.alphas))

    def _mapped(self, y, pred, kw):
        kw = {k: v for k, v in kw.items() if k != "alpha"}
        levels = jnp.asarray(self.alphas, pred.dtype)
        return jax.vmap(lambda f, a: self.fn(y, f, alpha=a, **kw))(pred, levels)


class LevelsSummedLoss(_PerLevel, SummedLoss):
    """``loss(y, pred) = sum_k quantile_loss(y, pred[k], alpha=alphas[k])``."""


class LevelsGradHess(_PerLevel, TargetGradHess):
    """``(g, diag(h))`` of the levels' losses."""


class LevelsGradHessDiag(_PerLevel, TargetGradHessDiag):
    """``(g, h)`` of the levels' losses, per level."""


@dataclasses.dataclass(frozen=True, repr=False)
class MultiQuantile(MultiTarget):
    """Several quantiles of one label in one model (``multi_quantile``): output ``k``
    is the ``alphas[k]``-quantile, its trees refit to that quantile of their residuals
    (XGBoost's ``reg:quantileerror`` with a vector ``quantile_alpha``)."""

    alphas: tuple = ()

    def __repr__(self):
        return f"objectives.multi_quantile({list(self.alphas)!r})"

    @property
    def several_per_row(self) -> bool:
        return False  # one label per row; the outputs are its quantiles

    def takes_label_fields(self, y) -> bool:
        return False

    def start_margin(self, y, w):
        return None  # the refit's start: each level's quantile of the labels

    def target(self, k, y):
        """``(loss, y, alpha)`` of output ``k``'s tree: the entry at level
        ``alphas[k]`` (``k`` may be traced), on the one label."""
        if isinstance(k, int):  # on the host: the level as given (the start's quantile)
            alpha = self.alphas[k]
        else:
            alpha = jnp.asarray(self.alphas, jnp.float32)[k]
        return self.single.bind({"alpha": alpha}), y, alpha


def multi_quantile(alphas) -> MultiQuantile:
    """Several quantiles of one label in one model: ``loss(y, f) = sum_k
    quantile_loss(y, f[k], alpha=alphas[k])`` with ``K = len(alphas)`` outputs, one tree
    per level per round, each refit to its level's quantile of its leaf's residuals
    and started from the labels' quantile: the margins of XGBoost's
    ``reg:quantileerror`` with ``quantile_alpha=alphas`` (prediction intervals from one
    model; the levels need not be sorted, and the fitted quantiles may cross, as
    there).

    Args:
      alphas: two or more levels in (0, 1).

    Example:
      >>> import objectives, jax.numpy as jnp
      >>> m = objectives.multi_quantile([0.1, 0.9]); m
      objectives.multi_quantile([0.1, 0.9])
      >>> round(float(m(1.0, jnp.array([0.0, 0.0]))), 4)  # 0.1 * 1 + 0.9 * 1
      1.0
    """
    from .robust import quantile

    try:
        levels = tuple(float(a) for a in alphas)
    except (TypeError, ValueError):
        raise TypeError(f"alphas must be a sequence of numbers, got {alphas!r}") from None
    if len(levels) < 2 or not all(0.0 < a < 1.0 for a in levels):
        raise ValueError(f"multi_quantile takes two or more levels in (0, 1), got {alphas!r}")
    gh = _scalar_grad_hess(quantile)
    one_each = multi_target(quantile, len(levels))  # the fields the levels share
    return MultiQuantile(
        **{f.name: getattr(one_each, f.name) for f in dataclasses.fields(MultiTarget)}
        | dict(
            loss=LevelsSummedLoss(quantile.loss, levels),
            grad_hess=LevelsGradHess(gh, levels),
            grad_hess_diag=LevelsGradHessDiag(gh, levels),
        ),
        alphas=levels,
    )
