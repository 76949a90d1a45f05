import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# Read by Ray when it is first imported, whichever test imports it first (test_nli's Ray run comes before
# test_ray): every node binds to 127.0.0.1, never the machine's network interface, and nothing goes to
# Ray's usage statistics. For the whole test process, like the two above.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from verifybench.suite import find_data_dir  # noqa: E402


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def shared_data() -> Path | None:
    """The public benchmarks: $VERIFYBENCH_DATA, else a shared/datasets folder beside the repository."""
    found = os.environ.get("VERIFYBENCH_DATA") or find_data_dir(ROOT)
    return Path(found) if found and Path(found).is_dir() else None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared datasets; a test that needs them is skipped, with the reason, where they are missing."""
    found = shared_data()
    if found is None:
        pytest.skip("the shared datasets are missing: expected ../shared/datasets beside the repository "
                    "or VERIFYBENCH_DATA (see ../shared/datasets/MANIFEST.md)")
    return found


def need_shared(data_dir: Path, *relative: str) -> list[Path]:
    """The named files under the shared datasets; skips the calling test, naming them, if any is missing."""
    paths = [data_dir / r for r in relative]
    missing = [r for r, p in zip(relative, paths) if not p.exists()]
    if missing:
        pytest.skip(f"missing from the shared datasets ({data_dir}): {', '.join(missing)}")
    return paths


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def mlflow_empty_store(tmp_path_factory) -> Path:
    """An empty MLflow SQLite store, made once a session: MLflow's schema migrations take seconds per new
    file, so a test copies this one (`shutil.copyfile`) instead of creating its own."""
    import mlflow

    path = tmp_path_factory.mktemp("mlflow-store") / "empty.db"
    here = os.getcwd()
    os.chdir(path.parent)  # MLflow places the default experiment's artifacts under the current directory
    try:
        mlflow.MlflowClient(f"sqlite:///{path}").search_experiments(max_results=1)
    finally:
        os.chdir(here)
    return path


@pytest.fixture
def fake():
    """Real OpenAI-format HTTP servers on 127.0.0.1 (`helpers.fake_llm.FakeLLM`), each following its script;
    `fake(script, **options)` starts one, and all are closed after the test."""
    from helpers.fake_llm import FakeLLM

    servers = []

    def make(script, **kw):
        s = FakeLLM(script, **kw)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.close()
