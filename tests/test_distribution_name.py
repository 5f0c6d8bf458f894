"""The project installs under a distribution name of its own, and no install line in the
docs fetches the unrelated PyPI project called ``jaxboost``."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "examples").rglob("*.md")),
    *sorted((ROOT / "benchmarks").rglob("*.py")),
    *sorted((ROOT / "jaxboost").rglob("*.py")),
    *sorted((ROOT / "objectives").rglob("*.py")),
    ROOT / "Makefile",
]

# `pip install jaxboost`, `pip install -U "jaxboost[plot]"`, `uv pip install jaxboost==0.1`…
PYPI_JAXBOOST = re.compile(
    r"""pip\s+install\s+(?:-\S+\s+)*["']?jaxboost(?:\[[^\]]*\])?(?:[=<>!~]=?[^\s"']*)?["']?(?=[\s`"'),.;]|$)"""
)


def test_distribution_name_is_not_the_unrelated_pypi_project():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = re.sub(r"[-_.]+", "-", meta["name"]).lower()
    assert name != "jaxboost"
    assert name == "jaxboost-gbdt"
    # the import name is still jaxboost: setuptools must ship that package
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "jaxboost*" in found["packages"]["find"]["include"]


def test_the_pattern_catches_pypi_install_lines():
    for bad in (
        "pip install jaxboost",
        "pip install -U jaxboost[plot]",
        'pip install "jaxboost[sklearn]"',
        "uv pip install jaxboost==0.5",
        "`pip install jaxboost[plot]`",
    ):
        assert PYPI_JAXBOOST.search(bad), bad
    for good in (
        'pip install ".[plot]"',
        "pip install -e .",
        "pip install jaxboost-gbdt",
        "pip install ./jaxboost",
        "pip install jaxboost_gbdt",
    ):
        assert not PYPI_JAXBOOST.search(good), good


def test_no_install_line_fetches_the_unrelated_jaxboost():
    bad = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in DOCS
        if p.exists()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if PYPI_JAXBOOST.search(line)
    ]
    assert not bad, "install lines that fetch PyPI's unrelated 'jaxboost':\n" + "\n".join(bad)


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_install_sections_warn_about_the_unrelated_project(page):
    text = (ROOT / page).read_text()
    assert "jaxboost-gbdt" in text
    assert re.search(r"PyPI project named `jaxboost` is a different, unrelated package", text)
