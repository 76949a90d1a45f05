"""The import graph runs one way (architecture: loaders -> runner -> verifiers -> run directory ->
metrics -> report / gate), checked by parsing every module's imports, including the lazy ones inside
functions: a verifier that imported the metrics layer inside a method would still couple the two."""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Each top-level module or package of verifybench, by layer. A module may import its own package and
# anything in a lower layer, never its own layer's other members, never a higher layer.
LAYERS: list[set[str]] = [
    # the core types and errors
    {"cases", "errors"},
    # leaf helpers any layer may use (text: offsets of quotes and spans in a response; tables: cases and
    # verdicts as columns; _util: the small ones, one area: safeio, files written by rename, safe names,
    # disk-full messages; phases, a progress line for a long phase; identity, the cases' content hash;
    # fieldpath, how a field is named; envvars, `${VAR}` in options, read where used and kept as written)
    {"text", "tables", "_util"},
    # the files verifybench writes and reads back: one typed, versioned model per format (docs/formats.md)
    {"formats"},
    # the four independent parts: what reads cases, what scores them, where results live, what measures
    {"loaders", "verifiers", "rundir", "metrics"},
    # built on one or two of them: suites, where batches are scored, the HTML report, a run's numbers
    # from its files (settings, policies, span and pair metrics)
    {"suite", "executors", "reporting", "evaluation"},
    # what uses a run's numbers: comparing runs and the gate, MLflow and history, and the pipeline that
    # turns cases into a finished run directory
    {"gating", "tracking", "pipeline"},
    # a run as Python objects; closing the loop from runs, baselines and decision logs (cascades, label
    # queues, drift); the guard that applies a policy to live answers, served and logged
    {"runs", "feedback", "guard"},
    # the surface: one name per command (api, a thin table of names), then the package's lazy re-exports
    {"api"},
    {"__init__"},
    # the entry points over the surface
    {"cli", "pytest_plugin"},
]
# Clients outside the layers: they may use anything below the surface, and nothing imports them.
CLIENTS = {"training"}

# The invariants docs/architecture.md states in words, checked directly so a failure names them.
FORBIDDEN = {
    "verifiers": {"metrics", "loaders", "reporting", "pipeline", "rundir", "suite", "gating", "evaluation", "training"},
    "metrics": {"verifiers", "loaders", "reporting", "pipeline", "rundir", "executors", "suite", "training"},
    "loaders": {"verifiers", "metrics", "reporting", "pipeline", "rundir", "executors", "training"},
    "reporting": {"verifiers", "loaders", "pipeline", "executors"},
}

# Heavy dependencies are imported inside the functions that need them, so that importing verifybench
# (the CLI, a loader, the metrics) never pays for them.
HEAVY = {"torch", "transformers", "sentence_transformers", "relationalai", "mlflow", "ray", "datasets",
         "llama_cpp", "openai", "anthropic", "onnxruntime", "spacy", "typesafe", "slovnet", "navec", "natasha",
         "pymorphy3", "opentelemetry", "openinference"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, source: str | None = None) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import in the file, relative ones resolved
    against the file's place in the package (`source` stands in for the file's text)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    # an `if TYPE_CHECKING:` block at module level costs nothing at run time
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            top -= {id(child) for child in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from verifybench import report` imports the module report, not the package's __init__
            submodules = [f"{module}.{alias.name}" for alias in node.names
                          if _is_module(f"{module}.{alias.name}")]
            targets = submodules if len(submodules) == len(node.names) else [module, *submodules]
        else:
            continue
        found += [(target, node.lineno, id(node) in top) for target in targets]
    return found


def _is_module(dotted: str) -> bool:
    path = SRC.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.fixture(scope="module")
def graph() -> dict[tuple[str, str], list[str]]:
    """(importer area, imported area) -> where, for every import that crosses areas."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted((SRC / "verifybench").rglob("*.py")):
        source = _area(_module_name(path))
        for target, line, _ in _imports(path):
            if target.startswith("verifybench.") or target == "verifybench":
                if _area(target) != source:
                    edges[(source, _area(target))].append(f"{path.relative_to(SRC)}:{line}")
    return edges


def _layer_of(area: str) -> int | None:
    return next((i for i, members in enumerate(LAYERS) if area in members), None)


def test_every_module_has_a_place_in_the_layers():
    areas = {_area(_module_name(p)) for p in (SRC / "verifybench").rglob("*.py")}
    unplaced = sorted(a for a in areas if _layer_of(a) is None and a not in CLIENTS)
    assert not unplaced, f"put these in LAYERS (or CLIENTS) of tests/test_layering.py: {unplaced}"


def test_at_most_ten_modules_at_the_top_of_the_package():
    """A new small helper goes in a package (the leaf ones in _util/), not flat beside api and cli."""
    top = sorted(p.stem for p in (SRC / "verifybench").glob("*.py"))
    assert len(top) <= 10, f"{len(top)} modules at the top of verifybench, at most 10: {top}"


def test_the_stated_invariants_hold(graph):
    broken = [f"{a} imports {b}: {where}" for (a, b), where in graph.items() if b in FORBIDDEN.get(a, ())]
    assert not broken, "\n".join(broken)


def test_imports_run_one_way(graph):
    broken = []
    for (a, b), where in graph.items():
        if any(_layer_of(x) is None and x not in CLIENTS for x in (a, b)):
            continue  # unplaced: test_every_module_has_a_place_in_the_layers names it
        if b in CLIENTS:
            broken.append(f"{a} imports the client {b}: {where}")
        elif a in CLIENTS:
            if _layer_of(b) is not None and _layer_of(b) >= _layer_of("api"):
                broken.append(f"the client {a} imports the surface {b}: {where}")
        elif _layer_of(b) >= _layer_of(a):
            broken.append(f"{a} (layer {_layer_of(a)}) imports {b} (layer {_layer_of(b)}): {where}")
    assert not broken, "\n".join(broken)


def test_heavy_dependencies_are_imported_lazily():
    eager = [f"{path.relative_to(SRC)}:{line} imports {target} at module level"
             for path in sorted((SRC / "verifybench").rglob("*.py"))
             for target, line, top in _imports(path)
             if top and target.split(".")[0] in HEAVY]
    assert not eager, "\n".join(eager)


def test_the_checker_sees_a_lazy_relative_import():
    """`from ...metrics import curves` inside a function of verifiers/judge/verifier.py is caught."""
    module = SRC / "verifybench" / "verifiers" / "judge" / "verifier.py"
    found = _imports(module, "import torch\n\ndef f():\n    from ...metrics import curves\n"
                             "    from verifybench import reporting\n")
    assert ("verifybench.metrics.curves", 4, False) in found
    assert ("verifybench.reporting", 5, False) in found and ("verifybench", 5, False) not in found
    assert _area("verifybench.metrics.curves") in FORBIDDEN[_area("verifybench.verifiers.judge")]
    assert ("torch", 1, True) in found


def test_architecture_page_matches_the_layers():
    """docs/architecture.md's layer table names every package of LAYERS, in its layer, and no other."""
    import re

    page = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("<!-- layers: begin -->")[1].split("<!-- layers: end -->")[0]
    documented = {}
    for row in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        documented[int(cells[0])] = set(re.findall(r"`(\w+)`", cells[1]))
    assert documented == dict(enumerate(LAYERS)), "update docs/architecture.md's layer table to LAYERS"
