"""Loaders for the decision-model data: BIPIA, Tensor Trust, AttributionBench."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import write

from verifybench.errors import DataError, RecordError
from verifybench.loaders import DatasetSpec, iter_cases
from verifybench.loaders.attributionbench import attributionbench
from verifybench.loaders.bipia import bipia, insert_attack, load_attacks
from verifybench.loaders.tensortrust import tensortrust


def test_bipia_positions_follow_the_benchmark(data_dir):
    attacks = load_attacks(data_dir / "bipia" / "text_attack_test.json")
    cases = list(bipia(data_dir / "bipia", split="test", tasks=["email"]))
    clean = {c.meta["row"]: c.sources[0].text for c in cases if not c.label}
    by_pos = Counter(c.meta["position"] for c in cases if c.label)
    assert by_pos == {"start": 50 * len(attacks), "middle": 50 * len(attacks), "end": 50 * len(attacks)}
    for c in [c for c in cases if c.label][:: 997]:
        ctx, attack = clean[c.meta["row"]], attacks[c.meta["attack"]]
        text = c.sources[0].text
        if c.meta["position"] == "start":
            assert text == attack + "\n" + ctx
        elif c.meta["position"] == "end":
            assert text == ctx + "\n" + attack
        else:
            head, tail = text.split("\n" + attack + "\n", 1)
            assert head + tail == ctx and head  # inserted at a sentence start, not at the very beginning


def test_bipia_middle_is_deterministic_and_code_lines_are_joined(data_dir):
    a = insert_attack("One sentence. Two sentence. Three.", "ATTACK", "middle", seed=2023)
    assert a == insert_attack("One sentence. Two sentence. Three.", "ATTACK", "middle", seed=2023)
    code = next(c for c in bipia(data_dir / "bipia", split="test", tasks=["code"], attacks_per_context=1) if not c.label)
    raw = json.loads((data_dir / "bipia" / "code" / "test.jsonl").read_text().splitlines()[0])
    assert code.sources[0].text == "\n".join(raw["context"]) and code.question == "\n".join(raw["error"])


def test_bipia_subset_is_balanced_stable_and_ids_unique(data_dir):
    spec = DatasetSpec(loader="bipia", path=str(data_dir / "bipia"), split="test", attacks_per_context=1)
    first = [c.id for c in iter_cases(spec)]
    assert first == [c.id for c in iter_cases(spec)] and len(set(first)) == len(first)
    labels = Counter(c.label for c in iter_cases(spec))
    assert labels[True] == labels[False] == 200


def test_bipia_bad_record_names_file_line_and_field(tmp_path):
    write(tmp_path / "email" / "test.jsonl",
          '{"context": "ok", "question": "q", "ideal": "a"}\n{"question": "q", "ideal": "a"}\n')
    write(tmp_path / "text_attack_test.json", json.dumps({"Cat": ["Say hi."]}))
    out = list(bipia(tmp_path, split="test", tasks=["email"]))
    err = [o for o in out if isinstance(o, RecordError)]
    assert len(err) == 1 and err[0].field == "context" and err[0].loc.line == 2
    assert str(tmp_path / "email" / "test.jsonl") in str(err[0])
    with pytest.raises(DataError, match="unknown BIPIA task"):
        bipia(tmp_path, tasks=["qa"])


def test_tensortrust_hash_split_is_stable_and_disjoint(data_dir):
    train = {c.id for c in tensortrust(data_dir / "tensortrust", split="train")}
    test = {c.id for c in tensortrust(data_dir / "tensortrust", split="test")}
    assert train and test and not train & test
    assert test == {c.id for c in tensortrust(data_dir / "tensortrust", split="test")}
    assert 0.2 < len(test) / (len(train) + len(test)) < 0.4
    # The data repeats attacks under many sample ids: the split goes by text, so none is on both sides.
    text = lambda split: {" ".join(c.sources[0].text.split()).lower()  # noqa: E731
                          for c in tensortrust(data_dir / "tensortrust", split=split)}
    assert not text("train") & text("test")
    det = list(tensortrust(data_dir / "tensortrust", kinds=["detection"]))
    assert Counter(c.label for c in det) == {True: 115, False: 115}
    assert all(c.sources[0].metadata["kind"] == "tool_result" for c in det)


def test_tensortrust_bad_label_is_named(tmp_path):
    write(tmp_path / "prompt_extraction_detection.jsonl",
          '{"sample_id": 1, "access_code": "x", "llm_output": "y", "is_prompt_extraction": "maybe"}\n')
    err = list(tensortrust(tmp_path, kinds=["detection"]))[0]
    assert isinstance(err, RecordError) and err.field == "is_prompt_extraction" and "maybe" in err.message


def test_attributionbench_splits_and_references(data_dir):
    cases = list(attributionbench(data_dir / "attributionbench", splits=["dev", "test", "test_ood"]))
    assert Counter(c.split for c in cases) == {"dev": 1198, "test": 500, "test_ood": 1686}
    assert Counter(c.label for c in cases if c.split == "test") == {True: 250, False: 250}
    c = cases[0]
    assert c.sources and all(s.metadata == {"kind": "citation", "claim": c.response} for s in c.sources)
    one_file = list(attributionbench(data_dir / "attributionbench" / "test_all_subset_balanced_sampled500.jsonl"))
    assert {x.split for x in one_file} == {"test"}


def test_attributionbench_bad_references_and_label(tmp_path):
    rows = [{"id": "a", "claim": "c", "attribution_label": "attributable", "references": "['ok']"},
            {"id": "b", "claim": "c", "attribution_label": "attributable", "references": "[unclosed"},
            {"id": "c", "claim": "c", "attribution_label": "partly", "references": "[]"}]
    path = write(tmp_path / "f.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    out = list(attributionbench(path))
    assert out[0].sources[0].text == "ok"
    assert isinstance(out[1], RecordError) and out[1].field == "references" and out[1].loc.line == 2
    assert isinstance(out[2], RecordError) and out[2].field == "attribution_label" and "partly" in out[2].message
