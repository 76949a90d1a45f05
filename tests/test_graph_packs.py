"""Domain packs of the `graph` verifier: how a pack is found (bundled package data, an entry point, a
folder), what a broken pack says, fact files in CSV, Parquet and DuckDB, a wheel install outside the
checkout, the seed's own worked example, and a third pack written from docs/graph.md alone."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from verifybench.cases import Case
from verifybench.verifiers.graph.claims import gate1
from verifybench.verifiers.graph.facts import FactsError, load_facts
from verifybench.verifiers.graph.kg import KnowledgeGraph
from verifybench.verifiers.graph.pack import PackError, bundled_packs, load_pack, registered_packs
from verifybench.verifiers.graph.verifier import GraphVerifier

ROOT = Path(__file__).resolve().parents[1]
REFUND_PACK = ROOT / "src/verifybench/verifiers/graph/packs/refunds"


def copy_pack(tmp_path: Path, name: str = "shop") -> Path:
    dest = tmp_path / name
    shutil.copytree(REFUND_PACK, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def claim(claim_type, subject, value, evidence="because"):
    return {"claim_type": claim_type, "subject_id": subject, "value": value, "evidence": evidence}


def test_the_refund_pack_is_package_data_loaded_like_any_pack():
    from verifybench.verifiers import graph

    pack = load_pack("refunds")
    assert "refunds" in bundled_packs() and pack.folder == REFUND_PACK.resolve()
    assert pack.folder.is_relative_to(Path(graph.__file__).parent)  # found through importlib.resources
    assert pack.subject == "orders" and pack.canonical("eligible_for_refund") == "refund_eligible"
    assert {t: len(df) for t, df in load_facts(pack=pack).tables().items()} == {
        "customers": 97, "orders": 385, "policies": 4}  # 384 generated orders + the seed's A-91
    with pytest.raises(PackError, match="no pack of that name"):
        load_pack("no-such-domain")


# --- a broken pack names file, line and field --------------------------------------------------------------

def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("old,new,field,message", [
    ("refund_amount: {kind: money,", "refund_amount: {kind: moneyy,", "claims.refund_amount.kind", "unknown kind 'moneyy'"),
    ("rules: rules.py", "rulez: rules.py", "rulez", "unknown key(s) rulez"),
    ("subject: {table: orders, concept: Order}", "subject: {table: order, concept: Order}", "subject",
     "'order' is not one of the tables"),
    ("aliases: [eligible_for_refund]", "aliases: [refund_amount]", "claims.refund_eligible.aliases",
     "alias 'refund_amount' is already a claim type"),
    ("amount: {type: money, as: amount_cents}", "amount: {type: cents, as: amount_cents}",
     "tables.orders.columns.amount", "unknown type 'cents'"),
    ("customer_id: {type: text, references: customers}", "customer_id: {type: text, references: clients}",
     "tables.orders.columns.customer_id", "references unknown table 'clients'"),
    ("  subject: '\\bA-\\d+\\b'", "  subject: '\\bA-(\\d+'", "extract.subject", "not a regular expression"),
    ("      - 'refund (?:comes to|is|of|amounts to|totals?) {money}'", "      - 'refund comes to'",
     "extract.patterns.refund_amount.0", "a pattern needs a `value:`"),
])
def test_pack_yaml_errors_name_file_line_and_field(tmp_path, old, new, field, message):
    folder = copy_pack(tmp_path)
    spec = folder / "pack.yaml"
    text = spec.read_text()
    assert old in text, old
    spec.write_text(text.replace(old, new, 1))
    line = _line(spec, new.strip())
    with pytest.raises(PackError) as err:
        load_pack(folder)
    assert str(err.value).startswith(f"{spec}:{line}: {field}: ") and message in str(err.value)


def test_rules_module_errors_are_named(tmp_path):
    folder = copy_pack(tmp_path)
    rules = folder / "rules.py"
    rules.write_text(rules.read_text().replace('"order.amount", "policy.restocking_fee_pct")),',
                                               '"order.amountt", "policy.restocking_fee_pct")),', 1))
    with pytest.raises(PackError, match=r"rules.py: RULES\['fee_from_policy'\] reads fact 'order.amountt'"):
        load_pack(folder).rules()
    folder = copy_pack(tmp_path, "shop2")
    spec = folder / "pack.yaml"
    spec.write_text(spec.read_text().replace("derived: refund,", "derived: refund_total,"))
    pack = load_pack(folder)
    with pytest.raises(PackError, match=r"has no relationship 'refund_total' \(pack.yaml: claims.refund_amount.derived\)"):
        KnowledgeGraph(load_facts(pack=pack))
    # In a run, a broken pack is every case's error verdict with that reason.
    case = Case(id="c", dataset="d", response="r", label=True, claims=[claim("refund_amount", "A-5618", 1)])
    (verdict,) = GraphVerifier(domain=str(folder)).verify([case])
    assert "refund_total" in verdict.error
    (verdict,) = GraphVerifier(domain=str(tmp_path / "nowhere")).verify([case])
    assert "not a pack folder" in verdict.error


# --- fact files: CSV, Parquet, a DuckDB file ----------------------------------------------------------------

def test_parquet_and_duckdb_facts_give_the_same_graph(tmp_path):
    import duckdb

    pack = load_pack("refunds")
    csv_facts = load_facts(pack=pack)
    parquet_dir = tmp_path / "parquet"
    parquet_dir.mkdir()
    for table in pack.tables.values():
        pd.read_csv(table.file, dtype=str).to_parquet(parquet_dir / f"{table.name}.parquet")
    parquet_facts = load_facts(parquet_dir, pack)
    for name, df in csv_facts.tables().items():
        pd.testing.assert_frame_equal(df, parquet_facts.tables()[name])

    # A pack whose tables live in one DuckDB file.
    folder = copy_pack(tmp_path)
    con = duckdb.connect(str(folder / "facts.duckdb"))
    for table in pack.tables.values():
        con.execute(f"create table {table.name} as select * from read_csv('{table.file}', all_varchar=true)")
    con.close()
    spec = folder / "pack.yaml"
    text = spec.read_text()
    for name in pack.tables:
        text = text.replace(f"file: facts/{name}.csv", f"file: facts.duckdb\n    table: {name}")
    spec.write_text(text)
    db_pack = load_pack(folder)
    db_facts = load_facts(pack=db_pack)
    for name, df in csv_facts.tables().items():
        pd.testing.assert_frame_equal(df, db_facts.tables()[name])
    case = Case(id="c", dataset="d", response="r", label=False,
                claims=[claim("customer_tier", "A-5618", "SILVER"), claim("refund_amount", "A-5618", "295.64")])
    (verdict,) = GraphVerifier(domain=str(folder)).verify([case])
    assert [u.status for u in verdict.units] == ["entailed", "entailed"]

    # A bad cell in Parquet is named by row.
    bad = pd.read_parquet(parquet_dir / "orders.parquet")
    bad.loc[3, "amount"] = "80.0x"
    bad.to_parquet(parquet_dir / "orders.parquet")
    with pytest.raises(FactsError, match=r"orders.parquet row 4: field 'amount': '80.0x' is not a decimal amount"):
        load_facts(parquet_dir, pack)


# --- an entry point names a pack another package ships ----------------------------------------------------

def test_a_pack_registered_by_an_entry_point(tmp_path, monkeypatch):
    site = tmp_path / "site"
    package = site / "acme_packs"
    shutil.copytree(REFUND_PACK, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__init__.py").write_text("")
    dist = site / "acme_packs-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-packs\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[verifybench.graph_packs]\nacme-shop = acme_packs\n")
    monkeypatch.syspath_prepend(str(site))
    assert registered_packs()["acme-shop"] == "acme_packs"
    pack = load_pack("acme-shop")
    assert pack.folder == package.resolve()
    case = Case(id="c", dataset="d", response="r", label=False, claims=[claim("customer_tier", "A-5618", "SILVER")])
    (verdict,) = GraphVerifier(domain="acme-shop").verify([case])
    assert verdict.units[0].status == "entailed"


# --- a wheel install, outside the checkout ------------------------------------------------------------------

@pytest.mark.slow
def test_a_wheel_install_finds_the_refund_pack_outside_the_checkout(tmp_path):
    out = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True)
    (wheel,) = out.glob("verifybench-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        z.extractall(site)
    for f in ("pack.yaml", "rules.py", "facts/orders.csv", "facts/customers.csv", "facts/policies.csv"):
        assert f"verifybench/verifiers/graph/packs/refunds/{f}" in names
    script = (
        "import json, verifybench\n"
        "from verifybench.cases import Case\n"
        "from verifybench.verifiers.graph import GraphVerifier\n"
        "from verifybench.verifiers.graph.pack import load_pack\n"
        "case = Case(id='c', dataset='d', response='Order A-5618 is eligible for a refund.', label=False)\n"
        "(v,) = GraphVerifier(claims='from_response').verify([case])\n"
        "print(json.dumps({'module': verifybench.__file__, 'pack': str(load_pack('refunds').folder),"
        " 'status': [u.status for u in v.units], 'error': v.error}))\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    env["VERIFYBENCH_CACHE"] = str(tmp_path / "cache")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["module"].startswith(str(site)) and got["pack"].startswith(str(site))
    assert got["status"] == ["entailed"] and got["error"] is None


# --- the seed's worked example ----------------------------------------------------------------------------

def _docs_block(info: str) -> str:
    text = (ROOT / "docs/graph.md").read_text(encoding="utf-8")
    return re.search(rf"```{info}\n(.*?)```", text, re.S).group(1)


def test_the_seed_worked_example_on_the_bundled_pack(capsys):
    """The graph-entailment seed's example in the bundled facts (no fixture): A-91 of customer C-184, tier
    GOLD, 30-day window; the graph derives eligible, 129.99, ORIGINAL_PAYMENT; "store credit because the
    customer is Platinum" is rejected on the seed's four points. The docs/graph.md block prints this."""
    facts = load_facts(pack=load_pack("refunds")).tables()
    assert facts["orders"].set_index("order_id").loc["A-91", "customer_id"] == "C-184"
    assert facts["customers"].set_index("customer_id").loc["C-184", "tier"] == "GOLD"
    derived = {(r["claim_type"], r["value"]) for r in GraphVerifier().checker().kg.derived().to_dict("records")
               if r["subject_id"] == "A-91"}
    assert {("refund_eligible", "true"), ("refund_amount", "12999"), ("refund_method", "ORIGINAL_PAYMENT"),
            ("customer_tier", "GOLD"), ("return_window_days", "30"), ("defective", "false"),
            ("shipping_refundable", "false")} <= derived

    exec(compile(_docs_block("python seed-example"), "docs/graph.md", "exec"), {})  # noqa: S102 - our own docs
    assert capsys.readouterr().out == _docs_block("text seed-example-output")

    # The same answer as prose: the pack's patterns read the tier and the method, both contradicted.
    answer = "Refund order A-91 as store credit, since the customer is Platinum."
    (from_prose,) = GraphVerifier(claims="from_response").verify([Case(id="p", dataset="seed", response=answer, label=True)])
    assert {(u.text, u.status, u.detail["expected"]) for u in from_prose.units} == {
        ("refund_method of A-91 = STORE_CREDIT", "contradicted", "ORIGINAL_PAYMENT"),
        ("customer_tier of A-91 = PLATINUM", "contradicted", "GOLD")}
    # No order of that id: the seed's "unsupported".
    (unknown,) = GraphVerifier().verify([Case(id="u", dataset="seed", response="", label=True,
                                              claims=[claim("eligible_for_refund", "A-404", True)])])
    assert unknown.units[0].status == "unsupported"


