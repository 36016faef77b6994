"""The dev-corpus suites for benchmarks: cut by ../shared/eval/suites.py into a temp folder when missing."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def suite_file(name: str) -> Path:
    """Path of the `sites`, `single` or `all` suite file."""
    out = Path(tempfile.gettempdir()) / "templater-suites"
    if not (out / f"{name}.jsonl.gz").exists():
        subprocess.run([sys.executable, str(SHARED / "eval" / "suites.py"), str(SHARED / "corpus"), str(out)],
                       check=True, stdout=subprocess.DEVNULL)
    return out / f"{name}.jsonl.gz"
