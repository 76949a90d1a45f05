"""A (premise, hypothesis) classifier behind one interface, and a content-addressed cache of its outputs.

`PairModel` loads a Hugging Face `transformers` sequence-classification model (any architecture, custom
code with `trust_remote_code`) or a sentence-transformers `CrossEncoder`, on first use. It measures texts
in the model's own tokens (so windows can be sized to fit), encodes pairs either as the tokenizer's
sentence pair or through a text template (HHEM and MiniCheck read one text), and returns raw logits:
which label means "entailed" and how logits become a probability is the verifier's business, so one
cached row serves every label choice.

A pair longer than `max_length` is never cut silently: its premise is shortened to fit and the pair is
flagged as truncated, and the verifier reports the flag on the unit and the verdict.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verifybench.errors import SuiteError

# Label names that mean "the premise supports the hypothesis", for `entail_label: null`.
ENTAIL_NAMES = ("entailment", "entailed", "entails", "entail", "supported", "support", "consistent",
                "faithful", "factual", "attributable")
WEIGHT_FILES = (".safetensors", ".bin", ".onnx", ".pt", ".msgpack", ".h5")


def resolve_entail_label(labels: list[str], wanted: str | int | None, where: str) -> int | None:
    """The index of the entailment label; None for a one-output model (read through a sigmoid)."""
    listing = ", ".join(f"{i}: {name!r}" for i, name in enumerate(labels))
    if len(labels) == 1:
        if wanted not in (None, 0) and str(wanted).lower() != labels[0].lower():
            raise SuiteError(f"{where}: entail_label {wanted!r}: the model has one output ({listing}), read as the "
                             "probability that the hypothesis is supported; leave entail_label out")
        return None
    if wanted is None:
        found = [i for i, name in enumerate(labels) if name.lower().replace("_", " ").strip() in ENTAIL_NAMES]
        if len(found) == 1:
            return found[0]
        raise SuiteError(f"{where}: cannot tell which label means entailment; set entail_label to one of the "
                         f"model's labels ({listing}), by name or index")
    if isinstance(wanted, int) or (isinstance(wanted, str) and wanted.strip().isdigit()):
        index = int(wanted)
        if not 0 <= index < len(labels):
            raise SuiteError(f"{where}: entail_label {wanted!r} is out of range; the model's labels: {listing}")
        return index
    for i, name in enumerate(labels):
        if name.lower() == str(wanted).lower():
            return i
    raise SuiteError(f"{where}: entail_label {wanted!r} is not a label of this model; its labels: {listing}")


def entail_probability(logits: np.ndarray, index: int | None) -> np.ndarray:
    """P(entailed) per row: softmax over the labels, or a sigmoid for a one-output model."""
    logits = np.asarray(logits, dtype=np.float64)
    if index is None:
        return 1.0 / (1.0 + np.exp(-logits[:, 0]))
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e[:, index] / e.sum(axis=1)


def _is_local(name: str) -> bool:
    return Path(name).expanduser().exists()


def fingerprint(name: str, revision: str | None) -> str:
    """What identifies the weights: a local folder by its config and weight files' names, sizes and
    modification times (a retrained model in the same folder is a new model); a hub name by revision."""
    path = Path(name).expanduser()
    if not path.exists():
        return f"hub:{name}@{revision or 'main'}"
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        if p.name == "config.json" or p.suffix in WEIGHT_FILES:
            st = p.stat()
            h.update(f"{p.relative_to(path) if p != path else p.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
            if p.name == "config.json":
                h.update(p.read_bytes())
    return f"local:{h.hexdigest()[:20]}"


class PairModel:
    """A sequence-classification model scoring (premise, hypothesis) pairs. Nothing loads before first use."""

    def __init__(self, name: str, backend: str = "auto", revision: str | None = None, tokenizer: str | None = None,
                 template: str | None = None, trust_remote_code: bool = False, max_length: int | None = None,
                 device: str = "auto", batch_size: int = 16, runtime: str = "torch", onnx_dir: str | None = None):
        self.name = name
        self.runtime = runtime
        self.onnx_dir = onnx_dir
        self.backend = backend
        self.revision = revision
        self.tokenizer_name = tokenizer
        self.template = template
        self.trust_remote_code = trust_remote_code
        self.requested_max_length = max_length
        self.device_option = device
        self.batch_size = batch_size
        # Heavy parts, built on first use (transformers, sentence-transformers, onnxruntime objects).
        self._model: Any = None
        self._tok: Any = None
        self._ce: Any = None
        self._onnx: Any = None
        self._max_length: int | None = None
        self._overhead: int | None = None

    # -- what the model is, without loading weights ---------------------------------------------------
    def resolved_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        path = Path(self.name).expanduser()
        marker = path / "config_sentence_transformers.json"
        if path.is_dir() and marker.exists() and '"CrossEncoder"' in marker.read_text(encoding="utf-8"):
            return "cross-encoder"
        return "transformers"

    def labels(self) -> list[str]:
        """The model's output labels in index order, from its config (a small JSON file, not the weights)."""
        from transformers import AutoConfig

        try:
            cfg = AutoConfig.from_pretrained(self._path(), trust_remote_code=self.trust_remote_code,
                                             revision=self.revision)
        except Exception as e:  # noqa: BLE001 - missing files, no network, custom code not allowed...
            hint = "" if _is_local(self.name) else " (a hub name needs the model in the local cache or hub access)"
            raise SuiteError(f"model {self.name!r} cannot be loaded{hint}: {type(e).__name__}: {e}") from None
        n = int(getattr(cfg, "num_labels", 0) or len(getattr(cfg, "id2label", {}) or {}) or 1)
        id2label = {int(k): str(v) for k, v in (getattr(cfg, "id2label", None) or {}).items()}
        return [id2label.get(i, f"LABEL_{i}") for i in range(n)]

    def _path(self) -> str:
        return str(Path(self.name).expanduser()) if _is_local(self.name) else self.name

    @property
    def model_id(self) -> str:
        """Everything that changes the logits of a pair; the cache is keyed by it."""
        parts = [self.resolved_backend(), fingerprint(self.name, self.revision), self.tokenizer_name, self.template,
                 self.max_length]
        if self.runtime != "torch":
            parts.append(self.runtime)  # int8 logits differ slightly: cached apart from the torch ones
        return "|".join(map(str, parts))

    # -- loading --------------------------------------------------------------------------------------
    def _device(self) -> str:
        if self.device_option != "auto":
            return self.device_option
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def load(self) -> None:
        """The tokenizer and the length limits: all that cutting texts needs. The weights wait for the
        first pair that is not in the cache (`load_weights`)."""
        if self._tok is not None:
            return
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a loading bar per run would drown the run's own progress
        kw = {"trust_remote_code": self.trust_remote_code, "revision": self.revision}
        positions = declared = None
        if self.resolved_backend() == "cross-encoder":
            if self.template is not None:
                raise SuiteError(f"model {self.name!r}: pair_template needs backend: transformers")
            self.load_weights()
            self._tok = self._ce.tokenizer
            declared = getattr(self._ce, "max_seq_length", None)
        else:
            from transformers import AutoConfig, AutoTokenizer

            self._tok = AutoTokenizer.from_pretrained(self.tokenizer_name or self._path(), **kw)
            declared = getattr(self._tok, "model_max_length", None)
            positions = getattr(AutoConfig.from_pretrained(self._path(), **kw), "max_position_embeddings", None)
        if self.requested_max_length is not None:
            self._max_length = self.requested_max_length
        else:
            sane = [x for x in (declared, positions) if isinstance(x, int) and 0 < x < 100_000]
            self._max_length = min(sane) if sane else 512
        # Lengths are managed here (windows fit, long pairs are cut and flagged): the tokenizer's own
        # "sequence too long" warning would only repeat what the verdict already says.
        self._tok.model_max_length = 10**9
        if self.template is not None:
            self._overhead = len(self._tok(self.template.format(premise="", hypothesis=""))["input_ids"])
        else:
            self._overhead = self._tok.num_special_tokens_to_add(pair=True)

    def load_weights(self) -> None:
        if self._model is not None or self._ce is not None or self._onnx is not None:
            return
        # Any: transformers 5.25 types each from_pretrained keyword apart, so a mixed dict matches none
        kw: dict[str, Any] = {"trust_remote_code": self.trust_remote_code, "revision": self.revision}
        if self.runtime == "onnx":
            self._load_onnx(kw)
            return
        if self.resolved_backend() == "cross-encoder":
            from sentence_transformers import CrossEncoder

            self._ce = CrossEncoder(self._path(), device=self._device(), **kw)
            if self.requested_max_length is not None:
                # predict() truncates at its own limit: make it ours, so the pairs we fitted pass whole.
                self._ce.max_seq_length = self.requested_max_length
        else:
            from transformers import AutoModelForSequenceClassification

            self._model = AutoModelForSequenceClassification.from_pretrained(self._path(), **kw)
            self._model.to(self._device()).eval()

    def _load_onnx(self, kw: dict) -> None:
        """The int8 ONNX file of these weights (exported and quantized on first use, then cached)."""
        import tempfile

        import torch
        from transformers import AutoModelForSequenceClassification

        from verifybench.verifiers.nli.onnx import OnnxSession, export_int8, onnx_path

        self.load()
        target = onnx_path(self.model_id, self.onnx_dir or tempfile.mkdtemp(prefix="verifybench-onnx-"))
        if not target.exists():
            # Eager attention: its mask arithmetic traces into the graph as it is (the fused path may not).
            model = AutoModelForSequenceClassification.from_pretrained(self._path(), attn_implementation="eager", **kw)
            export_int8(model, list(self._tok.model_input_names), target)
        self._onnx = OnnxSession(target, torch.get_num_threads())

    @property
    def tokenizer(self):
        self.load()
        return self._tok

    @property
    def max_length(self) -> int:
        """The longest input (tokens, special tokens included) the model reads; the option if given."""
        if self.requested_max_length is not None:
            return self.requested_max_length
        self.load()
        assert self._max_length is not None  # load() sets it
        return self._max_length

    @property
    def overhead(self) -> int:
        """Tokens a pair costs beyond its premise and hypothesis: special tokens, or the template's words."""
        self.load()
        assert self._overhead is not None  # load() sets it
        return self._overhead

    def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text, without special tokens."""
        if not texts:
            return []
        return [len(x) for x in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]

    # -- scoring --------------------------------------------------------------------------------------
    def _cut_premise(self, premise: str, keep: int) -> str:
        """The premise shortened to its first `keep` tokens (cut at a token boundary)."""
        if keep <= 0:
            return ""
        try:
            offsets = self.tokenizer(premise, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        except NotImplementedError:  # a slow (Python) tokenizer has no offsets: cut characters in proportion
            total = self.count([premise])[0]
            return premise if total <= keep else premise[:len(premise) * keep // total]
        if len(offsets) <= keep:
            return premise
        return premise[:offsets[keep - 1][1]]

    def _fit(self, pairs: list[tuple[str, str]]) -> tuple[list, list[tuple[str, str]], np.ndarray]:
        """Encoded inputs (unpadded) of pairs that fit in `max_length`, premises cut where they do not."""
        tok, limit = self.tokenizer, self.max_length
        if self.template is not None:
            enc = tok([self.template.format(premise=p, hypothesis=h) for p, h in pairs])
        else:
            enc = tok([p for p, _ in pairs], [h for _, h in pairs])
        lengths = [len(x) for x in enc["input_ids"]]
        truncated = np.array([n > limit for n in lengths], dtype=bool)
        fitted = list(pairs)
        for i in np.flatnonzero(truncated).tolist():
            p, h = pairs[i]
            over = lengths[i] - limit
            fitted[i] = (self._cut_premise(p, max(0, self.count([p])[0] - over - 1)), h)
        if truncated.any():
            idx = np.flatnonzero(truncated).tolist()
            sub = [fitted[i] for i in idx]
            if self.template is not None:
                again = tok([self.template.format(premise=p, hypothesis=h) for p, h in sub],
                            truncation=True, max_length=limit)
            else:
                again = tok([p for p, _ in sub], [h for _, h in sub], truncation="only_first", max_length=limit)
            for k, i in enumerate(idx):
                for key in enc.keys():
                    enc[key][i] = again[key][k]
        features = [{k: enc[k][i] for k in enc.keys()} for i in range(len(pairs))]
        return features, fitted, truncated

    def logits(self, pairs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Raw logits (n, labels) and a truncated flag per pair. Pairs are batched by length, so a batch
        pads to its own longest pair rather than to the longest of all."""
        if not pairs:
            return np.zeros((0, 1), dtype=np.float32), np.zeros(0, dtype=bool)
        features, fitted, truncated = self._fit(pairs)
        self.load_weights()
        order = np.argsort([len(f["input_ids"]) for f in features], kind="stable")
        if self._ce is not None:
            import torch

            scores = self._ce.predict([fitted[i] for i in order], batch_size=self.batch_size,
                                      activation_fn=torch.nn.Identity(), convert_to_numpy=True,
                                      show_progress_bar=False)
            scores = np.asarray(scores, dtype=np.float32).reshape(len(order), -1)
            out = np.empty_like(scores)
            out[order] = scores
            return out, truncated
        return self._forward(features, order), truncated

    def _forward(self, features: list[dict], order: np.ndarray) -> np.ndarray:
        if self._onnx is not None:
            return self._forward_onnx(features, order)
        import torch

        out = None
        device = next(self._model.parameters()).device
        with torch.inference_mode():
            for lo in range(0, len(order), self.batch_size):
                idx = order[lo:lo + self.batch_size]
                batch = self._tok.pad([features[i] for i in idx], return_tensors="pt")
                batch = {k: v.to(device) for k, v in batch.items()}
                logits = self._model(**batch).logits.float().cpu().numpy()
                if out is None:
                    out = np.empty((len(order), logits.shape[1]), dtype=np.float32)
                out[idx] = logits
        assert out is not None  # logits() returns early when there are no pairs
        return out

    def _forward_onnx(self, features: list[dict], order: np.ndarray) -> np.ndarray:
        """One pair a call. Dynamic int8 quantizes activations with a scale taken from the whole input
        tensor, so in a batch a pair's score would depend on the pairs beside it (and on the cache, the
        batch size, the executor); alone, it depends on the pair only. Unpadded single pairs also cost
        no padding, and a call's overhead is small beside a pair's matrix work."""
        out = None
        for i in order:
            logits = self._onnx({k: np.asarray(v, dtype=np.int64)[None, :] for k, v in features[i].items()})
            if out is None:
                out = np.empty((len(order), logits.shape[1]), dtype=np.float32)
            out[i] = logits[0]
        assert out is not None  # logits() returns early when there are no pairs
        return out

    def __getstate__(self):
        return {**self.__dict__, "_model": None, "_tok": None, "_ce": None, "_onnx": None, "_max_length": None,
                "_overhead": None}


