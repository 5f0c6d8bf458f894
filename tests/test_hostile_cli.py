"""The command line on hostile input: every case exits with status 2 and exactly one
line on stderr (no traceback), before any training starts.

Most cases run ``cli.main`` in this process (stderr captured); one runs the real
``python -m jaxboost`` to check the exit status and stderr of the process itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_io_fuzz import watchdog

from jaxboost.adapters import cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if the command gets as far as training."""
    import jaxboost

    def refuse(*args, **kwargs):
        raise AssertionError("the command started training")

    monkeypatch.setattr(jaxboost, "compare", refuse)


def one_error_line(capsys, *args):
    """Run ``compare`` with ``args``; its stderr, checked to be one line."""
    with watchdog(60):
        status = cli.main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    assert status == 2, captured
    err = captured.err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("python -m jaxboost compare: error: ") and "Traceback" not in err
    return err


@pytest.fixture
def good_csv(tmp_path):
    path = tmp_path / "good.csv"
    path.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    return path


def test_oversized_quoted_field(tmp_path, capsys, no_training):
    # A quoted field longer than the csv module's limit (131072): _csv.Error before.
    path = tmp_path / "big.csv"
    path.write_text('a,b,y\n"' + "x" * 200_000 + '",1,0\n1,2,3\n')
    err = one_error_line(capsys, path)
    assert "line 2" in err and "field larger than field limit (131072)" in err
    path.write_text('"' + "x" * 200_000 + '",b,y\n1,2,3\n')  # in the header
    assert "field larger than field limit" in one_error_line(capsys, path)


@pytest.mark.parametrize("delimiter", ['"', "\n", "\r"])
def test_delimiter_that_cannot_separate_fields(good_csv, capsys, no_training, delimiter):
    # A quote: "control characters 'quotechar' and 'delimiter' are incompatible"; a
    # newline: "'delimiter' cannot be a newline" (TypeErrors from NumPy) before.
    err = one_error_line(capsys, good_csv, "--delimiter", delimiter)
    assert f"--delimiter cannot be {delimiter!r}" in err


def test_plot_path_that_cannot_be_written(good_csv, tmp_path, capsys, no_training):
    # Checked before training (a PermissionError / NotADirectoryError traceback after
    # training before).
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    err = one_error_line(capsys, good_csv, "--plot", a_file / "curves.png")
    assert "--plot" in err and "Not a directory" in err
    err = one_error_line(capsys, good_csv, "--plot", tmp_path)
    assert "a directory, not a regular file" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifo_and_devices_are_refused_without_blocking(tmp_path, capsys, good_csv, no_training):
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe), not a regular file" in one_error_line(capsys, fifo)
    if os.path.exists("/dev/zero"):
        assert "a character device" in one_error_line(capsys, "/dev/zero")
    assert "a FIFO" in one_error_line(capsys, good_csv, "--plot", fifo)


def test_csv_over_the_size_limit(tmp_path, capsys, no_training):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as f:  # sparse: refused by its size, nothing is read
        f.truncate(cli.MAX_CSV_BYTES + 1)
    assert f"larger than the limit of {cli.MAX_CSV_BYTES} bytes" in one_error_line(capsys, path)


@pytest.mark.parametrize("cell", ["1_000", "١٢", "0x10", "1e", "--1", "infinit"])
def test_numbers_are_read_as_numpy_reads_them(tmp_path, capsys, no_training, cell):
    # Python's float() reads "1_000" as 1000 and "١٢" as 12; NumPy's reader does not.
    path = tmp_path / "cells.csv"
    path.write_text(f"a,b,y\n{cell},2,1\n3,4,0\n")
    assert f"line 2, column 'a': {cell!r} is not a number" in one_error_line(capsys, path)


def test_valid_numbers_still_read(tmp_path):
    # Cells that take the careful reader (a quoted header) keep every valid spelling.
    path = tmp_path / "ok.csv"
    path.write_text('"a",b,c\n1e3,-.5,+2.\nINF,-infinity,NaN\n 7 ,na,\n')
    header, data, _ = cli.read_csv(str(path))
    assert header == ["a", "b", "c"]
    np.testing.assert_array_equal(
        data, [[1000, -0.5, 2], [np.inf, -np.inf, np.nan], [7, np.nan, np.nan]]
    )


def test_target_index_is_plain_digits(good_csv, capsys, no_training):
    assert "no column named '1_0'" in one_error_line(capsys, good_csv, "--target", "1_0")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_process_exits_2_with_one_line_on_a_fifo(tmp_path):
    # The real process: it hung forever on a FIFO before.
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    out = subprocess.run(
        [sys.executable, "-m", "jaxboost", "compare", str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "a FIFO" in out.stderr, out.stderr


def test_infinite_feature_is_named_by_its_file_line(tmp_path, capsys, no_training):
    """An ``inf`` cell in a feature column: the file line and the column (before, the
    training error counted rows of the random train split: the wrong line)."""
    path = tmp_path / "inf.csv"
    rows = [f"{i},{i % 3},{i % 2}" for i in range(30)]
    rows[17] = "inf,1,0"  # file line 19 (line 1 is the header)
    path.write_text("a,b,y\n" + "\n".join(rows) + "\n")
    err = one_error_line(capsys, path)
    assert "column 'a' has 1 infinite value(s), the first on line 19" in err
