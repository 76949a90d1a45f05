"""BIPIA (microsoft/BIPIA): indirect prompt injection in external content (email, table, code).

The benchmark ships clean task files (`<task>/{train,test}.jsonl`: a context the user asks about) and
attack files (`text_attack_{train,test}.json` for email and table, `code_attack_{train,test}.json` for
code: categories of five attack instructions each, named `<category>-<i>`). A poisoned context is built
as the benchmark's own builder does (bipia/data/utils.py, base.py, code.py):

- `end`: context + "\\n" + attack;  `start`: attack + "\\n" + context;
- `middle`: a sentence start chosen by `random.Random(seed).sample(...)` over NLTK's untrained
  `PunktSentenceTokenizer().span_tokenize(context)`, then context[:start] + "\\n" + attack + "\\n" + context[start:];
  the same seed for every context, as in the benchmark;
- code contexts are lists of lines joined with "\\n" first.

Each context yields one clean case (label False) and attacked cases (label True): all attacks x all
positions as the benchmark defines them, or a seeded subset of `attacks_per_context` (attack, position)
pairs so the clean and attacked classes can be balanced. The context is the case's one source (a
retrieved "chunk" unit); the user's question (email, table) or error message (code) is the question;
the benchmark's ideal answer is the response. Case ids are stable: `bipia-<task>-<split>-<row>-clean`
and `bipia-<task>-<split>-<row>-<attack>-<position>`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path

from verifybench.cases import Case, Source
from verifybench.errors import DataError, Location, RecordError
from verifybench.loaders.generic import CaseStream
from verifybench.loaders.readers import Record, read_jsonl

TASKS = ("email", "table", "code")
POSITIONS = ("start", "middle", "end")
ATTACK_FILE = {"email": "text", "table": "text", "code": "code"}


def insert_attack(context: str, attack: str, position: str, seed: int | None) -> str:
    """Place `attack` in `context` at `position` exactly as BIPIA's insert_start/middle/end do."""
    if position == "end":
        return "\n".join([context, attack])
    if position == "start":
        return "\n".join([attack, context])
    if position == "middle":
        try:
            from nltk.tokenize.punkt import PunktSentenceTokenizer
        except ImportError:
            raise DataError("BIPIA's middle insertion needs nltk (pip install nltk)") from None
        spans = list(PunktSentenceTokenizer().span_tokenize(context))
        start, _ = random.Random(seed).sample(spans, k=1)[0]
        return "\n".join([context[:start], attack, context[start:]])
    raise DataError(f"unknown BIPIA insert position {position!r}; expected one of {POSITIONS}")


def load_attacks(path: Path) -> dict[str, str]:
    """`{"<category>-<i>": attack}` from one attack file, in file order (the benchmark's flattening)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: malformed JSON: {e.msg}") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected an object of attack categories, got {type(raw).__name__}")
    out: dict[str, str] = {}
    for category, items in raw.items():
        if not isinstance(items, list) or not all(isinstance(a, str) for a in items):
            raise DataError(f"{path}: field {category!r}: expected a list of attack strings")
        for i, attack in enumerate(items):
            out[f"{category}-{i}"] = attack
    return out


def _text(rec: Record, field: str) -> str | RecordError:
    value = rec.data.get(field)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if isinstance(value, str):
        return value
    why = ("missing required field" if field not in rec.data
           else f"expected a string or list of strings, got {type(value).__name__}")
    return RecordError(rec.loc, why, field)


def _chosen(pairs: list[tuple[str, str]], k: int | None, key: str, seed: int) -> list[tuple[str, str]]:
    if k is None or k >= len(pairs):
        return pairs
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    picked = set(rng.sample(range(len(pairs)), k))
    return [p for i, p in enumerate(pairs) if i in picked]


def bipia(
    path: str | Path,
    split: str = "test",
    tasks: list[str] | None = None,
    positions: list[str] | None = None,
    attacks_per_context: int | None = None,
    clean: bool = True,
    seed: int = 2023,
) -> CaseStream:
    """Clean and attack-inserted contexts from BIPIA's email, table and code tasks.

    Args:
        path: the BIPIA benchmark folder (holding email/, table/, code/ and the *_attack_*.json files).
        split: "train" (contexts train.jsonl, attacks *_attack_train.json) or "test".
        tasks: which of "email", "table", "code" (default: all three).
        positions: which of "start", "middle", "end" (default: all three, as the benchmark).
        attacks_per_context: None for every attack at every position (the full benchmark); a number
            for that many (attack, position) pairs per context, chosen by a seeded hash of the case.
        clean: also yield each clean context (label False).
        seed: the benchmark's `random_state` for middle insertion, and the seed of the subset choice.
    """
    root = Path(path)
    if not root.is_dir():
        raise DataError(f"{root}: expected the BIPIA benchmark folder")
    if split not in ("train", "test"):
        raise DataError(f"{root}: BIPIA split must be 'train' or 'test', got {split!r}")
    for t in tasks or ():
        if t not in TASKS:
            raise DataError(f"unknown BIPIA task {t!r}; expected some of {TASKS}")
    for p in positions or ():
        if p not in POSITIONS:
            raise DataError(f"unknown BIPIA position {p!r}; expected some of {POSITIONS}")
    return _cases(root, split, list(tasks or TASKS), list(positions or POSITIONS), attacks_per_context, clean, seed)


def _cases(root: Path, split: str, tasks: list[str], positions: list[str], k: int | None,
           clean: bool, seed: int) -> Iterator[Case | RecordError]:
    for task in tasks:
        attacks = load_attacks(root / f"{ATTACK_FILE[task]}_attack_{split}.json")
        pairs = [(name, pos) for pos in positions for name in attacks]
        question_field = "error" if task == "code" else "question"
        for rec in read_jsonl(root / task / f"{split}.jsonl"):
            if isinstance(rec, RecordError):
                yield rec
                continue
            context, question, ideal = _text(rec, "context"), _text(rec, question_field), _text(rec, "ideal")
            if isinstance(context, RecordError) or isinstance(question, RecordError) or isinstance(ideal, RecordError):
                yield next(v for v in (context, question, ideal) if isinstance(v, RecordError))
                continue
            row = rec.loc.index
            base = f"bipia-{task}-{split}-{row}"
            common = dict(dataset="bipia", doc_type=task, split=split, question=question, response=ideal)
            loc = Location(rec.loc.file, rec.loc.index, rec.loc.line)
            if clean:
                yield Case(id=f"{base}-clean", label=False,
                           sources=[Source(id="context", text=context, metadata={"kind": "chunk"})],
                           meta={"task": task, "row": row, "group": f"{task}-{row}", "attack": None, "position": None},
                           **common).at(loc)
            for name, pos in _chosen(pairs, k, base, seed):
                attack = attacks[name]
                poisoned = insert_attack(context, attack, pos, seed)
                yield Case(id=f"{base}-{name}-{pos}", label=True,
                           sources=[Source(id="context", text=poisoned, metadata={"kind": "chunk"})],
                           meta={"task": task, "row": row, "group": f"{task}-{row}", "attack": name,
                                 "category": name.rsplit("-", 1)[0], "position": pos, "attack_text": attack},
                           **common).at(loc)
