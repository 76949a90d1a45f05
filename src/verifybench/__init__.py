"""verifybench: measure hallucination verifiers on labeled cases."""

from verifybench.cases import Case, Source, Unit, Verdict

__all__ = ["Case", "Source", "Unit", "Verdict", "__version__"]
__version__ = "0.1.0"
