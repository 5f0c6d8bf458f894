"""Bytes on disk: the one strict JSON reader and the one atomic writer of both formats.

Both model formats (``format``: jaxboost's, ``xgboost``: XGBoost's JSON schema) read
and write through these functions, so a file is never read past a size limit, never
parsed when parsing it would cost more memory than a limit, never parsed leniently and
never left half-written:

* ``read_bytes(path)``: the bytes of a regular file (no FIFO, device, socket or
  directory: ``/dev/zero`` or a FIFO without a writer would never end), refused before
  reading when it holds more than ``MAX_TEXT_BYTES``;
* ``parse_json(text)``: UTF-8 JSON with no duplicate keys, no ``NaN``/``Infinity``
  literals unless the format allows them (XGBoost's may hold ``Infinity`` thresholds),
  bounded length, nesting and parse cost (``parse_cost``, checked before parsing);
* ``read_json(path)``: both, with the file's bytes released before the parse;
* ``atomic_write(path, data)``: a fsynced temporary file renamed over ``path``; the
  temporary files of saves that were killed are removed by the next save to ``path``.

Every way the reader refuses a text or a file raises ``ModelFormatError`` (a
``ValueError``); ``OSError`` only when the file cannot be opened or read at all.

Memory. Parsed JSON is Python objects: a list costs 56 bytes and more, a number 24 to
32 bytes and a pointer, so 3 bytes of text (``[],``) can cost 65 bytes of memory.
``parse_cost`` bounds that cost from counts of the text's structural characters (a
C-speed pass over the bytes, no allocation); a text whose bound exceeds
``MAX_PARSE_BYTES`` (256 MiB) is refused before ``json`` sees it. Real model files cost
8 to 11 times their size by this bound (3.5 to 4.5 times measured), so files of up to
about 25 MB load; raise ``jaxboost.io.files.MAX_PARSE_BYTES`` (and ``MAX_TEXT_BYTES``)
to load larger ones.

>>> parse_json('{"a": [1, 2.5, null]}')
{'a': [1, 2.5, None]}
>>> parse_json('{"a": 1, "a": 2}')
Traceback (most recent call last):
  ...
jaxboost.errors.ModelFormatError: duplicate key 'a' in a JSON object
>>> parse_json('[Infinity]', allow_nonfinite=True)
[inf]
>>> parse_cost(b'[[],[]]')  # 2 bytes per byte, 80 per "[", 48 per ","
302
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import stat

from ..errors import ModelFormatError

MAX_TEXT_BYTES = 2**27
"""Largest model text (bytes, or characters of a ``str``) ``load`` / ``loads`` and
``from_xgboost`` read: 128 MiB. A file is refused by its size before it is read."""

MAX_PARSE_BYTES = 2**28
"""Most memory the parse of a model text may take, as ``parse_cost`` bounds it before
parsing: 256 MiB."""

# Upper bounds of the memory json.loads spends per structural character (CPython 3.10+,
# 64-bit, measured with tracemalloc): a list with its first pointer, a dict (with the
# list of pairs the duplicate-key hook sees), one more value in a container (a float or
# an int object and its pointer), and a string object per quote pair.
_COST_OPEN_LIST = 80
_COST_OPEN_OBJECT = 200
_COST_VALUE = 48
_COST_QUOTE = 32


def parse_cost(text) -> int:
    """An upper bound, in bytes, of the memory ``parse_json(text)`` takes.

    .. math:: c = w\\,S + 80\\,n_{[} + 200\\,n_{\\{} + 48\\,n_{,} + 32\\,n_{"}

    for a text of ``S`` bytes (or characters) holding ``n_[`` brackets, ``n_{`` braces,
    ``n_,`` commas and ``n_"`` quotes, counted anywhere (inside strings too, so the
    bound only errs high). ``w`` covers the decoded text and the characters of the
    parsed strings: 2 for ASCII bytes, 8 for other bytes (4 bytes per character at
    most), 1 for a ``str`` (already decoded). The counts are C-speed passes over the
    text; nothing is allocated.

    >>> parse_cost('[1,2,3]')
    183
    """
    if isinstance(text, str):
        width, chars = (1 if text.isascii() else 4), '[{,"'
    else:
        width, chars = (2 if text.isascii() else 8), b'[{,"'
    n_list, n_obj, n_comma, n_quote = (text.count(chars[i : i + 1]) for i in range(4))
    return (
        width * len(text)
        + _COST_OPEN_LIST * n_list
        + _COST_OPEN_OBJECT * n_obj
        + _COST_VALUE * n_comma
        + _COST_QUOTE * n_quote
    )


def _reject_constant(name):
    raise ModelFormatError(
        f"not standard JSON: {name} (non-finite numbers are not allowed in a model file)"
    )


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise ModelFormatError(f"duplicate key {k!r} in a JSON object")
            seen.add(k)
    return out


def _check_size(n, what):
    if n > MAX_TEXT_BYTES:
        raise ModelFormatError(
            f"{what} is larger than {MAX_TEXT_BYTES} bytes (jaxboost.io.files.MAX_TEXT_BYTES)"
        )


def _check_cost(text, what):
    cost = parse_cost(text)
    if cost > MAX_PARSE_BYTES:
        raise ModelFormatError(
            f"{what} ({len(text)} bytes) would take up to {cost / 2**20:.0f} MiB of "
            f"memory to parse, more than the limit of {MAX_PARSE_BYTES / 2**20:.0f} MiB "
            f"(jaxboost.io.files.MAX_PARSE_BYTES; raise it to load a larger model)"
        )


def _decode(data, what) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelFormatError(f"{what} is not UTF-8 text: {e}") from None


def _loads(text: str, allow_nonfinite: bool):
    constants = {} if allow_nonfinite else {"parse_constant": _reject_constant}
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, **constants)
    except RecursionError:
        raise ModelFormatError("not a model: JSON nested too deeply") from None
    except MemoryError:
        raise ModelFormatError(
            "not a model: its JSON ran out of memory while parsing "
            "(lower jaxboost.io.files.MAX_PARSE_BYTES)"
        ) from None
    except ModelFormatError:
        raise
    except ValueError as e:  # json.JSONDecodeError, over-long integer literals
        raise ModelFormatError(f"not valid JSON: {e}") from None


def parse_json(text, *, allow_nonfinite: bool = False, limits: bool = True):
    """The parsed value of JSON ``text`` (``str``, or UTF-8 ``bytes``), strictly.

    Refused with ``ModelFormatError``, before parsing: more than ``MAX_TEXT_BYTES``
    bytes or characters, a ``parse_cost`` above ``MAX_PARSE_BYTES`` (these two only
    with ``limits``: a text made in this process, such as a live ``xgboost.Booster``'s,
    is not hostile), bytes that are not UTF-8; while parsing: invalid JSON, a key twice
    in one object, nesting deeper than Python's recursion limit, the literals ``NaN``,
    ``Infinity`` and ``-Infinity`` unless ``allow_nonfinite`` (then they parse to the
    float values). ``TypeError`` when ``text`` is neither ``str`` nor ``bytes``.
    """
    if not isinstance(text, (bytes, bytearray, str)):
        raise TypeError(f"loads expects str or bytes, got {type(text).__name__}")
    if limits:
        _check_size(len(text), "model text")
        _check_cost(text, "model text")
    if isinstance(text, (bytes, bytearray)):
        text = _decode(text, "model file")
    return _loads(text, allow_nonfinite)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode) -> str:
    """What a ``st_mode`` that is not a regular file's is, in words."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path, *, limit=None, what="model file", error=ModelFormatError) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    The file is opened without blocking (a FIFO with no writer does not hang) and
    checked with ``fstat`` before anything is read: anything but a regular file (a
    FIFO, a device such as ``/dev/zero``, a socket, a directory) and a file larger than
    ``limit`` (default ``MAX_TEXT_BYTES``) raise ``error`` (``ModelFormatError``) naming
    the path; a file that grows while it is read is cut at ``limit + 1`` bytes and
    refused the same way. ``OSError`` when the file cannot be opened or read.
    """
    limit = MAX_TEXT_BYTES if limit is None else limit
    name = os.fspath(path)
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0)
    )
    fd = os.open(name, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(
                f"{name!r} is {file_kind(st.st_mode)}, not a regular file; a "
                f"{what} is read from a regular file only"
            )
        if st.st_size > limit:
            raise error(f"{name!r} is larger than the limit of {limit} bytes for a {what}")
        parts, total = [], 0
        want = st.st_size + 1  # one read when the size is right; more if it grew
        while total <= limit:
            chunk = os.read(fd, max(min(want, limit + 1 - total), 1))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            want = 1 << 20
        if total > limit:
            raise error(f"{name!r} is larger than the limit of {limit} bytes for a {what}")
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def file_path(path, what: str = "path") -> str:
    """``path`` (``str``, ``bytes`` or ``os.PathLike``) as a ``str``, refusing an empty
    one and, for reading, JSON text given where a file name belongs (``ValueError``;
    ``TypeError`` for another type).

    >>> file_path(b"model.json")
    'model.json'
    >>> file_path('{"format": "jaxboost-model"}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: path looks like model JSON text, not a file name: ...
    """
    try:
        name = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"{what} must be a file path (str, bytes or os.PathLike), got {type(path).__name__}"
        ) from None
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if name == "":
        raise ValueError(f"{what} is empty; expected a file name such as 'model.json'")
    if name.lstrip()[:1] in ("{", "[") and not os.path.exists(name):
        raise ValueError(
            f"{what} looks like model JSON text, not a file name: pass the "
            f"text to jaxboost.io.loads(text), or the file's path here"
        )
    return name


def read_json(path, *, allow_nonfinite: bool = False):
    """``parse_json`` of the file at ``path`` (read by ``read_bytes``); the bytes are
    released once decoded, so the parse never holds them and its result at once."""
    path = file_path(path)
    data = read_bytes(path)
    what = f"{os.fspath(path)!r}"
    _check_cost(data, what)
    text = _decode(data, what)
    del data
    return _loads(text, allow_nonfinite)


# --------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------

try:  # advisory locks mark the temporary file of a save in progress
    import fcntl
except ImportError:  # pragma: no cover - Windows: stale files are not cleaned up
    fcntl = None


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


NAME_MAX = 255
"""Bytes in one file name on the usual file systems (ext4, XFS, APFS, NTFS)."""


def _temporary_stem(base: str) -> str:
    """The part of ``atomic_write``'s temporary names that stands for the target
    ``base``: ``base`` itself, or, when ``.{base}.{12 hex}.tmp`` would pass
    ``NAME_MAX`` bytes, a digest of it (a 250-character target failed on its
    temporary name before, issue 28 item 14).

    >>> _temporary_stem("m.json"), len(_temporary_stem("x" * 250))
    ('m.json', 41)
    """
    if len(os.fsencode(base)) + 18 <= NAME_MAX:
        return base
    return "jaxboost-" + hashlib.sha256(os.fsencode(base)).hexdigest()[:32]


def _temporary_names(base: str):
    """The pattern of ``atomic_write``'s temporary files for a target named ``base``."""
    return re.compile(r"\." + re.escape(_temporary_stem(base)) + r"\.[0-9a-f]{12}\.tmp")


def remove_stale_temporaries(path) -> list:
    """Remove the temporary files that interrupted saves to ``path`` left behind.

    ``atomic_write`` holds an exclusive ``flock`` on its temporary file
    (``.{name}.{12 hex digits}.tmp`` beside ``path``; a digest for ``name`` when that is
    too long, ``_temporary_stem``) from its creation until it is
    renamed; the kernel drops the lock when the writer dies, even by ``kill -9``. A
    temporary file whose lock can be taken therefore belongs to no running save and is
    removed; one still locked (a save in progress, in this process or another) is
    left alone. Returns the removed paths. Where ``fcntl`` is unavailable (Windows),
    nothing is removed.
    """
    if fcntl is None:
        return []
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    pattern = _temporary_names(os.path.basename(path))
    removed = []
    try:
        entries = [e.name for e in os.scandir(directory) if pattern.fullmatch(e.name)]
    except OSError:
        return removed
    for name in entries:
        tmp = os.path.join(directory, name)
        try:
            fd = os.open(
                tmp,
                os.O_RDONLY
                | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_NONBLOCK", 0)
                | getattr(os, "O_CLOEXEC", 0),
            )
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # locked: a save in progress
            try:  # still the same file under that name (not renamed meanwhile)
                now = os.stat(tmp, follow_symlinks=False)
            except OSError:
                continue
            if (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                try:
                    os.unlink(tmp)
                    removed.append(tmp)
                except OSError:
                    pass
        finally:
            os.close(fd)
    return removed


def _check_target(path: str) -> None:
    """``path`` may be replaced: absent, a regular file or a symbolic link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        return  # let the write itself report what is wrong
    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "cannot save a model over a directory", path)
    raise ValueError(
        f"refusing to save a model over {path!r}: it is "
        f"{file_kind(st.st_mode)}, not a regular file (a model file is "
        f"written as a new regular file renamed over its path, which would "
        f"replace the {file_kind(st.st_mode).split(' ', 1)[-1]})"
    )


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically.

    The bytes go to a new temporary file beside ``path``, are flushed and fsynced, then
    the file is renamed over ``path`` (``os.replace``) and the directory is fsynced:
    after a crash at any moment ``path`` holds either the old file or the new one, never
    a mix. The temporary file is removed when anything fails; one left by a writer that
    was killed (``kill -9``, a power cut) is removed by the next ``atomic_write`` to the
    same path (``remove_stale_temporaries``). The new file gets the default permissions
    (``0o666`` less the umask). A symlink at ``path`` is replaced, not followed; a
    directory (``IsADirectoryError``), a FIFO, a device or a socket at ``path``
    (``ValueError``) is refused before anything is written. The one writer of model
    files (jaxboost JSON and XGBoost JSON).
    """
    path = file_path(path)
    _check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    remove_stale_temporaries(path)
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_BINARY", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    for _ in range(100):
        tmp = os.path.join(directory, f".{_temporary_stem(base)}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        if fcntl is None:
            break
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies
        try:  # a cleaner may have removed it before the lock was taken: start again
            if os.stat(tmp, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(errno.EEXIST, "could not create a temporary file", directory)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            os.replace(tmp, path)
        finally:
            os.close(fd)  # after the rename: the lock covers the whole write
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)
