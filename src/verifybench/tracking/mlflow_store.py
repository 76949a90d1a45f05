"""Run history in MLflow: one MLflow run per verifybench run directory.

What goes where (docs/tracking.md has the user's view):
- params: what the numbers are reproducible from: suite name, path and hash, dataset hash and loader,
  each verifier's name and config hash, the executor, package versions, the metric settings.
- metrics: `<verifier>/<slice>/<name>`, with slice `all` for every case; names from `slice_values`
  (auroc, auprc, test_f1, threshold, p95_ms, cost_per_1k, ...), the same names `verifybench history`
  takes.
- tags: the run directory's identity (`verifybench.run_key`), git commit, status, threshold sources.
- artifacts: report.html, metrics.json, manifest.json and the policy, when the run has one.

A run directory is logged once per experiment: logging it again finds the MLflow run by its
`verifybench.run_key` tag and updates it (changed metrics, tags and artifacts; params that MLflow
already holds keep their first value, since MLflow params cannot change), and says so.

mlflow is imported inside functions: the CLI starts without it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from verifybench.errors import VerifybenchError
from verifybench.formats import FormatError, Manifest
from verifybench.metrics.summary import OVERALL
from verifybench.rundir import MANIFEST, METRICS, REPORT, read_metrics
from verifybench.rundir.provenance import git_state

RUN_KEY_TAG = "verifybench.run_key"
POLICY_FILE = "policy.yaml"  # api.POLICY: a policy applied to a run is kept beside its results
INSTALL_HINT = "MLflow is not installed: pip install 'verifybench[mlflow]'"
_STATUS = {"complete": "FINISHED", "failed": "FAILED"}


class TrackingError(VerifybenchError):
    """Logging to the tracker failed or was refused; the run directory is untouched."""


# ---------------------------------------------------------------------------------------------------
# The numbers: one flat dict per verifier and slice. Shared with `verifybench history`.

def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)) and math.isfinite(x):
        return float(x)
    return None


def _interval(out: dict[str, float], name: str, ci: Any) -> None:
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        lo, hi = _number(ci[0]), _number(ci[1])
        if lo is not None and hi is not None:
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = lo, hi


def slice_values(m: dict[str, Any]) -> dict[str, float]:
    """The numbers of one verifier on one slice of metrics.json, flat: auroc, auprc (and their 95%
    intervals as `<name>_ci_low/_ci_high`), threshold, test_precision / test_recall / test_f1 (and
    the other test-split rates), p50_ms / p95_ms / p99_ms / mean_ms, cost_per_1k, ece, brier, the
    counts, and any other number or flag at the slice's top level or in its threshold block (a key
    added to metrics.json later is logged under its own name). Missing or undefined values (NaN,
    null) are left out, never written as 0."""
    out: dict[str, float] = {}
    for key, value in m.items():
        if (v := _number(value)) is not None:
            out[key] = v
    for key, ci in (m.get("ci") or {}).items():
        _interval(out, key, ci)
    threshold = m.get("threshold")
    if isinstance(threshold, dict):
        for key, value in threshold.items():
            if (v := _number(value)) is not None:
                out["threshold" if key == "value" else f"threshold_{key}"] = v
    test = m.get("test")
    if isinstance(test, dict):
        for key, value in test.items():
            if (v := _number(value)) is not None:
                out[f"test_{key}"] = v
        for key, ci in (test.get("ci") or {}).items():
            _interval(out, f"test_{key}", ci)
    latency = m.get("latency_ms")
    if isinstance(latency, dict):
        for key in ("p50", "p95", "p99", "mean"):
            if (v := _number(latency.get(key))) is not None:
                out[f"{key}_ms"] = v
    cal = m.get("calibration_error")
    if isinstance(cal, dict):
        for key in ("ece", "brier"):
            if (v := _number(cal.get(key))) is not None:
                out[key] = v
    return out


def verifier_values(entry: dict[str, Any]) -> dict[str, float]:
    """Numbers about a verifier as a whole (they go with its `all` slice): verdicts missing from the
    run, tokens per case, the share of cases whose samples or injected attacks flipped the verdict."""
    out: dict[str, float] = {}
    if (v := _number(entry.get("missing_verdicts"))) is not None:
        out["missing_verdicts"] = v
    for key, value in (entry.get("usage_per_case") or {}).items():
        if (v := _number(value)) is not None:
            out[f"usage_per_case_{key}"] = v
    for key in ("sample_flip_rate", "injection_flip_rate"):
        if isinstance(entry.get(key), dict) and (v := _number(entry[key].get("rate"))) is not None:
            out[key] = v
    return out


def run_values(metrics: dict[str, Any]) -> dict[tuple[str, str], dict[str, float]]:
    """(verifier, slice) -> slice_values, for every verifier and slice of a metrics.json."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for vid, entry in (metrics.get("verifiers") or {}).items():
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("overall"), dict):
            out[(vid, OVERALL)] = {**slice_values(entry["overall"]), **verifier_values(entry)}
        for key, m in (entry.get("slices") or {}).items():
            if isinstance(m, dict) and key != OVERALL:
                out[(vid, key)] = slice_values(m)
    return out


# ---------------------------------------------------------------------------------------------------
# Names MLflow accepts: alphanumerics, _ - . space and / (as a separator); at most 250 characters.

def _segment(name: str) -> str:
    """One part of a metric or param key. A name that had to change gets a short hash of the original,
    so two slices that differ only in a forbidden character stay two metrics."""
    clean = re.sub(r"[^\w.\- ]", "_", str(name))[:80]
    if clean.strip(". ") == "":
        clean = "_" + clean
    if clean != name:
        clean += "-" + hashlib.sha256(str(name).encode()).hexdigest()[:6]
    return clean


def metric_key(verifier: str, slice_name: str, name: str) -> str:
    return f"{_segment(verifier)}/{_segment(slice_name)}/{_segment(name)}"


def metric_rows(metrics: dict[str, Any]) -> dict[str, float]:
    """Every metric logged for a run: `<verifier>/<slice>/<name>` -> value, plus `n_cases`."""
    rows: dict[str, float] = {}
    for (vid, key), values in run_values(metrics).items():
        for name, v in values.items():
            rows[metric_key(vid, key, name)] = v
    if (n := _number(metrics.get("n_cases"))) is not None:
        rows["n_cases"] = n
    return rows


def params_of(manifest: dict[str, Any], metrics: dict[str, Any], has_policy: bool) -> dict[str, str]:
    """What the run's numbers are reproducible from (docs/architecture.md: suite hash, dataset hash,
    verifier config hashes, versions, seed), as MLflow params."""
    suite, data = manifest.get("suite") or {}, manifest.get("dataset") or {}
    p: dict[str, Any] = {
        "suite": suite.get("name"), "suite.path": suite.get("path"), "suite.hash": suite.get("hash"),
        "dataset.hash": data.get("hash"), "dataset.loader": data.get("loader"),
        "dataset.name": (data.get("options") or {}).get("name"),
        "dataset.cases": data.get("total"),
        "dataset.limit": ((suite.get("raw") or {}).get("dataset") or {}).get("limit"),  # not in the hash
        "executor": (manifest.get("executor") or {}).get("name"),
        "metrics.by": metrics.get("by"), "metrics.target": metrics.get("target"),
        "metrics.bootstrap": metrics.get("bootstrap"), "metrics.min_per_class": metrics.get("min_per_class"),
        "metrics.seed": ((suite.get("raw") or {}).get("metrics") or {}).get("seed", 0),
        "policy": POLICY_FILE if has_policy else None,
    }
    for v in manifest.get("verifiers") or []:
        p[f"verifier.{_segment(v['id'])}.name"] = v.get("name")
        p[f"verifier.{_segment(v['id'])}.config_hash"] = v.get("config_hash")
    for pkg, ver in (manifest.get("packages") or {}).items():
        p[f"version.{_segment(pkg)}"] = ver
    return {k: str(v) for k, v in p.items() if v is not None}


def run_key(manifest: dict[str, Any], run_dir: Path) -> str:
    """The identity of a run directory: when it was created, what it ran (suite, data, verifier
    configs) and its folder name. A moved or copied directory keeps it; a new run into the same
    `--out` path gets a new one (another creation time)."""
    ident = [manifest.get("created"), (manifest.get("suite") or {}).get("hash"),
             (manifest.get("dataset") or {}).get("hash"),
             sorted((v.get("id"), v.get("config_hash")) for v in manifest.get("verifiers") or []),
             Path(run_dir).resolve().name]
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:32]


def git_commit(manifest: dict[str, Any]) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository that holds the suite; the run's own record when the manifest
    has one (`git`, written when the run started), else asked of git now (a run made before runs
    recorded it; None where there is no git or no repository)."""
    state = manifest.get("git")
    if not (isinstance(state, dict) and state.get("commit")):
        state = git_state((manifest.get("suite") or {}).get("base_dir"))
    if not state:
        return None, None
    return str(state["commit"]), state.get("dirty")


def tags_of(manifest: dict[str, Any], metrics: dict[str, Any], run_dir: Path) -> dict[str, str]:
    suite = manifest.get("suite") or {}
    t: dict[str, Any] = {
        RUN_KEY_TAG: run_key(manifest, run_dir),
        "verifybench.run_dir": str(Path(run_dir).resolve()),
        "verifybench.status": manifest.get("status"),
        "verifybench.created": manifest.get("created"),
        "mlflow.source.name": suite.get("path") or suite.get("name"),
        "mlflow.note.content": (suite.get("raw") or {}).get("description"),
    }
    if manifest.get("error"):
        t["verifybench.error"] = manifest["error"]
    commit, dirty = git_commit(manifest)
    if commit:
        t["mlflow.source.git.commit"] = commit
        t["verifybench.git_dirty"] = dirty
    for vid, entry in (metrics.get("verifiers") or {}).items():
        threshold = ((entry or {}).get("overall") or {}).get("threshold") or {}
        for key in ("source", "warning"):
            if threshold.get(key):
                t[f"verifybench.threshold_{key}.{_segment(vid)}"] = threshold[key]
    return {k: str(v) for k, v in t.items() if v is not None}


# ---------------------------------------------------------------------------------------------------
# The tracking URI.

def redact(uri: str) -> str:
    """The URI without a password, for messages."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def check_uri(uri: str | None) -> None:
    """Refuse what must not be a tracking URI: a password in it (it would reach manifest.json's argv
    and shell history), or a suite file taken for the URI (`run --mlflow evals/x.yaml`)."""
    if not uri:
        return
    if urlsplit(uri).password is not None:
        raise TrackingError(
            f"--mlflow {redact(uri)}: do not put a password in the tracking URI (it would be written to "
            "the run's manifest.json); set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or "
            "MLFLOW_TRACKING_TOKEN, instead")
    if uri.lower().endswith((".yaml", ".yml")):
        raise TrackingError(
            f"--mlflow {uri}: that is a suite file, not a tracking URI; put the suite first "
            f"(verifybench run {uri} --mlflow [URI]) or write --mlflow=URI")


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise TrackingError(INSTALL_HINT) from None
    return mlflow


def resolve_uri(uri: str | None) -> str:
    """The tracking URI to use: the one given, else MLflow's own choice (MLFLOW_TRACKING_URI, else
    its default: sqlite:///mlflow.db in the current directory, or ./mlruns where that already holds
    a file store)."""
    mlflow = _mlflow()
    return uri or mlflow.get_tracking_uri()


@contextmanager
def _quick_http():
    """Few retries while checking a server before a run: a typo or a server that is down is reported
    in seconds, not after MLflow's minutes of backoff."""
    saved = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = "10"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def preflight(uri: str | None) -> str:
    """Check, before a long run, that MLflow is installed and the tracking store answers; returns the
    URI that will be used."""
    check_uri(uri)
    resolved = resolve_uri(uri)
    from mlflow import MlflowClient

    try:
        with _quick_http():
            MlflowClient(resolved).search_experiments(max_results=1)
    except Exception as e:  # noqa: BLE001 - MLflow raises many kinds; the message is what matters
        raise TrackingError(f"MLflow tracking store {redact(resolved)} cannot be used: {_short(e)}") from None
    return resolved


def _short(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:500]


# ---------------------------------------------------------------------------------------------------
# Logging.

@dataclass
class Logged:
    """Where a run directory went: the MLflow run, its experiment, and what this call changed."""

    run_dir: Path
    run_id: str
    experiment_id: str
    experiment: str
    tracking_uri: str  # without a password
    created: bool  # False: an MLflow run of this run directory existed and was updated
    metrics_logged: int = 0
    kept_params: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (in MLflow, now)
    stale_metrics: list[str] = field(default_factory=list)  # in MLflow, no longer in metrics.json

    @property
    def url(self) -> str | None:
        if self.tracking_uri.startswith(("http://", "https://")):
            return f"{self.tracking_uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{self.run_id}"
        return None

    def summary(self) -> str:
        where = self.url or f"{self.tracking_uri} (to browse: mlflow ui --backend-store-uri {self.tracking_uri})"
        if self.created:
            head = f"MLflow: logged as run {self.run_id} in experiment {self.experiment!r} ({self.metrics_logged} metrics)"
        else:
            head = (f"MLflow: this run directory was logged before, as run {self.run_id} in experiment "
                    f"{self.experiment!r}; updated it ({self.metrics_logged} metrics changed)")
        lines = [f"{head}: {where}"]
        if self.kept_params:
            changed = ", ".join(f"{k} ({a} -> {b})" for k, (a, b) in sorted(self.kept_params.items()))
            lines.append(f"MLflow params cannot change; kept their first values: {changed}")
        if self.stale_metrics:
            lines.append(f"{len(self.stale_metrics)} metrics of the MLflow run are no longer in metrics.json and "
                         f"keep their old values (e.g. {self.stale_metrics[0]})")
        return "\n".join(lines)


def _ms(iso: str | None) -> int | None:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000) if iso else None
    except ValueError:
        return None


def _experiment(client, name: str | None, manifest: dict[str, Any]):
    """The experiment to log to: `name`, else MLFLOW_EXPERIMENT_ID / MLFLOW_EXPERIMENT_NAME, else one
    named after the suite (so runs of one suite sit together and share metric names)."""
    from mlflow.exceptions import MlflowException

    if not name and os.environ.get("MLFLOW_EXPERIMENT_ID"):
        exp = client.get_experiment(os.environ["MLFLOW_EXPERIMENT_ID"])
    else:
        name = name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or (manifest.get("suite") or {}).get("name") or "verifybench"
        exp = client.get_experiment_by_name(name)
        if exp is None:
            try:
                client.create_experiment(name)
            except MlflowException:
                pass  # created meanwhile by another process
            exp = client.get_experiment_by_name(name)
    if exp.lifecycle_stage == "deleted":
        raise TrackingError(f"MLflow experiment {exp.name!r} is deleted; restore it (mlflow experiments restore "
                            f"--experiment-id {exp.experiment_id}) or choose another with --experiment")
    return exp


