"""Domain packs: what the `graph` verifier knows about one domain, as data a user supplies.

A pack is a folder (shipped inside a package and named by an entry point, or anywhere on disk):

    pack.yaml     the fact tables (file, key, column types, references), the subject of claims, the
                  claim schema (claim type -> value kind, the derived property it is checked against,
                  aliases), extraction patterns for prose answers, and the agent's wording
    rules.py      the rules, in RelationalAI's semantics DSL: `define(model, tables)` returns the
                  concepts, and `RULES` says in words what each rule id means and which facts it reads
    facts/        the fact tables: CSV, Parquet, or tables of a DuckDB file

`load_pack("refunds")` finds a bundled pack, then a pack registered under the entry-point group
`verifybench.graph_packs`; any other string is a folder path. Every mistake in pack.yaml is an error
naming the file, its line and the field (`pack.yaml:31: claims.refund_amount.kind: ...`). See
docs/graph.md for a pack written from scratch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import threading
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ENTRY_POINT_GROUP = "verifybench.graph_packs"
NO_BASIS = "-"  # the basis field of a derived value no record of the basis table produced
VALUE_KINDS = ("name", "text", "bool", "money", "days", "int", "date")
COLUMN_TYPES = ("text", "name", "int", "percent", "money", "bool", "date")
FACT_FORMATS = (".csv", ".parquet")
# Placeholders an extraction pattern may use for its value; each becomes the named group `value`.
PLACEHOLDERS = {
    "money": r"(?:[$€£]\s?)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d{1,2})?(?:\s?(?:USD|EUR|GBP))?",
    "days": r"\d+(?:\s*(?:calendar\s+|working\s+|business\s+)?days?)?",
    "int": r"\d+",
    "date": (r"\d{4}-\d{2}-\d{2}|\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+\d{4}"
             r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}"),
    # An upper-case word (tier, method): case-sensitive even though patterns match case-insensitively.
    "NAME": r"(?-i:[A-Z][A-Z0-9_]+)",
    "word": r"[A-Za-z][\w-]*",
}
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


class PackError(ValueError):
    """A pack that cannot be used, with the file, line and field at fault."""


@dataclass(frozen=True)
class Rule:
    """What a rule id means: a statement in words, and the facts (`<entity>.<column>`) it reads."""

    text: str
    facts: tuple[str, ...] = ()


@dataclass
class Column:
    source: str  # column name in the fact file
    name: str  # column name in the graph's table (`as:`), what rules.py reads
    type: str
    references: str | None = None  # a table whose key this column holds


@dataclass
class Table:
    name: str
    entity: str  # the prefix of its facts in proofs (`order.amount`)
    key: str  # source column of the key
    columns: dict[str, Column]
    file: Path | None = None  # CSV / Parquet / DuckDB file
    db_table: str | None = None  # the table inside a DuckDB file

    @property
    def key_column(self) -> str:
        return self.columns[self.key].name


@dataclass
class ClaimType:
    name: str
    kind: str
    derived: str  # the subject's relationship (value, rule, basis) this claim type is checked against
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass
class Pattern:
    regex: re.Pattern
    value: Any = None  # the claim's value when the pattern has no `value` group


@dataclass
class Extraction:
    subject: re.Pattern | None
    example: str
    patterns: dict[str, list[Pattern]]


@dataclass
class Pack:
    """A loaded domain pack. `rules()` imports its rules module on first use."""

    name: str
    folder: Path
    description: str
    tables: dict[str, Table]
    subject: str  # the table whose rows claims are about
    subject_concept: str  # the concept rules.py builds for it
    basis: str | None  # the table a derived value's basis id points into
    claims: dict[str, ClaimType]
    aliases: dict[str, str]  # alias -> claim type
    rules_file: Path
    extraction: Extraction | None = None
    topic: str = ""
    tool: str = "check_claims"
    _module: ModuleType | None = field(default=None, repr=False)

    # -- claim schema -----------------------------------------------------------------------------------
    def canonical(self, claim_type: str) -> str | None:
        """The claim type `claim_type` names (itself or through an alias), or None when unknown."""
        if claim_type in self.claims:
            return claim_type
        return self.aliases.get(claim_type)

    def kind(self, claim_type: str) -> str:
        return self.claims[claim_type].kind

    @property
    def subject_table(self) -> Table:
        return self.tables[self.subject]

    def entity_table(self, entity: str) -> Table | None:
        return next((t for t in self.tables.values() if t.entity == entity), None)

    # -- rules ------------------------------------------------------------------------------------------
    def rules(self) -> ModuleType:
        """The rules module, imported from its file once per pack object."""
        with _module_lock:
            if self._module is None:
                self._module = _import_rules(self)
            return self._module

    @property
    def rule_texts(self) -> dict[str, Rule]:
        raw = getattr(self.rules(), "RULES", {})
        out = {}
        for rid, r in raw.items():
            out[rid] = r if isinstance(r, Rule) else Rule(r[0], tuple(r[1]) if len(r) > 1 else ())
        return out

    # -- identity ---------------------------------------------------------------------------------------
    def files(self) -> list[Path]:
        """The pack's own files (pack.yaml, rules) and its fact files, for content hashes."""
        return [self.folder / "pack.yaml", self.rules_file]

    def fact_files(self) -> list[Path]:
        return sorted({t.file for t in self.tables.values() if t.file is not None})

    def digest(self, paths: list[Path]) -> str:
        h = hashlib.sha256()
        for p in paths:
            h.update(p.name.encode())
            h.update(p.read_bytes() if p.is_file() else b"<missing>")
        return h.hexdigest()[:16]

    def __getstate__(self):
        return {**self.__dict__, "_module": None}


