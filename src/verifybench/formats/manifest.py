"""manifest.json: what a run directory holds and how to reproduce it (the suite as written and its hash,
the dataset's hashes and counts, each verifier's configuration and config hash, the executor, git state,
package versions), and where the run stands (`status`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from verifybench.formats.base import FormatError, Stored, omitted

Status = Literal["running", "scored", "complete", "failed"]


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class SuiteRecord(_Part):
    """The suite the run was started with."""

    name: str = Field(description="the suite's name")
    path: str | None = Field(None, description="the suite file (None: cases given in Python)")
    hash: str = Field(description="sha256 of the suite as written")
    raw: dict[str, Any] = Field(description="the suite document as written (`${VAR}` unexpanded)")
    base_dir: str | None = Field(None, description="the folder relative paths of the suite resolve against")
    data_dir: str | None = Field(None, description="the value `${VERIFYBENCH_DATA}` took (a resume reads the same)")


class DatasetRecord(_Part):
    """The cases: where they came from, their hashes and counts."""

    hash: str = Field(description="over the files read and the selection (limit, sample): changes with either")
    loader: str = Field(description="the loader that read them (jsonl, csv, hf, guardlog, ...)")
    options: dict[str, Any] = Field(default_factory=dict, description="the loader's options as written")
    files_hashed: int = Field(0, description="files the dataset hash covers")
    # The counts: absent while the run is being scored (a report counts a killed run's from its case index)
    total: int | None = omitted(description="cases in the run")
    by_doc_type: dict[str, int] = omitted(default_factory=dict, description="doc type -> cases")
    by_label: dict[str, int] = omitted(default_factory=dict, description="hallucinated / faithful (/ unlabeled) "
                                       "-> cases")
    by_split: dict[str, int] = omitted(default_factory=dict, description="split -> cases")
    skipped_records: int | None = omitted(description="bad input records skipped (on_error: skip)")
    content_hash: str | None = omitted(description="over the cases after field mapping: two runs over the "
                                       "same cases compare, whatever file they came from (_util/identity.py)")


class VerifierRecord(_Part):
    """One verifier the run scored with."""

    id: str = Field(description="its id in the run (the suite entry's `id`, else its name)")
    name: str = Field(description="the registered name or import path it was built from")
    config: dict[str, Any] = Field(description="the verifier's options as written (secrets as `${VAR}` or ***)")
    config_hash: str = Field(description="the hash of its configuration: a policy, a baseline and a guard name it")
    probabilistic: bool = Field(False, description="its scores are probabilities (calibration is measured)")
    binary: bool = Field(False, description="it answers 0 or 1 (one operating point, no curve)")
    repeats: int | None = omitted(ge=2, description="scored this many times a case, folded to the mean")


class Manifest(Stored):
    """A run directory's manifest.json; the run's own marker (a folder without one is not a run)."""

    KIND = "verifybench.manifest"
    VERSION = 2
    LEGACY = None
    TITLE = "a run directory's manifest.json"
    # 1 -> 2: the kind and the writer named; nothing else changed
    MIGRATIONS = {1: lambda doc: doc}

    status: Status = Field(description="running -> scored (every verdict written) -> complete (metrics.json and "
                           "report.html exist), or failed (`error` says why)")
    created: str = Field(description="when the run started (UTC, ISO 8601)")
    updated: str = Field(description="when this file was last written")
    suite: SuiteRecord = Field(description="the suite as written and its hash")
    dataset: DatasetRecord = Field(description="the cases' source, hashes and counts")
    verifiers: list[VerifierRecord] = Field(description="each verifier's configuration and config hash, in order")
    executor: dict[str, Any] = Field(default_factory=dict, description="where batches were scored (local "
                                     "threads, a Ray cluster) and how")
    git: dict[str, Any] | None = Field(None, description="the commit of the suite's repository when the run "
                                       "started, and whether it had changes (null: not in a git repository)")
    packages: dict[str, str] = Field(default_factory=dict, description="package -> version, of what a run depends on")
    platform: dict[str, Any] = Field(default_factory=dict, description="system, machine and the command line")
    resumes: int = Field(0, description="times the run was resumed (`verifybench run --resume`)")
    notes: list[str] = omitted(default_factory=list, description="what the run said about itself (a stale lock "
                               "taken over, ...)")
    error: str | None = omitted(description="why a failed run stopped")

    @classmethod
    def read(cls, path: str | Path) -> Self:
        if not Path(path).exists():
            raise FormatError(path, f"not found; is {Path(path).parent} a verifybench run directory?")
        return super().read(path)

    def verifier(self, vid: str) -> VerifierRecord | None:
        return next((v for v in self.verifiers if v.id == vid), None)
