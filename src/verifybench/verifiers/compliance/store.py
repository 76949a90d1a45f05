"""The document store both pipelines search: a JSONL corpus, a BM25 index (bm25s), MiniLM embeddings,
and metadata filters that are applied before any document is scored.

`HybridIndex.search(query, k, where)` first narrows the corpus to the documents whose metadata match
`where` (an inverted index per field, so a filter over 50,000 documents costs a set intersection), then
scores only those: BM25 rows of bm25s's precomputed score matrix, and cosine against embeddings computed
on demand (and cached by content) for the candidates alone, and only when there are more candidates
than places in the result. The two rankings are fused by reciprocal rank
(RRF, k=60), the usual way to combine a lexical and a dense ranking without calibrating their scales.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from verifybench.errors import DataError, Location, RecordError
from verifybench.verifiers.compliance.standards import edition_of


class Document(BaseModel):
    id: str
    doc_type: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    def attribute(self, name: str) -> str | None:
        """A filterable attribute as text (a lot id may be stored as a number in one place and a string
        in another); None when the document lacks it."""
        value = self.doc_type if name == "doc_type" else self.id if name == "id" else self.metadata.get(name)
        return None if value is None else str(value)


def load_corpus(path: str | Path) -> list[Document]:
    """Read a JSONL corpus: one `{id, doc_type, text, metadata}` object per line. A bad line raises
    `RecordError` naming the file, the line and the field; a repeated id is an error too."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such corpus file")
    docs: list[Any] = []
    seen: dict[Any, Any] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = Location(str(path), index=len(docs), line=n)
            try:
                doc = Document.model_validate(json.loads(line))
            except json.JSONDecodeError as e:
                raise RecordError(where, f"invalid JSON: {e.msg}") from None
            except ValidationError as e:
                err = e.errors()[0]
                raise RecordError(where, err["msg"], field=".".join(map(str, err["loc"]))) from None
            if doc.id in seen:
                raise RecordError(where, f"document id {doc.id!r} already used on line {seen[doc.id]}")
            try:
                edition_of(doc)  # a standard's edition date must be a date, said here rather than mid-run
            except ValueError:
                raise RecordError(where, f"{doc.metadata.get('effective_date')!r} is not a date (YYYY-MM-DD)",
                                  field="metadata.effective_date") from None
            seen[doc.id] = n
            docs.append(doc)
    return docs


@dataclass
class Hit:
    doc: Document
    score: float  # fused RRF score
    bm25: float
    cosine: float | None


class HybridIndex:
    """BM25 + embeddings over `docs`. `encoder` is a `CachedEncoder` (or anything with
    `encode(texts, kind)`); with `encoder=None` the index is lexical only. Nothing heavy happens until the
    first search, so the object can be built cheaply and pickled."""

    def __init__(self, docs: list[Document], encoder=None, rrf_k: int = 60):
        self.docs = docs
        self.encoder = encoder
        self.rrf_k = rrf_k
        self._bm25 = None
        self._vocab: dict[str, int] = {}
        self._postings: dict[str, dict[Any, np.ndarray]] = {}
        self._dense_all: np.ndarray | None = None
        self._lock = threading.Lock()

    # -- building ---------------------------------------------------------------------------------------
    def _index(self):
        with self._lock:
            if self._bm25 is None:
                import bm25s
                from scipy.sparse import csc_matrix

                corpus = bm25s.tokenize([d.text for d in self.docs], stopwords="en", show_progress=False)
                retriever = bm25s.BM25()
                retriever.index(corpus, show_progress=False)
                s = retriever.scores
                vocab = corpus.vocab
                # bm25s keeps a (documents x terms) score matrix column by column; rows let a filtered
                # search score only its candidates.
                self._bm25 = csc_matrix((s["data"], s["indices"], s["indptr"]),
                                        shape=(s["num_docs"], len(s["indptr"]) - 1)).tocsr()
                self._vocab = vocab
        return self._bm25

    def _posting(self, field: str) -> dict[Any, np.ndarray]:
        with self._lock:
            if field not in self._postings:
                rows: dict[Any, list[int]] = {}
                for i, d in enumerate(self.docs):
                    rows.setdefault(d.attribute(field), []).append(i)
                self._postings[field] = {k: np.asarray(v) for k, v in rows.items()}
            return self._postings[field]

    def build(self) -> HybridIndex:
        """Build the BM25 matrix and, with an encoder, embed every document (needed only for unfiltered
        searches). Returns self."""
        self._index()
        if self.encoder is not None:
            self._dense_for(np.arange(len(self.docs)))
        return self

    # -- searching --------------------------------------------------------------------------------------
    def candidates(self, where: dict[str, Any] | None) -> np.ndarray:
        """Row numbers of the documents whose metadata match every condition of `where` (a value or a
        list of accepted values). The most selective condition is looked up in its inverted index; the
        others only test those rows, so a lot filter costs about the lot's size, not the corpus's."""
        if not where:
            return np.arange(len(self.docs))
        conds = {f: [str(v) for v in (w if isinstance(w, (list, tuple, set)) else [w])] for f, w in where.items()}
        sizes = {f: sum(len(self._posting(f).get(v, ())) for v in vals) for f, vals in conds.items()}
        first = min(sizes, key=lambda f: sizes[f])
        posting = self._posting(first)
        rows = sorted(i for v in conds[first] for i in posting.get(v, ()))
        for field, vals in conds.items():
            if field != first:
                accepted = set(vals)
                rows = [i for i in rows if self.docs[i].attribute(field) in accepted]
        return np.asarray(rows, dtype=int)

    def _dense_for(self, rows: np.ndarray) -> np.ndarray:
        if len(rows) == len(self.docs):
            if self._dense_all is None:
                self._dense_all = self.encoder.encode([d.text for d in self.docs], "passage")
            return self._dense_all
        if self._dense_all is not None:
            return self._dense_all[rows]
        return self.encoder.encode([self.docs[i].text for i in rows], "passage")

    def search(self, query: str, k: int = 5, where: dict[str, Any] | None = None) -> list[Hit]:
        """The `k` best documents for `query` among those matching `where`, best first."""
        import bm25s

        matrix = self._index()
        rows = self.candidates(where)
        if not len(rows):
            return []
        terms = bm25s.tokenize(query, stopwords="en", return_ids=False, show_progress=False)[0]
        q_ids = sorted({self._vocab[t] for t in terms if t in self._vocab} & set(range(matrix.shape[1])))
        lexical = (np.asarray(matrix[rows][:, q_ids].sum(axis=1)).ravel() if q_ids
                   else np.zeros(len(rows)))
        fused = 1.0 / (self.rrf_k + _ranks(lexical))
        cosine = None
        # When every candidate is returned anyway, ranking cannot change which documents come back: skip
        # the embeddings (a lot filter usually leaves two or three documents).
        if self.encoder is not None and len(rows) > k:
            qv = self.encoder.encode([query], "query")[0]
            cosine = self._dense_for(rows) @ qv
            fused = fused + 1.0 / (self.rrf_k + _ranks(cosine))
        order = np.lexsort((rows, -fused))[:k]  # ties broken by corpus order: deterministic
        return [Hit(self.docs[rows[i]], float(fused[i]), float(lexical[i]),
                    None if cosine is None else float(cosine[i])) for i in order]

    def __getstate__(self):
        return {**self.__dict__, "_bm25": None, "_vocab": {}, "_postings": {}, "_dense_all": None, "_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each score, highest first (ties share the order of appearance)."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks
