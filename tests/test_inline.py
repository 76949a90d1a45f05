"""Cases given in Python (pipeline.inline): cell values become JSON the way the file loaders give them, and
every argument is checked before the run directory gets a file."""

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from verifybench.cases import Case
from verifybench.errors import VerifybenchError
from verifybench.pipeline.inline import InlineRun, plain


def test_cell_values_become_plain_json():
    assert plain(np.int64(3)) == 3 and type(plain(np.int64(3))) is int
    assert plain(np.float32(0.5)) == 0.5 and plain(np.bool_(True)) is True
    assert plain(np.array([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    assert plain(float("nan")) is None and plain(math.inf) is None
    assert plain(pd.NA) is None and plain(pd.NaT) is None
    assert plain(pd.Timestamp("2026-03-01T10:00:00")) == "2026-03-01T10:00:00"
    assert plain(dt.date(2026, 3, 1)) == "2026-03-01" and plain(Decimal("1.25")) == 1.25
    assert plain({1: (np.int8(1), Path("a/b"))}) == {"1": [1, "a/b"]}


def _run(cases, **kw):
    args = {"fields": None, "verifiers": ["rouge"], "metrics": None, "name": None, "limit": None,
            "on_error": None, "batch_size": None} | kw
    return InlineRun(cases, **args)


def test_fields_are_refused_for_case_objects(tmp_path):
    with pytest.raises(VerifybenchError, match="the cases are Case objects already"):
        _run([Case(id="1", dataset="d", response="r", sources=[], label=True)], fields={"response": "answer"})


def test_an_unknown_verifier_or_field_is_refused_before_anything_is_written(tmp_path):
    import verifybench

    df = pd.DataFrame({"response": ["a"], "sources": ["a"], "label": [1]})
    with pytest.raises(VerifybenchError, match="nonesuch"):
        verifybench.run(cases=df, verifiers=["nonesuch"], out=tmp_path / "run", progress=False)
    with pytest.raises(VerifybenchError, match="respnse"):
        verifybench.run(cases=df, fields={"respnse": "response"}, verifiers=["rouge"], out=tmp_path / "run",
                        progress=False)
    assert not (tmp_path / "run").exists() or list((tmp_path / "run").iterdir()) == []
