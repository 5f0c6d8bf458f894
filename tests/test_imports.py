"""The package's import graph has no cycles, and its rooms import only the rooms below
them (``LAYERS``): the engine never imports training, the inputs never the model, and
so on.

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

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jaxboost", "objectives")

# The rooms, lowest layer first. A module may import modules of its own room and of the
# rooms of lower layers: never a room of a higher layer, nor another room of its own
# layer. Lazy imports inside functions count like any other.
LAYERS = (
    ("objectives",),  # the catalogue of losses: it knows nothing of jaxboost
    ("jaxboost.errors", "jaxboost._version", "jaxboost._types"),  # the vocabulary
    ("jaxboost.inputs",),  # what comes in: arrays, DataFrames, numbers, sparse, categories
    ("jaxboost.native",),  # the optional C++ kernel; jaxboost's compilation cache
    ("jaxboost.engine",),  # arrays in, trees out
    ("jaxboost.metrics", "jaxboost.parallel"),  # measuring; rows over devices, processes
    ("jaxboost.model",),  # the Booster, its tree parameters, explanations
    ("jaxboost.training", "jaxboost.io"),  # making a model; writing and reading one
    ("jaxboost.tuning",),  # hyperparameters learned through training runs
    ("jaxboost.adapters",),  # scikit-learn, compare, plots, the command line
    ("jaxboost", "jaxboost.__main__", "jaxboost.datasets"),  # the public face
)
# The modules at the top of the package (besides the rooms and the face above).
TOP_LEVEL = {"__init__", "__main__", "_version", "errors", "_types", "datasets"}


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
                parts = parts[: len(parts) - (node.level - 1)]
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
    for name in (
        "jaxboost.engine.split",
        "objectives",
        "jaxboost.io.format",
        "jaxboost.io.xgboost",
        "jaxboost.metrics.registry",
        "jaxboost.parallel.distributed",
        "jaxboost.training.loop",
    ):
        assert name in graph  # the walk found the code, the subpackages included
    found = cycles(graph)
    assert not found, "import cycles:\n" + describe(found)


def test_the_booster_imports_no_file_format():
    # The formats register their writers with the Booster (booster.register_writer);
    # the Booster importing one of them would be a circle through jaxboost.io.
    graph = import_graph(ROOT, PACKAGES)
    assert not {m for m in graph["jaxboost.model.booster"] if m.startswith("jaxboost.io")}
    assert {"jaxboost.model.booster"} <= graph["jaxboost.io.format"]
    assert {"jaxboost.model.booster"} <= graph["jaxboost.io.xgboost"]


def room_of(module, layers=LAYERS):
    """``(layer number, room)`` of a module: the longest room name it is in."""
    best = None
    for i, rooms in enumerate(layers):
        for room in rooms:
            if (module == room or module.startswith(room + ".")) and (
                best is None or len(room) > len(best[1])
            ):
                best = (i, room)
    return best


def layer_violations(graph, layers=LAYERS):
    """Every import that goes up, or sideways to another room of the same layer, as
    ``"importer (room) -> imported (room)"``; and every module that is in no room."""
    found = []
    for module, targets in sorted(graph.items()):
        here = room_of(module, layers)
        if here is None:
            found.append(f"{module} is in no room")
            continue
        for target in sorted(targets):
            there = room_of(target, layers)
            if there is None or there[1] == here[1]:
                continue
            if there[0] >= here[0]:
                kind = "up" if there[0] > here[0] else "sideways"
                found.append(f"{module} ({here[1]}) -> {target} ({there[1]}): {kind}")
    return found


def test_rooms_import_only_the_rooms_below_them():
    graph = import_graph(ROOT, PACKAGES)
    assert {room_of(m)[1] for m in graph} == {r for rooms in LAYERS for r in rooms}
    found = layer_violations(graph)
    assert not found, "imports against the layer order:\n  " + "\n  ".join(found)


def test_the_top_of_the_package_holds_few_modules():
    top = {p.stem for p in (ROOT / "jaxboost").glob("*.py")}
    assert top <= TOP_LEVEL, f"modules at the top of jaxboost/: {sorted(top - TOP_LEVEL)}"
    rooms = {p.name for p in (ROOT / "jaxboost").iterdir() if (p / "__init__.py").is_file()}
    declared = {r.split(".")[1] for rooms_ in LAYERS for r in rooms_ if r.count(".") == 1}
    assert rooms <= declared, f"rooms in no layer: {sorted(rooms - declared)}"


def test_the_layer_rule_sees_lazy_upward_and_sideways_imports():
    layers = (("pkg.low",), ("pkg.mid", "pkg.side"), ("pkg.high",))
    graph = {
        "pkg.low.a": {"pkg.high.x"},  # up (say, a lazy import in a function)
        "pkg.mid.b": {"pkg.side.c", "pkg.low.a", "pkg.mid.d"},  # sideways; fine; own
        "pkg.high.x": {"pkg.mid.b", "pkg.low.a"},  # fine
        "pkg.stray": set(),
    }
    assert layer_violations(graph, layers) == [
        "pkg.low.a (pkg.low) -> pkg.high.x (pkg.high): up",
        "pkg.mid.b (pkg.mid) -> pkg.side.c (pkg.side): sideways",
        "pkg.stray is in no room",
    ]


def test_the_stable_public_paths_are_the_moved_modules():
    import importlib

    import jaxboost

    for old, new in jaxboost.STABLE_PATHS.items():
        if old == "jaxboost.sklearn":
            pytest.importorskip("sklearn")
        assert importlib.import_module(old) is importlib.import_module(new)
        assert importlib.import_module(new).__spec__.name == new
    assert callable(jaxboost.compare)  # the function, not its module


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
    assert found == [
        (["pkg", "pkg.e"], ["pkg", "pkg.e", "pkg"]),
        (["pkg.a", "pkg.b", "pkg.c"], ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]),
        (["pkg.d", "pkg.sub.g"], ["pkg.d", "pkg.sub.g", "pkg.d"]),
    ]
    assert "pkg.sub.h" not in describe(found)
