"""Semantic anchors: claims matched to source chunks by embeddings, with logic and fact checks."""

from verifybench.verifiers.anchors.verifier import AnchorsOptions, AnchorsVerifier

__all__ = ["AnchorsOptions", "AnchorsVerifier"]
