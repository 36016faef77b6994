"""Check that lean_markup leaves the parsed tree as the page's own bytes give it, once parse.py strips its elements.

    python bench/check_lean_markup.py INPUT... (JSON Lines, gzipped or not, with an "html" field: e.g. the all suite)

For every page: the bytes parse.py hands libxml2 (``parse.clean_text``), parsed as they are and as
``parse.lean_markup`` leaves them, each tree stripped of config.DROP_TAGS as ``parse._parse_clean`` strips it, and
the two serialised trees compared. Prints the pages, the pages whose trees differ (with their id or URL) and the
share of bytes lean_markup left out; exits 1 on any difference. Where lean_markup is off (no C extension, or another
libxml2 than the one it follows) the trees are the same by construction and it says so.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lxml import etree  # noqa: E402

from templater import config, parse  # noqa: E402


def records(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def stripped_tree(data: bytes) -> bytes | None:
    """The tree of ``data`` as libxml2 builds it, with config.DROP_TAGS stripped, serialised."""
    root = parse._parse(data)
    if root is None:
        return None
    etree.strip_elements(root, *config.DROP_TAGS, with_tail=False)
    return etree.tostring(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    args = parser.parse_args()
    pages = differing = left_out = total = 0
    for path in args.inputs:
        for record in records(path):
            data = parse.clean_text(record["html"])
            lean = parse.lean_markup(data)
            pages += 1
            total += len(data)
            left_out += len(data) - len(lean)
            if stripped_tree(lean) != stripped_tree(data):
                differing += 1
                print("differs:", record.get("id") or record.get("url"))
    print(f"pages {pages}  differing {differing}  bytes left out {left_out / max(total, 1):.3f}"
          + ("" if parse._LEAN else "  (lean_markup is off here: the page's own bytes are parsed)"))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
