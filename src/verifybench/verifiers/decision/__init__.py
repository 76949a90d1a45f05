"""The decision-model filter: typed questions per unit (chunk, tool result, citation), a policy in code.

See `verifier.py` for the verifier, `policy.py` for what is dropped, flagged, ranked, trimmed and
escalated, `backends.py` for TypeSafe System One and the local model.
"""

from __future__ import annotations

__all__ = ["DecisionVerifier"]


def __getattr__(name: str):
    # Lazy: `python -m verifybench.training.decision` must not import the verifier's dependencies.
    if name == "DecisionVerifier":
        from verifybench.verifiers.decision.verifier import DecisionVerifier

        return DecisionVerifier
    raise AttributeError(name)
