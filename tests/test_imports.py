"""The package's import graph has no cycles (DESIGN.md: layers import only the layers
above them).

The graph is read from the source with ``ast``, not from ``sys.modules``: every import
statement counts, including lazy imports inside functions and relative imports.
``from . import x`` and ``from .x import y`` (y not a module) count as importing
``jaxboost.x``; ``from .x import y`` with ``y`` a submodule counts as ``jaxboost.x.y``;
importing a package counts as importing its ``__init__``. The parent packages that
Python initialises on the way are not counted (otherwise everything would import
``jaxboost/__init__``).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jaxboost", "objectives")


def module_files(root, packages):
    """``{dotted name: path}`` of every ``.py`` file under the packages."""
    mods = {}
    for pkg in packages:
        for path in sorted((Path(root) / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _known(name, modules):
    """The longest prefix of ``name`` that is one of ``modules`` (``None``: outside)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in modules:
            return candidate
    return None


def imports_of(name, path, modules):
    """The modules among ``modules`` that the file imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
    found = {_known(t, modules) for t in targets}
    return {m for m in found if m is not None and m != name}


def import_graph(root, packages):
    modules = module_files(root, packages)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each as a sorted
    list, plus one concrete cycle through each."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [(sorted(c), _one_cycle(graph, c)) for c in sorted(comps, key=min)]


def _one_cycle(graph, comp):
    """The shortest cycle through the component's first module (breadth-first)."""
    start = min(comp)
    prev = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("a strongly connected component without a cycle")


def describe(found):
    return "\n".join(f"  {{{', '.join(c)}}}, e.g. {' -> '.join(path)}" for c, path in found)


def test_the_package_has_no_import_cycles():
    graph = import_graph(ROOT, PACKAGES)
    for name in ("jaxboost.engine.split", "objectives", "jaxboost.io.format",
                 "jaxboost.io.xgboost", "jaxboost.metrics.registry",
                 "jaxboost.parallel.distributed", "jaxboost.training.loop"):
        assert name in graph  # the walk found the code, the subpackages included
    found = cycles(graph)
    assert not found, "import cycles:\n" + describe(found)


def test_the_booster_imports_no_file_format():
    # The formats register their writers with the Booster (booster.register_writer);
    # the Booster importing one of them would be a circle through jaxboost.io.
    graph = import_graph(ROOT, PACKAGES)
    assert not {m for m in graph["jaxboost.booster"] if m.startswith("jaxboost.io")}
    assert {"jaxboost.booster"} <= graph["jaxboost.io.format"]
    assert {"jaxboost.booster"} <= graph["jaxboost.io.xgboost"]


def test_every_package_says_what_it_holds():
    for path in sorted((ROOT / "jaxboost").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and len(doc.split()) >= 20, f"{path.relative_to(ROOT)}: no docstring"


def test_the_walker_finds_cycles_through_lazy_relative_and_package_imports(tmp_path):
    files = {
        "pkg/__init__.py": "from . import e\n",
        "pkg/a.py": "from . import b\nimport numpy\n",
        "pkg/b.py": "def f():\n    from .c import x\n    return x\n",  # lazy
        "pkg/c.py": "import pkg.a as a\nx = 1\n",
        "pkg/d.py": "from .a import thing\nfrom .sub import g\n",  # imports, no cycle
        "pkg/e.py": "import pkg\n",  # the package: its __init__
        "pkg/sub/__init__.py": "",
        "pkg/sub/g.py": "from ..d import y\n",
        "pkg/sub/h.py": "from .. import sub\nfrom ..sub import g\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = import_graph(tmp_path, ("pkg",))
    assert graph == {
        "pkg": {"pkg.e"},
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.c"},
        "pkg.c": {"pkg.a"},
        "pkg.d": {"pkg.a", "pkg.sub.g"},
        "pkg.e": {"pkg"},
        "pkg.sub": set(),
        "pkg.sub.g": {"pkg.d"},
        "pkg.sub.h": {"pkg.sub", "pkg.sub.g"},
    }
    found = cycles(graph)
    assert found == [(["pkg", "pkg.e"], ["pkg", "pkg.e", "pkg"]),
                     (["pkg.a", "pkg.b", "pkg.c"], ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]),
                     (["pkg.d", "pkg.sub.g"], ["pkg.d", "pkg.sub.g", "pkg.d"])]
    assert "pkg.sub.h" not in describe(found)
