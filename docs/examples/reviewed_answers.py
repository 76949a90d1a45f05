"""The worked example of docs/extending.md: a loader and a verifier of your own, end to end.

- `reviewed_answers`, a loader: a folder of tab-separated review logs (one file per team: id, source,
  answer, verdict), read with each bad row reported by file and line, and declaring the files it reads
  so the dataset hash covers them.
- `UnsupportedNumbers`, a verifier: the share of the numbers in an answer that appear in no source
  (higher = more likely hallucinated), with a glossary file of numbers that need no source.

Run it from the repository root (the suite names both by import path):

    python docs/examples/reviewed_answers.py docs/examples/data     # writes the example logs
    PYTHONPATH=docs/examples verifybench run docs/examples/reviewed-answers.yaml

tests/test_extending.py runs the same suite end to end.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from verifybench.cases import Case, Source, Unit, Verdict
from verifybench.errors import Location, RecordError
from verifybench.loaders import loader, note_label
from verifybench.verifiers import CaseVerifier, operational

# --- the loader -----------------------------------------------------------------------------------------

VERDICTS = {"wrong": True, "ok": False}  # the reviewer's word -> hallucinated


def _files(folder: str, teams: list[str] | None = None, **_: object) -> list[str]:
    """What the loader reads: one `<team>.tsv` per team named, or every `*.tsv` (a glob the hash expands)."""
    return [f"{folder}/{team}.tsv" for team in teams] if teams else [f"{folder}/*.tsv"]


@loader(files=_files)
def reviewed_answers(folder: str, teams: list[str] | None = None) -> Iterator[Case | RecordError]:
    """Reviewed chatbot answers: one tab-separated <team>.tsv per team (id, source, answer, verdict)."""
    paths = [Path(folder) / f"{team}.tsv" for team in teams] if teams else sorted(Path(folder).glob("*.tsv"))
    if not paths:
        raise FileNotFoundError(f"{folder}: no .tsv review logs")
    for path in paths:
        with open(path, encoding="utf-8", newline="") as f:
            for index, row in enumerate(csv.DictReader(f, delimiter="\t")):
                loc = Location(str(path), index, line=index + 2)  # line 1 is the header
                verdict = (row.get("verdict") or "").strip().lower()
                if verdict not in VERDICTS:
                    yield RecordError(loc, f"verdict {row.get('verdict')!r} is neither 'ok' nor 'wrong'", "verdict")
                    continue
                note_label("verdict", row["verdict"], VERDICTS[verdict])  # shown by `verifybench describe`
                yield Case(id=row["id"], dataset="reviewed-answers", doc_type=path.stem,
                           sources=[Source(id="source", text=row["source"])], response=row["answer"],
                           label=VERDICTS[verdict]).at(loc)


# --- the verifier ---------------------------------------------------------------------------------------

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class UnsupportedNumbersOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt option is an error naming it

    # changes scores: part of the config hash. A path option ("./x" in a suite is made absolute) enters
    # the hash by file name and content, so an edited glossary changes the hash and a moved one does not.
    glossary: str | None = Field(None, description="a file of numbers, one a line, that need no source")
    empty_score: float = Field(0.0, ge=0, le=1, description="the score of an answer without numbers")
    # changes no score: left out of the hash, so a run resumes whatever its value
    log_every: int = operational(0, ge=0, description="print progress every N cases (0: never)")


class UnsupportedNumbers(CaseVerifier):
    """Share of the answer's numbers that appear in no source (and not in the glossary)."""

    name = "unsupported-numbers"
    description = "share of the answer's numbers found in no source"
    Options = UnsupportedNumbersOptions
    # `_known` is built on first use and dropped when the verifier is pickled (for a process pool or a
    # Ray worker), which rebuilds its own. A verifier holding nothing would say `stateless = True`.
    lazy = ("_known",)

    def known(self) -> frozenset[str]:
        return self._build_once("_known", self._read_glossary)

    def _read_glossary(self) -> frozenset[str]:
        if self.options.glossary is None:
            return frozenset()
        text = Path(self.options.glossary).read_text(encoding="utf-8")
        return frozenset(s for line in text.splitlines() if (s := line.strip()) and not s.startswith("#"))

    def score_case(self, case: Case) -> Verdict:
        in_sources = {m.group() for s in case.sources for m in NUMBER.finditer(s.text)} | self.known()
        found = list(NUMBER.finditer(case.response))
        units = [Unit(text=m.group(), start=m.start(), end=m.end(), score=float(m.group() not in in_sources),
                      status="supported" if m.group() in in_sources else "unsupported") for m in found]
        score = sum(u.score for u in units) / len(units) if units else self.options.empty_score
        return Verdict(case_id=case.id, verifier=self.id, score=score, units=units)


# --- example data ---------------------------------------------------------------------------------------

def write_example_data(folder: Path, per_team: int = 40) -> list[Path]:
    """Review logs for two teams: every fourth answer changes a number, every eighth adds one."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for t, team in enumerate(("billing", "shipping")):
        rows = ["id\tsource\tanswer\tverdict"]
        for i in range(per_team):
            days, price = 3 + (i + t) % 9, 10 + 5 * i
            source = f"Plan {i} costs {price} dollars a month and ships in {days} days."
            if i % 4 == 1:
                answer, verdict = f"Plan {i} costs {price + 7} dollars a month.", "wrong"
            elif i % 8 == 3:
                answer, verdict = f"Plan {i} ships within about a week and costs {price} dollars.", "wrong"
            else:
                answer, verdict = f"It is {price} dollars monthly, delivered in {days} days.", "ok"
                if i % 5 == 0:  # a house rule no source repeats: the glossary's business
                    answer += " Every plan has a 30 day refund window."
            rows.append(f"{team}-{i}\t{source}\t{answer}\t{verdict}")
        path = folder / f"{team}.tsv"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write_example_data(Path(sys.argv[1] if len(sys.argv) > 1 else "data")):
        print(p)
