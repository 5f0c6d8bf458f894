"""Training: from a user's call to a ``Booster``.

The third stage of data -> engine -> training -> booster -> io/adapters: it checks a
call's arguments, prepares the data, runs the engine's round program chunk by chunk
(over devices and processes with ``jaxboost.parallel``), evaluates ``jaxboost.metrics``
and assembles the ``Booster``.

``config`` (every argument checked once; ``constraints`` for the constraint options)
-> ``data`` (validate, bin, pad, place) ->
``program`` (the round program's static record and traced numbers) -> ``loop`` (chunks
of rounds, evaluation, callbacks, one chunk behind) -> ``evaluation`` (its own compiled
program) -> ``train`` / ``many`` (the public entry points). ``callbacks`` holds the
per-round hooks a user passes (early stopping, checkpoints, the progress bar; public as
``jaxboost.callbacks``); ``hessian`` and ``names`` the Hessian guard and the hints for
XGBoost's spellings of the options.
"""

from .many import train_many
from .train import train

__all__ = ["train", "train_many"]
