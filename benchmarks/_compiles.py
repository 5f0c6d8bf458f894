"""Count XLA compilations, by program name: ``with count_compiles() as c: ...``.

Self-contained (imports only JAX), so that the test suite can use the same counter
(e.g. ``assert c.count("_train_chunk") == 1``: one compile of the training program).

How it works (verified on jax 0.10.2): every XLA compilation of a jitted program runs
inside ``jax._src.dispatch.log_elapsed_time(..., event=BACKEND_COMPILE_EVENT)``, which
on exit calls the public hook ::

    jax.monitoring.record_event_duration_secs(
        "/jax/core/compile/backend_compile_duration", seconds, fun_name=NAME)

with ``NAME`` the lowered module's name: ``"jit(<function __name__>)"`` for ``jax.jit``
(``pjit`` calls, ``jnp`` ops run eagerly: ``"jit(add)"``, ``"jit(_where)"``, ...). The
counter registers a listener with ``jax.monitoring.register_event_duration_secs_listener``
and keeps the ``fun_name`` keyword of every such event. This needs no logging set-up
(``jax_log_compiles`` prints "Finished XLA compilation of NAME in ..." from the same
place, but only as formatted log text).

The event also fires when JAX's persistent compilation cache supplies the executable
(the compile is then a disk read). Such a read records ``/jax/compilation_cache/cache_hits``
(no name) on the same thread just before the compile event ends, so the counter flags
those entries; ``Compiles.misses()`` are the programs XLA really compiled. Programs
served by a jitted function's in-memory cache record nothing at all.

Tracing is recorded the same way (``/jax/core/compile/jaxpr_trace_duration``,
``fun_name`` = the Python function's name), kept in ``Compiles.traces``: a retrace that
hits the lowering cache shows up there but compiles nothing.
"""

from __future__ import annotations

import contextlib
import threading

import jax

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


class Compiles(list):
    """Names of the programs compiled (``"jit(name)"``), in order; list-like.

    Attributes:
      seconds: compile seconds per entry (same order).
      cache_hit: per entry, whether JAX's persistent cache supplied the executable.
      traces: names of the Python functions traced (``jaxpr_trace_duration`` events).
    """

    def __init__(self):
        super().__init__()
        self.seconds: list[float] = []
        self.cache_hit: list[bool] = []
        self.traces: list[str] = []

    @staticmethod
    def _matches(entry: str, name: str) -> bool:
        return entry == name or entry == f"jit({name})"

    def count(self, name: str) -> int:  # type: ignore[override]
        """Compiles of ``name`` (given as ``"f"`` or ``"jit(f)"``)."""
        return sum(self._matches(e, name) for e in self)

    def misses(self) -> list[str]:
        """Programs XLA compiled (not read from the persistent cache)."""
        return [n for n, hit in zip(self, self.cache_hit) if not hit]

    def total_seconds(self) -> float:
        return float(sum(self.seconds))

    def summary(self) -> str:
        """``"jit(a) x2, jit(b)"``: the names with their multiplicity, in first order."""
        counts: dict[str, int] = {}
        for n in self:
            counts[n] = counts.get(n, 0) + 1
        return ", ".join(n if k == 1 else f"{n} x{k}" for n, k in counts.items())


@contextlib.contextmanager
def count_compiles():
    """Context manager yielding a :class:`Compiles` filled while the block runs.

    Thread-safe for compiles on other threads (each thread tracks its own cache hits).
    Nested use is fine: each context has its own listener.
    """
    out = Compiles()
    local = threading.local()
    lock = threading.Lock()

    def on_duration(event, duration, **kwargs):
        if event == BACKEND_COMPILE_EVENT:
            hit = getattr(local, "hit", False)
            local.hit = False
            with lock:
                out.append(str(kwargs.get("fun_name", "?")))
                out.seconds.append(float(duration))
                out.cache_hit.append(hit)
        elif event == TRACE_EVENT:
            with lock:
                out.traces.append(str(kwargs.get("fun_name", "?")))

    def on_event(event, **kwargs):
        if event == CACHE_HIT_EVENT:
            local.hit = True

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    try:
        yield out
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)
