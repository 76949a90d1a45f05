"""Property: whatever records a file holds (any unicode, lone surrogates included, nulls, huge numbers,
nested lists), every loader turns each of them into a case or a named bad record, and what becomes a
case can be written to the run directory; a run over them finishes (issue 27)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifybench.errors import RecordError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.rundir import _line, case_index_row

SURROGATES = ["\ud800", "\udfff", "\udbff"]
text = st.text(st.characters(exclude_categories=()) | st.sampled_from(SURROGATES), max_size=8)
scalar = (st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
          | st.floats(allow_nan=True, allow_infinity=True) | text)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=2),
                     max_leaves=6)
record = st.fixed_dictionaries({}, optional={
    "id": value, "response": text | value, "label": st.sampled_from([0, 1, "yes", "no", True, None]) | value,
    "sources": st.lists(text, max_size=2) | value, "group": value, "question": value, "extra": value})
records = st.lists(record, max_size=6)


def _finite(v):
    """JSON (the format) has no NaN or infinity: those become strings in a .json file."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def _cell(v) -> str | None:
    """A flat file's cell: strings as they are, anything else as its JSON text (the lists a list cell parses)."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v)


def _no_surrogates(s: str | None) -> str | None:
    return None if s is None else s.encode("utf-8", "replace").decode("utf-8")


def write_all(folder: Path, recs: list[dict]) -> dict[str, DatasetSpec]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from verifybench.pipeline.inline import Source

    folder.mkdir(parents=True, exist_ok=True)
    numbered = [{"n": i, **r} for i, r in enumerate(recs)]  # never an empty row
    (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in numbered), encoding="ascii")
    (folder / "d.json").write_text(json.dumps([_finite(r) for r in numbered]), encoding="ascii")
    columns = ["n", "id", "response", "label", "sources", "group", "question", "extra"]
    with open(folder / "d.csv", "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in numbered:
            w.writerow(["" if (c := _cell(r.get(k))) is None else c for k in columns])
    table = pa.table({k: pa.array([_no_surrogates(_cell(r.get(k))) for r in numbered], pa.string()) for k in columns})
    pq.write_table(table, folder / "d.parquet")
    import pandas as pd

    Source(pd.DataFrame(numbered, dtype=object) if numbered else pd.DataFrame()).write(folder / "inline.jsonl")
    spec = {"on_error": "skip", "fields": {"group": "group", "question": "question"}}
    return {
        "jsonl": DatasetSpec(loader="jsonl", path=str(folder / "d.jsonl"), **spec),
        "json": DatasetSpec(loader="json", path=str(folder / "d.json"), **spec),
        "csv": DatasetSpec(loader="csv", path=str(folder / "d.csv"), **spec),
        "parquet": DatasetSpec(loader="parquet", path=str(folder / "d.parquet"), **spec),
        "DataFrame": DatasetSpec(loader="records", path=str(folder / "inline.jsonl"), origin="DataFrame",
                                 list_cells=True, **spec),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(recs=records)
def test_every_record_is_a_case_or_a_named_bad_record(tmp_path_factory, recs):
    folder = tmp_path_factory.mktemp("prop")
    for name, spec in write_all(folder, recs).items():
        errors: list[RecordError] = []
        cases = list(iter_cases(spec, errors))
        assert len(cases) + len(errors) == len(recs), name
        for e in errors:  # named: the file (or what was passed) and the record
            assert e.loc.file and (e.loc.line is not None or e.loc.index >= 0) and e.message, (name, str(e))
        for c in cases:  # and what is a case can be stored
            _line(case_index_row(c))
            c.model_dump_json()


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(recs=st.lists(record, min_size=1, max_size=6))
def test_a_run_over_any_records_finishes(tmp_path_factory, recs):
    import pandas as pd

    from verifybench import api
    from verifybench.errors import DataError

    folder = tmp_path_factory.mktemp("run")
    good = {"response": "a fine answer", "sources": ["a fine source"]}
    numbered = [{"n": i, **r} for i, r in enumerate(recs)] + [{"id": "ok0", "label": 0, **good},
                                                              {"id": "ok1", "label": 1, **good}]
    try:
        run = api.run(cases=pd.DataFrame(numbered, dtype=object), verifiers=["rouge"], out=folder / "run",
                      on_error="skip", progress=False)
    except DataError as e:  # every record bad: said so, with where they are listed
        raise AssertionError(f"two good records were given: {e}") from None
    assert run.n_cases + run.n_skipped_records == len(numbered)
    assert (folder / "run/report.html").exists()
