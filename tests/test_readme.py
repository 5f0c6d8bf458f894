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


def test_writing_your_own_loss_walks_through_each_option_with_a_block():
    """Issue 15's walk-through: link, Hessian policy and diagnosis, refit, side data,
    hyperparameters and host metrics, each a subsection with a runnable block (run by
    test_readme_python_block_runs like every block)."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Writing your own loss"):]
    section = section[:section.index("\n## ", 3)]
    parts = re.split(r"\n### ", section)[1:]
    topics = [("link", "link="), ("hessian", "HessianWarning"), ("refit", 'refit="newton"'),
              ("side data", "base_margin="), ("hyperparameters", "loss_params"),
              ("metrics", "jaxboost.metrics.host(")]
    assert len(parts) == len(topics)
    for part, (title, needed) in zip(parts, topics, strict=True):
        assert title in part.splitlines()[0].lower(), part.splitlines()[0]
        blocks = re.findall(r"```python\n(.*?)```", part, flags=re.S)
        assert blocks and any(needed in b for b in blocks), title
        assert all(b in BLOCKS for b in blocks)
