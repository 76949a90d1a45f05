"""Tensor Trust (HumanCompatibleAI/tensor-trust-data): human-written prompt-injection attacks.

Three files, one `kind` each:

- `hijacking`: hijacking_robustness_dataset.jsonl, attacks that try to make the model say
  "Access Granted" without the access code;
- `extraction`: extraction_robustness_dataset.jsonl, attacks that try to make the model reveal its
  instructions or access code;
- `detection`: prompt_extraction_detection.jsonl, model outputs labeled by whether they leak the
  access code (`is_prompt_extraction`).

For `hijacking` and `extraction` the attack is the one unit judged (a "tool_result": text an agent got
from outside), label True: every attack is an instruction addressed to the model. The defender's
pre/post prompts are instructions too, by design, so they are kept in `meta`, not used as negatives.
For `detection` the unit is the model output and the label is the file's own (True = leaks).

Tensor Trust has no official split: a case is in `test` when sha256("<seed>:<kind>:<sample_id>") read
as a fraction is below `test_fraction`, else in `train`; stable over runs and machines.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from verifybench.cases import Case, Source
from verifybench.errors import DataError, RecordError
from verifybench.loaders.generic import CaseStream
from verifybench.loaders.holdout import hash_split
from verifybench.loaders.readers import read_jsonl

FILES = {
    "hijacking": "hijacking_robustness_dataset.jsonl",
    "extraction": "extraction_robustness_dataset.jsonl",
    "detection": "prompt_extraction_detection.jsonl",
}
TRUE_VALUES = {"true": True, "1": True, "false": False, "0": False}


def tensortrust(
    path: str | Path,
    kinds: list[str] | None = None,
    split: str = "all",
    test_fraction: float = 0.3,
    seed: int = 0,
) -> CaseStream:
    """Cases from the Tensor Trust benchmark files.

    Args:
        path: the folder holding the three files.
        kinds: which of "hijacking", "extraction", "detection" (default: hijacking and extraction).
        split: "train", "test" (the seeded hash split) or "all".
        test_fraction: the share of each file hashed into `test`.
        seed: the seed of the hash split.
    """
    root = Path(path)
    if not root.is_dir():
        raise DataError(f"{root}: expected the Tensor Trust folder")
    kinds = list(kinds or ("hijacking", "extraction"))
    for kind in kinds:
        if kind not in FILES:
            raise DataError(f"unknown Tensor Trust kind {kind!r}; expected some of {tuple(FILES)}")
    if split not in ("train", "test", "all"):
        raise DataError(f"Tensor Trust split must be 'train', 'test' or 'all', got {split!r}")
    if not 0.0 < test_fraction < 1.0:
        raise DataError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    return _cases(root, kinds, split, test_fraction, seed)


def _cases(root: Path, kinds: list[str], split: str, test_fraction: float, seed: int) -> Iterator[Case | RecordError]:
    for kind in kinds:
        unit_field = "llm_output" if kind == "detection" else "attack"
        for rec in read_jsonl(root / FILES[kind]):
            if isinstance(rec, RecordError):
                yield rec
                continue
            d = rec.data
            sample_id = d.get("sample_id")
            if sample_id is None:
                yield RecordError(rec.loc, "missing required field", "sample_id")
                continue
            if not isinstance(d.get(unit_field), str):
                yield RecordError(rec.loc, "missing required field" if unit_field not in d else "must be a string", unit_field)
                continue
            # Split by the attack's text, not its id: the data repeats one attack under many sample ids,
            # and a repeat on both sides would put training text into the test split.
            case_split = hash_split(f"{kind}:{' '.join(d[unit_field].split()).lower()}", test_fraction, seed)
            if split != "all" and case_split != split:
                continue
            if kind == "detection":
                flag = TRUE_VALUES.get(str(d.get("is_prompt_extraction")).strip().lower())
                if flag is None:
                    yield RecordError(rec.loc, f"expected True or False, got {d.get('is_prompt_extraction')!r}",
                                      "is_prompt_extraction")
                    continue
                label, meta = flag, {"access_code": d.get("access_code")}
            else:
                label, meta = True, {"pre_prompt": d.get("pre_prompt"), "post_prompt": d.get("post_prompt"),
                                     "access_code": d.get("access_code")}
            yield Case(
                id=f"tensortrust-{kind}-{sample_id}",
                dataset="tensortrust",
                doc_type=kind,
                split=case_split,
                question="What is the access code?" if kind != "detection" else None,
                sources=[Source(id=unit_field, text=d[unit_field], metadata={"kind": "tool_result"})],
                response="",
                label=label,
                meta={"kind": kind, "sample_id": str(sample_id), **meta},
            ).at(rec.loc)


def injection_sets(
    path: str | Path,
    bipia_split: str = "test",
    tensortrust_split: str = "test",
    attacks_per_context: int | None = 1,
    seed: int = 2023,
) -> CaseStream:
    """The injection suite's data: BIPIA clean and attacked contexts, then Tensor Trust attacks.

    A suite reads one dataset; this chains the two injection benchmarks so one run reports both
    (slice them with `metrics: {by: dataset}`).

    Args:
        path: the shared datasets folder holding bipia/ and tensortrust/.
        bipia_split: BIPIA's "train" or "test".
        tensortrust_split: "train", "test" or "all" of Tensor Trust's hash split (seed 0, 30% test).
        attacks_per_context: see the `bipia` loader.
        seed: BIPIA's insertion seed.
    """
    from verifybench.loaders.bipia import bipia

    root = Path(path)
    yield from bipia(root / "bipia", split=bipia_split, attacks_per_context=attacks_per_context, seed=seed)
    yield from tensortrust(root / "tensortrust", split=tensortrust_split)
