"""What this installation has: every loader and verifier, built in or from entry points
(`verifybench list`)."""

from __future__ import annotations

from verifybench.loaders import available_loaders, describe_loader, get_loader
from verifybench.verifiers import available, get_verifier_class


def components() -> dict[str, dict[str, str]]:
    """Every loader and verifier (built-in and from entry points) with its one-line description."""
    verifiers = {}
    for name in sorted(available()):
        try:
            verifiers[name] = get_verifier_class(name).description
        except Exception as e:  # noqa: BLE001 - a broken plugin must not hide the others
            verifiers[name] = f"(cannot be loaded: {type(e).__name__}: {e})"
    loaders = {}
    for name in sorted(available_loaders()):
        try:
            loaders[name] = describe_loader(get_loader(name))
        except Exception as e:  # noqa: BLE001
            loaders[name] = f"(cannot be loaded: {type(e).__name__}: {e})"
    return {"loaders": loaders, "verifiers": verifiers}

