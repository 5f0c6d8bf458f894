r"""From a per-row loss to per-row gradients and Hessians.

For a scalar margin ``f`` and loss :math:`\ell(y, f)`:

.. math::  g_i = w_i\,\partial_f \ell(y_i, f_i), \qquad h_i = w_i\,\partial_f^2 \ell(y_i, f_i)

computed in one forward-over-reverse pass, ``jax.jvp`` of ``jax.grad``, vmapped over
rows (one pass instead of a gradient pass plus a Hessian pass).

For ``K`` margins per row the full Hessian is ``K x K`` per row, ``4 N K^2`` bytes in
float32: 4 GB at ``N = 100,000`` rows and ``K = 100`` classes. It is formed only where it
is used, for a ``multi_output_tree`` with ``multi_hessian="full"`` and for the
base-margin fit (in chunks of rows there, ``BASE_MARGIN_CHUNK``). Trees that read only
its diagonal (one tree per output, the default; ``multi_hessian="diagonal"``) get the
``(N, K)`` diagonal directly (``grad_hess_diagonal``).
"""

from __future__ import annotations

import functools
import inspect
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from objectives import Objective
from objectives._base import Hyperparameters

from .._types import ACC_DTYPE, FLOAT_DTYPE
from ..errors import LossError
from ..inputs.numbers import is_real
from .compile import backend_jit
from .smallmat import eigh, positive_definite


