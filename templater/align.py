"""Longest common subsequence of block vectors, exact and bit-parallel.

The rows of the LCS table are kept as Python integers used as bit vectors (Allison-Dix / Hyyro): one row costs a
handful of big-integer operations over len(a) bits, so aligning two pages of a few hundred blocks takes well
under a millisecond, and the matched positions are recovered from the stored rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def match_masks(a: Sequence[int]) -> dict[int, int]:
    masks: dict[int, int] = {}
    for i, symbol in enumerate(a):
        masks[symbol] = masks.get(symbol, 0) | (1 << i)
    return masks


def _rows(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """Bit rows V_0..V_n: bit i of V_j is 0 where the LCS table row j steps up at column i."""
    full = (1 << len(a)) - 1
    masks = match_masks(a)
    row = full
    rows = [row]
    for symbol in b:
        matches = masks.get(symbol)
        if matches:
            u = row & matches
            row = ((row + u) | (row - u)) & full
        rows.append(row)
    return rows


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common subsequence of two integer sequences."""
    if len(a) == 0 or len(b) == 0:
        return 0
    return lcs_length_masks(match_masks(a), len(a), b)


def lcs_length_masks(masks: dict[int, int], size: int, b: Sequence[int]) -> int:
    """lcs_length(a, b) from a's match masks (match_masks(a)) and length, for an ``a`` aligned against many b."""
    if size == 0:
        return 0
    full = (1 << size) - 1
    row = full
    for matches in filter(None, map(masks.get, b)):  # symbols of b that a holds: the others leave the row as is
        u = row & matches
        row = ((row + u) | (row - u)) & full
    return size - row.bit_count()


def lcs_pairs(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    """Matched index pairs (i in a, j in b) of one longest common subsequence, in increasing order."""
    a = _as_list(a)
    b = _as_list(b)
    if not a or not b:
        return []
    rows = _rows(a, b)

    def table(j: int, i: int) -> int:  # LCS length of a[:i] and b[:j]
        return i - (rows[j] & ((1 << i) - 1)).bit_count()

    pairs = []
    i, j = len(a), len(b)
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1] and table(j, i) == table(j - 1, i - 1) + 1:
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
        elif table(j - 1, i) >= table(j, i - 1):
            j -= 1
        else:
            i -= 1
    pairs.reverse()
    return pairs


def lcs(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """One longest common subsequence of a and b."""
    a = _as_list(a)
    return [a[i] for i, _ in lcs_pairs(a, b)]


def _as_list(seq: Sequence[int]) -> list[int]:
    if isinstance(seq, np.ndarray):
        return seq.tolist()
    return list(seq)
