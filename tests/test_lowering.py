"""The accelerator path lowers: the training round, evaluation and predict programs,
exported with ``jax.export`` for ``cuda`` and ``tpu`` (no GPU or TPU needed).

The programs are the ones ``train`` dispatches on an accelerator: the pure-JAX histogram
(``training.data.use_native`` made to answer False, as it does off CPU) with the
subtraction trick (``JAXBOOST_SUBTRACT=1``, ``training.program.use_subtraction``'s
default off CPU), captured from real ``train`` calls on CPU. Each exported module is
read as text and must hold:

* no custom call outside ``PORTABLE_TARGETS`` (the native CPU kernel's FFI target or a
  host callback would be one) and no host callback of any kind;
* no complex128 (TPUs have none; on GPUs it would mean the CPU histogram);
* on TPU, no scatter with one index per row (the one-hot histogram has none) and no
  float64 per row, except the root's float64 totals (a convert and a reduction, which
  TPUs emulate; ``ALLOWED_TPU_ROW64``);
* each platform its own histogram: int64 scatter on CUDA, int8 matrix products on TPU.

Training configurations that are only lowered stop at their first round program
(``_Captured``), so they compile nothing on CPU but the intercept fit.
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import jaxboost
from jaxboost.model import booster as booster_module
from jaxboost.training import data as data_module
from jaxboost.training import evaluation, loop

PORTABLE_TARGETS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"}
"""Custom calls every backend implements (sharding annotations)."""

ALLOWED_TPU_ROW64 = {("stablehlo.convert", "f64"), ("stablehlo.reduce", "f64")}
"""(op, type) pairs allowed per row on TPU: the root's float64 sums of g and h."""

_TENSOR = re.compile(r"tensor<((?:\d+x)*)([a-z0-9<>]+)>")


class _Captured(Exception):
    """Raised by the round-program spy to stop a training after its first dispatch."""


@pytest.fixture
def accelerator_path(monkeypatch):
    # what training.data.use_native decides off CPU (the native kernel's availability
    # is cached per process, so the environment variable alone comes too late)
    monkeypatch.setattr(data_module, "use_native", lambda: False)
    # and prediction off CPU: the compiled predict_margin, not the native kernel
    monkeypatch.setattr(booster_module, "native_predict_enabled", lambda: False)
    monkeypatch.setenv("JAXBOOST_SUBTRACT", "1")
    monkeypatch.delenv("JAXBOOST_HISTOGRAM", raising=False)


def _abstract(tree):
    """Arrays as ``jax.ShapeDtypeStruct`` (donated buffers may be gone), the rest kept."""

    def one(x):
        if isinstance(x, (np.ndarray, jax.Array, np.generic)):
            return jax.ShapeDtypeStruct(
                np.shape(x), np.asarray(x).dtype if isinstance(x, np.generic) else x.dtype
            )
        return x

    return jax.tree.map(one, tree)


