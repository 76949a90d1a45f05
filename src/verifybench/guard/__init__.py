"""Rollout: a policy's checks applied to live answers (`Guard`), served over HTTP
(`verifybench.guard.service`, `verifybench serve`), every decision logged durably in the case schema
(`verifybench.guard.log`; read back with `loader: guardlog`). See docs/rollout.md."""

from verifybench.guard.core import CheckResult, Decision, Guard, Removed, UnitResult, strip_spans
from verifybench.guard.spec import GuardError, GuardSpec

__all__ = ["CheckResult", "Decision", "Guard", "GuardError", "GuardSpec", "Removed", "UnitResult", "strip_spans"]
