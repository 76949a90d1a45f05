"""Two-stage compliance checking (criteria from the standard first, then targeted evidence, then a
deterministic match) and the one-stage RAG baseline it is measured against."""

from verifybench.verifiers.compliance.criteria import LLMExtractor, RuleExtractor, VerificationCriterion
from verifybench.verifiers.compliance.matching import Audit, CriterionCheck, match_criteria
from verifybench.verifiers.compliance.pipeline import OneStagePipeline, TwoStagePipeline
from verifybench.verifiers.compliance.store import Document, HybridIndex, load_corpus
from verifybench.verifiers.compliance.verifier import ComplianceVerifier, OneStageVerifier, claims_compliance

__all__ = [
    "Audit", "ComplianceVerifier", "CriterionCheck", "Document", "HybridIndex", "LLMExtractor", "OneStagePipeline",
    "OneStageVerifier", "RuleExtractor", "TwoStagePipeline", "VerificationCriterion", "claims_compliance",
    "load_corpus", "match_criteria",
]
