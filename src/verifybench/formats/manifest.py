"""manifest.json: what a run directory holds and how to reproduce it (the suite as written and its hash,
the dataset's hashes and counts, each verifier's configuration and config hash, the executor, git state,
package versions), and where the run stands (`status`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verifybench.formats.base import Stored, omitted

Status = Literal["running", "scored", "complete", "failed"]


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class SuiteRecord(_Part):
    name: str
    path: str | None = Field(None, description="the suite file (None: cases given in Python)")
    hash: str = Field(description="sha256 of the suite as written")
    raw: dict[str, Any] = Field(description="the suite document as written (`${VAR}` unexpanded)")
    base_dir: str | None = Field(None, description="the folder relative paths of the suite resolve against")
    data_dir: str | None = None


class DatasetRecord(_Part):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    hash: str = Field(description="over the files read and the selection (limit, sample): changes with either")
    loader: str
    options: dict[str, Any] = Field(default_factory=dict, description="the loader's options as written")
    files_hashed: int = 0
    # The counts: absent while the run is being scored (a report counts a killed run's from its case index)
    total: int | None = omitted(description="cases in the run")
    by_doc_type: dict[str, int] = omitted(default_factory=dict, description="doc type -> cases")
    by_label: dict[str, int] = omitted(default_factory=dict, description="hallucinated / faithful (/ unlabeled) "
                                       "-> cases")
    by_split: dict[str, int] = omitted(default_factory=dict, description="split -> cases")
    skipped_records: int | None = omitted(description="bad input records skipped (on_error: skip)")
    content_hash: str | None = omitted(description="over the cases after field mapping: two runs over the "
                                       "same cases compare, whatever file they came from (identity.py)")


class VerifierRecord(_Part):
    id: str
    name: str
    config: dict[str, Any] = Field(description="the verifier's options as written (secrets as `${VAR}` or ***)")
    config_hash: str
    probabilistic: bool = False
    binary: bool = False
    repeats: int | None = omitted(ge=2, description="scored this many times a case, folded to the mean")


class Manifest(Stored):
    """A run directory's manifest.json; the run's own marker (a folder without one is not a run)."""

    KIND = "verifybench.manifest"
    VERSION = 2
    LEGACY = None
    TITLE = "a run directory's manifest.json"
    # 1 -> 2: the kind and the writer named; nothing else changed
    MIGRATIONS = {1: lambda doc: doc}

    status: Status
    created: str
    updated: str
    suite: SuiteRecord
    dataset: DatasetRecord
    verifiers: list[VerifierRecord]
    executor: dict[str, Any] = Field(default_factory=dict)
    git: dict[str, Any] | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    platform: dict[str, Any] = Field(default_factory=dict)
    resumes: int = 0
    notes: list[str] = omitted(default_factory=list, description="what the run said about itself (a stale lock "
                               "taken over, ...)")
    error: str | None = omitted(description="why a failed run stopped")

    def verifier(self, vid: str) -> VerifierRecord | None:
        return next((v for v in self.verifiers if v.id == vid), None)
