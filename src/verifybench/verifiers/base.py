"""The verifier interface: a named, configured object that scores a batch of cases.

The protocol, enforced here once for every verifier:
- `verify` (or, for a `CaseVerifier`, `score_case`) is abstract: a class without it cannot be built,
  so a plugin that forgot it fails when the suite is built, not as a run of error verdicts.
- Options are a pydantic model that forbids unknown keys. Fields declared with `operational(...)` do
  not change any score (where a cache lives, threads, timeouts, retries, replay-only): they stay out of
  `config` and so out of the config hash, and a run resumes or compares across machines whatever their
  values.
- An option may read an environment variable (`base_url: "http://user:${PASSWORD}@host/v1"`): it is
  read here, when the verifier is built, the value registered for scrubbing; `config` and the config
  hash hold the option as written (`${PASSWORD}`, never the value; see `verifybench._util.envvars`).
- Verifiers are plain picklable objects: heavy parts (models, API clients, knowledge graphs) are built
  on first use with `_build_once`, never in `__init__`, and the attributes named in `lazy` are left out
  when the object is pickled, so it can be shipped to another process or a cluster worker and give
  identical results.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifybench._util.envvars import as_written, expand, names_back
from verifybench.cases import Case, Verdict
from verifybench.errors import SuiteError

T = TypeVar("T")

# The flag `operational` sets on a field (visible in the options' JSON schema too).
AFFECTS_SCORES = "affects_scores"


def default_cache(kind: str) -> str:
    """Where a verifier keeps `kind` of cache by default: $VERIFYBENCH_CACHE, else the XDG cache folder."""
    base = os.environ.get("VERIFYBENCH_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "verifybench")
    return str(Path(base).expanduser() / kind)


def operational(default: Any = ..., **kwargs: Any) -> Any:
    """A pydantic `Field` for an option that does not change any score (a cache folder, a thread count, a
    timeout, a retry count, replay-only): the base class leaves it out of the config hash. Takes the
    same arguments as `Field` (`default_factory`, `ge`, `description`, ...)."""
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra[AFFECTS_SCORES] = False
    if "default_factory" in kwargs:
        return Field(json_schema_extra=extra, **kwargs)
    return Field(default, json_schema_extra=extra, **kwargs)


def is_operational(field: Any) -> bool:
    extra = getattr(field, "json_schema_extra", None)
    return isinstance(extra, dict) and extra.get(AFFECTS_SCORES) is False


def _unhashed(value: Any) -> Any:
    """pydantic's `exclude` argument for the operational fields of `value`, at any depth (None: nothing)."""
    if isinstance(value, BaseModel):
        out: dict[Any, Any] = {}
        for name, field in type(value).model_fields.items():
            sub = True if is_operational(field) else _unhashed(getattr(value, name))
            if sub:
                out[name] = sub
        return out or None
    if isinstance(value, (list, tuple, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        out = {k: sub for k, v in items if (sub := _unhashed(v))}
        return out or None
    return None


def scored_options(options: BaseModel) -> dict[str, Any]:
    """The options that can change a score, as JSON: what a config hash is made of."""
    return options.model_dump(mode="json", exclude=_unhashed(options))


# Above this size a file enters a config hash by name and size only: hashing gigabytes of facts at
# every manifest write would cost more than the check is worth.
CONTENT_HASH_MAX_BYTES = 256 << 20


def _located(value: Any) -> Any:
    """`value` with every absolute path of an existing file or folder replaced by its name and a
    content digest (see `Verifier.config_hash`)."""
    if isinstance(value, dict):
        return {k: _located(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_located(v) for v in value]
    if isinstance(value, str) and os.path.isabs(value) and os.path.exists(value):
        path = Path(value)
        return {"name": path.name, "content": _content_digest(path)}
    return value


def _hashed(config: Any, used: Any) -> Any:
    """`config` (as written) as it enters the config hash: a string that names a variable enters as
    written, unless the value used (`used`, the same place in the config as used) is a local file or
    folder, which enters by its name and content as any other path does."""
    if isinstance(config, dict):
        u = used if isinstance(used, dict) else {}
        return {k: _hashed(v, u.get(k)) for k, v in config.items()}
    if isinstance(config, list):
        items = used if isinstance(used, list) and len(used) == len(config) else [None] * len(config)
        return [_hashed(v, x) for v, x in zip(config, items)]
    if isinstance(config, str) and config != used and isinstance(used, str) and os.path.isabs(used) \
            and os.path.exists(used):
        return _located(used)
    return _located(config)


def _content_digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0")
        size = f.stat().st_size
        if size > CONTENT_HASH_MAX_BYTES:
            h.update(f"size={size}".encode())
            continue
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


class ChosenCode(NamedTuple):
    """Code an option chooses that the installation does not ship: the option's `key` (a field path
    under the verifier's options, or `name`), the module or folder it would import or run (`target`,
    what an operator's allow-list names), and `what` running it means, in words."""

    key: str
    target: str
    what: str


class Requirement(NamedTuple):
    """A module a verifier's options need that an optional extra installs: its import name (`module`,
    looked up with `importlib.util.find_spec`, never imported), the option that needs it (`why`, e.g.
    `backend: openai`), and the command that installs it (`install`)."""

    module: str
    why: str
    install: str


def extra(name: str) -> str:
    """The command that installs verifybench's optional extra `name`."""
    return f"pip install 'verifybench[{name}]'"


def missing(requirements: list[Requirement]) -> list[Requirement]:
    """The requirements whose module this installation cannot import (found without importing it)."""
    from importlib.util import find_spec

    out = []
    for r in requirements:
        try:
            found = find_spec(r.module) is not None
        except ModuleNotFoundError:  # `a.b` whose package `a` is missing
            found = False
        except ValueError:  # loaded already, without a spec
            found = True
        if not found:
            out.append(r)
    return out


def _register(read: dict[str, str]) -> None:
    """Register the values options read from the environment with the LLM layer's scrubber."""
    if read:
        from verifybench.verifiers.llm.scrub import register_secret

        for value in read.values():
            register_secret(value)


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Verifier(ABC):
    """Base class. Subclasses set `name`, `description`, an options model `Options`, and `verify`."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    # True when `score` is a probability of "hallucinated": the metrics then report its calibration.
    probabilistic: bool = False  # a class default; a verifier may set it per instance from its options
    # True when the verifier loads no model and holds no client: a cluster executor can then run it as
    # plain tasks instead of a pool of long-lived workers that each load the model once.
    stateless: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = NoOptions
    # Attributes holding heavy parts built on first use (a model, an API client, a knowledge graph):
    # None until `_build_once` fills them, and None again in a pickled copy, which builds its own.
    lazy: ClassVar[tuple[str, ...]] = ()
    # How many times the runner scores each case with this verifier (the suite entry's generic `repeats`,
    # set by the runner; see `verifybench.executors.repeats`). Not an option: the verifier is the same.
    repeats: int = 1
    # The options as given when one of them read an environment variable (None: none did), and the values
    # read, by name (registered for scrubbing; never part of `config`).
    _written: dict[str, Any] | None = None
    _read: dict[str, str] = {}  # replaced per instance, never changed in place

    def __init__(self, id: str | None = None, **options: Any) -> None:
        self.id = id or self.name
        # The run directory, once a runner has bound this verifier to a run (`bind_run`): where a verifier
        # may write files of its own (an audit log, an escalation queue). None outside a run.
        self.run_dir: Path | None = None
        self._lock = threading.RLock()
        for attr in self._lazy_attributes():
            setattr(self, attr, None)
        expanded, read = expand(options, f"verifier {self.id!r} ({self.name})")
        self._written = dict(options) if read else None  # what `config` shows and hashes
        self._read = read
        _register(read)
        try:
            # Any: each subclass reads its own Options fields (annotate `options: MyOptions` to check them)
            self.options: Any = self.Options(**expanded)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise SuiteError(f"verifier {self.id!r} ({self.name}): option {field!r}: {err['msg']}") from None

    @classmethod
    def stated_thresholds(cls, options: dict[str, Any]) -> dict[str, float]:
        """Score thresholds its options state on the verifier's own scale (anchors' `min_cosine`), by slice
        ("all": the whole set and every slice not named), from the options as a suite writes them: the
        metrics apply them as given thresholds instead of fitting. None by default; a bad value raises
        `SuiteError` naming the option."""
        return {}

    @property
    def config(self) -> dict:
        """The verifier's name and every option that can change a score (operational ones left out), an
        option that read an environment variable as written (`${PASSWORD}`)."""
        return self._as_written({"name": self.name, **scored_options(self.options)})

    def options_as_written(self) -> dict[str, Any]:
        """Every option (as JSON), one that read an environment variable as written: what a suite file
        written for this verifier may hold."""
        return self._as_written(self.options.model_dump(mode="json"))

    def _as_written(self, used: dict[str, Any]) -> dict[str, Any]:
        if self._written is None:
            return used
        from verifybench.verifiers.llm.scrub import MIN_SECRET_CHARS

        return names_back(as_written(used, {"name": self.name, **self._written}), self._read, MIN_SECRET_CHARS)

    @property
    def config_hash(self) -> str:
        """Stable over runs and machines: identical options give identical hashes. An option naming a
        local file or folder enters by its name and content, not by where it lies, so a CI clone or a
        colleague's checkout hashes the same, and an edited prompt template or facts file does not. An
        option that read an environment variable enters as written (`${PASSWORD}`), never its value."""
        config = self.config
        hashed = _located(config) if self._written is None else _hashed(
            config, {"name": self.name, **scored_options(self.options)})
        blob = json.dumps(hashed, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def chosen_code(cls, options: Any) -> list[ChosenCode]:
        """The code these options (an `Options` object) would import or run that the installation does not
        ship: a policy or a guard file that holds such options is refused unless the operator allows it
        (docs/trust.md). A verifier with an option that loads code (a model's own Python, a rules module
        from a folder) lists it here; the default is none."""
        return []

    @classmethod
    def requirements(cls, options: Any) -> list[Requirement]:
        """The modules of an optional extra these options (an `Options` object) need: a run checks them
        before it scores a case, so a missing extra stops it naming the install command instead of giving
        every case an error verdict. The default is none (the core installation has everything)."""
        return []

    @abstractmethod
    def verify(self, batch: list[Case]) -> list[Verdict]:
        """One verdict per case, in the order of `batch`."""

    def error_verdict(self, case: Case, error: BaseException) -> Verdict:
        """`case`'s error verdict for `error`: its type and message, scrubbed of any credential."""
        from verifybench.verifiers.llm.scrub import describe

        return Verdict(case_id=case.id, verifier=self.id, error=describe(error))

    def for_repeat(self, repeat: int) -> Verifier:
        """The verifier that scores repeat `repeat` (0, 1, ...) of a case scored `repeats` times. The default
        is this object: one that draws fresh randomness on each call gives fresh samples as it is, and a
        deterministic one gives the same score each time (a spread of 0). A verifier whose randomness is
        seeded (a judge's seed and cache key) returns a copy that draws other samples for each repeat,
        repeat 0 being the verifier as configured."""
        return self

    # --- heavy parts, built once, never pickled ------------------------------------------------------

    @classmethod
    def _lazy_attributes(cls) -> set[str]:
        return {attr for klass in cls.__mro__ for attr in vars(klass).get("lazy", ())}

    def _build_once(self, attr: str, build: Callable[[], T]) -> T:
        """`self.<attr>`, built by `build()` on first use; threads that ask meanwhile wait for it."""
        value = getattr(self, attr)
        if value is None:
            with self._lock:
                value = getattr(self, attr)
                if value is None:
                    value = build()
                    setattr(self, attr, value)
        return value

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        for attr in self._lazy_attributes():
            state[attr] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        _register(self._read)  # a worker process scrubs what this verifier read, as the parent does

    def bind_run(self, run_dir: Path) -> None:
        """Called by the runner before the first batch. On a cluster the bound verifier is what ships to
        the workers, so the path must be one they can write to (a shared file system)."""
        self.run_dir = Path(run_dir)

    def run_notes(self, case_ids: set[str]) -> list[str]:
        """Optional hook: what the report should say about the run as a whole once every case id of it is
        known (say, a predictions file's ids that match no case). The default says nothing, and a run's
        finish builds a verifier for its notes only when its class overrides this."""
        return []

    def __repr__(self) -> str:
        if self._written is None:
            return f"{type(self).__name__}(id={self.id!r}, {self.options!r})"
        shown = ", ".join(f"{k}={v!r}" for k, v in self.options_as_written().items())  # `${VAR}`, not its value
        return f"{type(self).__name__}(id={self.id!r}, {type(self.options).__name__}({shown}))"


class CaseVerifier(Verifier):
    """A verifier that scores one case at a time. A case that raises becomes that case's error verdict;
    each verdict carries the time its own case took."""

    @abstractmethod
    def score_case(self, case: Case) -> float | Verdict:
        """The case's score (higher = more likely hallucinated), or its whole verdict."""

    def verify(self, batch: list[Case]) -> list[Verdict]:
        out = []
        for case in batch:
            start = time.perf_counter()
            try:
                result = self.score_case(case)
            except Exception as e:  # noqa: BLE001 - one case's failure must not lose the batch
                verdict = self.error_verdict(case, e)
            else:
                if isinstance(result, Verdict):
                    verdict = result
                else:
                    verdict = Verdict(case_id=case.id, verifier=self.id, score=float(result))
            verdict.latency_ms = (time.perf_counter() - start) * 1000.0
            out.append(verdict)
        return out
