"""Inverse links by name, and a plain loss given one: ``with_link``.

A catalogue entry carries its own inverse link (``objectives.logistic``: sigmoid). A
plain callable ``loss(y, pred)`` has none: its margins are its predictions. ``train(loss,
X, y, link="sigmoid")`` gives it one; the model's objective is then a ``LinkedLoss``, an
``Objective`` holding the callable and the link, so prediction, evaluation metrics,
early stopping, ``compare``, the scikit-learn classifier, model files and the XGBoost
export all read the same link. Training itself never reads the link (the trees are grown
on the loss's margins), so a model trained with a link is the same model, tree for tree,
as the one trained without.

>>> import jax.numpy as jnp
>>> def loss(y, f):
...     return jnp.logaddexp(0.0, f) - y * f
>>> obj = with_link(loss, "sigmoid")
>>> obj, link_name(obj.link), float(obj.link(0.0))
(objectives.with_link(loss, 'sigmoid'), 'sigmoid', 0.5)
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

from ._base import Hyperparameters, Objective, identity, sigmoid, softmax
from .glm import exp_link

#: Inverse links by name: margin -> response. ``"logistic"`` is another name of
#: ``"sigmoid"``.
LINKS = {"identity": identity, "sigmoid": sigmoid, "softmax": softmax, "exp": exp_link}
_ALIASES = {"logistic": "sigmoid"}


def link_name(fn) -> Optional[str]:
    """The name of a named link (``LINKS``), or None for any other callable.

    >>> import objectives
    >>> link_name(objectives.logistic.link), link_name(objectives.poisson.link)
    ('sigmoid', 'exp')
    """
    for name, f in LINKS.items():
        if fn is f:
            return name
    return None


def link_label(fn) -> str:
    """A readable name of a link: its ``LINKS`` name, else its qualname."""
    name = link_name(fn)
    if name is not None:
        return name
    if isinstance(fn, functools.partial):
        return f"functools.partial({link_label(fn.func)})"
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def resolve_link(link) -> Optional[Callable]:
    """``link=`` as a callable: a name of ``LINKS`` (or ``"logistic"``), a callable, or
    None (no link).

    Raises ``ValueError`` for an unknown name and ``TypeError`` for anything else.
    """
    if link is None or callable(link):
        return link
    if isinstance(link, str):
        key = _ALIASES.get(link.strip().lower(), link.strip().lower())
        if key in LINKS:
            return LINKS[key]
        raise ValueError(
            f"unknown link {link!r}; links: {sorted(LINKS)} ('logistic' is "
            f"'sigmoid'), or a JAX callable margin -> response"
        )
    raise TypeError(
        f"link must be a name ({', '.join(repr(n) for n in sorted(LINKS))}), a "
        f"JAX callable margin -> response, or None; got {type(link).__name__}"
    )


def _plain_name(fn) -> str:
    if isinstance(fn, functools.partial):
        return _plain_name(fn.func)
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


@dataclasses.dataclass(frozen=True, repr=False)
class LinkedLoss(Objective):
    """A plain callable loss with an inverse link: what ``train(loss, X, y, link=...)``
    makes the model's objective. ``loss`` is the callable, ``name`` its qualname,
    ``n_outputs`` the model's ``K``; the other fields keep ``Objective``'s defaults
    (exact Hessian, no refit) except ``metric``: ``"objective"``, the mean loss, as for
    plain callables. Made by ``with_link``."""

    metric: str = "objective"

    @property
    def label(self) -> str:
        return self.name

    def _keywords(self) -> dict:
        try:
            return super()._keywords()
        except (TypeError, ValueError):  # a callable without a signature
            return {}

    def __repr__(self):
        link = link_name(self.link)
        link = repr(link) if link is not None else link_label(self.link)
        return f"objectives.with_link({self.name}, {link})"


def with_link(loss, link, n_outputs: int = 1) -> LinkedLoss:
    """The plain callable ``loss(y, pred)`` with an inverse link (a ``LINKS`` name or a
    JAX callable margin -> response), as an ``Objective``.

    Catalogue entries have their own links and are refused (``TypeError``);
    ``train(loss, X, y, link=...)`` is the usual way to get one of these.
    """
    if isinstance(loss, Hyperparameters):
        raise TypeError(f"with_link is for plain callable losses; {loss!r} has its own link")
    if not callable(loss):
        raise TypeError(f"loss must be a callable loss(y, pred), got {type(loss).__name__}")
    fn = resolve_link(link)
    if fn is None:
        raise TypeError("with_link needs a link")
    return LinkedLoss(name=_plain_name(loss), loss=loss, link=fn, n_outputs=int(n_outputs))


def unlink(loss):
    """``(loss, link)``: a ``LinkedLoss`` as its plain callable (its hyperparameters
    bound) and its link; anything else as ``(loss, None)``."""
    if not isinstance(loss, LinkedLoss):
        return loss, None
    inner = loss.loss
    if loss.params:
        inner = functools.partial(inner, **dict(loss.params))
    return inner, loss.link


def attach_link(loss, link, n_outputs: int = 1):
    """``loss`` with ``link`` (a name, callable or None), the rule ``train`` follows:

    * a plain callable: given the link (a ``LinkedLoss``); unchanged when ``link`` is
      None;
    * a catalogue entry (or another ``Objective``, a ``LinkedLoss`` included): keeps its
      own link; ``link`` must be None or that same link, else ``ValueError``.
    """
    fn = resolve_link(link)
    if isinstance(loss, Hyperparameters):
        own = getattr(loss, "link", None)
        if fn is not None and fn is not own:
            raise ValueError(
                f"{loss!r} has its own link ({link_label(own)}); link= is for plain "
                f"callable losses. Leave link= out (or pass {link_label(own)!r}), or "
                f"train the plain loss: train(loss, X, y, link={_quoted(link)})"
            )
        return loss
    if fn is None:
        return loss
    return with_link(loss, fn, n_outputs)


def _quoted(link) -> str:
    return repr(link) if isinstance(link, str) else link_label(link)


__all__ = [
    "LINKS",
    "LinkedLoss",
    "with_link",
    "unlink",
    "attach_link",
    "resolve_link",
    "link_name",
    "link_label",
]
