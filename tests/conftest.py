import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("TEMPLATER_SHARED", ROOT.parent / "shared"))
SAMPLES = ROOT / "samples"


def shared_corpus() -> Path:
    corpus = SHARED / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/corpus is absent (a user's clone has none)")
    return corpus
