"""One declaration per training option (``jaxboost.training.options.OPTIONS``): every
entry point takes its parameters, defaults and docs from the table, and they agree."""

import importlib
import inspect

import pytest

import jaxboost
from jaxboost.training import options as opt
from jaxboost.training.config import Settings


def _keyword_options(fn):
    return {
        n: p.default
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind == p.KEYWORD_ONLY and n in opt.BY_NAME
    }


def test_train_takes_every_option_with_its_default_and_doc():
    sig = inspect.signature(jaxboost.train)
    assert list(sig.parameters)[:3] == ["objective", "X", "y"]
    assert list(sig.parameters)[3:] == [o.name for o in opt.OPTIONS]
    assert _keyword_options(jaxboost.train) == opt.defaults()
    doc = jaxboost.train.__doc__
    for o in opt.OPTIONS:
        assert f"{o.name}:" in doc or f"{o.name}," in doc, o.name
        if o.doc:
            assert inspect.cleandoc(o.doc).split("\n")[0] in doc, o.name


def test_train_refuses_an_unknown_option_as_python_does():
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
        jaxboost.train("squared", [[0.0]], [0.0], no_such_option=1)


def test_train_many_takes_the_shared_options_by_name_and_the_others_per_configuration():
    from jaxboost.training import many

    assert _keyword_options(jaxboost.train_many) == opt.defaults(opt.names(many="shared"))
    assert set(many.CONFIG_KEYS) == {"objective", *opt.names(many="config")}
    assert not set(many.CONFIG_KEYS) & set(many.SHARED_KEYS)
    params = inspect.signature(jaxboost.train_many).parameters
    assert list(params)[-1] == "shared" and params["shared"].kind == inspect.Parameter.VAR_KEYWORD
    for name in opt.names(many="shared"):
        assert name in jaxboost.train_many.__doc__


def test_the_estimators_take_the_sklearn_options_by_name_and_any_other_as_kwargs():
    sk = pytest.importorskip("jaxboost.sklearn")
    for est in (sk.JaxBoostRegressor, sk.JaxBoostClassifier):
        params = est().get_params()
        for name in opt.names(sklearn=True):
            assert name in params
            if name != "verbose":  # the estimators are quiet by default
                assert params[name] == opt.BY_NAME[name].default, name
        e = est(hessian_floor=1e-3)  # not a named parameter: **kwargs, as XGBoost's
        assert e.get_params()["hessian_floor"] == 1e-3
        assert e._train_kwargs()["hessian_floor"] == 1e-3
        assert e.set_params(quantize=True).get_params()["quantize"] is True
        with pytest.raises(TypeError, match="n_estimators"):  # fit's check, as XGBoost's
            est(n_rounds=3)._train_kwargs()
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            est(nope=1)._train_kwargs()


def test_hypergrad_knows_each_option_from_the_table():
    hg = importlib.import_module("jaxboost.tuning.hypergrad")
    assert set(hg.BOOSTER_PARAMS) == set(opt.names(hypergrad="differentiable"))
    assert set(hg.STRUCTURAL) == set(opt.names(hypergrad="structural"))
    assert set(hg.NOT_REPLAYED) == set(opt.names(hypergrad="not_replayed"))


def test_the_table_is_well_formed():
    from jaxboost.model.params import DYNAMIC_FIELDS

    assert len(opt.BY_NAME) == len(opt.OPTIONS)
    assert all(o.many in opt.MANY and o.hypergrad in opt.HYPERGRAD for o in opt.OPTIONS)
    assert opt.OPTIONS[0].doc  # the first option has its own doc
    assert set(DYNAMIC_FIELDS) <= set(opt.names(traced=True))
    assert {f.name for f in __import__("dataclasses").fields(opt.Options)} == set(opt.BY_NAME)
    assert "options" in {f.name for f in __import__("dataclasses").fields(Settings)}


def test_a_declared_check_runs_when_the_record_is_made(monkeypatch):
    def positive(name, value):
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value}")

    o = opt.BY_NAME["max_leaves"]
    monkeypatch.setitem(opt.BY_NAME, "max_leaves", o._replace(check=positive))
    with pytest.raises(ValueError, match="max_leaves must be > 0"):
        opt.record("train", {"max_leaves": -1})
    assert opt.record("train", {"max_leaves": 3}).max_leaves == 3
