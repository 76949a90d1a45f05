"""The public surface: one table of names (`verifybench.api._NAMES`) that the package root, the type
checker's view and the CLI all follow; the CLI and Python use the same names (old ones warn for a
release); every typed result a command returns is what its declaration says (checked on real results);
the README's CLI table, docs table and layout are complete."""

import ast
import csv
import json
import re
import types
import typing
import warnings
from pathlib import Path

import pytest
from conftest import write
from typer.testing import CliRunner

import verifybench
from verifybench import api
from verifybench.cli import app

SRC = Path(__file__).resolve().parents[1] / "src" / "verifybench"


def test_every_api_name_resolves_from_the_package_root():
    """Before, the root kept its own list: `verifybench.DriftRefused` raised AttributeError."""
    for name in api._NAMES:
        assert getattr(verifybench, name) is getattr(api, name), name
        assert name in verifybench.__all__ and name in dir(verifybench)
    assert verifybench.DriftRefused.__name__ == "DriftRefused"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        verifybench.nothing  # noqa: B018


def test_the_type_checkers_view_of_api_is_its_table_of_names():
    """`api.py` resolves names lazily; its `if TYPE_CHECKING:` imports are what mypy and editors see, so
    the CLI's calls are checked against the real signatures and results. They must name the same things."""
    tree = ast.parse((SRC / "api.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    seen = {(a.asname or a.name): (node.module, a.name) for node in block.body if isinstance(node, ast.ImportFrom)
            for a in node.names}
    assert seen == api._NAMES


def _commands() -> dict[str, bool]:
    """CLI command name -> hidden."""
    return {c.name or c.callback.__name__: c.hidden for c in app.registered_commands}


def test_every_command_has_the_python_name_of_the_same_name():
    shown = [name for name, hidden in _commands().items() if not hidden]
    assert [n for n in shown if n.replace("-", "_") not in api._NAMES] == []


def test_old_names_still_work_for_a_release_and_say_the_new_one():
    out = CliRunner().invoke(app, ["list"])
    assert out.exit_code == 0 and "rouge" in out.stdout
    assert "`verifybench list` is deprecated; use `verifybench components`" in out.output
    assert _commands()["list"] is True  # hidden from --help
    from verifybench.feedback import queue

    with pytest.warns(DeprecationWarning, match="queue.merge is deprecated; use label_merge"):
        with pytest.raises(Exception):  # noqa: B017 - the warning comes first; the file does not exist
            queue.merge([Path("nowhere.csv")], Path("out.csv"))
    from verifybench.gating.gate import GateResult

    with pytest.warns(DeprecationWarning, match="GateResult.checks is deprecated; use GateResult.gated"):
        assert GateResult().checks == []


def test_the_cli_calls_only_api_to_do_and_draw_things():
    """The CLI makes one call into `api` per command and renders what it returns (a result's own `table()`
    where it has one): it imports no package that owns a flow (the gate's table came from reaching
    around `api` into `gating.gate`)."""
    tree = ast.parse((SRC / "cli.py").read_text(encoding="utf-8"))
    checking = {id(n) for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for n in ast.walk(node)}
    flows = ("gating", "feedback", "runs", "pipeline", "evaluation", "tracking", "guard", "rundir", "metrics.summary")
    reached = [f"line {n.lineno}: {n.module}" for n in ast.walk(tree)
               if isinstance(n, ast.ImportFrom) and id(n) not in checking and n.module
               and n.module.removeprefix("verifybench.").startswith(flows)]
    assert reached == []


# --- typed results: each declaration checked against a real result --------------------------------------

def _conforms(value, tp, where="result") -> list[str]:
    """Where `value` differs from the type `tp` (a TypedDict's keys exactly: required ones present, no key
    it does not declare)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is typing.Any:
        return []
    if typing.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a {tp.__name__}"]
        hints = typing.get_type_hints(tp)
        errors = [f"{where}.{k}: missing" for k in tp.__required_keys__ - set(value)]
        errors += [f"{where}.{k}: not declared in {tp.__name__}" for k in set(value) - set(hints)]
        return errors + [e for k in set(value) & set(hints) for e in _conforms(value[k], hints[k], f"{where}.{k}")]
    if origin in (typing.Union, types.UnionType):
        found = [_conforms(value, arm, where) for arm in args]
        return [] if any(not f for f in found) else min(found, key=len)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        return [e for i, v in enumerate(value) for e in _conforms(v, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a dict"]
        return [e for k, v in value.items() for e in _conforms(k, args[0], f"{where} key") + _conforms(v, args[1],
                                                                                                        f"{where}.{k}")]
    if tp is type(None):
        return [] if value is None else [f"{where}: {value!r}, not None"]
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return [] if ok else [f"{where}: {value!r} is not a {getattr(tp, '__name__', tp)}"]


def _declared(call) -> type:
    return typing.get_type_hints(call)["return"]


def test_the_checker_of_declarations_finds_what_differs():
    class Point(typing.TypedDict):
        x: int
        label: typing.NotRequired[str | None]

    assert _conforms({"x": 1, "label": None}, Point) == []
    assert _conforms({"x": 1.5}, Point) == ["result.x: 1.5 is not a int"]
    assert _conforms({"x": 1, "y": 2}, Point) == ["result.y: not declared in Point"]
    assert _conforms({}, Point) == ["result.x: missing"]


SUITE = """
name: surface
dataset:
  loader: jsonl
  path: {data}
  fields: {{doc_type: doc_type, split: split}}
verifiers: [rouge, bleu]
metrics: {{bootstrap: 50, min_per_class: 20}}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory, root):
    folder = tmp_path_factory.mktemp("surface")
    suite = write(folder / "surface.yaml", SUITE.format(data=root / "datasets/demo/cases.jsonl"))
    api.run(suite, out=folder / "run", progress=False)
    return folder, suite


