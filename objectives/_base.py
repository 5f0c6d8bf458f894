"""The ``Objective`` record: a per-row loss plus what it needs beside the formula."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

HESSIAN_POLICIES = ("exact", "clip", "constant", "expected", "clip_negative")
REFITS = (None, "newton", "exact", "quantile")
H_SIGNS = ("positive", "nonnegative", "any")


def identity(margin):
    """Identity inverse link: the response is the margin.

    >>> identity(2.0)
    2.0
    """
    return margin


def sigmoid(margin):
    """Logistic inverse link :math:`1 / (1 + e^{-f})`.

    >>> float(sigmoid(0.0))
    0.5
    """
    return 1.0 / (1.0 + jnp.exp(-margin))


def softmax(margin):
    """Softmax inverse link over the last axis (K outputs -> K probabilities).

    >>> [round(float(p), 4) for p in softmax(jnp.array([0.0, 0.0]))]
    [0.5, 0.5]
    """
    return jax.nn.softmax(margin, axis=-1)


@functools.lru_cache(maxsize=256)
def _keyword_defaults(loss) -> tuple:
    """``loss``'s keyword-only parameters and their defaults, as pairs (read once per
    loss: ``inspect.signature`` took a tenth of a millisecond of every fit)."""
    return tuple(
        (k, p.default)
        for k, p in inspect.signature(loss).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    )


class Hyperparameters:
    """What ``Objective`` and ``GroupObjective`` share: keyword-only hyperparameters of
    ``loss`` with overrides in ``params`` (a sorted tuple of pairs), variants, the label
    check and the ``objectives.name(k=v)`` repr. Subclasses are frozen dataclasses with
    the fields ``name``, ``loss``, ``params`` and ``check_labels``."""

    name: str  # fields of every subclass (declared here for type checkers)
    value_check: bool

    def _check_value_check(self) -> None:
        """``value_check`` (a field of both subclasses) must be a bool."""
        flag = self.value_check
        if not isinstance(flag, bool):
            raise TypeError(
                f"{type(self).__name__} value_check must be True or False, got {flag!r}"
            )

    @property
    def label(self) -> str:
        """The name messages and reprs use: ``objectives.<name>``."""
        return f"objectives.{self.name}"

    def _keywords(self) -> dict:
        try:
            return dict(_keyword_defaults(self.loss))
        except TypeError:  # a loss that cannot be hashed: read it every time
            return dict(_keyword_defaults.__wrapped__(self.loss))

    @property
    def hyperparameters(self) -> dict:
        """The hyperparameters as a dict (defaults of the loss, then overrides)."""
        out = self._keywords()
        out.update(dict(self.params))
        return out

    def with_params(self, **kwargs):
        """A copy with some hyperparameters changed (validated against the loss)."""
        allowed = set(self._keywords())
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise TypeError(
                f"objectives.{self.name} has no hyperparameter(s) {unknown}; "
                f"it takes {sorted(allowed) or 'none'}"
            )
        merged = dict(self.params)
        merged.update(kwargs)
        self._check_params(merged)
        return dataclasses.replace(self, params=tuple(sorted(merged.items())))

    def _check_params(self, params: dict) -> None:
        """Check hyperparameter values when a variant is made (subclasses may)."""

    def traced_split(self):
        """``(family, values)``: this entry with its continuous hyperparameters taken out,
        and those values as a dict.

        A hyperparameter is continuous when its value or its default is a float
        (``huber``'s ``delta``, ``quantile``'s ``alpha``, ``focal``'s ``gamma``,
        ``tweedie``'s ``power``); integers, ``None`` and other values (``softmax``'s
        ``n_classes``, ``lambdarank``'s ``k``) stay in the family. Training passes the
        values to its compiled programs as arguments, so every variant of one family
        shares one program; ``family.bind(values)`` puts them back inside the program.

        >>> import objectives
        >>> fam, vals = objectives.huber(delta=2.0).traced_split()
        >>> fam == objectives.huber.traced_split()[0], vals
        (True, {'delta': 2.0})
        """
        defaults = self._keywords()
        values, static = {}, []
        for k, v in self.hyperparameters.items():
            d = defaults.get(k)
            is_float = (
                (isinstance(v, float) or isinstance(d, float))
                and isinstance(v, numbers.Real)
                and not isinstance(v, bool)
            )
            if is_float:
                values[k] = float(v)
            elif k in dict(self.params):
                static.append((k, v))
        return dataclasses.replace(self, params=tuple(sorted(static))), values

    def bind(self, values: dict):
        """This entry with hyperparameter ``values`` (traced arrays inside a compiled
        program, or numbers) put back; the inverse of ``traced_split``."""
        if not values:
            return self
        merged = dict(self.params)
        merged.update(values)
        return dataclasses.replace(self, params=tuple(sorted(merged.items())))

    def validate_labels(self, y) -> None:
        """Run the label check (raises ``ValueError`` naming the loss and the row);
        ``y`` an array, or a dict of arrays for an entry with ``label_fields``."""
        if self.check_labels is not None:
            if not isinstance(y, dict):
                y = np.asarray(y)
            self.check_labels(y, **dict(self.params))

    def __repr__(self):
        if self.params:
            args = ", ".join(f"{k}={v!r}" for k, v in self.params)
            return f"objectives.{self.name}({args})"
        return f"objectives.{self.name}"


@dataclasses.dataclass(frozen=True, repr=False)
class Objective(Hyperparameters):
    """A training objective: a per-row loss and its companions.

    Calling an ``Objective`` with ``(y, pred)`` evaluates its loss, so a catalogue entry
    can be used anywhere a plain ``loss(y, pred)`` callable can. Calling it with keyword
    arguments only returns a copy with those hyperparameters, e.g.
    ``objectives.huber(delta=2.0)``. Objectives compare and hash by value, so two equal
    objectives share compiled code.

    Attributes:
      name: catalogue name.
      loss: ``loss(y, pred, **hyperparameters) -> scalar`` for one row. ``y`` is a
        scalar; ``pred`` is a scalar, or a ``(n_outputs,)`` vector when
        ``n_outputs > 1``. Hyperparameters are keyword-only.
      link: inverse link, margin -> response (used by ``Booster.predict``).
      params: hyperparameters as a sorted tuple of ``(name, value)`` pairs.
      grad_hess: optional closed form ``(y, pred, **hyperparameters) -> (g, h)`` for one
        row. When set it replaces autodiff (used where the rounding of a reference
        implementation matters, e.g. XGBoost parity); g must equal the loss's gradient,
        and h its Hessian unless the entry documents a hyperparameter that chooses
        another curvature (softmax's ``curvature``: XGBoost's ``2 p (1 - p)``).
      expected_hessian: optional ``(y, pred, **hyperparameters) -> h``: the expected
        (Fisher) Hessian, used with ``hessian="expected"``; for vector outputs it
        returns the ``(K, K)`` matrix.
      check_labels: optional ``check_labels(y: np.ndarray, **hyperparameters)`` raising
        ``ValueError`` with a clear message when labels are outside the loss's domain.
      metric: name of the default evaluation metric (``jaxboost.metrics``).
      hessian: default Hessian policy, one of ``HESSIAN_POLICIES`` (see
        ``jaxboost.engine.autodiff.apply_hessian_policy``).
      refit: default leaf refit after a tree's structure is grown: ``None``,
        ``"newton"`` (damped Newton steps on the true loss per leaf), ``"exact"`` (the
        leaf's minimiser of the true loss, by bisection: any convex loss) or
        ``"quantile"`` (the ``alpha``-quantile of the residuals in each leaf by
        XGBoost's rules, ``refit.refit_quantile``; ``alpha`` from the hyperparameters,
        0.5 when there is none).
      n_outputs: margins per row (``K``), or the name of the hyperparameter that holds
        it (softmax: ``"n_classes"``); see ``outputs``.
      h_sign: the sign of the (exact, per-row diagonal) Hessian the docstring claims:
        ``"positive"``, ``"nonnegative"`` or ``"any"`` (non-convex).
      infer_outputs: optional ``(y: np.ndarray) -> int``, the value of the ``n_outputs``
        hyperparameter when it is None (softmax: ``max(y) + 1`` classes).
      check_params: optional ``check_params(**hyperparameters)`` raising ``ValueError``
        when a variant is made with a value outside its domain (softmax's
        ``curvature``), so the error comes at ``objectives.softmax(curvature=...)``,
        not in the middle of training.
      grad_hess_diag: optional closed form ``(y, pred, **hyperparameters) -> (g, d)``
        for one row of a vector loss: ``g`` ``(K,)`` as ``grad_hess`` gives it and ``d``
        ``(K,)`` the diagonal of its ``h`` (to float32 rounding). Used when the trees
        read only the diagonal (one tree per output, the default), so that no
        ``(K, K)`` matrix per row is formed: ``O(K)`` memory and work per row instead
        of ``O(K^2)`` (softmax). Without it the engine takes the diagonal by ``K``
        forward-mode passes, one output at a time (``O(K)`` memory, ``O(K^2)`` work).
      value_check: True (the default): training evaluates the loss on every row each
        round to check that it is finite where g and h are (a loss that returns NaN
        where its gradient is finite is named so). False skips that evaluation: for
        entries finite at every finite margin whose value costs more than their
        closed-form ``grad_hess`` (logistic: a ``log1p`` per row, 2.2 of 3.1 ms a
        round on 1,000,000 rows. Not softmax: ``logsumexp(f) - f_y`` overflows at
        margins of 3e38 and -3e38 while its g stays finite).
      label_fields: names of the label fields of an entry whose rows carry more than
        one number (``aft``: ``("lower", "upper")``, an interval per row): ``y`` may
        then be a dict of ``(N,)`` arrays with exactly these keys or an ``(N, L)``
        array of the fields in this order, and the loss receives one row of it (a dict
        of scalars, or an ``(L,)`` vector). Empty (the default): one label per row.
      intercept: optional closed form of the start margin,
        ``intercept(y, w, **hyperparameters)`` on the host (``y`` and ``w`` float64
        ``(N,)``): the constant c minimising ``sum_i w_i loss(y_i, c)`` (a number, or
        ``(K,)`` numbers for ``K`` outputs), or None where there is no finite one
        (logistic with every label 1). Training starts there (rounded to float32) instead of
        fitting the constant (``fit_base_margin``), which costs a compile of its own on
        a first fit (0.15-0.2 s on the CPU). Squared error: the weighted mean;
        logistic: the log-odds of the weighted mean; Poisson, gamma, Tweedie: the log
        of the weighted mean; exponential: half the log-odds (``weighted_mean``);
        softmax: the log class shares less their mean; Gaussian NLL: the mean and the
        log standard deviation.
    """

    name: str
    loss: Callable
    link: Callable = identity
    params: tuple = ()
    grad_hess: Optional[Callable] = None
    expected_hessian: Optional[Callable] = None
    check_labels: Optional[Callable] = None
    metric: str = "rmse"
    hessian: str = "exact"
    refit: Optional[str] = None
    n_outputs: object = 1
    h_sign: str = "positive"
    infer_outputs: Optional[Callable] = None
    check_params: Optional[Callable] = None
    grad_hess_diag: Optional[Callable] = None
    value_check: bool = True
    label_fields: tuple = ()
    intercept: Optional[Callable] = None

    def __post_init__(self):
        if self.hessian not in HESSIAN_POLICIES:
            raise ValueError(f"hessian must be one of {HESSIAN_POLICIES}, got {self.hessian!r}")
        if self.refit not in REFITS:
            raise ValueError(f"refit must be one of {REFITS}, got {self.refit!r}")
        if self.h_sign not in H_SIGNS:
            raise ValueError(f"h_sign must be one of {H_SIGNS}, got {self.h_sign!r}")
        self._check_value_check()
        fields = self.label_fields
        if not isinstance(fields, tuple) or not all(isinstance(k, str) for k in fields):
            raise TypeError(f"label_fields must be a tuple of names, got {fields!r}")

    @property
    def several_per_row(self) -> bool:
        """Whether ``y`` carries several numbers per row for this entry: its
        ``label_fields``, or the targets of a multi-target objective
        (``objectives.multi_target``)."""
        return bool(self.label_fields)

    def takes_label_fields(self, y) -> bool:
        """Whether targets ``y`` with more than one number per row are this entry's
        ``label_fields``: a dict with exactly those keys of ``(N,)`` arrays, or an
        ``(N, L)`` array with one column per field.

        >>> import objectives, numpy as np
        >>> objectives.aft.takes_label_fields({"lower": np.ones(2), "upper": np.ones(2)})
        True
        >>> objectives.squared.takes_label_fields(np.ones((2, 2)))
        False
        """
        fields = self.label_fields
        if not fields:
            return False
        if isinstance(y, dict):
            return sorted(y) == sorted(fields) and all(np.ndim(v) == 1 for v in y.values())
        return np.ndim(y) == 2 and np.shape(y)[1] == len(fields)

    def label_fields_message(self, structure: str) -> str:
        """What this entry takes, for targets of ``structure``
        (``inputs.arrays.target_structure``) that are not its ``label_fields``."""
        fields = self.label_fields
        keys = ", ".join(f"{k!r}: ..." for k in fields)
        return (
            f"{self!r} takes y of shape (N,), or {len(fields)} numbers per row: a dict "
            f"{{{keys}}} of (N,) arrays or an (N, {len(fields)}) array with the columns "
            f"[{', '.join(fields)}]; got y of structure {structure}"
        )

    def _check_params(self, params: dict) -> None:
        if self.check_params is not None:
            self.check_params(**params)

    # --- calls ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not args:
            return self.with_params(**kwargs)
        if len(args) != 2 or kwargs:
            raise TypeError(
                f"objectives.{self.name} is called as loss(y, pred) for one row, "
                f"or with keyword hyperparameters only to make a variant, e.g. "
                f"objectives.{self.name}(**{{...}})"
            )
        return self.loss(*args, **dict(self.params))

    def start_margin(self, y, w):
        """The closed-form start margin (``intercept``) of labels ``y`` with weights
        ``w``: a float32 value (``(K,)`` for ``K`` outputs), or None (no closed form, no
        finite one, or no weight).

        >>> import objectives, numpy as np
        >>> float(objectives.squared.start_margin(np.array([1.0, 2.0, 6.0]), np.ones(3)))
        3.0
        >>> objectives.logistic.start_margin(np.ones(3), np.ones(3)) is None
        True
        """
        if self.intercept is None:
            return None
        y = np.asarray(y, np.float64)
        w = np.asarray(w, np.float64)
        if y.ndim != 1 or w.shape != y.shape or not w.sum() > 0:
            return None
        c = self.intercept(y, w, **dict(self.params))
        if c is None:
            return None
        c = np.asarray(c, np.float32)
        if c.shape != (() if self.outputs in (None, 1) else (self.outputs,)):
            return None
        if not np.isfinite(c).all():
            return None
        return c if c.ndim else c[()]

    def row_grad_hess(self):
        """The closed-form ``(y, pred) -> (g, h)`` bound to the hyperparameters, or None."""
        if self.grad_hess is None:
            return None
        p = dict(self.params)
        return lambda y, f: self.grad_hess(y, f, **p)

    def row_grad_hess_diag(self):
        """The closed-form ``(y, pred) -> (g, diagonal of h)`` bound to the
        hyperparameters, or None."""
        if self.grad_hess_diag is None:
            return None
        p = dict(self.params)
        return lambda y, f: self.grad_hess_diag(y, f, **p)

    def row_expected_hessian(self):
        """The expected Hessian ``(y, pred) -> h`` bound to the hyperparameters, or None."""
        if self.expected_hessian is None:
            return None
        p = dict(self.params)
        return lambda y, f: self.expected_hessian(y, f, **p)

    @property
    def outputs(self) -> Optional[int]:
        """Margins per row ``K`` (None when a hyperparameter holding it is still None)."""
        if isinstance(self.n_outputs, str):
            k = self.hyperparameters.get(self.n_outputs)
            return None if k is None else int(k)
        return int(self.n_outputs)

    def resolve_outputs(self, y: np.ndarray) -> "Objective":
        """This objective with ``outputs`` fixed, inferred from ``y`` when None."""
        if self.outputs is not None:
            return self
        return self.with_params(**{self.n_outputs: int(self.infer_outputs(y))})


def weighted_mean(y, w) -> float:
    """``sum(w y) / sum(w)`` in float64 (``w`` summing to more than 0)."""
    return float(np.dot(w, y) / w.sum())


def mean_intercept(y, w, **_):
    """The weighted mean: squared error's start margin."""
    return weighted_mean(y, w)


def log_mean_intercept(y, w, **_):
    """The log of the weighted mean (None unless it is > 0): the start margin of the
    log-link likelihoods whose g is a positive multiple of ``e^f - y`` (Poisson, gamma,
    Tweedie)."""
    m = weighted_mean(y, w)
    return float(np.log(m)) if m > 0 else None


def logit_intercept(y, w, **_):
    """The log-odds of the weighted mean (None unless it is in (0, 1)): logistic's
    start margin."""
    p = weighted_mean(y, w)
    return float(np.log(p) - np.log1p(-p)) if 0 < p < 1 else None


def check_binary_labels(name):
    """A label check for losses on y in [0, 1] (picklable: ``_checks.LabelsIn``)."""
    from ._checks import LabelsIn

    return LabelsIn(name, "unit")
