#!/usr/bin/env python3
"""Check that `templater train` remakes the shipped weights byte for byte from the rebuilt training set.

    python bench/check_shipped_weights.py [SET_DIR] [--skip-train]

Rebuilds the training set with bench/build_training_set.py into SET_DIR with the shipped weights' arguments
(`--docs-pages 10 --generated 8`; default SET_DIR: a temp folder; an existing SET_DIR's train.jsonl.gz is reused), checks that its pages are the ones the shipped weights record (the SHA-256
in their info), then runs the documented command as a process:

    templater train SET_DIR/train.jsonl.gz --output OUT.npz --seed 7

and compares OUT.npz with templater/data/ann_weights.npz byte for byte. Exit 0 when both agree. Training takes
several minutes (about 8 on an idle core).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from templater import fallback, training  # noqa: E402

SHIPPED = REPO / "templater" / "data" / fallback.WEIGHTS_FILE
SHIPPED_SET_ARGS = ["--docs-pages", "10", "--generated", "8"]  # the set the shipped weights were trained on


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set_dir", type=Path, nargs="?", default=None)
    parser.add_argument("--skip-train", action="store_true", help="check the data's digest only")
    args = parser.parse_args(argv)
    set_dir = args.set_dir or Path(tempfile.mkdtemp(prefix="templater-training-set-"))
    data = set_dir / "train.jsonl.gz"
    if not data.exists():
        subprocess.run([sys.executable, str(REPO / "bench" / "build_training_set.py"), str(set_dir),
                        *SHIPPED_SET_ARGS], check=True)
    recorded = json.loads(fallback.default_weights().info)
    with gzip.open(data, "rt", encoding="utf-8") as handle:
        pages = [(seg, gold) for seg, gold in training.iter_labelled(json.loads(line) for line in handle)
                 if seg.blocks]
    found = training.training_data(pages)
    print(f"training set {data}: {len(pages)} pages, sha256 {found['data_sha256']}, sources {found['sources']}")
    print(f"shipped weights record: {recorded.get('pages')} pages, sha256 {recorded.get('data_sha256')}")
    if found["data_sha256"] != recorded.get("data_sha256"):
        print("MISMATCH: the rebuilt training set is not the one the shipped weights were trained on")
        return 1
    if args.skip_train:
        return 0
    out = set_dir / "retrained.npz"
    command = [str(Path(sys.executable).with_name("templater")), "train", str(data), "--output", str(out),
               "--seed", str(recorded["seed"]), "--quiet"]
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, check=True)
    same = out.read_bytes() == SHIPPED.read_bytes()
    print(("identical to " if same else "DIFFERENT from ") + str(SHIPPED))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
