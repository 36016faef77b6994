from hypothesis import given, settings
from hypothesis import strategies as st

from templater.align import lcs, lcs_length, lcs_pairs

seqs = st.lists(st.integers(min_value=0, max_value=6), max_size=60)


def is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def reference_lcs_length(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@given(seqs, seqs)
@settings(max_examples=300)
def test_lcs_is_a_common_subsequence_of_optimal_length(a, b):
    result = lcs(a, b)
    assert is_subsequence(result, a)
    assert is_subsequence(result, b)
    assert len(result) == lcs_length(a, b) == reference_lcs_length(a, b)


@given(seqs, seqs)
def test_lcs_length_is_symmetric(a, b):
    assert lcs_length(a, b) == lcs_length(b, a)
    assert len(lcs(a, b)) == len(lcs(b, a))


@given(seqs)
def test_lcs_of_a_sequence_with_itself_is_itself(a):
    assert lcs(a, a) == a
    assert lcs_pairs(a, a) == [(i, i) for i in range(len(a))]


@given(seqs, seqs)
def test_pairs_point_at_equal_symbols_in_increasing_order(a, b):
    pairs = lcs_pairs(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(i1 < i2 and j1 < j2 for (i1, j1), (i2, j2) in zip(pairs, pairs[1:]))


def test_known_case_and_empty_inputs():
    assert lcs_length(list(b"ABCBDAB"), list(b"BDCABA")) == 4
    assert lcs([], [1, 2]) == [] and lcs([1, 2], []) == []
    assert lcs([2**32 - 1, 5], [2**32 - 1]) == [2**32 - 1]
