r"""The ``GroupObjective`` record: a loss over a group of rows (a query, a risk set).

A group loss is written for one group, ``loss(y_group, pred_group, mask, **hp) ->
scalar``, on ``(S,)`` vectors padded to the largest group with ``mask`` false on the
padding (see ``jaxboost.engine.groups``); the training objective is the sum over groups.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Callable, Optional

from ._base import Hyperparameters, identity

_ROWS_IN_ORDER = contextvars.ContextVar("jaxboost_group_rows_in_order", default=False)


def rows_in_order() -> bool:
    """Whether the group loss being traced gets each group's rows in its objective's
    ``row_order`` (padding last): True only inside ``GroupObjective.rows_ordered()``,
    which training enters when it built the groups so. A loss that sorts its rows by
    that key (Cox: by time) may then skip the sort; called any other way it must sort.

    >>> rows_in_order()
    False
    """
    return _ROWS_IN_ORDER.get()


@dataclasses.dataclass(frozen=True, repr=False)
class GroupObjective(Hyperparameters):
    """A group loss and its companions (the group counterpart of ``Objective``).

    Calling a ``GroupObjective`` with ``(y_group, pred_group, mask)`` evaluates its loss
    on one group; calling it with keyword arguments only returns a variant with those
    hyperparameters, e.g. ``objectives.lambdarank(k=10)``. Entries compare and hash by
    value, so equal variants share compiled code. ``train(entry, X, y, group=ids)``
    trains on it (entries with ``whole_data=True`` need no ``group=``: all rows form
    one group).

    Attributes:
      name: catalogue name (``objectives.GROUP_CATALOGUE``).
      loss: ``loss(y, pred, mask, **hyperparameters) -> scalar`` for one group: ``y``,
        ``pred`` ``(S,)`` float, ``mask`` ``(S,)`` bool (false on padding, which the loss
        must ignore). Hyperparameters are keyword-only.
      link: inverse link, margin -> response (used by ``Booster.predict``).
      params: hyperparameters as a sorted tuple of ``(name, value)`` pairs.
      hess_diag: optional closed form ``(y, pred, mask, **hyperparameters) -> (S,)``,
        the diagonal of the group loss's Hessian. When set, training uses it at every
        group size instead of the autodiff diagonal (groups of up to
        ``jaxboost.engine.groups.EXACT_MAX_GROUP`` rows) or Hutchinson's estimate (above). It
        must equal ``diag(jax.hessian(loss))`` on the unmasked rows.
      check_labels: optional ``check_labels(y: np.ndarray, **hyperparameters)`` raising
        ``ValueError`` with a clear message for labels outside the loss's domain.
      metric: name of the default evaluation metric (``jaxboost.metrics``); a ranking
        metric (``"ndcg@10"``) needs the evaluation sets' query ids as ``eval_group``.
      whole_data: True when one group spans all rows (Cox: the risk sets of the whole
        data); ``train`` then needs no ``group=`` (a given ``group=`` splits the rows
        into independent strata).
      row_order: optional ``row_order(y: np.ndarray) -> (N,)`` sort key, computed once
        on the host: training hands each group's rows to the loss in ascending key
        order (ties by position), so a loss that sorts its rows by a function of the
        labels skips its sort while ``rows_in_order()`` says so (Cox: by time). The
        loss must not depend on the order of its rows otherwise, and must sort when
        ``rows_in_order()`` is False (a direct call, an evaluation set).
      value_check: True (the default): training evaluates the loss of every group each
        round to check that it is finite where g and h are (a loss that returns NaN
        where its gradient is finite, as ``jnp.where(cond, nan, loss)`` does, is
        caught so). False skips that evaluation: for losses whose value is finite
        wherever their margins are short of overflow and costs more than their
        closed-form derivatives (the catalogue's pair losses: ``S^2`` softplus terms
        per query, 4.7 of 6.2 ms a round on 5,000 queries of 20 rows; finite while the
        margins' differences are, ``|f| < 1.7e38``).

    Example:
      >>> import jax.numpy as jnp
      >>> def sq(y, f, mask, *, scale=1.0):  # a toy group loss
      ...     return scale * jnp.sum(jnp.where(mask, (y - f) ** 2, 0.0))
      >>> toy = GroupObjective("toy", sq, hess_diag=lambda y, f, m, *, scale=1.0:
      ...                      jnp.where(m, 2.0 * scale, 0.0))
      >>> float(toy(scale=3.0)(jnp.ones(2), jnp.zeros(2), jnp.array([True, False])))
      3.0
      >>> toy(scale=3.0) == toy(scale=3.0), toy(scale=3.0)
      (True, objectives.toy(scale=3.0))
    """

    name: str
    loss: Callable
    link: Callable = identity
    params: tuple = ()
    hess_diag: Optional[Callable] = None
    check_labels: Optional[Callable] = None
    metric: str = "ndcg@10"
    whole_data: bool = False
    row_order: Optional[Callable] = None
    value_check: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"GroupObjective name must be a non-empty str, got {self.name!r}")
        for field in ("loss", "link"):
            if not callable(getattr(self, field)):
                raise TypeError(
                    f"GroupObjective {field} must be callable, got "
                    f"{type(getattr(self, field)).__name__}"
                )
        for field in ("hess_diag", "check_labels", "row_order"):
            v = getattr(self, field)
            if v is not None and not callable(v):
                raise TypeError(
                    f"GroupObjective {field} must be callable or None, got {type(v).__name__}"
                )
        self._check_value_check()
        if not isinstance(self.metric, str):
            raise TypeError(
                f"GroupObjective metric must be a metric name, got {type(self.metric).__name__}"
            )

    # --- what the per-row code reads ---------------------------------------------------
    @property
    def outputs(self) -> int:
        """Margins per row: always 1."""
        return 1

    n_outputs = outputs

    def with_params(self, **kwargs) -> "GroupObjective":
        """A copy with some hyperparameters changed (validated against the loss, then
        by evaluating it)."""
        out = super().with_params(**kwargs)
        out.validate_params()
        return out

    def validate_params(self) -> None:
        """Check the hyperparameters by evaluating the loss on a tiny group (the loss
        raises ``ValueError`` for values outside its domain)."""
        import jax
        import jax.numpy as jnp

        v = jnp.zeros(2, jnp.float32)
        jax.eval_shape(
            lambda a, b, m: self(a, b, m), jnp.ones(2, jnp.float32), v, jnp.ones(2, bool)
        )

    # --- calls ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not args:
            return self.with_params(**kwargs)
        if len(args) != 3 or kwargs:
            raise TypeError(
                f"objectives.{self.name} is a group loss, called as "
                f"loss(y_group, pred_group, mask), or with keyword "
                f"hyperparameters only to make a variant"
            )
        return self.loss(*args, **dict(self.params))

    @contextlib.contextmanager
    def rows_ordered(self):
        """A context in which ``rows_in_order()`` is True: the engine traces the loss in
        it when each group's rows come in ``row_order`` (``jaxboost.engine.groups``)."""
        if self.row_order is None:
            raise ValueError(f"objectives.{self.name} has no row_order")
        token = _ROWS_IN_ORDER.set(True)
        try:
            yield
        finally:
            _ROWS_IN_ORDER.reset(token)

    def group_hess_diag(self) -> Optional[Callable]:
        """The closed-form ``(y, pred, mask) -> (S,)`` diagonal with the hyperparameters
        bound, or None."""
        if self.hess_diag is None:
            return None
        p = dict(self.params)
        return lambda y, f, m: self.hess_diag(y, f, m, **p)
