"""Every python block of the README runs as shipped (its own file, so that pytest-xdist
runs it beside the example scripts of tests/test_examples.py)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(code):
    exec(compile(code, "README.md", "exec"), {})
