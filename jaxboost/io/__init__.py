"""Model files: where a trained ``Booster`` leaves the journey and comes back.

The last stage of data -> engine -> training -> booster -> io/adapters: a ``Booster``
becomes a file and a file becomes a ``Booster`` again, and nothing else in jaxboost
reads or writes models. The booster does not import this package; each format
registers its writer with it (``booster.register_writer``), so ``Booster.save`` and
``Booster.to_xgboost_json`` work once ``jaxboost`` is imported.

* ``format``: jaxboost's own model format (validated JSON, every key documented
  there): ``save`` / ``load``, ``dumps`` / ``loads``, ``to_dict`` / ``from_dict``;
* ``xgboost``: XGBoost's JSON model schema: ``to_xgboost_json`` and ``from_xgboost``;
* ``files``: what both formats read and write through: one strict JSON reader
  (regular files only, size and parse memory bounded before parsing, UTF-8 only, no
  duplicate keys, no ``NaN``/``Infinity`` unless the format allows them) and one
  atomic writer (which refuses FIFOs and devices and cleans up after killed saves);
* ``checks``: typed checks of parsed JSON values, each error naming its key, and the
  limits and tree checks both readers share (``MAX_CLASSES``, ``MAX_FEATURES``,
  ``MAX_NODES``; float32 overflow of leaf sums; covers that SHAP can use);
* ``objective``: a model's objective as a catalogue name or a callable's qualname
  (a file never names code to import).
"""

from .format import FORMAT_VERSION, ModelFormatError, dumps, from_dict, load, loads, save, to_dict
from .xgboost import from_xgboost, to_xgboost_json

__all__ = [
    "FORMAT_VERSION",
    "ModelFormatError",
    "to_dict",
    "from_dict",
    "dumps",
    "loads",
    "save",
    "load",
    "from_xgboost",
    "to_xgboost_json",
]
