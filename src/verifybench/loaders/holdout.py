"""Stable hash splits: which side of a train/test split a record falls on, from its own text or id.

The same key gives the same side on every machine and in any file order, so a model trained on one
side (the decision filter's training command) and a suite that reads the other (`holdout: test`)
agree without sharing a list of ids.
"""

from __future__ import annotations

import hashlib


def hash_fraction(key: str, seed: int = 0) -> float:
    """A number in [0, 1) fixed by `key` and `seed`: the first 8 bytes of sha256("<seed>:<key>")."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode()).digest()[:8], "big") / 2**64


def hash_split(key: str, test_fraction: float, seed: int = 0) -> str:
    """"test" for a `test_fraction` share of keys, else "train"."""
    return "test" if hash_fraction(key, seed) < test_fraction else "train"
