"""Every python block of the README and of the documentation pages in docs/ runs as
shipped (its own file, so that pytest-xdist runs it beside the example scripts of
tests/test_examples.py). Blocks not meant to run use another fence (```text, ```bash)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(text: str) -> list:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


# (file, block number within it, code), in the order of PAGES
BLOCKS = [
    (page.relative_to(ROOT).as_posix(), i, code)
    for page in PAGES
    for i, code in enumerate(python_blocks(page.read_text()))
]


def test_docs_have_python_examples():
    assert len(BLOCKS) >= 10
    assert {name for name, _, _ in BLOCKS} >= {
        "README.md",
        "docs/getting-started.md",
        "docs/custom-losses.md",
    }


@pytest.mark.parametrize(
    "name,code",
    [(name, code) for name, _, code in BLOCKS],
    ids=[f"{name}-block{i}" for name, i, _ in BLOCKS],
)
def test_python_block_runs(name, code):
    exec(compile(code, name, "exec"), {})


def test_writing_your_own_loss_walks_through_each_option_with_a_block():
    """Issue 15's walk-through: link, Hessian policy and diagnosis, refit, side data,
    hyperparameters, host metrics and linear algebra in a loss, each a subsection with a
    runnable block (run by
    test_python_block_runs like every block)."""
    text = (ROOT / "docs" / "custom-losses.md").read_text()
    assert text.startswith("# Writing your own loss")
    parts = re.split(r"\n## ", text)[1:]
    topics = [
        ("link", "link="),
        ("hessian", "HessianWarning"),
        ("refit", 'refit="newton"'),
        ("side data", "base_margin="),
        ("hyperparameters", "loss_params"),
        ("metrics", "jaxboost.metrics.host("),
        ("linear algebra", "jnp.linalg.solve"),
    ]
    assert len(parts) == len(topics)
    codes = [code for _, _, code in BLOCKS]
    for part, (title, needed) in zip(parts, topics, strict=True):
        assert title in part.splitlines()[0].lower(), part.splitlines()[0]
        blocks = python_blocks(part)
        assert blocks and any(needed in b for b in blocks), title
        assert all(b in codes for b in blocks)


def test_readme_is_short_and_links_into_the_docs():
    """The README stays a front page (issue 30): what it is, install, a first model, a
    loss of your own, and links to the pages in docs/, each of which exists."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert links
    for link in links:
        assert (ROOT / link).is_file(), link
