"""Command line: ``python -m jaxboost compare data.csv --target COL ...``.

``compare`` reads a CSV file with a header row (NumPy only), splits its rows at random
into train and test sets, trains each objective with the same tree settings and prints
``jaxboost.compare``'s table for the test set, optionally with a learning-curve figure.
Errors in the input (a missing file, a FIFO or device instead of a regular file, a file
over ``MAX_CSV_BYTES``, an unknown column, a cell that is not a number, a field over the
``csv`` module's limit, a delimiter that cannot separate fields, a ``--plot`` path that
cannot be written) are reported as one line on stderr with exit status 2, before
training when they can be known before it.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import stat
import sys

import numpy as np

from ..training.options import BY_NAME as OPTIONS

PROG = "python -m jaxboost"
MISSING = frozenset({"", "na", "nan", "n/a", "null"})  # cells read as NaN (any case)
BINARY_DEFAULT = ("logistic", "squared", "exponential")
MAX_CSV_BYTES = 2**30
"""Largest CSV file ``compare`` reads (1 GiB), refused by its size before it is read."""
# A number as NumPy's CSV reader takes it (no "1_000", no non-ASCII digits, which
# Python's float() would accept), or inf/infinity/nan in any case.
_NUMBER = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|inf|infinity|nan)",
    re.IGNORECASE,
)


class CliError(Exception):
    """A problem with the command's input, reported without a traceback."""


# --- CSV ---------------------------------------------------------------------------------
def _delimiter(text: str) -> str:
    text = {"\\t": "\t", "tab": "\t"}.get(text, text)
    if len(text) != 1:
        raise CliError(f"--delimiter must be one character (or '\\t'), got {text!r}")
    if text in '"\r\n':
        raise CliError(
            f"--delimiter cannot be {text!r}: quotes and line breaks are part "
            f"of the CSV syntax; use e.g. ',', ';' or '\\t'"
        )
    return text


def _read_text(path: str) -> str:
    from ..io.files import read_bytes

    try:
        data = read_bytes(path, limit=MAX_CSV_BYTES, what="CSV file", error=CliError)
    except FileNotFoundError:
        raise CliError(f"no such file: {path}") from None
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CliError(f"{path} is not UTF-8 text: {e}") from None


def _csv_rows(reader, path):
    """The rows of a ``csv.reader``; its errors (a field over the csv module's limit, a
    NUL byte) as ``CliError`` naming the line."""
    try:
        yield from reader
    except csv.Error as e:
        raise CliError(f"{path}, line {reader.line_num}: cannot read the CSV: {e}") from None


