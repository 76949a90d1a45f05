"""LLM-as-judge over OpenAI-compatible endpoints, Anthropic and llama.cpp, with record/replay."""

from verifybench.verifiers.judge.verifier import JudgeOptions, JudgeVerifier

__all__ = ["JudgeOptions", "JudgeVerifier"]
