"""A model's objective in a file: a catalogue entry by name, or a callable by qualname.

A file never names code to import: an ``objectives`` entry is stored as its catalogue
name and hyperparameters (``{"kind": "catalogue", "name": "huber", "params":
{"delta": 2.0}}``) and rebuilt from the catalogue; any other loss is stored as its
``module.qualname`` only (``{"kind": "callable", ...}``), and loading such a model
needs the caller to pass the loss again (``load(path, objective=loss)``). A plain loss
trained with ``link=`` stores its link beside the qualname: a named link by name
(``"link": {"kind": "named", "name": "sigmoid"}``, restored on load), a callable link by
qualname (``{"kind": "callable", "qualname": ...}``: the caller passes it again,
``load(path, objective=loss, link=fn)``).

>>> import objectives
>>> d = objective_to_dict(objectives.huber(delta=2.0)); d
{'kind': 'catalogue', 'name': 'huber', 'params': {'delta': 2.0}}
>>> objective_from_dict(d, 1) == objectives.huber(delta=2.0)
True
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

from ..errors import ModelFormatError
from .checks import as_int, as_object, check_keys, check_scalar, fail, json_scalar


class StoredCallable(NamedTuple):
    """A file's callable objective: the loss's qualname, and its link (None; a named
    link's function; or a callable link's qualname, a ``str``)."""

    qualname: str
    link: Optional[Union[str, object]] = None


class MissingLoss:
    """Stands for a file's custom loss that ``jaxboost.load`` was not given: the model
    predicts (its link is stored by name), saves and explains as any; whatever
    evaluates the loss (training on from it, the ``"loss"`` metric) raises a
    ``TypeError`` that says to pass the loss. It saves under the stored qualname."""

    def __init__(self, qualname: str):
        self.stored_qualname = qualname
        module, _, name = qualname.rpartition(".")
        self.__module__ = module
        self.__qualname__ = name
        self.__name__ = name.rsplit(".", 1)[-1]

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"this model was loaded without its custom loss {self.stored_qualname}: "
            f"predicting needs only the stored link, but this needs the loss itself; "
            f"load it with jaxboost.load(path, objective={self.__name__})"
        )

    def __repr__(self) -> str:
        return f"<custom loss {self.stored_qualname}, not loaded>"


def _catalogue():
    """Per-row and group entries by name (the names are distinct)."""
    from objectives import CATALOGUE, GROUP_CATALOGUE

    return {**CATALOGUE, **GROUP_CATALOGUE}


def _qualname(fn) -> str:
    import functools

    if isinstance(fn, functools.partial):
        return f"functools.partial({_qualname(fn.func)})"
    module = getattr(fn, "__module__", None) or type(fn).__module__
    name = (
        getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    )
    return f"{module}.{name}"


def objective_to_dict(obj) -> dict:
    """The file's ``objective`` key: a catalogue entry with its hyperparameters, or the
    qualname of a callable (see ``format``)."""
    from objectives import (
        GroupObjective,
        LinkedLoss,
        MultiQuantile,
        MultiTarget,
        Objective,
        link_name,
    )

    if isinstance(obj, LinkedLoss):
        name = link_name(obj.link)
        link = (
            {"kind": "named", "name": name}
            if name is not None
            else {"kind": "callable", "qualname": _qualname(obj.link)}
        )
        return {"kind": "callable", "qualname": _qualname(obj.loss), "link": link}
    if isinstance(obj, MultiQuantile):  # the levels as quantile's alpha, a list
        return {"kind": "catalogue", "name": obj.name, "params": {"alpha": list(obj.alphas)}}
    if isinstance(obj, MultiTarget):  # the entry; the file's n_outputs counts the targets
        obj = obj.single
    if isinstance(obj, (Objective, GroupObjective)):
        params = {
            k: json_scalar(v, f"objectives.{obj.name} hyperparameter {k}") for k, v in obj.params
        }
        entry = _catalogue().get(obj.name)
        if entry is not None:
            try:
                same = entry.with_params(**params) == obj
            except (TypeError, ValueError):
                same = False
            if same:
                return {"kind": "catalogue", "name": obj.name, "params": params}
        return {"kind": "callable", "qualname": _qualname(obj.loss)}
    return {"kind": "callable", "qualname": _qualname(obj)}


def objective_from_dict(d, K):
    """The stored objective: an ``Objective``, or a ``StoredCallable`` (a callable's
    qualname and link)."""
    where = "objective"
    as_object(d, where)
    if "kind" not in d:
        raise ModelFormatError(f"{where}: missing key(s) ['kind']")
    kind = d["kind"]
    if kind == "callable":
        check_keys(d, where, ("kind", "qualname"), ("link",))
        if not isinstance(d["qualname"], str):
            fail(f"{where}.qualname", "a string", d["qualname"])
        return StoredCallable(d["qualname"], _link_from_dict(d.get("link"), K))
    if kind != "catalogue":
        fail(f"{where}.kind", '"catalogue" or "callable"', kind)
    check_keys(d, where, ("kind", "name", "params"))
    name = d["name"]
    catalogue = _catalogue()
    if not isinstance(name, str) or name not in catalogue:
        fail(f"{where}.name", f"a catalogue entry, one of {sorted(catalogue)}", name)
    params = as_object(d["params"], f"{where}.params")
    if name == "quantile" and isinstance(params.get("alpha"), list):
        return _levels(params, K, where)
    for k, v in params.items():
        check_scalar(v, f"{where}.params.{k}")
    n_key = catalogue[name].n_outputs  # softmax: "n_classes", which must be an int
    if isinstance(n_key, str) and params.get(n_key) is not None:
        as_int(params[n_key], f"{where}.params.{n_key}", lo=1)
    try:
        obj = catalogue[name].with_params(**params)
    except (TypeError, ValueError) as e:  # unknown keyword, or a value out of its domain
        raise ModelFormatError(f"{where}.params: {e}") from None
    try:
        k = obj.outputs
    except (TypeError, ValueError):
        fail(
            f"{where}.params", f"a valid number of outputs for objectives.{name}", dict(obj.params)
        )
    return _sized(
        obj,
        k,
        K,
        lambda: ModelFormatError(
            f"{where}: objectives.{name} has {k} output(s) but n_outputs is {K}"
        ),
        targets=True,  # an entry of one output with K >= 2: K targets
    )


def _levels(params, K, where):
    """``objectives.multi_quantile`` of a file's ``quantile`` entry whose ``alpha`` is
    the list of its K levels."""
    from objectives import multi_quantile

    check_keys(params, f"{where}.params", ("alpha",))
    levels = params["alpha"]
    for i, v in enumerate(levels):
        check_scalar(v, f"{where}.params.alpha[{i}]")
    if len(levels) != K or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1 for v in levels
    ):
        fail(f"{where}.params.alpha", f"n_outputs = {K} levels in (0, 1)", levels)
    return multi_quantile(levels)


def _sized(obj, k, K, error, targets=False):
    """``obj`` with ``K`` outputs: an entry whose class count is a parameter gets it, an
    entry of one output ``K`` targets when ``targets`` (a multi-target model:
    ``objectives.multi_target``), one with ``k != K`` fixed outputs raises
    ``error()``."""
    from objectives import MultiTarget, multi_target
    from objectives._targets import not_per_target

    if k is None and isinstance(obj.n_outputs, str):
        return obj.with_params(**{obj.n_outputs: K})
    if targets and k == 1 and K >= 2 and not not_per_target(obj):
        if not isinstance(obj, MultiTarget):
            return multi_target(obj, K)
    if k != K:
        raise error()
    return obj


def _link_from_dict(d, K):
    from objectives import LINKS

    where = "objective.link"
    if d is None:
        return None
    as_object(d, where)
    kind = d.get("kind")
    if kind == "named":
        check_keys(d, where, ("kind", "name"))
        if d["name"] not in LINKS:
            fail(f"{where}.name", f"a link name, one of {sorted(LINKS)}", d["name"])
        if d["name"] == "softmax" and K == 1:
            fail(f"{where}.name", "a link of one output (softmax needs n_outputs >= 2)", d["name"])
        return LINKS[d["name"]]
    if kind == "callable":
        check_keys(d, where, ("kind", "qualname"))
        if not isinstance(d["qualname"], str):
            fail(f"{where}.qualname", "a string", d["qualname"])
        return d["qualname"]
    fail(f"{where}.kind", '"named" or "callable"', kind)


def with_stored_link(objective, stored, link, K):
    """The objective a loaded model gets: ``objective`` (the caller's, through
    ``given_objective``) with ``link`` (the caller's: a name or callable), else with
    the link the file stored for the callable. An ``Objective`` keeps its own link
    (``link``, if given, must be the same). A custom link stored by qualname must be
    passed again (``TypeError``)."""
    from objectives import Objective, attach_link

    stored_link = stored.link if isinstance(stored, StoredCallable) else None
    if link is None and not isinstance(objective, Objective):
        if isinstance(stored_link, str):
            raise TypeError(
                f"this model's loss {stored.qualname} has the custom link "
                f"{stored_link}; pass both again: jaxboost.load(path, "
                f"objective={stored.qualname.rsplit('.', 1)[-1]}, "
                f"link={stored_link.rsplit('.', 1)[-1]})"
            )
        link = stored_link
    return attach_link(objective, link, K)


def given_objective(objective, K, targets=False):
    """A caller's ``objective=``: a name, an ``Objective`` or a callable; an entry of
    one output stands for its ``K`` targets when ``targets`` (the file's model is a
    multi-target one)."""
    from objectives import Objective
    from objectives import resolve as resolve_objective

    objective = resolve_objective(objective)  # name -> entry; ValueError / TypeError
    if isinstance(objective, Objective):
        k = objective.outputs
        objective = _sized(
            objective,
            k,
            K,
            lambda: ValueError(f"objective {objective!r} has {k} output(s) but the model has {K}"),
            targets=targets,
        )
    return objective
