"""Which code points are token characters (alphanumeric or a mark) and which are numeric: the tables the shingles'
tokenizer reads, as bit sets over all 1,114,112 code points.

Asking Python's Unicode database about every code point takes 0.3-0.6 s, too long for every start, so
``pip install`` writes the tables into the package (setup.py calls ``write_tables``) and a process reads them in
about a millisecond. The file names the Unicode version it was made from; under a Python with another Unicode
database (or where the file is missing or damaged) the tables are built afresh, so they always describe the
running Python. Plain Python, no numpy: setup.py loads this file on its own at build time.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

UNICODE_SIZE = 0x110000
TABLE_BYTES = UNICODE_SIZE // 8  # one bit per code point: code point c is bit (c & 7) of byte (c >> 3)
FORMAT_VERSION = 1  # bump when what the tables mean changes: files of other versions are ignored
FILE_NAME = "char_tables.bin"
PACKAGE_FILE = Path(__file__).resolve().parent / "data" / FILE_NAME


def build_tables() -> tuple[bytes, bytes]:
    """(token bits, numeric bits): a code point is a token character when ``str.isalnum`` or its category is a
    mark (M*); numeric when alphanumeric and ``str.isnumeric``."""
    token, numeric = bytearray(TABLE_BYTES), bytearray(TABLE_BYTES)
    for cp in range(UNICODE_SIZE):
        ch = chr(cp)
        if ch.isalnum():
            token[cp >> 3] |= 1 << (cp & 7)
            if ch.isnumeric():
                numeric[cp >> 3] |= 1 << (cp & 7)
        elif unicodedata.category(ch)[0] == "M":
            token[cp >> 3] |= 1 << (cp & 7)
    return bytes(token), bytes(numeric)


def header() -> bytes:
    """The first line of a tables file: the format and the Unicode version of the database that made it."""
    return f"templater char tables {FORMAT_VERSION} unicode {unicodedata.unidata_version}\n".encode("ascii")


def write_tables(path: str | Path) -> None:
    """Build the tables and write them to ``path`` (atomically: a reader never sees half a file)."""
    token, numeric = build_tables()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(header() + token + numeric)
    os.replace(partial, path)


def read_tables(path: str | Path) -> tuple[bytes, bytes] | None:
    """The tables stored in ``path``, or None when it is missing, damaged or made from another Unicode version."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    head = header()
    if not data.startswith(head) or len(data) != len(head) + 2 * TABLE_BYTES:
        return None
    return data[len(head):len(head) + TABLE_BYTES], data[len(head) + TABLE_BYTES:]


def load_tables() -> tuple[bytes, bytes]:
    """The tables written at install when they fit this Python's Unicode database, else built now."""
    return read_tables(PACKAGE_FILE) or build_tables()
