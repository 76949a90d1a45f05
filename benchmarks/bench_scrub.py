"""What scrubbing a completion costs (verifiers/llm/scrub.py), per text, with 4 registered secrets; with
`--against`, the same texts through another scrub module (an earlier version) in the same run.

    python benchmarks/bench_scrub.py [--repeat 100] [--against OLD_SCRUB.py]
    # the scrubber before issue 42:
    git show 5eee524:src/verifybench/verifiers/llm/scrub.py > /tmp/old_scrub.py

Texts: a 2.9 KB judge reply that echoes a key in 17 encodings (the echo server of tests/test_secrets.py),
a 10.8 KB reply of plain prose, and a 15 KB JSON text with 2,000 escapes (`\\u00e9`, `\\/`) and no secret.
Each figure is the fastest of 5 rounds of `--repeat` calls.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def texts() -> dict[str, str]:
    from test_secrets import KEY, _echo_reply

    echo = _echo_reply({"messages": [{"content": "wrong"}]}, {"authorization": f"Bearer {KEY}"})
    prose = json.dumps({"reason": "lorem ipsum dolor sit amet " * 400})
    escaped = json.dumps({"a": "caf\u00e9 / x " * 1000}, ensure_ascii=True).replace("/", "\\/")
    return {"echoed reply 2.9 KB": echo, "plain prose 10.8 KB": prose, "2,000 escapes 15 KB": escaped}


def per_call_ms(f, repeat: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            f()
        best = min(best, (time.perf_counter() - start) / repeat * 1000)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--against", type=Path, help="another scrub.py to time on the same texts")
    args = ap.parse_args()
    from test_secrets import KEY, PASSWORD

    mine = importlib.import_module("verifybench.verifiers.llm.scrub")  # the package re-exports `scrub`, a function
    other = None
    if args.against:
        spec = importlib.util.spec_from_file_location("other_scrub", args.against)
        assert spec is not None and spec.loader is not None
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
    for s in (KEY, PASSWORD, "sk-proj-OTHER-0123456789abcdef", "ts-TYPESAFE-0123456789"):
        for module in (mine, other):
            if module is not None:
                module.register_secret(s)
    print(f"{'text':<22} {'scrub ms':>9} {'other ms':>9} {'ratio':>6}")
    for name, text in texts().items():
        ms = per_call_ms(lambda t=text: mine.scrub(t), args.repeat)
        if other is None:
            print(f"{name:<22} {ms:>9.2f}")
            continue
        ref = per_call_ms(lambda t=text: other.scrub(t), args.repeat)
        print(f"{name:<22} {ms:>9.2f} {ref:>9.2f} {ms / ref:>6.1f}")


if __name__ == "__main__":
    main()
