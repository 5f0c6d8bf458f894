"""A loss written the same way as one trained before reuses its compiled programs
(``jaxboost.engine.same_code``): a notebook cell run again, or ``train(lambda ...)`` in
a loop, made a new function object each time and traced, lowered and compiled the
round program again. What may not share: another constant, another global value,
another helper, ``-0.0`` for ``0.0``."""

import jax.numpy as jnp
import numpy as np

import jaxboost
from jaxboost.engine.same_code import canonical

KW = dict(n_rounds=5, max_depth=3, verbose=False)


def _cell(source, env=None):
    """The function ``loss`` that running ``source`` defines, as a notebook cell would
    (a fresh code object each run), in ``env`` (a globals dict)."""
    env = {"jnp": jnp} if env is None else env
    exec(compile(source, "<cell>", "exec"), env)
    return env["loss"]


SQUARED = "def loss(y, f):\n    return 0.5 * (y - f) ** 2 * SCALE\n"


def test_a_cell_run_again_trains_without_compiling_or_tracing(small_binary, compile_counter):
    X, y = small_binary
    first = _cell(SQUARED, {"jnp": jnp, "SCALE": 1.0})
    again = _cell(SQUARED, {"jnp": jnp, "SCALE": 1.0})
    assert first is not again and canonical(again) is canonical(first)
    want = jaxboost.train(first, X, y, **KW).predict(X)
    with compile_counter as c:
        got = jaxboost.train(again, X, y, **KW).predict(X)
    assert c.count == 0
    np.testing.assert_array_equal(got, want)


def test_another_global_value_is_another_loss(small_binary):
    X, y = small_binary
    one = _cell(SQUARED, {"jnp": jnp, "SCALE": 1.0})
    two = _cell(SQUARED, {"jnp": jnp, "SCALE": 4.0})
    assert canonical(two) is not canonical(one)
    a = jaxboost.train(one, X, y, **KW).predict(X)
    b = jaxboost.train(two, X, y, **KW).predict(X)
    assert not np.array_equal(a, b)  # a loss 4x as large: other leaf values


def test_closures_defaults_and_helpers_compare_by_value_or_code():
    def scaled(s):
        return lambda y, f: s * (y - f) ** 2

    assert canonical(scaled(2.0)) is canonical(scaled(2.0))
    assert canonical(scaled(0.0)) is not canonical(scaled(-0.0))
    assert canonical(scaled(1)) is not canonical(scaled(1.0))  # int and float differ

    def weighted(w):
        return lambda y, f: jnp.sum(w * (y - f) ** 2)

    w = np.array([1.0, 2.0], np.float32)
    assert canonical(weighted(w)) is canonical(weighted(w.copy()))
    assert canonical(weighted(w)) is not canonical(weighted(w * 2))

    helper = "def h(r):\n    return r ** 2\ndef loss(y, f):\n    return h(y - f)\n"
    other = "def h(r):\n    return abs(r)\ndef loss(y, f):\n    return h(y - f)\n"
    assert canonical(_cell(helper)) is canonical(_cell(helper))
    assert canonical(_cell(other)) is not canonical(_cell(helper))

    def with_default(y, f, d=1.0):
        return d * (y - f) ** 2

    def other_default(y, f, d=2.0):
        return d * (y - f) ** 2

    assert canonical(other_default) is not canonical(with_default)


def test_what_cannot_be_keyed_stays_itself():
    def tagged(y, f):
        return (y - f) ** 2

    tagged.note = "an attribute"
    assert canonical(tagged) is tagged

    class Loss:
        def __call__(self, y, f):
            return (y - f) ** 2

    obj = Loss()
    assert canonical(obj) is obj
    assert canonical(None) is None


def test_what_may_change_in_place_is_never_shared(small_binary):
    """A dict (or list, or large array) read by the loss may be changed in place
    between two runs of a cell: sharing would run the program traced with the old
    contents, so such losses keep their own programs and train on the new contents."""
    X, y = small_binary
    env = {"jnp": jnp, "P": {"scale": 1.0}}
    source = 'def loss(y, f):\n    return 0.5 * (y - f) ** 2 * P["scale"]\n'
    one = _cell(source, env)
    assert canonical(one) is one and canonical(_cell(source, env)) is not one
    a = jaxboost.train(one, X, y, **KW).predict(X)
    env["P"]["scale"] = 4.0
    b = jaxboost.train(_cell(source, env), X, y, **KW).predict(X)
    assert not np.array_equal(a, b)

    def capture(arr):
        return lambda y, f: jnp.sum(arr) * (y - f) ** 2

    big = np.ones(100_000, np.float32)  # above MAX_ARRAY
    assert canonical(capture(big)) is not canonical(capture(big))


def test_the_registry_keeps_nothing_alive():
    """Remembered functions are held weakly: a loss (and what it captured) is freed when
    the user drops it, and a later loss written the same way is remembered anew."""
    import gc
    import weakref

    def make():
        return lambda y, f: 3.0 * (y - f) ** 2

    fn = make()
    assert canonical(fn) is fn and canonical(make()) is fn
    alive = weakref.ref(fn)
    del fn
    gc.collect()
    assert alive() is None
    again = make()
    assert canonical(again) is again


def test_a_users_own_module_or_class_is_not_read_by_identity():
    """Attributes of a user's module or class may be changed between two runs of a
    cell, so a loss reading them is not shared; JAX's and NumPy's are."""
    import types

    mod = types.ModuleType("my_settings")
    mod.scale = 2.0

    def reads(m):
        return lambda y, f: m.scale * (y - f) ** 2

    assert canonical(reads(mod)) is not canonical(reads(mod))

    def uses_jnp():
        return lambda y, f: jnp.square(y - f) + np.float32(0.5) * jnp.abs(f)

    assert canonical(uses_jnp()) is canonical(uses_jnp())