def _spy(monkeypatch, module, name, calls, stop=False):
    fn = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append((name, fn, _abstract(args), _abstract(kwargs)))
        if stop:
            raise _Captured
        return fn(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


def _export(fn, args, kwargs, platform):
    exported = jax.export.export(fn, platforms=(platform,))(*args, **kwargs)
    return exported.mlir_module()


def _row_tensors(text, n_rows):
    """``{(op, element type)}`` of the 64-bit float tensors with a dimension of
    ``n_rows`` (64-bit integers per row, the row samplers' hashes, are exact when a TPU
    emulates them)."""
    found = set()
    for line in text.splitlines():
        for m in _TENSOR.finditer(line):
            dims = [int(d) for d in m.group(1).split("x") if d]
            if n_rows in dims and m.group(2) in ("f64", "complex<f64>"):
                op = re.search(r"(stablehlo\.\w+)", line)
                found.add((op.group(1) if op else line.strip()[:40], m.group(2)))
    return found


def _scatters(text):
    """The ``(operand, indices, updates) -> result`` types of every scatter."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if '"stablehlo.scatter"' in line:
            j = i
            while not re.match(r"\s*\}\) : \(", lines[j]):
                j += 1
            out.append(lines[j].strip())
    return out


def check_module(text, platform, n_rows, *, table_max=0, row_f64=ALLOWED_TPU_ROW64):
    """The properties of one exported module (see the module docstring); returns the
    custom-call targets found. On TPU a per-row scatter may only add into a table of at
    most ``table_max`` entries (a tree's nodes: the leaf sums of a refit), and float64
    per row only in the ``(op, type)`` pairs of ``row_f64``."""
    targets = set(re.findall(r"custom_call @([\w.]+)", text)) | set(
        re.findall(r'call_target_name = "([^"]+)"', text)
    )
    assert targets <= PORTABLE_TARGETS, (platform, targets - PORTABLE_TARGETS)
    assert "callback" not in text.lower(), platform
    assert "complex<f64>" not in text, platform
    if platform == "tpu":
        if row_f64 is not None:
            row64 = _row_tensors(text, n_rows)
            assert row64 <= row_f64, row64 - row_f64
        for s in _scatters(text):
            operand, indices = _TENSOR.findall(s)[:2]
            dims = [int(d) for d in indices[0].split("x") if d]
            size = int(np.prod([int(d) for d in operand[0].split("x") if d]))
            assert n_rows not in dims or size <= table_max, f"per-row scatter on TPU: {s}"
    return targets


def _rows_of(call):
    """Padded training rows of a captured round program (``Rows.w``)."""
    return call[2][3].w.shape[0]


def _lower_round(call):
    _, fn, args, kwargs = call
    n = _rows_of(call)
    spec = args[0][0]
    # the Newton leaf refit sums float64 per row into the leaves (exact refits; a
    # TPU emulates float64): allowed there, with its small per-row scatters (its step
    # sizes' leaf losses in one scatter of a column per size: nodes x sizes entries)
    from jaxboost.engine.refit import _STEP_SIZES

    refit = spec.refit is not None
    texts = {}
    for platform in ("cuda", "tpu"):
        texts[platform] = _export(fn, args, kwargs, platform)
        check_module(
            texts[platform],
            platform,
            n,
            table_max=2 ** (spec.max_depth + 1) * len(_STEP_SIZES) if refit else 0,
            row_f64=None if refit else ALLOWED_TPU_ROW64,
        )
    return texts


def _data(n=300, f=5, seed=0):  # 304 padded rows: no other dimension is 304
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[::9, 1] = np.nan
    return X, rng


def test_round_evaluation_and_predict_lower_for_cuda_and_tpu(accelerator_path, monkeypatch):
    X, rng = _data()
    y = (X[:, 0] + 0.3 * rng.normal(size=len(X)) > 0).astype(np.float32)
    calls = []
    _spy(monkeypatch, loop, "run_chunk", calls)
    _spy(monkeypatch, evaluation, "chunk_margins", calls)
    _spy(monkeypatch, evaluation, "chunk_metrics", calls)
    _spy(monkeypatch, booster_module, "predict_margin", calls)
    b = jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=2,
        max_depth=3,
        eval_set=[(X[:60], y[:60])],
        eval_metric=["logloss", "auc"],
    )
    b.predict(X[:30])
    names = [c[0] for c in calls]
    assert {"run_chunk", "chunk_margins", "chunk_metrics", "predict_margin"} <= set(names)
    spec = calls[names.index("run_chunk")][2][0][0]
    assert not spec.native and spec.subtract  # the accelerators' program
    texts = _lower_round(calls[names.index("run_chunk")])
    # each platform its own histogram: int64 scatter (GPU), int8 products (TPU)
    assert any("xi64>" in s for s in _scatters(texts["cuda"]))
    assert re.search(r"stablehlo\.dot_general.*tensor<[0-9x]+i8>", texts["tpu"])
    assert not re.search(r"stablehlo\.dot_general.*tensor<[0-9x]+i8>", texts["cuda"])
    for name in ("chunk_margins", "chunk_metrics", "predict_margin"):
        _, fn, args, kwargs = calls[names.index(name)]
        for platform in ("cuda", "tpu"):
            check_module(_export(fn, args, kwargs, platform), platform, n_rows=-1)


@pytest.mark.parametrize(
    "loss,kw",
    [
        ("squared", dict(max_depth=1)),
        ("softmax", dict(max_depth=4, subsample=0.8, colsample_bytree=0.7)),
        ("user", dict(max_depth=3, refit="newton")),
        ("logistic", dict(max_depth=2, num_parallel_tree=3, subsample=0.5)),
        ("logistic", dict(max_depth=3, categorical=True)),
    ],
)
def test_round_program_lowers(accelerator_path, monkeypatch, loss, kw):
    import jax.numpy as jnp

    X, rng = _data(seed=1)
    kw = dict(kw)
    y = (X[:, 0] > 0).astype(np.float32)
    if loss == "softmax":
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float32)
        kw["n_outputs"] = 3
    if loss == "user":

        def loss(y, f):  # pseudo-Huber, written by a user
            return jnp.sqrt(1.0 + (f - y) ** 2) - 1.0

        y = X[:, 0] * 2.0
    if kw.pop("categorical", False):
        pd = pytest.importorskip("pandas")
        frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
        frame["c"] = pd.Categorical(rng.choice(list("abcd"), len(X)))
        X = frame
    calls = []
    _spy(monkeypatch, loop, "run_chunk", calls, stop=True)
    with pytest.raises(_Captured):
        jaxboost.train(loss, X, y, n_rounds=1, **kw)
    _lower_round(calls[0])


def test_tpu_check_refuses_the_cpu_histogram(monkeypatch):
    """The checks catch what they are for: the CPU formulation, lowered for TPU, has a
    per-row complex128 scatter."""
    from jaxboost.engine import histogram

    monkeypatch.setenv("JAXBOOST_HISTOGRAM", "scatter")
    bins = jax.ShapeDtypeStruct((3, 96), np.uint8)
    rows = jax.ShapeDtypeStruct((96,), np.float32)
    node = jax.ShapeDtypeStruct((96,), np.int32)
    fn = jax.jit(lambda b, g, h, n: histogram.histogram(b, g, h, n, 4, 16))
    text = _export(fn, (bins, rows, rows, node), {}, "tpu")
    with pytest.raises(AssertionError):
        check_module(text, "tpu", 96)
    monkeypatch.delenv("JAXBOOST_HISTOGRAM")
    fn = jax.jit(lambda b, g, h, n: histogram.histogram(b, g, h, n, 4, 16))  # traced anew
    check_module(_export(fn, (bins, rows, rows, node), {}, "tpu"), "tpu", 96)
