"""The shingles' character tables: written at install, read back identical to a fresh build, refused when stale."""

import unicodedata

import numpy as np

from templater import chartable, shingles


def test_installed_tables_are_this_pythons():
    assert chartable.read_tables(chartable.PACKAGE_FILE) == chartable.build_tables()


def test_tables_match_the_unicode_database():
    token, numeric = shingles._char_tables()
    assert token.shape == numeric.shape == (chartable.UNICODE_SIZE,)
    for cp in [*range(0, 0x3000), 0x0300, 0x0903, 0x20DD, 0x0663, 0x2167, 0x3007, 0xE0100, 0x10FFFF, 0x1D7CE]:
        ch = chr(cp)
        assert token[cp] == (ch.isalnum() or unicodedata.category(ch).startswith("M")), hex(cp)
        assert numeric[cp] == (ch.isalnum() and ch.isnumeric()), hex(cp)
    assert not (numeric & ~token).any()


def test_stale_or_damaged_files_are_ignored(tmp_path):
    path = tmp_path / chartable.FILE_NAME
    chartable.write_tables(path)
    assert chartable.read_tables(path) is not None
    data = path.read_bytes()
    (tmp_path / "short.bin").write_bytes(data[:-1])
    assert chartable.read_tables(tmp_path / "short.bin") is None
    (tmp_path / "other.bin").write_bytes(data.replace(unicodedata.unidata_version.encode(), b"0.0.0", 1))
    assert chartable.read_tables(tmp_path / "other.bin") is None
    assert chartable.read_tables(tmp_path / "missing.bin") is None
    assert not list(tmp_path.glob("*.tmp"))


def test_bit_order_is_code_point_order():
    token, _ = shingles._char_tables()
    assert np.array_equal(np.flatnonzero(token[:128]), [c for c in range(128) if chr(c).isalnum()])
