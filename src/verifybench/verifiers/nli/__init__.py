"""Bring your own NLI / consistency model: windows, claims, SummaC- or MiniCheck-style aggregation."""

from verifybench.verifiers.nli.verifier import NLIOptions, NLIVerifier

__all__ = ["NLIOptions", "NLIVerifier"]
