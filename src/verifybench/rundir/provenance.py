"""Which code produced a run: the git commit of the repository that holds the suite, read once when the
run starts and kept in its manifest (`git`), so `verifybench log` and `history` name the commit the run
was made from, not whatever is checked out when they are called later."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def git_state(folder: str | Path | None) -> dict[str, Any] | None:
    """{"commit": sha, "dirty": bool | None} of the repository holding `folder`; None where there is no
    git or no repository (a run from an unpacked wheel, a notebook in /tmp)."""
    if not folder or not Path(folder).is_dir():
        return None
    try:
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(),
            "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}
