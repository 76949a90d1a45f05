"""A disk that tests can fill and free again, for the decision log's failure tests.

Where the machine allows it (root, and mount(8) may mount a tmpfs: CI runs as root), a real
filesystem: a small tmpfs mounted for the test (`SmallFS`), filled with a ballast file until the kernel
says ENOSPC, or with empty files until it has no inode left. Elsewhere, a file-size limit on the
server's process (`FileSizeLimit`: RLIMIT_FSIZE, set from outside with prlimit; `verifybench serve`
ignores SIGXFSZ, so the write fails with EFBIG instead of killing the process). `kind` says which one a
test ran on; `tmpfs_refusal()` says why a tmpfs cannot be had here.
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
from pathlib import Path


def tmpfs_refusal(where: Path) -> str | None:
    """None when a small tmpfs can be mounted at `where` (a test mount is made and taken down), else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        return f"mount -t tmpfs failed: {(r.stderr or r.stdout).strip()}"
    subprocess.run(["umount", str(where)], check=True)
    return None


class SmallFS:
    """A tmpfs of `size` bytes and `inodes` inodes at `where`, mounted until `close()`."""

    kind = "tmpfs"

    def __init__(self, where: Path, size: int = 1 << 20, inodes: int = 64):
        self.dir = where
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},nr_inodes={inodes},mode=755", "tmpfs",
                        str(where)], check=True, capture_output=True)
        self.ballast = where / "ballast"
        self.spare: list[Path] = []

    def fill(self, pid: int | None = None) -> None:
        """Every block taken: writes to the log now fail with ENOSPC."""
        chunk = b"\0" * 4096
        with open(self.ballast, "ab", buffering=0) as f:
            while True:
                try:
                    f.write(chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    return

    def free(self, pid: int | None = None) -> None:
        self.ballast.unlink(missing_ok=True)

    def fill_inodes(self) -> None:
        """Every inode taken: creating the log's next file fails with ENOSPC."""
        while True:
            p = self.dir / f"spare-{len(self.spare)}"
            try:
                p.touch()
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                return
            self.spare.append(p)

    def free_inodes(self) -> None:
        for p in self.spare:
            p.unlink()
        self.spare.clear()

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.dir)], check=False, capture_output=True)


class FileSizeLimit:
    """No tmpfs here: the server process's file-size limit set to what its log files hold now, so the
    next record cannot be written (EFBIG), and lifted again. Inodes cannot be used up this way."""

    kind = "RLIMIT_FSIZE"

    def __init__(self, where: Path):
        self.dir = where
        where.mkdir(parents=True, exist_ok=True)

    def fill(self, pid: int | None = None) -> None:
        assert pid is not None, "a file-size limit is set on the server's process"
        biggest = max((p.stat().st_size for p in self.dir.glob("decisions-*.jsonl")), default=0)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (biggest + 16, resource.RLIM_INFINITY))

    def free(self, pid: int | None = None) -> None:
        assert pid is not None
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def fill_inodes(self) -> None:
        raise NotImplementedError("a file-size limit cannot use up inodes")

    def close(self) -> None:
        pass
