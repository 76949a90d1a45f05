"""The verifier interface: a named, configured object that scores a batch of cases.

Verifiers are plain picklable objects: heavy models load lazily on first use, never in `__init__`, so
the same object can be shipped to another process or a cluster worker and give identical results.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from verifybench.cases import Case, Verdict
from verifybench.errors import SuiteError


def default_cache(kind: str) -> str:
    """Where a verifier keeps `kind` of cache by default: $VERIFYBENCH_CACHE, else the XDG cache folder."""
    base = os.environ.get("VERIFYBENCH_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "verifybench")
    return str(Path(base).expanduser() / kind)


class Prices(BaseModel):
    """A paid backend's prices, from the provider's current list: USD per million input and output tokens."""

    model_config = ConfigDict(extra="forbid")
    input_per_1m: float = 0.0
    output_per_1m: float = 0.0


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Verifier:
    """Base class. Subclasses set `name`, `description`, an options model `Options`, and `verify`."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    # True when `score` is a probability of "hallucinated": the metrics then report its calibration.
    probabilistic: ClassVar[bool] = False
    # True when the verifier loads no model and holds no client: a cluster executor can then run it as
    # plain tasks instead of a pool of long-lived workers that each load the model once.
    stateless: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = NoOptions

    def __init__(self, id: str | None = None, **options):
        self.id = id or self.name
        # The run directory, once a runner has bound this verifier to a run (`bind_run`): where a verifier
        # may write files of its own (an audit log, an escalation queue). None outside a run.
        self.run_dir: Path | None = None
        try:
            self.options = self.Options(**options)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise SuiteError(f"verifier {self.id!r} ({self.name}): option {field!r}: {err['msg']}") from None

    @property
    def config(self) -> dict:
        return {"name": self.name, **self.options.model_dump(mode="json")}

    @property
    def config_hash(self) -> str:
        """Stable over runs and machines: identical options give identical hashes."""
        blob = json.dumps(self.config, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def verify(self, batch: list[Case]) -> list[Verdict]:
        """One verdict per case, in the order of `batch`."""
        raise NotImplementedError

    def bind_run(self, run_dir: Path) -> None:
        """Called by the runner before the first batch. On a cluster the bound verifier is what ships to
        the workers, so the path must be one they can write to (a shared file system)."""
        self.run_dir = Path(run_dir)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, {self.options!r})"


class CaseVerifier(Verifier):
    """A verifier that scores one case at a time. A case that raises becomes that case's error verdict;
    each verdict carries the time its own case took."""

    def score_case(self, case: Case) -> float | Verdict:
        raise NotImplementedError

    def verify(self, batch: list[Case]) -> list[Verdict]:
        out = []
        for case in batch:
            start = time.perf_counter()
            try:
                result = self.score_case(case)
            except Exception as e:  # noqa: BLE001 - one case's failure must not lose the batch
                verdict = Verdict(case_id=case.id, verifier=self.id, error=f"{type(e).__name__}: {e}")
            else:
                if isinstance(result, Verdict):
                    verdict = result
                else:
                    verdict = Verdict(case_id=case.id, verifier=self.id, score=float(result))
            verdict.latency_ms = (time.perf_counter() - start) * 1000.0
            out.append(verdict)
        return out