def _parse_slow(text: str, path: str, delimiter: str):
    """Cell by cell: ``(header, (R, C) float64, line number of each row)``."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = None
    rows, lines = [], []
    for fields in _csv_rows(reader, path):
        if not fields or all(not f.strip() for f in fields):
            continue  # blank line
        if header is None:
            header = [f.strip() for f in fields]
            continue
        line = reader.line_num
        if len(fields) != len(header):
            raise CliError(
                f"{path}, line {line}: {len(fields)} field(s), but the header has {len(header)}"
            )
        row = []
        for name, cell in zip(header, fields):
            cell = cell.strip()
            if cell.lower() in MISSING:
                row.append(np.nan)
                continue
            if not _NUMBER.fullmatch(cell):
                raise CliError(
                    f"{path}, line {line}, column {name!r}: {cell!r} is not a "
                    f"number (missing values: empty, NA or nan)"
                )
            row.append(float(cell))
        rows.append(row)
        lines.append(line)
    if header is None:
        raise CliError(f"{path} is empty; expected a header row and data rows")
    data = np.array(rows, np.float64).reshape(len(rows), len(header))
    return header, data, lines


def read_csv(path: str, delimiter: str = ","):
    """``(header, data, lines)`` of a CSV file with a header row.

    ``data`` is ``(rows, columns)`` float64 with NaN for empty, ``NA`` or ``nan`` cells;
    ``lines`` holds the file line of each row (``None`` when the fast reader was used,
    see ``row_lines``).

    Raises:
      CliError: missing or unreadable file, no header, a row with the wrong number of
        fields, or a cell that is not a number (the message names the line and column).
    """
    text = _read_text(path)
    first = next(_csv_rows(csv.reader(io.StringIO(text), delimiter=delimiter), path), None)
    if not first or all(not f.strip() for f in first):
        # Blank first line(s), no header: let the careful reader say what is wrong.
        return _parse_slow(text, path, delimiter)
    header = [f.strip() for f in first]
    try:
        # NumPy's C parser for the common case (numbers and nan only).
        data = np.loadtxt(
            io.StringIO(text),
            delimiter=delimiter,
            skiprows=1,
            dtype=np.float64,
            ndmin=2,
            comments=None,
            quotechar='"',
        )
    except ValueError:
        return _parse_slow(text, path, delimiter)
    if data.shape[1] != len(header) and data.shape[0] > 0:
        return _parse_slow(text, path, delimiter)
    return header, data.reshape(-1, len(header)), None


def _column(header, target, path) -> int:
    if target is None:
        return len(header) - 1
    if target in header:
        if header.count(target) > 1:
            raise CliError(
                f"{path} has {header.count(target)} columns named {target!r}; "
                f"pass the 0-based column index instead"
            )
        return header.index(target)
    i = int(target) if re.fullmatch(r"[+-]?[0-9]{1,9}", target.strip()) else None
    if i is not None and -len(header) <= i < len(header):
        return i % len(header)
    shown = ", ".join(repr(h) for h in header[:20]) + (", ..." if len(header) > 20 else "")
    what = (
        f"column index {i} is out of range ({len(header)} columns)"
        if i is not None
        else f"no column named {target!r}"
    )
    raise CliError(f"--target: {what} in {path}; columns: {shown}")


# --- compare -------------------------------------------------------------------------------
def _split_list(text):
    return [t.strip() for t in text.split(",") if t.strip()]


def _check_plot(path: str) -> None:
    """``--plot`` can be written: a regular file or nothing at ``path``, and the nearest
    existing folder above it writable (the missing ones are created). Checked before
    training, so a typo costs no training time."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise CliError(f"--plot {path}: cannot write there: {e.strerror or e}") from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            from ..io.files import file_kind

            raise CliError(
                f"--plot {path} is {file_kind(st.st_mode)}, not a regular "
                f"file; give the path of a PNG file to write"
            )
        if not os.access(path, os.W_OK):
            raise CliError(f"--plot {path}: the file exists and is not writable")
        return
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not os.path.isdir(folder):
        raise CliError(f"--plot {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"--plot {path}: the directory {folder} is not writable")


def _compare(args) -> int:
    from .compare import compare

    delimiter = _delimiter(args.delimiter)
    if args.plot:
        _check_plot(args.plot)
    header, data, lines = read_csv(args.csv, delimiter)
    if data.shape[0] == 0:
        raise CliError(f"{args.csv} has a header but no data rows")
    if len(header) < 2:
        raise CliError(f"{args.csv} has one column; expected features and a target column")
    t = _column(header, args.target, args.csv)
    y = data[:, t]
    X = np.delete(data, t, axis=1)
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        if lines is None:
            _, _, lines = _parse_slow(_read_text(args.csv), args.csv, delimiter)
        raise CliError(
            f"target column {header[t]!r} has {bad.size} missing or infinite "
            f"value(s), the first on line {lines[bad[0]]} of {args.csv}; drop "
            f"those rows"
        )
    inf = np.isinf(X)
    if inf.any():  # named here, by file line: training would count rows of its split
        r, c = np.argwhere(inf)[0]
        names = [h for j, h in enumerate(header) if j != t]
        if lines is None:
            _, _, lines = _parse_slow(_read_text(args.csv), args.csv, delimiter)
        raise CliError(
            f"column {names[c]!r} has {int(inf[:, c].sum())} infinite value(s), "
            f"the first on line {lines[r]} of {args.csv}; features must be "
            f"finite numbers (leave a cell empty, or NA, for a missing value)"
        )

    n = data.shape[0]
    n_test = int(round(args.test_fraction * n))
    if args.test_fraction > 0:
        n_test = max(n_test, 1)
    if n - n_test < 1:
        raise CliError(f"--test-fraction {args.test_fraction} leaves no training rows ({n} rows)")
    perm = np.random.default_rng(args.seed).permutation(n)
    test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])

    if args.objectives is None:
        binary = bool(np.isin(y, (0.0, 1.0)).all())
        objectives = list(BINARY_DEFAULT) if binary else ["squared"]
    else:
        objectives = _split_list(args.objectives)
        if not objectives:
            raise CliError("--objectives is empty")
    metrics = None if args.metrics is None else _split_list(args.metrics)
    eval_set = {"test": (X[test], y[test])} if n_test else None
    settings = dict(learning_rate=args.learning_rate, max_depth=args.max_depth, seed=args.seed)

    split = (
        f"train {train.size} / test {test.size} rows (random split, seed {args.seed})"
        if n_test
        else f"all {n} rows for training (--test-fraction 0)"
    )
    print(f"{args.csv}: {n} rows, {X.shape[1]} features, target {header[t]!r}; {split}")
    print(
        f"objectives: {', '.join(objectives)}; rounds={args.rounds}, "
        + ", ".join(f"{k}={v}" for k, v in settings.items())
    )
    sys.stdout.flush()
    cmp = compare(
        objectives,
        X[train],
        y[train],
        eval_set=eval_set,
        metrics=metrics,
        n_rounds=args.rounds,
        **settings,
    )
    print()
    print(cmp)
    if args.plot:
        try:
            folder = os.path.dirname(os.path.abspath(args.plot))
            os.makedirs(folder, exist_ok=True)
            cmp.plot(args.plot, data=list(cmp.data_names))
        except ImportError as e:
            print(f"note: --plot skipped: {e}", file=sys.stderr)
        except OSError as e:  # the folder changed since the check before training
            raise CliError(
                f"--plot {args.plot}: cannot write the figure: {e.strerror or e}"
            ) from None
        else:
            print(f"wrote {args.plot}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="jaxboost: gradient-boosted trees where the loss is JAX code."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser(
        "compare",
        help="train several losses on a CSV file and compare them",
        description="Train several objectives with the same trees on a CSV file (header "
        "row, numeric cells; empty, NA or nan = missing), split at random into "
        "train and test rows, and print each loss's test metrics: the value "
        "after the last round and the best value over rounds.",
        epilog=f"example: {PROG} compare data.csv --target label "
        f"--objectives logistic,squared --metrics logloss,auc --plot curves.png",
    )
    p.add_argument("csv", help="CSV file with a header row")
    p.add_argument(
        "--target",
        default=None,
        help="target column: name or 0-based index (default: the last column)",
    )
    p.add_argument(
        "--objectives",
        default=None,
        help="comma-separated catalogue names (default: logistic,squared,"
        "exponential for a 0/1 target, else squared)",
    )
    # The training options' defaults come from their declaration (training.options).
    for flag, name, kind, what in (
        ("--rounds", "n_rounds", int, "boosting rounds"),
        ("--learning-rate", "learning_rate", float, "shrinkage per round"),
        ("--max-depth", "max_depth", int, "tree depth"),
    ):
        default = OPTIONS[name].default
        p.add_argument(flag, type=kind, default=default, help=f"{what} (default {default})")
    p.add_argument(
        "--metrics",
        default=None,
        help="comma-separated metric names, e.g. logloss,auc (default: each "
        "objective's own default metric)",
    )
    p.add_argument(
        "--test-fraction",
        type=float,
        default=0.3,
        help="share of rows held out for testing (default 0.3; 0: none)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the train/test split and of training (default 0)",
    )
    p.add_argument(
        "--plot",
        default=None,
        metavar="PNG",
        help="write the learning curves to this PNG file (needs matplotlib)",
    )
    p.add_argument("--delimiter", default=",", help="field separator (default ','; '\\t': tab)")
    p.set_defaults(func=_compare, subparser=p)
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "compare":
        if args.rounds < 1:
            args.subparser.error("--rounds must be >= 1")
        if not 0.0 <= args.test_fraction < 1.0:
            args.subparser.error("--test-fraction must be in [0, 1)")
        if args.seed < 0:
            args.subparser.error("--seed must be >= 0")
    try:
        return args.func(args)
    except (CliError, ValueError) as e:  # DataError and LossError are ValueErrors
        message = " ".join(str(e).split())  # one line, whatever the message holds
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return 2
