"""The decision log when its disk fails: a full disk, no inode left for the next file, a commit that
hangs, a link planted where the next file goes, a record that is not JSON. The disk cases run on a real
filesystem, a small tmpfs mounted for the test (`helpers.full_disk`); where no tmpfs can be mounted
(not root) they are skipped with the reason, and tests/test_serve_limits.py covers a full disk with a
file-size limit instead."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest

from helpers.full_disk import SmallFS, tmpfs_refusal
from verifybench.formats.decision import DecisionRecord
from verifybench.guard.log import DecisionLog, LogError
from verifybench.loaders.guardlog import read_log


def _record(i: int, size: int = 100, **fields) -> DecisionRecord:
    return DecisionRecord.new(**{"id": f"r{i}", "response": "x" * size, "meta": {"i": i},
                                 "decision": {"request_id": f"r{i}", "checks": []}, **fields})


def _strict_lines(folder: Path) -> list[dict]:
    """Every line of every log file, parsed as strict JSON (no NaN), each ending with a newline."""
    out = []
    for f in sorted(folder.glob("decisions-*.jsonl")):
        data = f.read_bytes()
        assert not data or data.endswith(b"\n"), f"{f.name} ends inside a record"
        for line in data.splitlines():
            if line.strip():
                out.append(json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in the log")))
    return out


def _until(cond, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def small_fs(tmp_path):
    why = tmpfs_refusal(tmp_path / "probe")
    if why:
        pytest.skip(f"no tmpfs for a real full disk here ({why}); test_serve_limits covers it with RLIMIT_FSIZE")
    fs = SmallFS(tmp_path / "disk", size=256 << 10, inodes=16)
    yield fs
    fs.close()


def test_new_log_files_are_created_exclusively_never_through_a_planted_link(tmp_path):
    folder, outside = tmp_path / "log", tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    log = DecisionLog(folder, max_bytes=4096, fsync=False)
    try:
        first = log.seq
        (folder / f"decisions-{os.getpid()}-{first + 1}.jsonl").symlink_to(outside)  # planted at the next name
        planted = folder / f"decisions-{os.getpid()}-{first + 2}.jsonl"
        planted.write_bytes(b'{"planted": true}\n')
        for i in range(30):  # 30 x ~180 bytes: past two rotations
            log.write(_record(i))
        assert outside.read_bytes() == b""  # the link's target got nothing
        assert planted.read_bytes() == b'{"planted": true}\n'
        mine = [p for p in folder.glob("decisions-*.jsonl") if not p.is_symlink() and p != planted]
        assert len(mine) >= 2 and all(p.is_file() for p in mine)
        assert log.seq > first + 2
    finally:
        log.close()
    written = [r for r in _strict_lines(folder) if "planted" not in r]
    assert [r["id"] for r in written] == [f"r{i}" for i in range(30)]


def test_a_full_disk_fails_each_waiting_record_cuts_the_file_back_and_recovers(small_fs):
    log = DecisionLog(small_fs.dir / "log", retry_s=0.05, timeout_ms=5000)
    try:
        assert log.write(_record(0))
        size = log.path.stat().st_size
        small_fs.fill()
        # Records bigger than a page: each write gets part-way before ENOSPC, a torn line unless cut back.
        results: list[BaseException | bool] = []

        def one(i: int) -> None:
            try:
                results.append(log.write(_record(i, size=9000)))
            except LogError as e:
                results.append(e)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(1, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert len(results) == 4 and all(isinstance(r, LogError) for r in results), results
        assert "No space left on device (ENOSPC)" in str(results[0])
        assert not log.ready and log.failures >= 1 and log.error is not None
        assert log.path.stat().st_size == size  # cut back to the last whole record
        small_fs.free()
        assert _until(lambda: log.ready), "the log did not take records again once space was freed"
        assert log.write(_record(5, size=9000))
    finally:
        log.close()
    recs, torn = read_log(small_fs.dir / "log")
    assert not torn and [r.id for r in recs] == ["r0", "r5"]
    assert len(_strict_lines(small_fs.dir / "log")) == 2


def test_no_inode_for_the_next_file_the_writer_survives_and_takes_records_again(small_fs):
    log = DecisionLog(small_fs.dir / "log", max_bytes=4096, retry_s=0.05)
    try:
        small_fs.fill_inodes()
        answered, refused = [], []
        for i in range(40):  # ~180 bytes each: the file passes 4096 bytes and the next cannot be created
            try:
                log.write(_record(i))
                answered.append(f"r{i}")
            except LogError as e:
                refused.append(str(e))
        assert answered and refused and "(ENOSPC)" in refused[-1]
        assert log._thread.is_alive() and not log.ready
        small_fs.free_inodes()
        assert _until(lambda: log.ready)
        assert log.write(_record(99))
    finally:
        log.close()
    recs, torn = read_log(small_fs.dir / "log")
    assert not torn and [r.id for r in recs] == [*answered, "r99"]


def test_fail_open_returns_and_counts_what_it_could_not_write(small_fs):
    log = DecisionLog(small_fs.dir / "log", fail_open=True, retry_s=0.05)
    try:
        small_fs.fill()
        assert log.write(_record(1, size=9000)) is False
        assert log.lost == 1 and not log.ready
    finally:
        small_fs.free()
        log.close()


def test_a_commit_that_hangs_answers_its_caller_within_the_budget_and_the_log_is_not_ready_meanwhile(tmp_path):
    release = threading.Event()
    log = DecisionLog(tmp_path / "log", timeout_ms=200)
    real = log.sync
    log.sync = lambda fd: (release.wait(10), real(fd))  # type: ignore[assignment]
    try:
        with pytest.raises(LogError, match="not written within 200 ms"):
            log.write(_record(1))
        assert not log.ready
        release.set()
        assert _until(lambda: log.ready)
        log.sync = real
        assert log.write(_record(2))
    finally:
        release.set()
        log.close()


def test_a_record_that_is_not_json_is_refused_naming_the_field(tmp_path):
    log = DecisionLog(tmp_path / "log", fsync=False)
    deep: dict = {}
    node = deep
    for _ in range(300):  # past what the serialiser can nest (about 250)
        node["a"] = {}
        node = node["a"]
    try:
        for meta, field, why in (({"x": math.nan}, "meta.x", "nan is not a JSON number"),
                                 ({"x": [1, -math.inf]}, "meta.x.1", "-inf is not a JSON number"),
                                 ({"x\ud800y": 1}, "meta.x\\ud800y", "surrogate"),
                                 ({"x": "a\udc00"}, "meta.x", "surrogate"),
                                 (deep, "meta.a.a", "nested deeper than")):
            with pytest.raises(LogError) as e:
                log.append(_record(0, id="bad", meta=meta))
            assert f"record's {field}" in str(e.value) and why in str(e.value)
        assert log.write(_record(0, id="fine", response="NaN and Infinity are words here", meta={"x": 1.5}))
    finally:
        log.close()
    assert [r["id"] for r in _strict_lines(tmp_path / "log")] == ["fine"]