# --- a third pack, written from docs/graph.md alone -------------------------------------------------------

def docs_pack(folder: Path) -> dict[str, str]:
    """Every file of the worked example in docs/graph.md (a fenced block whose info string names its path)."""
    text = (ROOT / "docs/graph.md").read_text(encoding="utf-8")
    files = dict(re.findall(r"```\w+ (warranty/\S+)\n(.*?)```", text, re.S))
    for path, body in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    return files


def test_a_third_pack_written_from_the_docs(tmp_path):
    files = docs_pack(tmp_path)
    assert {"warranty/pack.yaml", "warranty/rules.py"} <= set(files) and any(f.endswith(".csv") for f in files)
    pack = load_pack(tmp_path / "warranty")
    cases = json.loads(re.search(r"```json cases\n(.*?)```", (ROOT / "docs/graph.md").read_text(), re.S).group(1))
    cases = [Case(dataset="warranty", **c) for c in cases]
    verdicts = GraphVerifier(domain=str(pack.folder)).verify(cases)
    statuses = {c.id: [u.status for u in v.units] for c, v in zip(cases, verdicts)}
    expected = {c.id: c.meta["statuses"] for c in cases}
    assert statuses == expected
    # The same answers from their prose, with the pack's own patterns.
    prose = GraphVerifier(domain=str(pack.folder), claims="from_response").verify(cases)
    assert {c.id: [u.status for u in v.units] for c, v in zip(cases, prose)} == expected
    accepted, _ = gate1(cases[0].claims, pack)
    assert accepted
