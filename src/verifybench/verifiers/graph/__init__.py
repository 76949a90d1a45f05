"""The `graph` verifier: claims through two gates against a domain pack's executable knowledge graph in
RelationalAI (local DuckDB backend by default). See docs/graph.md.

Modules: pack (domain packs: fact tables, rules, claim schema), facts (the fact files), kg (build and
deploy a pack's graph), claims (gate 1), entailment (gate 2), prose (claims from a prose answer), agent
(the two-gate loop), verifier. Bundled packs live in `packs/` (package data).
"""

from verifybench.verifiers.graph.verifier import GraphOptions, GraphVerifier

__all__ = ["GraphOptions", "GraphVerifier"]