def load_run_files(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(manifest, metrics) of a finished run, or an error saying what to do."""
    run_dir = Path(run_dir)
    try:
        manifest = Manifest.read(run_dir / MANIFEST)
    except FormatError as e:
        raise TrackingError(str(e)) from None
    if not (run_dir / METRICS).exists():
        raise TrackingError(f"{run_dir / METRICS}: not found; the run is not finished (status "
                            f"{manifest.status!r}): finish it with `verifybench run --resume {run_dir}` "
                            f"or render it with `verifybench report {run_dir}`")
    if manifest.status == "running":
        raise TrackingError(f"{run_dir}: the run is still running, or was killed (manifest status 'running'); "
                            f"finish it with `verifybench run --resume {run_dir}` first")
    try:
        metrics = read_metrics(run_dir)
    except FormatError as e:
        raise TrackingError(str(e)) from None
    # read through their models; the figures below are computed from them as mappings (as written)
    return manifest.model_dump(exclude_unset=True), metrics.model_dump(exclude_unset=True)


def log_run(run_dir: str | Path, tracking_uri: str | None = None, experiment: str | None = None) -> Logged:
    """Log one run directory as one MLflow run (or update the MLflow run it was logged as before).

    Args:
        run_dir: a finished run directory (metrics.json present).
        tracking_uri: where; default MLflow's own (MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).
        experiment: the experiment name; default MLFLOW_EXPERIMENT_NAME, else the suite's name.
    """
    run_dir = Path(run_dir)
    manifest, metrics = load_run_files(run_dir)
    check_uri(tracking_uri)
    uri = resolve_uri(tracking_uri)
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.exceptions import MlflowException

    has_policy = (run_dir / POLICY_FILE).exists()
    params = params_of(manifest, metrics, has_policy)
    tags = tags_of(manifest, metrics, run_dir)
    values = metric_rows(metrics)
    try:
        client = MlflowClient(uri)
        exp = _experiment(client, experiment, manifest)
        key = tags[RUN_KEY_TAG]
        with _one_logger(key, uri):
            return _log_locked(client, exp, key, run_dir, manifest, params, tags, values, uri, Metric, Param, RunTag)
    except MlflowException as e:
        raise TrackingError(f"MLflow ({redact(uri)}): {_short(e)}") from None


@contextmanager
def _one_logger(key: str, uri: str, wait_s: float = 300.0):
    """One `log` of a run directory into one store at a time on this machine (two at once would both find
    no MLflow run and create two): an exclusive lock on a file named after the run key and the store,
    in the temporary folder (the run directory may be read-only). Logs from two machines are caught
    after the fact by `_log_locked`'s check."""
    import fcntl
    import tempfile

    name = hashlib.sha256(f"{key} {uri}".encode()).hexdigest()[:24]
    path = Path(tempfile.gettempdir()) / f"verifybench-log-{name}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        yield  # no lock to be had here: the check after creating the run still holds
        return
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TrackingError(f"another `verifybench log` of this run directory has held {path} for "
                                        f"{wait_s:.0f} s; try again when it is done") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _runs_of(client, exp, key: str) -> list:
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.`{RUN_KEY_TAG}` = '{key}'", max_results=5)
    return sorted(runs, key=lambda r: (r.info.start_time or 0, r.info.run_id))


def _log_locked(client, exp, key, run_dir, manifest, params, tags, values, uri, Metric, Param, RunTag) -> Logged:
    found = _runs_of(client, exp, key)
    if len(found) > 1:
        raise TrackingError(f"experiment {exp.name!r} holds {len(found)} MLflow runs of {run_dir} "
                            f"({', '.join(r.info.run_id for r in found)}); delete the extra ones")
    result = Logged(run_dir, "", exp.experiment_id, exp.name, redact(uri), created=not found)
    if found:
        run = found[0]
        old_params, old_metrics = run.data.params, run.data.metrics
        result.kept_params = {k: (old_params[k], v) for k, v in params.items()
                              if k in old_params and old_params[k] != v}
        params = {k: v for k, v in params.items() if k not in old_params}
        result.stale_metrics = sorted(k for k in old_metrics if k not in values)
        values = {k: v for k, v in values.items() if old_metrics.get(k) != v}
    else:
        run = client.create_run(exp.experiment_id, start_time=_ms(manifest.get("created")),
                                run_name=run_dir.resolve().name, tags={RUN_KEY_TAG: key})
        # A log from another machine may have created one at the same moment: the earliest stays, and
        # a later one deletes its own, so the run directory is never left with two.
        same = _runs_of(client, exp, key)
        if len(same) > 1 and same[0].info.run_id != run.info.run_id:
            client.delete_run(run.info.run_id)
            run, result.created = same[0], False
    result.run_id = run_id = run.info.run_id
    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in values.items()],
                     params=[Param(k, v) for k, v in params.items()],
                     tags=[RunTag(k, v) for k, v in tags.items()])
    result.metrics_logged = len(values)
    for name in (REPORT, METRICS, MANIFEST, POLICY_FILE):
        if (run_dir / name).exists():
            client.log_artifact(run_id, str(run_dir / name))
    client.set_terminated(run_id, _STATUS.get(manifest.get("status"), "FINISHED"),
                          end_time=_ms(manifest.get("updated")))
    return result


# The command's name (`verifybench log`) for the call behind it.
log = log_run


def check_mlflow(tracking_uri: str | None = None) -> str:
    """Before a long run: MLflow importable, the URI sane, the store answering; returns the URI used."""
    return preflight(tracking_uri)
