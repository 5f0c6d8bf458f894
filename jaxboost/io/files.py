"""Bytes on disk: the one strict JSON reader and the one atomic writer of both formats.

Both model formats (``format``: jaxboost's, ``xgboost``: XGBoost's JSON schema) read
and write through these three functions, so a file is never read past a size limit,
never parsed leniently and never left half-written:

* ``read_bytes(path)``: at most ``MAX_TEXT_BYTES`` bytes of a file;
* ``parse_json(text)``: UTF-8 JSON with no duplicate keys, no ``NaN``/``Infinity``
  literals unless the format allows them (XGBoost's may hold ``Infinity`` thresholds),
  bounded length and nesting;
* ``atomic_write(path, data)``: a fsynced temporary file renamed over ``path``.

Every way the reader refuses a text raises ``ModelFormatError`` (a ``ValueError``);
a format that reports its own error type converts it.

>>> parse_json('{"a": [1, 2.5, null]}')
{'a': [1, 2.5, None]}
>>> parse_json('{"a": 1, "a": 2}')
Traceback (most recent call last):
  ...
jaxboost.errors.ModelFormatError: duplicate key 'a' in a JSON object
>>> parse_json('[Infinity]', allow_nonfinite=True)
[inf]
"""

from __future__ import annotations

import errno
import json
import os
import secrets

from ..errors import ModelFormatError

MAX_TEXT_BYTES = 2 ** 31
"""Largest model text ``load`` / ``loads`` (and ``from_xgboost``) accept."""


def _reject_constant(name):
    raise ModelFormatError(f"not standard JSON: {name} (non-finite numbers are not "
                           f"allowed in a model file)")


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise ModelFormatError(f"duplicate key {k!r} in a JSON object")
            seen.add(k)
    return out


def parse_json(text, *, allow_nonfinite: bool = False):
    """The parsed value of JSON ``text`` (``str``, or UTF-8 ``bytes``), strictly.

    Refused with ``ModelFormatError``: more than ``MAX_TEXT_BYTES`` bytes or
    characters, bytes that are not UTF-8, invalid JSON, a key twice in one object,
    nesting deeper than Python's recursion limit, and the literals ``NaN``,
    ``Infinity`` and ``-Infinity`` unless ``allow_nonfinite`` (then they parse to the
    float values). ``TypeError`` when ``text`` is neither ``str`` nor ``bytes``.
    """
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_TEXT_BYTES:
            raise ModelFormatError(f"model text is larger than {MAX_TEXT_BYTES} bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ModelFormatError(f"model file is not UTF-8 text: {e}") from None
    elif not isinstance(text, str):
        raise TypeError(f"loads expects str or bytes, got {type(text).__name__}")
    if len(text) > MAX_TEXT_BYTES:
        raise ModelFormatError(f"model text is longer than {MAX_TEXT_BYTES} characters")
    constants = {} if allow_nonfinite else {"parse_constant": _reject_constant}
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, **constants)
    except RecursionError:
        raise ModelFormatError("not a model: JSON nested too deeply") from None
    except ModelFormatError:
        raise
    except ValueError as e:  # json.JSONDecodeError, over-long integer literals
        raise ModelFormatError(f"not valid JSON: {e}") from None


def read_bytes(path) -> bytes:
    """The bytes of the file at ``path``; ``ModelFormatError`` when it holds more than
    ``MAX_TEXT_BYTES`` (``OSError`` when it cannot be read)."""
    with open(os.fspath(path), "rb") as f:
        if os.fstat(f.fileno()).st_size > MAX_TEXT_BYTES:
            raise ModelFormatError(f"{path}: larger than {MAX_TEXT_BYTES} bytes")
        return f.read(MAX_TEXT_BYTES + 1)  # a file that grew meanwhile: parse_json refuses


def _fsync_directory(directory: str) -> None:
    """Make a rename durable; a no-op where directories cannot be opened (Windows)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically.

    The bytes go to a new temporary file beside ``path``, are flushed and fsynced, then
    the file is renamed over ``path`` (``os.replace``) and the directory is fsynced:
    after a crash at any moment ``path`` holds either the old file or the new one, never
    a mix. The temporary file is removed when anything fails. The new file gets the
    default permissions (``0o666`` less the umask). A symlink at ``path`` is replaced,
    not followed. The one writer of model files (jaxboost JSON and XGBoost JSON).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(errno.EEXIST, "could not create a temporary file", directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)