def test_the_commands_results_are_what_they_declare(small, root):
    folder, suite = small
    run = folder / "run"
    for call, result in [
        (api.describe, api.describe(suite)),
        (api.cascade, api.cascade(run, ["rouge", "bleu"], stack=True, out=folder / "guard.yaml")),
    ]:
        assert _conforms(result, _declared(call)) == [], call.__name__
        json.dumps(result)  # what --json prints
    pairs = api.compare(run)
    assert pairs.rows and all(_conforms(r, _declared(type(pairs).__getitem__)) == [] for r in pairs)
    assert _conforms(api.load_run(run).summary_rows(), _declared(verifybench.Run.summary_rows)) == []


def test_the_label_queue_results_are_what_they_declare(small, root):
    folder, _ = small
    queued = folder / "queue" / "to_label.csv"
    report = api.label_queue(folder / "run", 40, queued, strategy="stratified")
    assert _conforms(report, _declared(api.label_queue)) == []
    truth = {json.loads(line)["id"]: json.loads(line)["label"]
             for line in (root / "datasets/demo/cases.jsonl").read_text().splitlines()}
    with open(queued, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows[:-3]:
        r["label"] = "hallucinated" if truth[r["id"]] else "faithful"
    with open(queued, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names do not warn
        merged = api.label_merge([queued], folder / "merged.csv")
        estimated = api.label_estimate(queued)
    assert _conforms(merged, _declared(api.label_merge)) == [] and merged["labeled"] == len(rows) - 3
    assert _conforms(estimated, _declared(api.label_estimate)) == [] and estimated["unlabeled_left_out"] == 3


# --- the README --------------------------------------------------------------------------------------------

def _readme_section(root, title: str) -> str:
    text = (root / "README.md").read_text(encoding="utf-8")
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_cli_table_names_every_command(root):
    table = _readme_section(root, "CLI")
    named = set(re.findall(r"`verifybench ([a-z-]+)", table)) | set(re.findall(r"/ `([a-z-]+) ", table))
    shown = {name for name, hidden in _commands().items() if not hidden}
    assert shown - named == set(), "add these commands to README.md's CLI table"


def test_the_readme_docs_table_lists_each_page_once(root):
    pages = re.findall(r"^\| \[([^\]]+)\]", _readme_section(root, "Documentation"), re.M)
    assert len(pages) == len(set(pages)), [p for p in pages if pages.count(p) > 1]


def test_the_readme_layout_names_every_package(root):
    import test_layering

    layout = _readme_section(root, "Layout")
    areas = set().union(*test_layering.LAYERS) | test_layering.CLIENTS
    missing = [a for a in sorted(areas) if f"`{a}/`" not in layout and f"`{a}.py`" not in layout]
    assert missing == []
