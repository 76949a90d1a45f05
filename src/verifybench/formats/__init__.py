"""One typed, versioned model per file verifybench writes and reads back (docs/formats.md is generated
from them). Each kind has one reader and one writer: `Model.read(path)` migrates an older format and
refuses a newer one; `Model(...).write(path)` writes the current one."""

from verifybench.formats.base import FormatError, Stored, written_by
from verifybench.formats.baseline import Baseline
from verifybench.formats.decision import DecisionRecord
from verifybench.formats.drift import DriftRecord
from verifybench.formats.guardfile import GuardSpec
from verifybench.formats.labelqueue import QueueRecord
from verifybench.formats.manifest import Manifest
from verifybench.formats.metrics import Metrics
from verifybench.formats.policy import Policy

# kind -> (model, where such a file lives), in the order docs/formats.md lists them
KINDS: dict[str, tuple[type[Stored], str]] = {
    Manifest.KIND: (Manifest, "run directory: `manifest.json`"),
    Metrics.KIND: (Metrics, "run directory: `metrics.json`"),
    Baseline.KIND: (Baseline, "`metrics/<suite>.json` (`verifybench baseline`)"),
    Policy.KIND: (Policy, "`policy.yaml` (`verifybench thresholds --out`)"),
    GuardSpec.KIND: (GuardSpec, "`guard.yaml` (by hand, or `verifybench cascade --out`)"),
    DecisionRecord.KIND: (DecisionRecord, "a line of a decision log, `decisions-<pid>-<seq>.jsonl`"),
    DriftRecord.KIND: (DriftRecord, "`drift-<UTC time>.json` (`verifybench drift --out`)"),
    QueueRecord.KIND: (QueueRecord, "the first line of `NAME.queue.jsonl` beside a label queue's CSV"),
}

__all__ = ["KINDS", "Baseline", "DecisionRecord", "DriftRecord", "FormatError", "GuardSpec", "Manifest", "Metrics",
           "Policy", "QueueRecord", "Stored", "written_by"]
