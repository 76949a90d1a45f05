"""The guard's HTTP app as a Ray Serve deployment (the `ray` extra), for teams that already run Ray.

The same FastAPI app as `verifybench serve` (`service.create_app`), behind Serve's HTTP proxy instead
of uvicorn: Serve wraps it with `serve.ingress` and runs one copy per replica. Each replica builds its
own guard in its constructor, so its models are loaded (and the config hashes checked) before Serve
marks it running and routes to it; its `check_health` fails if the guard is not ready. Each replica is
its own process and writes its own decision-log files (`decisions-<pid>-<seq>.jsonl`), as uvicorn's
workers do, so a log folder shared by replicas on one disk never has two writers on one file.

    serve run verifybench.guard.ray_serve:build guard=guard.yaml log_dir=/var/log/guard num_replicas=2
    verifybench serve guard.yaml --ray [--replicas N] [--ray-address auto]

Ray is imported inside the functions that need it (the package never pays for it otherwise).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from verifybench.errors import VerifybenchError
from verifybench.guard.core import Guard
from verifybench.guard.service import MAX_BODY, TOKEN_ENV, create_app
from verifybench.guard.spec import served_log_dir

APP_NAME = "verifybench-guard"
# The app a replica's constructor built, handed to Serve's ingress builder, which Serve calls right
# after the constructor in the same (replica) process.
_built: list[Any] = []
_lock = threading.Lock()


class GuardReplica:
    """One Serve replica: a guard built before the replica takes traffic, and the service's app on it."""

    def __init__(self, guard: str, log_dir: str | None = None, max_body: int = MAX_BODY,
                 token_env: str = TOKEN_ENV, allow_code: list[str] | None = None):
        # loads the models and checks the config hashes, or raises
        self.guard = Guard(guard, log_dir=served_log_dir(guard, log_dir), allow_code=allow_code or ())
        with _lock:
            _built.append(create_app(self.guard, max_body=max_body, token_env=token_env))

    def check_health(self) -> None:
        if not self.guard.ready:
            raise RuntimeError("the guard is not ready")

    def __del__(self) -> None:
        guard = getattr(self, "guard", None)
        if guard is not None:
            guard.close()


def _replica_app() -> Any:
    with _lock:
        return _built.pop()


def _import_serve() -> Any:
    # Nothing goes to Ray's usage statistics unless the operator asks for it.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        from ray import serve
    except ImportError:
        raise VerifybenchError("the guard on Ray Serve needs Ray Serve: pip install 'verifybench[ray]'") from None
    return serve


def deployment(**options: Any) -> Any:
    """The Serve deployment (`GuardReplica` behind the service's app); `options` go to
    `serve.deployment` (num_replicas, ray_actor_options, health_check_period_s, ...)."""
    serve = _import_serve()
    return serve.deployment(name="guard", **options)(serve.ingress(_replica_app)(GuardReplica))


def application(guard: str | Path, log_dir: str | Path | None = None, num_replicas: int = 1,
                max_body: int = MAX_BODY, token_env: str = TOKEN_ENV, allow_code: Iterable[str] = (),
                **options: Any) -> Any:
    """A bound Serve application for `serve.run`. Paths are made absolute here: a replica's working
    directory is Ray's, not the caller's. The bearer token is read from each replica's own environment
    (a local Ray's workers inherit the driver's; on a cluster, the nodes'), never passed through Ray,
    whose runtime_env is stored and shown in its dashboard. `allow_code`: see `Guard`."""
    from verifybench.guard.load import read_guard

    allow = [str(a) for a in allow_code]
    read_guard(guard, allow)  # a bad file stops here, not in each replica
    folder = served_log_dir(guard, log_dir)  # resolved here: a replica's working directory is Ray's
    return deployment(num_replicas=num_replicas, **options).bind(
        str(Path(guard).resolve()), None if folder is False else str(Path(folder).resolve()), max_body, token_env,
        allow)


def build(args: dict[str, str]) -> Any:
    """The application builder for `serve run verifybench.guard.ray_serve:build guard=FILE [log_dir=DIR]
    [num_replicas=N] [max_body=BYTES] [token_env=NAME] [allow_code=NAME,NAME]`."""
    known = {"guard", "log_dir", "num_replicas", "max_body", "token_env", "allow_code"}
    unknown = sorted(set(args) - known)
    if unknown or "guard" not in args:
        raise VerifybenchError(f"verifybench.guard.ray_serve:build takes guard=FILE and optionally "
                               f"{', '.join(sorted(known - {'guard'}))}; "
                               + (f"unknown: {', '.join(unknown)}" if unknown else "guard= is missing"))
    return application(args["guard"], log_dir=args.get("log_dir"), num_replicas=int(args.get("num_replicas", 1)),
                       max_body=int(args.get("max_body", MAX_BODY)), token_env=args.get("token_env", TOKEN_ENV),
                       allow_code=[a for a in str(args.get("allow_code", "")).split(",") if a])


def run(guard: str | Path, host: str = "127.0.0.1", port: int = 8080, log_dir: str | Path | None = None,
        replicas: int = 1, address: str | None = None, max_body: int = MAX_BODY, token_env: str = TOKEN_ENV,
        block: bool = True, allow_code: Iterable[str] = ()) -> Any:
    """Deploy the guard on Ray Serve, its HTTP proxy on host:port, and (with `block`) wait for SIGINT or
    SIGTERM, then take the application down. `address`: a running cluster (`auto`, `HOST:PORT`,
    `ray://...`); None starts a private local Ray on 127.0.0.1 (or uses the one this process is in)."""
    if address is None:
        # Every server of a private instance binds to 127.0.0.1, not the machine's interfaces; Ray reads
        # this once, when it is first imported (`_node_ip_address` alone leaves its gRPC ports on all).
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    serve = _import_serve()
    import ray

    app = application(guard, log_dir=log_dir, num_replicas=replicas, max_body=max_body, token_env=token_env,
                      allow_code=allow_code)
    if not ray.is_initialized():
        if address is None:
            ray.init(address="local", include_dashboard=False, logging_level=logging.WARNING,
                     _node_ip_address="127.0.0.1")
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    # As on uvicorn: warnings and errors, no access log (the decision log has every request).
    quiet = {"log_level": "WARNING", "enable_access_log": False}
    serve.start(http_options={"host": host, "port": port}, logging_config=quiet)
    handle = serve.run(app, name=APP_NAME, route_prefix="/", logging_config=quiet)
    if not block:
        return handle
    import signal

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"the guard is served by Ray Serve at http://{host}:{port} ({replicas} replica(s)); "
          "SIGINT or SIGTERM stops it", flush=True)
    try:
        stop.wait()
    finally:
        serve.delete(APP_NAME)
    return None