def takes_keyword(fn, name: str, *, any_keyword: bool = True) -> bool:
    """Whether the callable ``fn`` accepts a keyword argument ``name`` (by name, or by
    ``**kwargs`` when ``any_keyword``); False for what has no signature.

    >>> takes_keyword(lambda y, f, *, gamma=2.0: f, "gamma"), takes_keyword(len, "gamma")
    (True, False)
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.name == name
        and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        or (any_keyword and p.kind == p.VAR_KEYWORD)
        for p in params
    )


def loss_name(loss) -> str:
    """A readable name for a loss callable, for error messages."""
    if isinstance(loss, Hyperparameters):
        return loss.label
    if isinstance(loss, functools.partial):
        return loss_name(loss.func)
    return getattr(loss, "__qualname__", None) or getattr(loss, "__name__", None) or repr(loss)


def split_loss(loss, loss_params=None):
    """``(family, values)``: what of a loss is compiled and what is traced.

    Continuous hyperparameters are passed to compiled programs as values, so a sweep
    over them compiles nothing new:

    * an ``objectives`` entry: its float hyperparameters (``Objective.traced_split``);
    * a plain callable with ``loss_params``: ``loss(y, pred, **loss_params)``, the
      values traced;
    * ``functools.partial(loss, delta=2.0)`` with numeric keywords only: the same as
      ``loss`` with ``loss_params={"delta": 2.0}``.

    ``bind_loss(family, values)`` makes the callable back (inside a program).

    Example:
      >>> import functools, jax.numpy as jnp
      >>> def ph(y, p, *, delta):
      ...     return delta ** 2 * (jnp.sqrt(1 + ((p - y) / delta) ** 2) - 1)
      >>> fam, vals = split_loss(functools.partial(ph, delta=2.0))
      >>> fam is ph, vals
      (True, {'delta': 2.0})
    """
    if isinstance(loss, Hyperparameters):
        if loss_params:
            raise TypeError(
                f"loss_params is for plain callables; set the hyperparameters "
                f"of objectives.{loss.name} with objectives.{loss.name}(...)"
            )
        return loss.traced_split()
    if (
        loss_params is None
        and isinstance(loss, functools.partial)
        and not loss.args
        and loss.keywords
        and all(is_real(v) for v in loss.keywords.values())
    ):
        return loss.func, {k: float(v) for k, v in loss.keywords.items()}
    return loss, dict(loss_params or {})


def bind_loss(family, values):
    """The callable loss of ``family`` with hyperparameter ``values`` (see
    ``split_loss``)."""
    if not values:
        return family
    if isinstance(family, Hyperparameters):
        return family.bind(values)
    return functools.partial(family, **values)


HESSIAN_FLOOR = 1e-6
"""Default floor of ``hessian="clip"``: h becomes ``max(h, floor)`` per row (before the
sample weight), or, for a ``K x K`` Hessian, its eigenvalues are raised to the floor."""


def n_outputs_of(loss) -> int:
    """Margins per row ``K`` of a loss (1 for plain callables)."""
    if isinstance(loss, Objective):
        k = loss.outputs
        if k is None:
            raise ValueError(
                f"objectives.{loss.name} needs its number of outputs; it is "
                f"inferred from the labels in train()"
            )
        return k
    return 1


LINALG_PRIMITIVES = frozenset(
    {
        "cholesky",
        "eig",
        "eigh",
        "lu",
        "qr",
        "geqrf",
        "geqp3",
        "householder_product",
        "svd",
        "triangular_solve",
        "tridiagonal",
        "tridiagonal_solve",
        "schur",
        "hessenberg",
    }
)
"""JAX primitives that the CPU backend runs as LAPACK calls (``jnp.linalg``,
``jax.scipy.linalg``)."""

LAPACK_TASK_WORK = 200_000
"""jaxlib's LAPACK kernels split a batch into tasks on XLA's thread pool (and block
their own thread until those have run) only when the batch's work, matrices times a
per-matrix cost, reaches this (``kMinWorkPerTask`` in jaxlib's ``lapack_kernels.cc``);
smaller batches run inline on the calling thread."""


LAPACK_WORK_FACTOR = {
    "lu": 4,
    "triangular_solve": 4,
    "cholesky": 4,
    "qr": 4,
    "geqrf": 4,
    "householder_product": 4,
}
"""Per primitive, ``c`` of the work bound ``c * size * max(m, n)`` of one call on an
``(..., m, n)`` operand (times 3 for complex numbers): at least jaxlib's own estimate
(``m n min(m, n)`` for LU, ``m n m`` for triangular solves, ``2 m n min(m, n)`` for QR,
``4 m n k`` for its Householder product). The other primitives (eigenvalues, SVD,
Schur, Hessenberg) get 32."""


def _linalg_work(jaxpr) -> int:
    """The largest work bound of one LAPACK call (``LAPACK_WORK_FACTOR``) over the
    LAPACK primitives of a jaxpr and its sub-jaxprs; 0 when there are none."""
    work = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in LINALG_PRIMITIVES:
            c = LAPACK_WORK_FACTOR.get(eqn.primitive.name, 32)
            for v in eqn.invars:
                shape = getattr(v.aval, "shape", ())
                if len(shape) >= 2:
                    cx = 3 if jnp.issubdtype(v.aval.dtype, jnp.complexfloating) else 1
                    work = max(work, c * cx * int(np.prod(shape)) * max(shape[-2:]))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    work = max(work, _linalg_work(inner))
    return work


def map_rows(fn, *args):
    """``jax.vmap(fn)(*args)`` over the rows (leading axis) of ``args``, for a per-row
    function of a user's loss; on the CPU, when ``fn`` calls LAPACK (``jnp.linalg``:
    solves, determinants, Cholesky...), in chunks of rows (``lax.map``) small enough
    that no LAPACK call splits its batch into pool tasks (``LAPACK_TASK_WORK``).

    Why: such a call blocks its thread of XLA's pool until its tasks have run, and
    XLA runs independent calls side by side; with as many of them as the pool has
    threads (two on a 2-core machine: a loss's solve and log-determinant) the program
    never finishes. Chunked, the calls run inline and cannot block; the results are the
    vmapped ones.

    Arguments of 32 bits or fewer are mapped with 64-bit types off (``enable_x64``),
    also where the caller sums in float64 under ``jax.enable_x64(True)``: a loss is
    then traced as in a training round (``jnp.argmax`` in a loss traced with 64-bit
    indices failed to compile: int32 against int64).

    >>> import jax.numpy as jnp
    >>> map_rows(lambda a, b: a * b, jnp.arange(3.0), jnp.ones(3)).tolist()
    [0.0, 1.0, 2.0]
    """
    if all(jnp.dtype(x.dtype).itemsize <= 4 for x in jax.tree.leaves(args)):
        with jax.enable_x64(False):
            return _map_rows(fn, *args)
    return _map_rows(fn, *args)


def _map_rows(fn, *args):
    if jax.default_backend() == "cpu":
        rows = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), args)
        work = _linalg_work(jax.make_jaxpr(fn)(*rows).jaxpr) * _outer_batch(args)
        n = jax.tree.leaves(args)[0].shape[0]
        if work > 0 and n * work >= LAPACK_TASK_WORK:
            size = max(1, (LAPACK_TASK_WORK - 1) // work)
            return jax.lax.map(lambda a: fn(*a), args, batch_size=size)
    return jax.vmap(fn)(*args)


def _outer_batch(args) -> int:
    """How many copies of ``args`` an enclosing ``jax.vmap`` batches together (the
    staged evaluation of a chunk's rounds, say): each LAPACK call's batch is that many
    times the chunk's. 1 outside ``vmap``, or where JAX's tracer types are not found."""
    try:
        from jax._src.interpreters.batching import BatchTracer
    except ImportError:  # pragma: no cover - a JAX without this module
        return 1
    most = 1
    for x in jax.tree.leaves(args):
        size = 1
        while isinstance(x, BatchTracer):
            if isinstance(x.batch_dim, int):
                size *= int(x.val.shape[x.batch_dim])
            x = x.val
        most = max(most, size)
    return most


def _row_grad_hess(loss, n_outputs: int = 1):
    """``(y, f) -> (g, h)`` for one row: scalars, or ``(K,)`` and ``(K, K)``."""
    if isinstance(loss, Objective) and loss.grad_hess is not None:
        return loss.row_grad_hess()
    d_loss = jax.grad(loss, argnums=1)
    if n_outputs > 1:

        def gh_vec(y, f):
            g = d_loss(y, f)
            return g, jax.jacfwd(d_loss, argnums=1)(y, f)

        return gh_vec

    def gh(y, f):
        return jax.jvp(lambda p: d_loss(y, p), (f,), (jnp.ones_like(f),))

    return gh


def grad_hess_diagonal(loss, y, pred):
    r"""Per-row g ``(N, K)`` and the diagonal of the per-row Hessians ``(N, K)``,
    without forming any ``(N, K, K)`` array.

    * an ``objectives`` entry with ``grad_hess_diag`` (softmax): that closed form,
      ``O(K)`` per row;
    * another entry with a closed-form ``grad_hess``: its ``h``'s diagonal, row by row;
    * otherwise autodiff: :math:`d_k = e_k^\top \nabla^2 \ell\, e_k`, the ``k``-th
      entry of a forward-over-reverse pass (``jax.jvp`` of ``jax.grad``) along the unit
      vector :math:`e_k`, one ``k`` at a time (``lax.map``): ``O(N K)`` memory, the
      work of ``K`` Hessian-vector products (what ``jax.jacfwd`` does all at once in
      ``O(N K^2)`` memory).

    Example:
      >>> import jax.numpy as jnp
      >>> def loss(y, p):  # independent outputs: diagonal (2, 6 p_1)
      ...     return jnp.sum((p - y) ** 2) + p[1] ** 3
      >>> g, d = grad_hess_diagonal(loss, jnp.zeros(1), jnp.array([[1.0, 2.0]]))
      >>> g.tolist(), d.tolist()
      ([[2.0, 16.0]], [[2.0, 14.0]])
    """
    K = pred.shape[1]
    if isinstance(loss, Objective) and loss.grad_hess_diag is not None:
        return map_rows(loss.row_grad_hess_diag(), y, pred)
    if isinstance(loss, Objective) and loss.grad_hess is not None:
        gh = loss.row_grad_hess()

        def row(yy, f):
            g, h = gh(yy, f)
            return g, jnp.diagonal(h)

        return map_rows(row, y, pred)
    d_loss = jax.grad(loss, argnums=1)
    g = map_rows(d_loss, y, pred)

    def entry(k):
        e = jnp.broadcast_to(jax.nn.one_hot(k, K, dtype=pred.dtype), pred.shape)
        hv = map_rows(lambda yy, f, v: jax.jvp(lambda p: d_loss(yy, p), (f,), (v,))[1], y, pred, e)
        return hv[:, k]

    return g, jax.lax.map(entry, jnp.arange(K)).T


def _clip_matrix(h, floor):
    """Raise the eigenvalues of symmetric ``(..., K, K)`` matrices to ``floor``
    (``smallmat.eigh``: Jacobi rotations in plain array operations; LAPACK's ``eigh``
    deadlocked fits running in several Python threads at once)."""
    h = 0.5 * (h + jnp.swapaxes(h, -1, -2))
    lam, vec = eigh(h)
    lam = jnp.maximum(lam, floor)
    return jnp.einsum("...ik,...k,...jk->...ij", vec, lam, vec)


PSD_TOL = 1e-5
"""A ``K x K`` Hessian counts as not positive semi-definite when its smallest eigenvalue
is below ``-PSD_TOL`` times its size: its largest eigenvalue in size for ``K = 2``, its
Frobenius norm (between that and ``sqrt(K)`` times it) for larger ``K`` (float32
rounding of a singular PSD matrix, e.g. softmax's, stays inside)."""


def not_psd(h):
    r"""``(N,)`` bool: which symmetric ``(N, K, K)`` matrices are not positive
    semi-definite (``PSD_TOL``). ``K = 2`` in closed form (the eigenvalues
    ``m +- r``); larger ``K``: :math:`h + \text{PSD\_TOL}\,\lVert h\rVert_F I` has no
    Cholesky factor (in float64, ``smallmat.cholesky``: plain array operations, not
    LAPACK's ``eigvalsh``, whose batched calls can deadlock XLA's thread pool when
    several run at once). A zero matrix is PSD.

    Example:
      >>> import jax.numpy as jnp
      >>> h = jnp.array([[[1., 0, 0], [0, 1, 0], [0, 0, -1]], [[1., 1, 1], [1, 1, 1], [1, 1, 1]]])
      >>> not_psd(h).tolist()
      [True, False]
    """
    K = h.shape[-1]
    if K == 2:
        a, c = h[..., 0, 0], h[..., 1, 1]
        b = 0.5 * (h[..., 0, 1] + h[..., 1, 0])
        m = 0.5 * (a + c)
        r = jnp.sqrt(jnp.square(0.5 * (a - c)) + b * b)
        lo, scale = m - r, jnp.abs(m) + r
        return lo < -PSD_TOL * scale
    with jax.enable_x64(True):
        hs = 0.5 * (h + jnp.swapaxes(h, -1, -2)).astype(jnp.float64)
        size = jnp.sqrt(jnp.sum(jnp.square(hs), axis=(-2, -1)))
        shifted = hs + (PSD_TOL * size)[..., None, None] * jnp.eye(K, dtype=jnp.float64)
        return (size > 0) & ~positive_definite(shifted)


def apply_hessian_policy(
    loss, y, pred, h, policy: str, floor: float = HESSIAN_FLOOR, diagonal: bool = False
):
    r"""The Hessian the trees use, under a policy.

    * ``"exact"``: h as autodiff (or the closed form) gives it.
    * ``"clip"``: :math:`\max(h, \text{floor})` per row (per entry of an ``(N, K)``
      diagonal); a ``K x K`` Hessian gets its eigenvalues raised to the floor (it
      becomes positive definite). The default floor is ``HESSIAN_FLOOR = 1e-6``;
      non-convex losses train without NaN under it.
    * ``"constant"``: ``h = 1`` per row (the identity for ``K x K``): the leaf value is
      then the regularised mean negative gradient, i.e. plain gradient boosting.
    * ``"expected"``: the objective's ``expected_hessian`` (Fisher information).
    * ``"clip_negative"`` (the default of plain callables): the exact h where it is
      ``>= 0``, negative h raised to the floor; so a convex loss keeps its exact h to the
      bit. The same per entry of an ``(N, K)`` diagonal. For ``K x K`` Hessians: the
      diagonal entries when the trees use the diagonal (``diagonal``), else each matrix
      that is not positive semi-definite (``not_psd``) gets its eigenvalues raised to the
      floor, the others are kept as they are.

    Args:
      loss: the loss (an ``Objective`` for ``"expected"``).
      y: ``(N,)`` labels; pred: ``(N,)`` or ``(N, K)`` margins.
      h: ``(N,)`` or ``(N, K, K)`` exact Hessians, or ``(N, K)``: their diagonals
        (``grad_hess_diagonal``), what trees that use the diagonal read.
      policy: one of the five names above.
      floor: the clip floor.
      diagonal: the trees use only the diagonal of ``K x K`` Hessians (one tree per
        output, or ``multi_hessian="diagonal"``); only ``"clip_negative"`` reads it.

    Returns:
      h of the same shape.

    Example:
      >>> import jax.numpy as jnp
      >>> apply_hessian_policy(None, None, None, jnp.array([-1.0, 2.0]), "clip").tolist()
      [9.999999974752427e-07, 2.0]
      >>> apply_hessian_policy(None, None, None, jnp.array([-1.0, 0.0, 1e-9]),
      ...                      "clip_negative").tolist()
      [9.999999974752427e-07, 0.0, 9.999999717180685e-10]
    """
    if policy == "exact":
        return h
    if policy == "clip":
        return jnp.maximum(h, floor) if h.ndim <= 2 else _clip_matrix(h, floor)
    if policy == "clip_negative":
        floor_h = jnp.asarray(floor, h.dtype)
        if h.ndim <= 2:
            return jnp.where(h < 0, floor_h, h)
        if diagonal:
            return jnp.where(jnp.eye(h.shape[-1], dtype=bool) & (h < 0), floor_h, h)
        bad = not_psd(h)
        return jax.lax.cond(
            jnp.any(bad),
            lambda: jnp.where(bad[:, None, None], _clip_matrix(h, floor_h), h),
            lambda: h,
        )
    if policy == "constant":
        return (
            jnp.ones_like(h)
            if h.ndim <= 2
            else jnp.broadcast_to(jnp.eye(h.shape[-1], dtype=h.dtype), h.shape)
        )
    if policy == "expected":
        fn = loss.row_expected_hessian() if isinstance(loss, Objective) else None
        if fn is None:
            raise ValueError(
                f"hessian='expected' needs an objective with an "
                f"expected_hessian; {loss_name(loss)} has none"
            )
        e = map_rows(fn, y, pred).astype(h.dtype)
        if h.ndim == 2:  # the diagonal of each row's K x K expected Hessian
            e = jnp.diagonal(e.reshape(h.shape + h.shape[-1:]), axis1=1, axis2=2)
        return e.reshape(h.shape)
    raise ValueError(
        f"unknown hessian policy {policy!r}; expected one of "
        f"'exact', 'clip', 'constant', 'expected', 'clip_negative'"
    )


def grad_hess(
    loss,
    y,
    pred,
    sample_weight=None,
    *,
    hessian: str = "exact",
    floor: float = HESSIAN_FLOOR,
    diagonal: bool = False,
    census: bool = False,
):
    """Per-row g and h of ``loss`` at margins ``pred``.

    Args:
      loss: per-row ``loss(y, pred) -> scalar`` (or an ``objectives`` entry).
      y: ``(N,)`` labels, or side data (``(N, L)``, or a dict of ``(N,)`` arrays): vmapped
        over its rows like ``pred``, so the loss receives one row (``y[1]``,
        ``y["exposure"]``).
      pred: ``(N,)`` float32 margins, or ``(N, K)`` for a loss of ``K`` outputs.
      sample_weight: optional ``(N,)`` float32 weights multiplying g and h.
      hessian: Hessian policy (see ``apply_hessian_policy``).
      floor: floor of the ``"clip"`` and ``"clip_negative"`` policies.
      diagonal: the trees use only the diagonal of ``K x K`` Hessians: h is then the
        ``(N, K)`` diagonal, computed without forming ``(N, K, K)`` (``grad_hess_diagonal``).
      census: also return the Hessian ``hessian_census`` should read: the exact one
        (unweighted) under ``"exact"`` and ``"clip_negative"``, the policy's under
        ``"expected"``, None under ``"clip"`` and ``"constant"`` (positive by
        construction).

    Returns:
      ``(g, h)`` float32: ``(N,)`` and ``(N,)``, or ``(N, K)`` and ``(N, K, K)``
      (``(N, K)`` with ``diagonal``) (``(g, h, h_census)`` with ``census``).

    Example:
      >>> import jax.numpy as jnp
      >>> g, h = grad_hess(lambda y, p: 0.5 * (y - p) ** 2, jnp.ones(2), jnp.zeros(2))
      >>> g.tolist(), h.tolist()
      ([-1.0, -1.0], [1.0, 1.0])
    """
    K = 1 if pred.ndim == 1 else pred.shape[1]
    if K > 1 and diagonal:
        g, h = grad_hess_diagonal(loss, y, pred)
    else:
        g, h = map_rows(_row_grad_hess(loss, K), y, pred)
    out = jnp.promote_types(FLOAT_DTYPE, pred.dtype)  # float32; float64 in a replay
    g = g.astype(out)
    h = h.astype(out)
    h_exact = h
    h = apply_hessian_policy(loss, y, pred, h, hessian, floor, diagonal)
    seen = {"exact": h_exact, "clip_negative": h_exact, "expected": h}.get(hessian)
    if sample_weight is not None:
        g = g * (sample_weight if K == 1 else sample_weight[:, None])
        h = h * sample_weight.reshape(sample_weight.shape + (1,) * (h.ndim - 1))
    return (g, h, seen) if census else (g, h)


def count_rows(*masks):
    """``(len(masks),)`` int32: how many entries of each ``(N,)`` bool mask are true.

    One variadic ``lax.reduce`` over all the masks. Separate ``jnp.sum`` calls are split
    by XLA's CPU backend into a windowed reduction whose input, each mask converted to
    int32, is written out in full, and the round's nine counts were then live together:
    36 MiB of the round program's 45 MiB of scratch at 1M rows, and about 15 ms of a
    round. Fused into one pass, the counts take no scratch (integer sums: the same
    numbers in any order).

    >>> import jax.numpy as jnp
    >>> count_rows(jnp.array([True, False, True]), jnp.array([False, False, True])).tolist()
    [2, 1]
    """
    n = len(masks)
    if n == 1:  # a one-operand reduce is split as jnp.sum is: add an idle second one
        masks = (masks[0], jnp.zeros_like(masks[0]))
    ints = tuple(m.astype(jnp.int32) for m in masks)
    zeros = tuple(jnp.zeros((), jnp.int32) for _ in masks)
    sums = jax.lax.reduce(ints, zeros, lambda a, b: tuple(x + y for x, y in zip(a, b)), (0,))
    return jnp.stack(sums[:n])


CENSUS = ("n_bad", "n_negative", "n_zero", "n_rows", "n_positive")
"""The counts of ``hessian_census``, in order."""


def hessian_census(g, h, counted, *, diagonal: bool = False):
    """How many rows have a Hessian that cannot help: ``(5,)`` int32 (``CENSUS``).

    Over the rows where ``counted`` (real rows of weight > 0): ``n_bad`` rows whose g or
    h is NaN/inf; among the others ``n_negative`` rows with a negative h (``K x K``: a
    negative diagonal entry when the trees use the diagonal, else a matrix that is not
    positive semi-definite, ``not_psd``), ``n_zero`` rows whose h is 0 (every diagonal
    entry) while g is not (a gradient with no curvature), ``n_positive`` rows with some
    positive curvature; ``n_rows`` the counted rows. Local sums: callers reduce them
    over devices. ``h`` is ``(N,)``, ``(N, K, K)``, or ``(N, K)`` diagonals (read as
    with ``diagonal``).

    Example:
      >>> import jax.numpy as jnp
      >>> hessian_census(jnp.array([1., 1., 0., 1.]), jnp.array([-1., 0., 0., 2.]),
      ...                jnp.ones(4, bool)).tolist()
      [0, 1, 1, 4, 1]
    """
    return count_rows(*census_masks(g, h, counted, diagonal=diagonal))


def census_masks(g, h, counted, *, diagonal: bool = False):
    """The five ``(N,)`` bool masks whose counts are ``hessian_census``, in its order
    (for a caller that counts them in one pass with other masks, ``count_rows``)."""
    if h.ndim == 1:
        finite = jnp.isfinite(g) & jnp.isfinite(h)
        neg, zero, pos, moves = h < 0, h == 0, h > 0, g != 0
    else:
        finite = jnp.all(jnp.isfinite(g), axis=1) & jnp.all(
            jnp.isfinite(h), axis=tuple(range(1, h.ndim))
        )
        d = h if h.ndim == 2 else jnp.diagonal(h, axis1=1, axis2=2)
        neg = jnp.any(d < 0, axis=1) if (diagonal or h.ndim == 2) else not_psd(h)
        zero = jnp.all(d == 0, axis=1) & ~neg
        pos = jnp.any(d > 0, axis=1) & ~neg
        moves = jnp.any(g != 0, axis=1)
    ok = counted & finite
    return counted & ~finite, neg & ok, zero & moves & ok, counted, pos & ok


def model_grad_hess(
    loss,
    y,
    pred,
    sample_weight=None,
    *,
    hessian: str = "exact",
    floor: float = HESSIAN_FLOOR,
    diagonal: bool = False,
):
    """``grad_hess`` as one compiled program, with the loss's continuous hyperparameters
    traced (``split_loss``), and ``h`` the diagonal ``(N, K)`` when ``diagonal`` (what K
    trees per round, or ``multi_hessian="diagonal"``, use; no ``K x K`` is formed).

    Used by ``Booster.grad_hess``; the rows should be padded to a size bucket so new row
    counts mostly reuse a program. Returns JAX arrays.

    Example:
      >>> import jax.numpy as jnp
      >>> g, h = model_grad_hess(lambda y, p: 0.5 * (y - p) ** 2, jnp.ones(2), jnp.zeros(2))
      >>> g.tolist(), h.tolist()
      ([-1.0, -1.0], [1.0, 1.0])
    """
    family, values = split_loss(loss)
    return _model_grad_hess(
        family,
        values,
        y,
        pred,
        sample_weight,
        jnp.float32(floor),
        hessian=hessian,
        diagonal=bool(diagonal),
    )


@functools.partial(jax.jit, static_argnames=("family", "hessian", "diagonal"))
def _model_grad_hess(family, values, y, pred, sample_weight, floor, *, hessian, diagonal):
    return grad_hess(
        bind_loss(family, values),
        y,
        pred,
        sample_weight,
        hessian=hessian,
        floor=floor,
        diagonal=diagonal,
    )


def start_census(
    loss,
    y,
    pred,
    w,
    valid,
    *,
    hessian: str,
    floor: float = HESSIAN_FLOOR,
    diagonal: bool = False,
    loss_params=None,
):
    """``hessian_census`` of ``loss`` at margins ``pred`` (e.g. the start margins), as
    one compiled program (the loss's continuous hyperparameters traced; with
    ``loss_params``, ``loss`` is the family and these its values, as in
    ``fit_base_margin``). ``pred`` ``(1, N[, K])``: a model axis of one, as training
    holds margins (taken apart inside the program, not by a host-side index that would
    compile a program of its own). ``w`` ``(N,)`` weights, ``valid`` ``(N,)`` real
    rows. Returns a ``(5,)`` int32 JAX array (``CENSUS``)."""
    family, values = split_loss(loss) if loss_params is None else (loss, loss_params)
    return _start_census(
        family,
        values,
        y,
        pred,
        w,
        valid,
        jnp.float32(floor),
        hessian=hessian,
        diagonal=bool(diagonal),
    )


@functools.partial(jax.jit, static_argnames=("family", "hessian", "diagonal"))
def _start_census(family, values, y, pred, w, valid, floor, *, hessian, diagonal):
    pred = pred[0]
    g, _, seen = grad_hess(
        bind_loss(family, values),
        y,
        pred,
        None,
        hessian=hessian,
        floor=floor,
        diagonal=diagonal,
        census=True,
    )
    if seen is None:
        seen = jnp.ones(pred.shape if pred.ndim == 1 or diagonal else pred.shape + pred.shape[-1:])
    return hessian_census(g, seen, valid & (w > 0), diagonal=diagonal)


def check_loss(loss, y_row, pred_row):
    """Raise a clear error when ``loss`` cannot be a per-row loss.

    Traces the loss abstractly on one row (no computation): it must accept
    ``(y, pred)`` and return a scalar. ``y_row`` is one row of the targets: a scalar,
    an ``(L,)`` vector or a dict of scalars (side data, see ``jaxboost.train``).
    """
    name = loss_name(loss)
    if not callable(loss):
        raise TypeError(
            f"objective must be a callable loss(y, pred) or an objectives "
            f"entry, got {type(loss).__name__}"
        )
    y_text = (
        f"{y_row.shape} {y_row.dtype}"
        if hasattr(y_row, "shape")
        else "a dict of " + ", ".join(f"{k!r}: {v.shape}" for k, v in y_row.items())
        if isinstance(y_row, dict)
        else repr(y_row)
    )
    try:
        closed, out = jax.make_jaxpr(loss, return_shape=True)(y_row, pred_row)
    except Exception as e:  # the user's code failed while being traced
        raise TypeError(
            f"the loss {name} failed when called as loss(y, pred) on one row "
            f"(y {y_text}, pred {pred_row.shape} {pred_row.dtype}): "
            f"{type(e).__name__}: {e}{_missing_parameter_hint(e)}"
        ) from e
    if not hasattr(out, "shape") or out.shape != ():
        shape = getattr(out, "shape", type(out).__name__)
        if pred_row.shape != ():
            K = pred_row.shape[0]
            raise LossError(
                f"the loss {name} must return a scalar for one row, but returned shape "
                f"{shape} (before round 0). This training has {K} outputs (classes or "
                f"targets), so pred is each row's ({K},) vector of margins (y {y_text}): "
                f"reduce it to one number, e.g. a cross-entropy over the {K} margins "
                f"(as objectives.softmax) or a sum over targets. A loss of a scalar pred "
                f"fits one output (two classes: objectives.logistic)."
            )
        raise LossError(
            f"the loss {name} must return a scalar for one row, but returned shape "
            f"{shape} (before round 0). Write the loss for a single row "
            f"(y and pred scalars); jaxboost vmaps it over rows."
        )
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise LossError(
            f"the loss {name} must return a floating-point scalar, "
            f"got dtype {out.dtype} (before round 0)"
        )
    if not _output_depends_on_last_input(closed.jaxpr):
        raise LossError(
            f"the loss {name} returns the same value whatever pred is (its result "
            f"does not depend on pred; before round 0): every gradient is 0, so no "
            f"tree could split and the model would be a constant. Check that the loss "
            f"uses its second argument, as in loss(y, pred) = (y - pred) ** 2."
        )


def _missing_parameter_hint(e: Exception) -> str:
    """Advice for a loss called without one of its hyperparameters (Python's
    ``TypeError`` "missing ... required ... argument(s): 'gamma'"): ``loss_params``."""
    import re

    text = str(e)
    if not isinstance(e, TypeError) or "missing" not in text or "required" not in text:
        return ""
    missing = re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", text.split("argument", 1)[-1])
    if not missing:
        return ""
    given = ", ".join(f"{m!r}: ..." for m in missing)
    return (
        f". Pass the loss's own parameters with loss_params={{{given}}} (train's "
        f"keyword arguments, such as gamma or alpha, set the trees, not the loss)"
    )


def _output_depends_on_last_input(jaxpr) -> bool:
    """Whether ``jaxpr``'s first output depends on its last input (a loss's ``pred``),
    by forward reachability through its equations (any input of an equation reaches
    every output of it: conservative)."""
    reach = {id(v) for v in jaxpr.invars[-1:]}  # variables only (a literal is never in)
    for eqn in jaxpr.eqns:
        if any(id(v) in reach for v in eqn.invars):
            reach.update(id(v) for v in eqn.outvars)
    return id(jaxpr.outvars[0]) in reach


_LOSSES_CHECKED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
"""Per loss family, the (hyperparameter values, row shapes) that passed
``check_loss``; an entry goes with its family."""


def check_loss_once(family, values, y_row, pred_row) -> None:
    """``check_loss`` of ``bind_loss(family, values)`` on rows shaped as ``y_row``,
    ``pred_row`` (``jax.ShapeDtypeStruct`` trees), skipped when the same family with the
    same scalar values has passed it on rows of those shapes before: tracing the loss
    again (``jax.eval_shape``) cost a small fit a tenth of its fixed time, and a check
    that passed passes again. Hyperparameter values that are arrays, or a family that
    cannot be weakly referenced, are checked every time.

    >>> import jax, jax.numpy as jnp
    >>> row = jax.ShapeDtypeStruct((), jnp.float32)
    >>> check_loss_once(lambda y, p: (y - p) ** 2, {}, row, row)
    """
    try:
        key = (
            tuple(sorted((k, float(v)) for k, v in values.items())),
            jax.tree.structure(y_row),
            tuple((x.shape, str(x.dtype)) for x in jax.tree.leaves(y_row)),
            (pred_row.shape, str(pred_row.dtype)),
        )
        seen = _LOSSES_CHECKED.get(family)
    except TypeError:  # array values, or a family without weak references or hash
        key, seen = None, None
    if seen is not None and key in seen:
        return
    check_loss(bind_loss(family, values), y_row, pred_row)
    if key is not None:
        try:
            _LOSSES_CHECKED.setdefault(family, set()).add(key)
        except TypeError:
            pass


def fit_base_margin(
    loss,
    y,
    sample_weight=None,
    n_outputs: int = 1,
    *,
    exact_rows: int | None = None,
    loss_params=None,
):
    r"""The constant margin minimising the weighted loss, for any loss.

    .. math:: c^* = \arg\min_c \sum_i w_i\,\ell(y_i, c)

    Scalar margins, in two phases (sums accumulated in float64, margins evaluated in
    float32 as in training):

    1. safeguarded Newton: the step :math:`-\sum w g / \sum w h` (a gradient step when
       :math:`\sum w h \le 0`), halved while the loss increases by more than its
       float32 rounding (``LOSS_ROUNDING``), until a step moves the float32 value by
       about an ulp, would move it by only a few, or turns back short (at most 30
       steps);
    2. bracketing: an interval around that point where :math:`G(c) = \sum w g` changes
       sign is searched (widening geometrically), then bisected to float32 resolution;
       the end with the lower loss wins. This finds the minimiser of non-smooth losses
       whose Hessian is zero (absolute error, quantile: the weighted quantile) where
       Newton steps have no curvature to use. When no sign change exists (e.g. every
       logistic label 1), phase 1's value is kept.

    Vector margins (``n_outputs = K > 1``): damped Newton on the ``K x K`` system with a
    small ridge (softmax margins are defined up to a constant; the ridge picks one),
    until a step leaves the float32 margins unchanged or lowers the loss by less than
    ``LOSS_RESOLUTION`` (2**-24) of it (at most 40 steps). Its sums over rows run in
    chunks of ``BASE_MARGIN_CHUNK // K**2`` rows when the per-row Hessians would not fit
    in one chunk, so no ``(N, K, K)`` array is formed.

    Squared loss gives the weighted mean, logistic the log-odds of the weighted mean,
    Poisson the log of the mean, quantile(alpha) the weighted alpha-quantile. (Training
    with ``refit="quantile"``, the catalogue's absolute error and quantile losses,
    starts from ``refit.quantile_intercept`` instead: XGBoost's ``base_score``; the
    catalogue entries with a closed-form minimiser, ``Objective.intercept``, from that.)

    Args:
      loss: per-row loss.
      y: ``(N,)`` labels (a JAX array), or side data: ``(N, L)``, or a dict of ``(N,)``
        arrays (the loss gets one row of it).
      sample_weight: optional ``(N,)`` weights.
      n_outputs: margins per row.
      loss_params: if given, ``loss`` is a loss family and these its traced
        hyperparameter values (``split_loss``); by default the loss is split here, so
        variants of one family share one compiled program.
      exact_rows: if given (the number of real rows), every sum over rows is an exact
        quantized sum (``jaxboost.engine.exact.exact_sum``), so the result does not depend on
        how the rows are ordered or sharded (for ``train(..., quantize=True)``). ``y``
        and ``sample_weight`` may be sharded over devices or processes either way.

    Returns:
      float32 scalar, or ``(K,)`` float32 (a JAX array).

    Example:
      >>> import jax.numpy as jnp
      >>> c = fit_base_margin(lambda y, p: 0.5 * (y - p) ** 2, jnp.array([1., 2., 6.]))
      >>> round(float(c), 5)
      3.0
    """
    exact = exact_rows is not None
    n_total = np.int32(1 if exact_rows is None else exact_rows)
    family, values = split_loss(loss) if loss_params is None else (loss, loss_params)
    if n_outputs > 1:
        return _fit_base_margin_vector(family, values, y, sample_weight, n_outputs, exact, n_total)
    return _fit_base_margin(family, values, y, sample_weight, exact, n_total)


QUICK_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_cpu_use_fusion_emitters": False,
    "xla_llvm_disable_expensive_passes": True,
}
"""XLA options for the vector base-margin fit on the CPU up to ``QUICK_VECTOR_ENTRIES``
rows x outputs: it runs once per training call, so its compile time is what the user
waits for (0.53 -> 0.13 s for 10-class softmax, 1,536 rows). Until 28 Nov 2026 the
scalar fit took them too (0.49 -> 0.18 s for logistic), when it called the loss at 17
places of nested loops; as one loop (``_scalar_fit``) it calls it at two, and XLA's
defaults compile it as fast and run it faster (``benchmarks/base_margin.py``, 1,000,000
rows, a warm call: logistic 23 -> 14 ms, absolute error 1.91 -> 0.10 s,
``objectives.aft`` 20.3 -> 2.6 s; peak memory of logistic's fit 226 -> 229 MiB)."""


def _summer(exact, n_total):
    """``sum(x, axis=0)`` over rows: plain, or exact on a quantization grid."""
    if not exact:
        return lambda x: jnp.sum(x, axis=0)
    from .exact import exact_sum

    return lambda x: exact_sum(x, n_total, axis=0)


def n_rows_of(y) -> int:
    """Rows of targets ``y``: an array's first dimension, or a dict's entries'."""
    return jax.tree.leaves(y)[0].shape[0]


@functools.partial(jax.jit, static_argnums=(0, 5))
def _scalar_total(family, values, y, w64, c, exact, n_total):
    """The scalar fit's weighted loss ``T`` at the constant margin ``c`` and its
    rounding allowance ``LOSS_ROUNDING * |T|``, both float64."""
    loss = bind_loss(family, values)
    f = jnp.full(n_rows_of(y), c.astype(FLOAT_DTYPE), FLOAT_DTYPE)
    T = _summer(exact, n_total)(w64 * map_rows(loss, y, f).astype(ACC_DTYPE))
    return T, LOSS_ROUNDING * jnp.abs(T)


@functools.partial(jax.jit, static_argnums=(0, 5))
def _scalar_sums(family, values, y, w64, c, exact, n_total):
    """The scalar fit's weighted sums ``(G, H)`` of g and h at the margin ``c``."""
    gh = _row_grad_hess(bind_loss(family, values))
    f = jnp.full(n_rows_of(y), c.astype(FLOAT_DTYPE), FLOAT_DTYPE)
    g, h = map_rows(gh, y, f)
    add = _summer(exact, n_total)
    return add(w64 * g.astype(ACC_DTYPE)), add(w64 * h.astype(ACC_DTYPE))


def _fit_base_margin_impl(family, values, y, sample_weight, exact=False, n_total=1):
    n = n_rows_of(y)
    w = jnp.ones(n, FLOAT_DTYPE) if sample_weight is None else sample_weight
    with jax.enable_x64(True):
        w64 = w.astype(ACC_DTYPE)

        def total(c):
            return _scalar_total(family, values, y, w64, c, exact, n_total)

        def sums(c):
            return _scalar_sums(family, values, y, w64, c, exact, n_total)

        return _scalar_fit(total, sums)


LOSS_ROUNDING = 2.0**-20
"""Relative rounding allowed to the scalar base-margin fit's totals of float32 losses
(16 float32 ulps): where Newton's step was taken (H > 0), a total within
``LOSS_ROUNDING * |T|`` of ``T`` is no worse. Each row's loss is rounded to float32,
and at a constant margin rows with one label round alike, so near the minimum the
totals' error outweighs their true differences (logistic on 2,000 rows: 4e-4 from the
log-odds the loss is 3e-5 above its minimum, its total off by about 1e-4). Compared
strictly, Newton's steps stopped there and the bisection's better end lost to Newton's
point: the margin ended up to 4e-4 from the log-odds that XGBoost starts from.
(``|T|`` rather than the sum of ``|w l|``: the same for losses >= 0, and one reduction
less to compile.)"""


# Steps of the scalar base-margin fit (``_scalar_fit``): what the next loop iteration
# evaluates, and how its result moves the fit on.
_CHECK, _NEWTON, _SEARCH, _WIDEN, _BISECT, _LAST_HI, _LAST_LO, _LAST_C1, _DONE = range(9)


def _scalar_fit(total, sums):
    r"""The scalar base-margin fit (``fit_base_margin``) as one loop that evaluates the
    weighted loss ``total(c) -> (T, tol)`` (``tol``: its rounding allowance,
    ``LOSS_ROUNDING``; the first one's serves the whole fit) and the derivative sums
    ``sums(c) -> (G, H)`` at one place each: phase 1, safeguarded Newton from 0 (at
    most 30 steps, each halved while the loss rose by more than ``tol``; it stops when
    a step moved the float32 margin by about an ulp, would move it by a few, or turns
    back shorter than phase 2's first bracket);
    phase 2, a bracket of a sign change of :math:`G` widened geometrically on both
    sides of Newton's point (from :math:`10^{-3}(1 + |c|)`, or, where Newton stopped
    with H > 0, from twice its last step :math:`|d|`, at least about 8 ulps), up to 80
    bisections, and the bisection's end with the lower loss if it is no worse than
    Newton's point (within ``tol``). On a smooth convex loss the result is the float32
    margin next to the root of :math:`G` (logistic: the log-odds, as XGBoost's base
    score), in 4-6 Newton steps and 5-7 bisections.

    Written as nested loops, the fit called ``total`` and ``sums`` at 17 places, and XLA
    compiled the loss's program again at each: 2.7 s of compiling for
    ``objectives.aft``'s log-CDFs. Here every loop iteration is one step of a small
    state machine (``_CHECK`` .. ``_DONE``, ``_fit_moves``) that asks for ``total``,
    ``sums``, both or neither at the point ``x`` it carries (``lax.cond``): the loss is
    compiled once and its derivatives once; ``total(c)`` is carried from the line
    search step that reached ``c`` instead of evaluated again. Runs under
    ``enable_x64``; returns the float32 margin.
    """
    nan = jnp.float64(jnp.nan)
    wants_total = jnp.array((_SEARCH, _WIDEN, _LAST_HI, _LAST_LO))
    at_c = jnp.array((_NEWTON, _LAST_C1))  # steps that need total(c)
    wants_sums = jnp.array((_NEWTON, _WIDEN, _BISECT))

    def body(st):
        mode, x = st["mode"], st["x"]
        # total(c) is the one the accepted line search step evaluated (``t_c``):
        # evaluated again only at the start
        known = jnp.isin(mode, at_c) & ~jnp.isnan(st["t_c"])
        need_t = jnp.isin(mode, wants_total) | (jnp.isin(mode, at_c) & ~known)
        T, tol = jax.lax.cond(need_t, total, lambda _: (nan, nan), x)
        T = jnp.where(known, st["t_c"], T)
        # one allowance for the whole fit: the first total's (at 0)
        tol = jnp.where(jnp.isnan(st["tol"]), tol, st["tol"])
        G, H = jax.lax.cond(jnp.isin(mode, wants_sums), sums, lambda _: (nan, nan), x)
        nxt = dict(st, tol=tol)
        for m, changes in _fit_moves(st, T, tol, G, H).items():
            for key, v in changes.items():
                was = nxt[key]
                nxt[key] = jnp.where(mode == m, jnp.asarray(v).astype(was.dtype), was)
        return nxt

    final = jax.lax.while_loop(lambda st: st["mode"] != _DONE, body, _fit_start())
    return final["out"]


def _fit_start() -> dict:
    """``_scalar_fit``'s state before its first step (float64 points and sums)."""
    zero = jnp.float64(0.0)
    return dict(
        mode=jnp.int32(_CHECK),
        x=zero,  # where the next step evaluates
        i=jnp.int32(0),  # Newton steps taken
        c=zero,  # Newton's point
        c_prev=jnp.float64(jnp.nan),
        t_c=jnp.float64(jnp.nan),  # total(c), once a Newton step has it
        tol=jnp.float64(jnp.nan),  # the totals' rounding allowance
        d=zero,  # Newton's step
        h_pos=jnp.asarray(False),  # H > 0 where d was taken
        s=jnp.float64(1.0),  # its length along d
        c1=zero,  # Newton's result
        base=zero,  # the bracket's first width
        sign=jnp.float64(-1.0),  # which side the bracket is widened on
        k=jnp.int32(0),
        lo=zero,
        hi=zero,
        lo_ok=jnp.asarray(False),
        hi_ok=jnp.asarray(False),
        hi_pos=jnp.asarray(False),  # G(hi) > 0
        j=jnp.int32(0),  # bisections done
        t_hi=zero,
        t_lo=zero,
        out=jnp.float32(0.0),
    )


def _fit_moves(st, T, tol, G, H) -> dict:
    """``{mode: changes}``: how each step of ``_scalar_fit`` changes the state ``st``
    given ``(T, tol) = total(x)`` and ``(G, H) = sums(x)`` (NaN where the step asked
    for neither); ``_scalar_fit`` applies the entry of the current mode."""
    return {**_newton_moves(st, T, tol, G, H), **_bracket_moves(st, T, tol, G)}


def _newton_moves(st, T, tol, G, H) -> dict:
    """Phase 1: ``_CHECK`` (another Newton step, or phase 2 from Newton's point),
    ``_NEWTON`` (T, G, H at c: the step, tried at full length first) and ``_SEARCH``
    (total at c + s d; halve s while the loss went up by more than its rounding)."""
    f64 = ACC_DTYPE
    c = st["c"]
    # Newton goes on while its last step moved c by more than one float32 (near the
    # root, rounding can make it step back and forth between two neighbours)
    c32, prev32 = c.astype(FLOAT_DTYPE), st["c_prev"].astype(FLOAT_DTYPE)
    still = jnp.abs(prev32 - c32) <= _ulp32(c)  # the same float32, or a neighbour
    newton = (st["i"] < 30) & ~still
    base = 1e-3 * (1.0 + jnp.abs(c))
    # Newton stopped there with H > 0: the root of G is within about |d| of c, so the
    # bracket starts that narrow (a few bisections instead of ~17 from 1e-3; widened as
    # before if G has no sign change there)
    converged = still & st["h_pos"]
    narrow = jnp.maximum(2.0 * jnp.abs(st["d"]), 8.0 * _ulp32(c))
    base = jnp.where(converged, jnp.minimum(base, narrow), base)
    check = dict(
        mode=jnp.where(newton, _NEWTON, _WIDEN),
        x=jnp.where(newton, c, c + -1.0 * base),
        c1=c,
        base=base,
        sign=jnp.float64(-1.0),
        k=jnp.int32(0),
    )
    d = jnp.clip(jnp.where(H > 0, -G / jnp.where(H > 0, H, 1.0), -G), -1e3, 1e3)
    # a Newton step of a few float32 ulps, or a short one back the way the last came,
    # is within G's own rounding (G's float32 terms round alike too; an interval
    # likelihood on 1,000,000 rows stepped back and forth by 10 ulps): phase 2 from c
    back = (d * st["d"] < 0) & (jnp.abs(d) < base)
    tiny = (H > 0) & ((jnp.abs(d) <= 4.0 * _ulp32(c)) | back)
    step = dict(
        mode=jnp.where(tiny, _CHECK, _SEARCH),
        x=c + d,
        d=d,
        h_pos=H > 0,
        t_c=T,
        s=jnp.float64(1.0),
        c_prev=jnp.where(tiny, c, st["c_prev"]),
    )
    s, l0 = st["s"], st["t_c"]
    # within the totals' rounding, where the step was Newton's (H > 0): a loss without
    # curvature there (absolute error) keeps the strict comparison
    better = T <= l0 + jnp.where(st["h_pos"], tol, 0.0)
    shrink = (~better) & (s > 1e-6)  # halve the step while the loss went up
    s_half = s * 0.5
    moved = jnp.where(better, (c + s * st["d"]).astype(FLOAT_DTYPE), c.astype(FLOAT_DTYPE))
    moved = moved.astype(f64)
    search = dict(
        mode=jnp.where(shrink, _SEARCH, _CHECK),
        x=jnp.where(shrink, c + s_half * st["d"], moved),
        s=jnp.where(shrink, s_half, s),
        c=jnp.where(shrink, c, moved),
        c_prev=jnp.where(shrink, st["c_prev"], c),
        # total at the new c: the one just evaluated (at x, whose float32 is ``moved``)
        t_c=jnp.where(better, T, l0),
        i=jnp.where(shrink, st["i"], st["i"] + 1),
    )
    return {_CHECK: check, _NEWTON: step, _SEARCH: search}


def _ulp32(c):
    """About the float32 spacing at ``c``: ``|c| 2^-23``, between one and two ulps
    (``|c|`` at least 1e-30), float64."""
    return jnp.maximum(jnp.abs(c), 1e-30) * 2.0**-23


def _bracket_moves(st, T, tol, G) -> dict:
    """Phase 2: ``_WIDEN`` (G and T at c1 + sign base 2^k: move out while G has the
    wrong sign, below c1 first, then above), ``_BISECT`` (G at the middle, 80 times or
    until the ends' float32 roundings can no longer change, which makes the result that
    of all 80: they are one float32, or two adjacent ones with G > 0 at the upper end;
    G is a function of the float32 margin, so a later middle that rounds to the upper
    one has G > 0 and moves the upper end, one that rounds to the lower one has the
    lower end's G, not > 0 when the bracket was found (else the fit returns Newton's
    point whatever the bisection), and moves the lower end), then the loss at both ends
    (``_LAST_HI``, ``_LAST_LO``) and at Newton's point (``_LAST_C1``): the better end
    if it is no worse (within ``tol``, the rounding allowance of the loss there)."""
    f64, x = ACC_DTYPE, st["x"]
    sign, k, c1 = st["sign"], st["k"], st["c1"]
    ok = jnp.isfinite(G) & jnp.isfinite(T)
    down = sign < 0
    wrong = (k < 80) & ok & jnp.where(down, G > 0, G < 0)
    good = ok & jnp.where(down, G <= 0, G >= 0)
    lo = jnp.where(down, x, st["lo"])
    hi = jnp.where(down, st["hi"], x)
    further = c1 + sign * st["base"] * 2.0 ** (k + 1)
    widen = dict(
        mode=jnp.where(wrong | down, _WIDEN, _BISECT),
        x=jnp.where(wrong, further, jnp.where(down, c1 + 1.0 * st["base"], 0.5 * (lo + hi))),
        k=jnp.where(wrong, k + 1, 0),
        sign=jnp.where(wrong, sign, 1.0),
        lo=jnp.where(wrong, st["lo"], lo),
        hi=jnp.where(wrong, st["hi"], hi),
        lo_ok=jnp.where(~wrong & down, good, st["lo_ok"]),
        hi_ok=jnp.where(~wrong & ~down, good, st["hi_ok"]),
        hi_pos=G > 0,
        j=jnp.int32(0),
    )
    up = G > 0
    lo = jnp.where(up, st["lo"], x)
    hi = jnp.where(up, x, st["hi"])
    hi_pos = up | st["hi_pos"]
    lo32, hi32 = lo.astype(FLOAT_DTYPE), hi.astype(FLOAT_DTYPE)
    adjacent = hi_pos & (hi32 == jnp.nextafter(lo32, jnp.float32(jnp.inf)))
    last = (st["j"] + 1 == 80) | (hi32 == lo32) | adjacent
    bisect = dict(
        mode=jnp.where(last, _LAST_HI, _BISECT),
        x=jnp.where(last, hi.astype(FLOAT_DTYPE).astype(f64), 0.5 * (lo + hi)),
        lo=lo,
        hi=hi,
        hi_pos=hi_pos,
        j=st["j"] + 1,
    )
    lo32, hi32 = st["lo"].astype(FLOAT_DTYPE), st["hi"].astype(FLOAT_DTYPE)
    take_hi = st["t_hi"] < st["t_lo"]
    use2 = st["lo_ok"] & st["hi_ok"] & (jnp.where(take_hi, st["t_hi"], st["t_lo"]) <= T + tol)
    return {
        _WIDEN: widen,
        _BISECT: bisect,
        _LAST_HI: dict(mode=jnp.int32(_LAST_LO), x=lo32.astype(f64), t_hi=T),
        _LAST_LO: dict(mode=jnp.int32(_LAST_C1), x=c1, t_lo=T),
        _LAST_C1: dict(
            mode=jnp.int32(_DONE),
            out=jnp.where(use2, jnp.where(take_hi, hi32, lo32), c1.astype(FLOAT_DTYPE)),
        ),
    }


BASE_MARGIN_CHUNK = 1 << 22
"""Hessian entries (rows times ``K**2``) per chunk of the vector base-margin fit's sums:
at most ``BASE_MARGIN_CHUNK // K**2`` rows' ``K x K`` Hessians at once (16 MB in float32,
32 MB in float64), instead of all ``N`` rows' (4 GB at 100,000 rows and K = 100)."""


def _vector_sums(gh, y, w64, c, K, exact, n_total, chunk=BASE_MARGIN_CHUNK):
    """``(G (K,), H (K, K))`` float64: the weighted sums of ``gh``'s per-row g and h at
    the constant margin ``c``, over row chunks of ``chunk // K**2`` rows.

    One chunk (few rows or small K): one pass over every row. Several:
    a ``lax.scan`` over chunks (rows padded with weight 0 to a multiple of the chunk),
    partial sums added in chunk order; exact sums
    (``exact``) take one pass for the largest ``|w g|``, ``|w h|`` (which fix
    ``exact_sum``'s grid) and one for the sums on that grid.
    """
    N = n_rows_of(y)
    rows = max(1, chunk // (K * K))
    f32 = c.astype(FLOAT_DTYPE)

    def per_row(yy):
        g, h = map_rows(gh, yy, jnp.broadcast_to(f32, (n_rows_of(yy), K)))
        return g.astype(ACC_DTYPE), h.astype(ACC_DTYPE)

    if N <= rows:  # one chunk
        g, h = per_row(y)
        if exact:
            add = _summer(True, n_total)
            return add(w64[:, None] * g), add(w64[:, None, None] * h)
        return jnp.einsum("n,nk->k", w64, g), jnp.einsum("n,nij->ij", w64, h)
    n_chunks = -(-N // rows)
    pad = n_chunks * rows - N
    # Padding rows repeat the last row's label with weight 0: their g and h are those of
    # a real row (finite when it is), so the weight alone removes them.
    # y may be side data: an (N, L) array or a dict of (N, ...) arrays; rows only padded.
    yc = jax.tree.map(
        lambda a: jnp.pad(a, [(0, pad)] + [(0, 0)] * (a.ndim - 1), mode="edge").reshape(
            (n_chunks, rows) + a.shape[1:]
        ),
        y,
    )
    wc = jnp.pad(w64, (0, pad)).reshape(n_chunks, rows)

    if not exact:

        def body(acc, xs):
            yy, ww = xs
            g, h = per_row(yy)
            return (
                acc[0] + jnp.einsum("n,nk->k", ww, g),
                acc[1] + jnp.einsum("n,nij->ij", ww, h),
            ), None

        zero = (jnp.zeros(K, ACC_DTYPE), jnp.zeros((K, K), ACC_DTYPE))
        return jax.lax.scan(body, zero, (yc, wc))[0]

    def part(yy, ww):
        g, h = per_row(yy)
        return ww[:, None] * g, ww[:, None, None] * h

    from .exact import exact_scale

    def biggest(m, xs):
        g, h = part(*xs)
        return jnp.maximum(m, jnp.stack([jnp.max(jnp.abs(g)), jnp.max(jnp.abs(h))])), None

    m = jax.lax.scan(biggest, jnp.zeros(2, ACC_DTYPE), (yc, wc))[0]
    sg, sh = exact_scale(m[0], n_total), exact_scale(m[1], n_total)

    def grid_body(acc, xs):
        g, h = part(*xs)
        return (
            acc[0] + jnp.sum(jnp.round(g * sg), axis=0),
            acc[1] + jnp.sum(jnp.round(h * sh), axis=0),
        ), None

    zero = (jnp.zeros(K, ACC_DTYPE), jnp.zeros((K, K), ACC_DTYPE))
    G, H = jax.lax.scan(grid_body, zero, (yc, wc))[0]
    return G / sg, H / sh


def small_solve(A, b):
    r"""``x`` with ``A x = b`` for a small square ``A`` ``(K, K)`` and ``b`` ``(K,)``:
    Gauss-Jordan elimination with partial pivoting (at step ``i`` the row of the largest
    ``|A[j, i]|``, ``j >= i``, becomes the pivot row), ``K`` steps of ``O(K^2)``.

    ``jnp.linalg.solve`` calls LAPACK's LU through a custom call whose lowering and
    compile took 0.3 s on the CPU, more than the rest of a 10-class base-margin fit;
    these few array operations lower and compile in a fraction of that. A singular
    ``A`` gives non-finite entries (the caller falls back to a gradient step).

    >>> import numpy as np
    >>> x = small_solve(jnp.array([[0.0, 2.0], [1.0, 1.0]]), jnp.array([2.0, 3.0]))
    >>> np.asarray(x).tolist()
    [2.0, 1.0]
    """
    K = A.shape[0]
    M = jnp.concatenate([A, b[:, None]], axis=1)
    rows = jnp.arange(K)

    def column(M, i):
        return jax.lax.dynamic_index_in_dim(M, i, axis=1, keepdims=False)

    def eliminate(i, M):
        cand = jnp.where(rows >= i, jnp.abs(column(M, i)), -1.0)
        # the first row of the largest entry (argmax's reduction fails under scoped x64)
        p = jnp.min(jnp.where(cand == jnp.max(cand), rows, K))
        Mi = jax.lax.dynamic_index_in_dim(M, i, 0, keepdims=False)
        Mp = jax.lax.dynamic_index_in_dim(M, p, 0, keepdims=False)
        M = jnp.where((rows == p)[:, None], Mi, jnp.where((rows == i)[:, None], Mp, M))
        pivot_row = Mp / Mp[i]
        M = M - column(M, i)[:, None] * pivot_row
        return jnp.where((rows == i)[:, None], pivot_row, M)

    return jax.lax.fori_loop(0, K, eliminate, M)[:, K]


VECTOR_NEWTON_STEPS = 40
"""The most damped Newton steps of a vector base-margin fit."""

LOSS_RESOLUTION = 2.0**-24
"""A vector base-margin fit stops after a step that lowers the weighted loss by less
than this fraction of it (float32's unit roundoff: the per-row losses are float32).
Softmax margins are defined up to a constant: float32 rounding of the gradients moves
them along that direction at every step, so the float32 margins alone rarely stop
changing (1,797 weighted rows of 10 classes: 5 steps with that rule alone, 3 with
both)."""


def losses_along(total, c, d, steps):
    """``total(c + s * d)`` for each step size ``s`` of ``steps`` ``(S,)``: the vector
    base-margin fit's line search, one step size after another (``lax.map``).

    Not ``jax.vmap``: XLA's CPU backend (jaxlib 0.10.2) computed the vmapped version
    wrongly. With float64 sums of float32 softmax losses over 1,797 rows, entries 9-11
    of 12 step sizes came out with the values of entries 0-2, and the fit took these
    steps, as if they lowered the loss by 1 %. Unbatched, each entry is right
    (``tests/test_autodiff.py::test_line_search_losses_equal_one_by_one``).
    """
    return jax.lax.map(lambda s: total(c + s * d), steps)


def _fit_base_margin_vector_impl(family, values, y, sample_weight, K, exact=False, n_total=1):
    loss = bind_loss(family, values)
    n = n_rows_of(y)
    w = jnp.ones(n, FLOAT_DTYPE) if sample_weight is None else sample_weight
    gh = _row_grad_hess(loss, K)
    with jax.enable_x64(True):
        w64 = w.astype(ACC_DTYPE)
        add = _summer(exact, n_total)

        def total(c):
            f = jnp.broadcast_to(c.astype(FLOAT_DTYPE), (n, K))
            return add(w64 * map_rows(loss, y, f).astype(ACC_DTYPE))

        def step(_, c):
            G, H = _vector_sums(gh, y, w64, c, K, exact, n_total)
            H = 0.5 * (H + H.T)
            ridge = 1e-6 * (jnp.trace(H) / K + 1.0)
            d = -small_solve(H + ridge * jnp.eye(K), G)
            # where H is indefinite (a loss not jointly convex: Gaussian NLL from 0) the
            # Newton direction may climb: a diagonal Newton step instead, downhill
            diag = -G / jnp.maximum(jnp.abs(jnp.diagonal(H)), ridge)
            d = jnp.where(jnp.all(jnp.isfinite(d)) & (jnp.dot(G, d) < 0), d, diag)
            d = jnp.where(jnp.all(jnp.isfinite(d)), d, -G)
            d = jnp.clip(d, -1e3, 1e3)
            l0 = total(c)
            steps = 0.5 ** jnp.arange(12.0)
            losses = losses_along(total, c, d, steps)
            losses = jnp.where(jnp.isfinite(losses), losses, jnp.inf)
            best = jnp.min(losses)  # (argmin's reduction fails under scoped x64)
            j = jnp.min(jnp.where(losses == best, jnp.arange(12), 12))
            new = jnp.where(best <= l0, c + steps[jnp.minimum(j, 11)] * d, c)
            return new, best < l0 - LOSS_RESOLUTION * jnp.abs(l0)

        # At most VECTOR_NEWTON_STEPS steps, ending early once a step leaves the float32
        # margins unchanged or lowers the loss by less than LOSS_RESOLUTION of it
        # (Newton converges in a handful of steps; every step costs 14 passes over the
        # rows).
        def more(state):
            i, c, moved = state
            return (i < VECTOR_NEWTON_STEPS) & moved

        def advance(state):
            i, c, _ = state
            new, lowered = step(i, c)
            moved = jnp.any(new.astype(FLOAT_DTYPE) != c.astype(FLOAT_DTYPE))
            return i + 1, new, lowered & moved

        _, c, _ = jax.lax.while_loop(
            more, advance, (jnp.asarray(0, jnp.int32), jnp.zeros(K, ACC_DTYPE), jnp.asarray(True))
        )
        return c.astype(FLOAT_DTYPE)


_fit_base_margin = backend_jit(_fit_base_margin_impl, release=False, static_argnums=(0, 4))
QUICK_VECTOR_ENTRIES = 1 << 18
"""Rows times outputs up to which the vector base-margin fit compiles with
``QUICK_COMPILE``; above, XLA's default optimisations, whose compile costs about
as much and whose run saves more (softmax, first call / a warm call: 1,797 rows x 10 classes 0.28
s / 7 ms quick against 0.35 s / 2.5 ms; 100,000 x 10 0.45 s / 149 ms against 0.44 s /
55 ms; 1,000,000 x 3 0.75 s / 485 ms against 0.50 s / 172 ms)."""


def _quick_vector_fit(family, values, y, sample_weight, K, *_):
    return n_rows_of(y) * K <= QUICK_VECTOR_ENTRIES


_fit_base_margin_vector = backend_jit(
    _fit_base_margin_vector_impl,
    small=_quick_vector_fit,
    small_options=QUICK_COMPILE,
    release=False,
    static_argnums=(0, 4, 5),
)