class PairCache:
    """Logits per (model, premise hash, hypothesis hash): in memory for the run, and in an SQLite file
    under `cache_dir` (when given) so a re-run reuses what an earlier run computed. The same design as
    the anchors embedding cache, one row per pair."""

    def __init__(self, model_id: str, cache_dir: str | Path | None = None, memory_items: int = 500_000):
        self.model_id = model_id
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.memory_items = memory_items
        self._mem: dict[tuple[str, str], np.ndarray] = {}
        self._db = None
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def key(premise: str, hypothesis: str) -> tuple[str, str]:
        return (hashlib.sha1(premise.encode("utf-8")).hexdigest(), hashlib.sha1(hypothesis.encode("utf-8")).hexdigest())

    def _conn(self):
        if self._db is None and self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha1(self.model_id.encode()).hexdigest()[:16]
            self._db = sqlite3.connect(self.cache_dir / f"nli-{name}.sqlite", check_same_thread=False)
            # One key per pair: "<premise sha1>:<hypothesis sha1>".
            self._db.execute("create table if not exists pair (k text primary key, v blob)")
        return self._db

    def uncached(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The pairs neither in memory nor on disk: what `get_or_compute` would run the model for."""
        by_key = {self.key(p, h): (p, h) for p, h in pairs}
        missing = [k for k in by_key if k not in self._mem]
        db = self._conn()
        if missing and db is not None:
            with self._lock:
                for i in range(0, len(missing), 400):
                    part = missing[i:i + 400]
                    rows = db.execute(f"select k from pair where k in ({','.join('?' * len(part))})",
                                      [f"{p}:{h}" for p, h in part])
                    found = {tuple(k.split(":")) for (k,) in rows}
                    missing = [k for k in missing if k not in found]
        return [by_key[k] for k in missing]

    def get_or_compute(self, pairs: list[tuple[str, str]], compute) -> tuple[list[np.ndarray], np.ndarray]:
        """Logits for each pair and a truncated flag (False for a cached pair whose flag was stored)."""
        keys = [self.key(p, h) for p, h in pairs]
        found: dict[tuple[str, str], np.ndarray] = {k: self._mem[k] for k in keys if k in self._mem}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        db = self._conn()
        if missing and db is not None:
            with self._lock:
                for i in range(0, len(missing), 400):
                    part = missing[i:i + 400]
                    rows = db.execute(f"select k, v from pair where k in ({','.join('?' * len(part))})",
                                      [f"{p}:{h}" for p, h in part])
                    for k, blob in rows:
                        p, h = k.split(":")
                        found[(p, h)] = np.frombuffer(blob, dtype=np.float32)
            missing = [k for k in missing if k not in found]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            by_key = dict(zip(keys, pairs))
            logits, truncated = compute([by_key[k] for k in missing])
            # The truncation flag rides along as the row's last value, so a cached pair keeps it.
            rows = np.concatenate([logits.astype(np.float32), truncated[:, None].astype(np.float32)], axis=1)
            new = dict(zip(missing, rows))
            found.update(new)
            if db is not None:
                with self._lock:
                    db.executemany("insert or replace into pair values (?, ?)",
                                   [(f"{p}:{h}", v.tobytes()) for (p, h), v in new.items()])
                    db.commit()
        if len(self._mem) > self.memory_items:
            self._mem.clear()
        self._mem.update((k, found[k]) for k in keys)
        rows = [found[k] for k in keys]
        return [r[:-1] for r in rows], np.array([bool(r[-1]) for r in rows], dtype=bool)

    def __getstate__(self):
        return {**self.__dict__, "_db": None, "_mem": {}, "_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
