"""The `graph` verifier: structured claims through two gates against an executable refund knowledge
graph in RelationalAI (local DuckDB backend by default). See docs/graph.md.

Modules: facts (the fact files), rules (the knowledge graph: the module a domain expert reviews), kg
(build and deploy it), claims (gate 1), entailment (gate 2), agent (the two-gate loop), verifier.
"""

from verifybench.verifiers.graph.verifier import GraphOptions, GraphVerifier

__all__ = ["GraphOptions", "GraphVerifier"]