_module_lock = threading.RLock()
_module_count = iter(range(10**9))


def _import_rules(pack: Pack) -> ModuleType:
    path = pack.rules_file
    if not path.is_file():
        raise PackError(f"{path}: no such rules module (pack.yaml: rules)")
    # A fresh, unique module name: two packs may both call their module rules.py.
    slug = re.sub(r"\W", "_", pack.name)
    name = f"verifybench_pack_{slug}_{next(_module_count)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # not a Python file
        raise PackError(f"{path}: not a Python module (pack.yaml: rules)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(name, None)
        raise PackError(f"{path}: importing the rules failed: {type(e).__name__}: {e}") from e
    if not callable(getattr(module, "define", None)):
        raise PackError(f"{path}: a rules module must define `define(model, tables)` returning its concepts")
    rules = getattr(module, "RULES", None)
    if not isinstance(rules, dict):
        raise PackError(f"{path}: a rules module must define RULES = {{rule id: Rule(text, facts)}}")
    for rid, r in rules.items():
        facts = r.facts if isinstance(r, Rule) else (r[1] if isinstance(r, (tuple, list)) and len(r) > 1 else ())
        for fact in facts:
            entity, _, column = str(fact).partition(".")
            table = pack.entity_table(entity)
            if table is None or column not in table.columns:
                known = ", ".join(f"{t.entity}.<column>" for t in pack.tables.values())
                raise PackError(f"{path}: RULES[{rid!r}] reads fact {fact!r}, which no table holds (facts are "
                                f"{known}, with the column names of the fact files)")
    return module


# -- locating a pack -------------------------------------------------------------------------------------

def bundled_packs() -> dict[str, Path]:
    """The packs shipped inside verifybench (package data)."""
    from importlib.resources import files

    root = files("verifybench.verifiers.graph") / "packs"
    out = {}
    if root.is_dir():
        for child in root.iterdir():
            if child.is_dir() and (child / "pack.yaml").is_file():
                out[child.name] = Path(str(child))
    return out


def registered_packs() -> dict[str, str]:
    """Packs other packages register: `[project.entry-points."verifybench.graph_packs"] name = "pkg.module"`
    (the folder of that module, or the object it names: a path to the pack folder)."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _entry_point_folder(name: str) -> Path:
    ep = next(ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name)
    try:
        obj = ep.load()
    except Exception as e:  # noqa: BLE001 - whatever a plugin raises on import, say which pack it was
        raise PackError(f"graph pack {name!r} (entry point {ep.value!r}) cannot be loaded: {e}") from None
    if isinstance(obj, ModuleType):
        if obj.__file__ is None:  # a namespace package has no file to find the pack beside
            raise PackError(f"graph pack {name!r} (entry point {ep.value!r}) names a module without a file")
        return Path(obj.__file__).parent
    return Path(str(obj))


def shipped(domain: str | Path) -> bool:
    """Whether `domain` names a pack the installation ships (bundled, or registered by an installed
    package), whose rules module is code already installed; a folder elsewhere brings its own Python."""
    text = str(domain)
    bundled = bundled_packs()
    if text in bundled or text in registered_packs():
        return True
    folder = Path(text).expanduser().resolve()
    return any(folder == p.resolve() for p in bundled.values())


def resolve(domain: str | Path) -> Path:
    """The folder of a pack: a bundled name, a registered name, or a path."""
    text = str(domain)
    bundled = bundled_packs()
    if text in bundled:
        return bundled[text]
    if text in registered_packs():
        return _entry_point_folder(text)
    p = Path(text).expanduser()
    if p.is_dir():
        return p
    names = sorted(set(bundled) | set(registered_packs()))
    raise PackError(f"graph domain {text!r}: not a pack folder, and no pack of that name (known: {', '.join(names)})")


_cache: dict[str, tuple[tuple[float, float], Pack]] = {}


def _mtime(path: Path) -> float:
    return path.stat().st_mtime if path.is_file() else -1.0


def load_pack(domain: str | Path) -> Pack:
    """Read and check a pack's pack.yaml (the rules module is imported later, on first use). The same
    pack is loaded once per process until its pack.yaml or rules file changes."""
    folder = resolve(domain).resolve()
    spec = folder / "pack.yaml"
    if not spec.is_file():
        raise PackError(f"{folder}: no pack.yaml in this folder")
    with _module_lock:
        hit = _cache.get(str(spec))
        if hit is None or hit[0] != (_mtime(spec), _mtime(hit[1].rules_file)):
            pack = _parse(folder, spec)
            _cache[str(spec)] = ((_mtime(spec), _mtime(pack.rules_file)), pack)
        return _cache[str(spec)][1]


# -- pack.yaml -------------------------------------------------------------------------------------------

class _Where:
    """Line numbers of pack.yaml's keys, for errors."""

    def __init__(self, path: Path, text: str):
        self.path = path
        try:
            self.root = yaml.compose(text)
        except yaml.YAMLError as e:
            raise PackError(f"{path}: not valid YAML: {e}") from None

    def line(self, *keys: str | int) -> int | None:
        node, line = self.root, 1
        for k in keys:
            if isinstance(node, yaml.MappingNode):
                hit = next(((kn, vn) for kn, vn in node.value if kn.value == str(k)), None)
                if hit is None:
                    return line
                line, node = hit[0].start_mark.line + 1, hit[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(k, int) and k < len(node.value):
                node = node.value[k]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def error(self, message: str, *keys: str | int) -> PackError:
        where = ".".join(str(k) for k in keys)
        return PackError(f"{self.path}:{self.line(*keys)}: {where}: {message}" if keys else f"{self.path}: {message}")


def _mapping(where: _Where, value: Any, *keys) -> dict:
    if not isinstance(value, dict):
        raise where.error(f"expected a mapping, got {type(value).__name__}", *keys)
    return value


def _known(where: _Where, data: dict, allowed: set[str], *keys) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise where.error(f"unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(allowed))}", *keys, extra[0])


def _parse(folder: Path, spec: Path) -> Pack:
    text = spec.read_text(encoding="utf-8")
    where = _Where(spec, text)
    data = _mapping(where, yaml.safe_load(text))
    _known(where, data, {"name", "description", "rules", "subject", "basis", "tables", "claims", "extract", "agent"})
    for required in ("name", "subject", "tables", "claims"):
        if required not in data:
            raise where.error(f"missing required key {required!r}")
    tables = {}
    for tname, tdata in _mapping(where, data["tables"], "tables").items():
        tables[tname] = _table(where, folder, tname, _mapping(where, tdata, "tables", tname))
    entities = [t.entity for t in tables.values()]
    for t in tables.values():
        if entities.count(t.entity) > 1:
            raise where.error(f"entity {t.entity!r} names two tables", "tables", t.name, "entity")
        for col in t.columns.values():
            if col.references is not None and col.references not in tables:
                raise where.error(f"references unknown table {col.references!r}", "tables", t.name, "columns", col.source)

    subj = data["subject"]
    if isinstance(subj, str):
        subj = {"table": subj}
    subj = _mapping(where, subj, "subject")
    _known(where, subj, {"table", "concept"}, "subject")
    subject = subj.get("table")
    if not isinstance(subject, str) or subject not in tables:
        raise where.error(f"{subject!r} is not one of the tables ({', '.join(tables)})", "subject")
    concept = subj.get("concept") or subject.rstrip("s").capitalize()
    basis = data.get("basis")
    if basis is not None and basis not in tables:
        raise where.error(f"{basis!r} is not one of the tables ({', '.join(tables)})", "basis")

    claims: dict[str, ClaimType] = {}
    aliases: dict[str, str] = {}
    for cname, cdata in _mapping(where, data["claims"], "claims").items():
        c = _mapping(where, cdata, "claims", cname)
        _known(where, c, {"kind", "derived", "aliases", "description"}, "claims", cname)
        kind = c.get("kind")
        if kind not in VALUE_KINDS:
            raise where.error(f"unknown kind {kind!r}; known: {', '.join(VALUE_KINDS)}", "claims", cname, "kind")
        if not isinstance(c.get("derived"), str) or not c["derived"]:
            raise where.error("the name of the subject's derived relationship this claim type is checked against "
                              "is required", "claims", cname, "derived")
        names = c.get("aliases") or []
        if not isinstance(names, list) or not all(isinstance(a, str) for a in names):
            raise where.error("expected a list of names", "claims", cname, "aliases")
        claims[cname] = ClaimType(cname, kind, c["derived"], tuple(names), str(c.get("description") or ""))
        for a in names:
            if a in aliases or a in data["claims"]:
                raise where.error(f"alias {a!r} is already a claim type or another type's alias", "claims", cname, "aliases")
            aliases[a] = cname
    if not claims:
        raise where.error("a pack needs at least one claim type", "claims")

    extraction = _extraction(where, data.get("extract"), claims, aliases) if data.get("extract") is not None else None
    agent = _mapping(where, data.get("agent") or {}, "agent")
    _known(where, agent, {"topic", "tool"}, "agent")
    rules_file = folder / str(data.get("rules") or "rules.py")
    slug = re.sub(r"\W", "_", str(data["name"]))
    return Pack(name=str(data["name"]), folder=folder, description=str(data.get("description") or ""), tables=tables,
                subject=subject, subject_concept=concept, basis=basis, claims=claims, aliases=aliases,
                rules_file=rules_file, extraction=extraction, topic=str(agent.get("topic") or data["name"]),
                tool=str(agent.get("tool") or f"check_{slug}_claims"))


def _table(where: _Where, folder: Path, name: str, t: dict) -> Table:
    _known(where, t, {"entity", "file", "table", "key", "columns"}, "tables", name)
    columns = {}
    for cname, cdata in _mapping(where, t.get("columns") or {}, "tables", name, "columns").items():
        spec = {"type": cdata} if isinstance(cdata, str) else _mapping(where, cdata, "tables", name, "columns", cname)
        _known(where, spec, {"type", "as", "references"}, "tables", name, "columns", cname)
        if spec.get("type") not in COLUMN_TYPES:
            raise where.error(f"unknown type {spec.get('type')!r}; known: {', '.join(COLUMN_TYPES)}",
                              "tables", name, "columns", cname)
        columns[cname] = Column(cname, str(spec.get("as") or cname), spec["type"], spec.get("references"))
    if not columns:
        raise where.error("a table needs columns", "tables", name, "columns")
    key = t.get("key")
    if not isinstance(key, str) or key not in columns:
        raise where.error(f"key {key!r} is not one of the columns", "tables", name, "key")
    file = folder / t["file"] if t.get("file") else None
    if file is not None and file.suffix not in (*FACT_FORMATS, ".duckdb", ".db"):
        raise where.error(f"facts must be .csv, .parquet or a DuckDB file, got {file.name!r}", "tables", name, "file")
    return Table(name=name, entity=str(t.get("entity") or name.rstrip("s")), key=key, columns=columns, file=file,
                 db_table=t.get("table"))


def _extraction(where: _Where, data: Any, claims: dict[str, ClaimType], aliases: dict[str, str]) -> Extraction:
    data = _mapping(where, data, "extract")
    _known(where, data, {"subject", "example", "patterns"}, "extract")
    subject = None
    if data.get("subject"):
        try:
            subject = re.compile(str(data["subject"]))
        except re.error as e:
            raise where.error(f"not a regular expression: {e}", "extract", "subject") from None
    patterns: dict[str, list[Pattern]] = {}
    for cname, items in _mapping(where, data.get("patterns") or {}, "extract", "patterns").items():
        ctype = cname if cname in claims else aliases.get(cname)
        if ctype is None:
            raise where.error(f"{cname!r} is not a claim type of this pack", "extract", "patterns", cname)
        if not isinstance(items, list):
            items = [items]
        out = []
        for i, item in enumerate(items):
            spec = {"match": item} if isinstance(item, str) else _mapping(where, item, "extract", "patterns", cname, i)
            _known(where, spec, {"match", "value"}, "extract", "patterns", cname, i)
            source = str(spec.get("match") or "")
            source = _PLACEHOLDER.sub(lambda m: f"(?P<value>{PLACEHOLDERS[m.group(1)]})", source, count=1)
            try:
                rx = re.compile(source, re.IGNORECASE)
            except re.error as e:
                raise where.error(f"not a regular expression: {e}", "extract", "patterns", cname, i) from None
            if "value" not in rx.groupindex and "value" not in spec:
                raise where.error("a pattern needs a `value:`, a {placeholder} or a (?P<value>...) group",
                                  "extract", "patterns", cname, i)
            out.append(Pattern(rx, spec.get("value")))
        patterns[ctype] = out
    return Extraction(subject=subject, example=str(data.get("example") or ""), patterns=patterns)
