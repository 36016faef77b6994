"""Normalized text -> shingles -> MinHash signature -> LSH band keys, vectorized with numpy.

The steps, each a function below:

1. ``normalize``: lower-case; every character that is not a letter, digit or combining mark (punctuation,
   whitespace, symbols, pseudo-graphics such as box drawing, emoji) separates tokens; with
   ``keep_numbers=False`` tokens made only of numeric characters ("2017", "12", "½") are dropped, tokens that
   mix letters and digits ("mp3", "1990s") are kept. Keeping numbers (the default) tells apart pages that differ
   only in figures (prices, scores, dates) at the cost of splitting re-crawls whose only change is a counter;
   dropping them does the opposite.
2. ``shingle_hashes``: word n-grams (default n=3) or character n-grams of the normalized text, each hashed once to
   32 (default) or 64 bits. A text shorter than n gives one shingle (all of it).
3. ``sign``: a MinHash signature of ``permutations`` 32-bit slots. The default scheme "oph" is one-permutation
   MinHash (Li, Owen & Zhang 2012) made dense the way Dahlgaard, Knudsen & Thorup's fast similarity sketching
   does: in round r one seeded 64-bit hash per shingle picks a slot and a value tagged with r, each slot keeps its
   minimum, and rounds repeat (up to OPH_ROUNDS) only for texts that still have empty slots; a slot left empty
   takes the minimum of its own seeded hash over the whole set. Every slot is a minimum of a function symmetric in
   the shingles, so it matches between two sets with probability exactly J. The
   scheme "kperm" is classic MinHash with ``permutations`` independent hash functions, each a vector
   multiply-add-shift ``((a1*lo + a2*hi + b) mod 2**64) >> 32`` (Dietzfelbinger; strongly universal), whose
   mod 2**64 is uint64 wrap-around by design: no product is ever reduced by a prime that it might overflow.
4. ``band_keys``: ``bands`` keys of ``rows`` slots each, hashed to 47-bit integers (6 bytes in SQLite);
   ``anchor_keys``: one key per pair of consecutive anchor shingles (one in ``anchor_rate``, chosen by hash), the
   first ``anchor_keys`` and last ``anchor_tail_keys`` of a text: a passage two texts share gives both its keys,
   whatever their sizes.
5. ``verification_sets``: what the index stores to verify a candidate pair: with ``verify="sample"`` (the default)
   each text's ``sample`` smallest distinct shingle hashes (a bottom-k sample: ``sample_jaccard`` is exact for
   texts with fewer distinct shingles, an estimate from at least ``sample`` of the union's hashes otherwise), with
   "exact" every shingle hash, with "estimate" nothing (the signatures' agreement is the similarity).
6. ``set_similarity``: the measure a candidate pair is verified with: containment |A & B| / min(|A|, |B|) (the
   default: a copy cut short, or a story whose last paragraph differs, keeps it near 1 while its Jaccard falls with
   the cut) or Jaccard; on samples (``sample_containment``, ``sample_jaccard``) or on the whole sets.

Every hash is exact integer arithmetic modulo 2**64 and matches a plain-Python reference (tests/test_shingles.py).
No Python loop runs per shingle or per token: texts are processed in batches as one code-point array. Where the
compiled module is built (``native.numeric``), steps 2, 3, the anchor keys and the samples run in C, one text at a
time from its characters to its signature; the numpy functions here stay their definition (``_plain``), and
tests/test_shingles.py holds the two equal bit for bit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from templater import chartable, native
from templater.config import (SHINGLE_KIND, SHINGLE_N, HASH_BITS, PERMUTATIONS, BANDS, ROWS, SEED,
                              KEEP_NUMBERS, THRESHOLD, MEASURE, LEGACY_LINES, LEGACY_MEASURE, SCHEME, VERIFY, SAMPLE,
                              SAMPLE_MIN_HASHES, SHINGLE_LINES, ANCHOR_RATE, ANCHOR_KEYS, ANCHOR_TAIL_KEYS,
                              LEGACY_ANCHOR_TAIL_KEYS, SAME_SITE_JACCARD, RESEMBLANCE, RESEMBLANCE_MIN_SHINGLES,
                              CROSS_SITE_THRESHOLD,
                              BATCH_CHARS, OPH_ROUNDS, KPERM_CHUNK)  # noqa: F401
from templater.errors import InputError

ALGORITHM_VERSION = 1  # bump when any hash below changes: stored signatures become incompatible

KINDS = ("word", "char")
MEASURES = ("containment", "jaccard")
SCHEMES = ("oph", "kperm")
VERIFIES = ("estimate", "exact", "sample")
HASH_WIDTHS = (32, 64)

EMPTY_SLOT = np.uint32(0xFFFFFFFF)  # the value of every slot of a text without shingles
VALUE_BITS = 28  # an OPH slot value is (round << VALUE_BITS) | 28 hash bits
VALUE_MASK = np.uint64((1 << VALUE_BITS) - 1)
KEY_SHIFT = np.uint64(17)  # band keys keep the top 47 bits of a 64-bit hash

# odd 64-bit constants (golden ratio, splitmix64/murmur3 finalizer, FNV prime) for the hashes below
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xFF51AFD7ED558CCD
MIX2 = 0xC4CEB9FE1A85EC53
CHAR_PRIME = 0x100000001B3  # polynomial base of token hashes
NGRAM_BASE = 0xD6E8FEB86659FD93  # polynomial base that combines token (or character) hashes into n-gram hashes
BAND_BASE = 0xA0761D6478BD642F  # polynomial base that combines a band's slot values
MASK64 = (1 << 64) - 1
MASK32 = np.uint64(0xFFFFFFFF)
SPACE = 32  # the code point that separates tokens in the normalized text (character n-grams)
SEPARATOR = "\x00"  # joins the texts of a batch; never part of a token
LINE_BREAKS = np.array([0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029], dtype=np.uint32)  # what str.splitlines
# splits at, but the separators of files, groups and records (0x1C-0x1E)

_U64 = np.uint64


@dataclass(frozen=True, slots=True)
class ShingleSettings:
    """Everything that shapes a signature and its band keys; persisted beside the index."""

    kind: str = SHINGLE_KIND
    n: int = SHINGLE_N
    hash_bits: int = HASH_BITS
    permutations: int = PERMUTATIONS
    bands: int = BANDS
    rows: int = ROWS
    seed: int = SEED
    keep_numbers: bool = KEEP_NUMBERS
    threshold: float = THRESHOLD
    scheme: str = SCHEME
    verify: str = VERIFY
    sample: int = SAMPLE
    algorithm: int = field(default=ALGORITHM_VERSION)
    measure: str | None = None  # None: MEASURE, or "jaccard" with verify "estimate" (signatures hold no sizes)
    anchor_rate: int = ANCHOR_RATE
    anchor_keys: int = ANCHOR_KEYS
    anchor_tail_keys: int = ANCHOR_TAIL_KEYS
    cross_site_threshold: float | None = None  # None: CROSS_SITE_THRESHOLD (never above ``threshold``)
    same_site_jaccard: float = SAME_SITE_JACCARD
    sample_min_hashes: int = SAMPLE_MIN_HASHES
    lines: bool = SHINGLE_LINES
    resemblance: float = RESEMBLANCE  # a containment pair also passes with this Jaccard (0: off)
    resemblance_min_shingles: int = RESEMBLANCE_MIN_SHINGLES

    def __post_init__(self) -> None:
        if self.measure is None:
            object.__setattr__(self, "measure", "jaccard" if self.verify == "estimate" else MEASURE)
        if self.cross_site_threshold is None:
            object.__setattr__(self, "cross_site_threshold", min(CROSS_SITE_THRESHOLD, self.threshold))
        problems = _setting_problems(self)
        if problems:
            raise InputError("invalid shingle/LSH settings: " + "; ".join(problems))

    @property
    def s_curve_threshold(self) -> float:
        """The Jaccard at which a pair becomes a candidate with probability about 1/2: (1/b)^(1/r)."""
        return (1.0 / self.bands) ** (1.0 / self.rows)

    def candidate_probability(self, jaccard: float) -> float:
        """P(a pair of this Jaccard shares at least one band key) = 1 - (1 - J^r)^b."""
        return 1.0 - (1.0 - jaccard ** self.rows) ** self.bands

    def threshold_for(self, same_site: bool | np.ndarray) -> float | np.ndarray:
        """The similarity a pair must reach: ``threshold`` on one site, ``cross_site_threshold`` across sites."""
        return np.where(same_site, self.threshold, self.cross_site_threshold)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> ShingleSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputError(f"unknown shingle/LSH settings {unknown}; known: {sorted(known)}")
        return cls(**values)

    def differences(self, other: ShingleSettings) -> list[str]:
        """``name: mine != other`` for every setting that differs."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [f"{k}: {mine[k]!r} != {theirs[k]!r}" for k in mine if mine[k] != theirs[k]]


def _setting_problems(s: ShingleSettings) -> list[str]:
    checks = [
        (s.kind in KINDS, f"kind must be one of {KINDS}, not {s.kind!r}"),
        (isinstance(s.n, int) and s.n >= 1, f"n must be a positive integer, not {s.n!r}"),
        (s.hash_bits in HASH_WIDTHS, f"hash_bits must be one of {HASH_WIDTHS}, not {s.hash_bits!r}"),
        (isinstance(s.permutations, int) and 1 <= s.permutations < 1 << 31,
         f"permutations must be a positive integer, not {s.permutations!r}"),
        (isinstance(s.bands, int) and isinstance(s.rows, int) and s.bands >= 1 and s.rows >= 1
         and s.bands * s.rows <= s.permutations,
         f"bands x rows ({s.bands} x {s.rows}) must be positive and at most permutations ({s.permutations})"),
        (isinstance(s.seed, int) and 0 <= s.seed <= MASK64, f"seed must be an unsigned 64-bit integer, not {s.seed!r}"),
        (0.0 < s.threshold <= 1.0, f"threshold must be in (0, 1], not {s.threshold!r}"),
        (s.scheme in SCHEMES, f"scheme must be one of {SCHEMES}, not {s.scheme!r}"),
        (s.verify in VERIFIES, f"verify must be one of {VERIFIES}, not {s.verify!r}"),
        (isinstance(s.sample, int) and s.sample >= 1, f"sample must be a positive integer, not {s.sample!r}"),
        (s.measure in MEASURES, f"measure must be one of {MEASURES}, not {s.measure!r}"),
        (isinstance(s.anchor_rate, int) and s.anchor_rate >= 0,
         f"anchor_rate must be a non-negative integer (0: no anchor keys), not {s.anchor_rate!r}"),
        (isinstance(s.anchor_keys, int) and s.anchor_keys >= 0,
         f"anchor_keys must be a non-negative integer, not {s.anchor_keys!r}"),
        (isinstance(s.anchor_tail_keys, int) and s.anchor_tail_keys >= 0,
         f"anchor_tail_keys must be a non-negative integer, not {s.anchor_tail_keys!r}"),
        (isinstance(s.cross_site_threshold, (int, float)) and 0.0 < s.cross_site_threshold <= 1.0,
         f"cross_site_threshold must be in (0, 1], not {s.cross_site_threshold!r}"),
        (isinstance(s.same_site_jaccard, (int, float)) and 0.0 <= s.same_site_jaccard <= 1.0,
         f"same_site_jaccard must be in [0, 1], not {s.same_site_jaccard!r}"),
        (isinstance(s.sample_min_hashes, int) and s.sample_min_hashes >= 0,
         f"sample_min_hashes must be a non-negative integer, not {s.sample_min_hashes!r}"),
        (isinstance(s.lines, bool), f"lines must be true or false, not {s.lines!r}"),
        (isinstance(s.resemblance, (int, float)) and 0.0 <= s.resemblance <= 1.0,
         f"resemblance must be in [0, 1], not {s.resemblance!r}"),
        (isinstance(s.resemblance_min_shingles, int) and s.resemblance_min_shingles >= 0,
         f"resemblance_min_shingles must be a non-negative integer, not {s.resemblance_min_shingles!r}"),
        (s.measure == "jaccard" or s.verify != "estimate",
         "measure 'containment' needs the shingle sets: verify 'sample' or 'exact' (or measure 'jaccard' with "
         "verify 'estimate')"),
        (s.algorithm == ALGORITHM_VERSION,
         f"algorithm version {s.algorithm} is not this code's ({ALGORITHM_VERSION}): rebuild the index"),
    ]
    return [message for ok, message in checks if not ok]


@dataclass(frozen=True, slots=True)
class Shingles:
    """Shingle hashes of a batch of texts: ``hashes[offsets[i]:offsets[i+1]]`` belong to text i."""

    hashes: np.ndarray  # uint64 (values below 2**32 when hash_bits is 32)
    offsets: np.ndarray  # int64, len(texts) + 1

    def of(self, i: int) -> np.ndarray:
        return self.hashes[self.offsets[i]:self.offsets[i + 1]]

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass(frozen=True, slots=True)
class Signatures:
    """MinHash signatures of a batch of texts, with the settings that made them.

    ``values`` is a (texts, permutations) uint32 array; ``empty[i]`` is true when text i had no shingle (its
    slots are all EMPTY_SLOT and it must not be indexed).
    """

    values: np.ndarray
    empty: np.ndarray
    settings: ShingleSettings
    anchors: Shingles | None = None  # each text's anchor keys (``anchor_keys``; None: none were made)

    def __len__(self) -> int:
        return len(self.values)

    def anchors_of(self, i: int) -> np.ndarray:
        """Text i's anchor keys (int64; empty when none were made)."""
        return self.anchors.of(i).astype(np.int64) if self.anchors is not None else np.empty(0, np.int64)


# --- step 1: normalization ------------------------------------------------------------------------------------

@functools.cache
def _char_bits() -> tuple[bytes, bytes]:
    """(token character?, numeric character?) for every code point as bit sets (code point c is bit c & 7 of byte
    c >> 3): templater.chartable's, written at install (read in a millisecond) or built once per process where
    they are missing."""
    return chartable.load_tables()


@functools.cache
def _char_tables() -> tuple[np.ndarray, np.ndarray]:
    """``_char_bits`` as one bool a code point (the numpy path's lookup tables)."""
    return tuple(np.unpackbits(np.frombuffer(bits, dtype=np.uint8), bitorder="little").view(bool)
                 for bits in _char_bits())


@dataclass(frozen=True, slots=True)
class _Tokens:
    """Token spans over the code points of a batch of lower-cased texts joined end to end."""

    codes: np.ndarray  # uint32 code points of the whole batch
    starts: np.ndarray  # int64 token start positions
    ends: np.ndarray  # int64 token end positions (exclusive)
    doc: np.ndarray  # int64 text index of each token
    docs: int


def _tokenize(texts: Sequence[str], keep_numbers: bool) -> _Tokens:
    lowered = [t.lower() for t in texts]
    joined = SEPARATOR.join(lowered)  # a non-token character between texts: no token crosses a boundary
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    token_table, numeric_table = _char_tables()
    is_token = token_table[codes]
    edges = np.diff(is_token.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if not keep_numbers and len(starts):
        letters = np.concatenate(([0], np.cumsum(is_token & ~numeric_table[codes])))
        keep = letters[ends] > letters[starts]
        starts, ends = starts[keep], ends[keep]
    bounds = np.cumsum([len(t) + 1 for t in lowered])
    doc = np.searchsorted(bounds, starts, side="right")
    return _Tokens(codes, starts, ends, doc, len(texts))


BMP_END = 0x10000  # the regex path covers code points below this (its character class compiles to a bitmap)


@functools.cache
def _bmp_token_pattern() -> re.Pattern:
    """Runs of token characters of the Basic Multilingual Plane, from the same table as the numpy path."""
    token = _char_tables()[0][:BMP_END]
    edges = np.flatnonzero(np.diff(token.view(np.int8), prepend=np.int8(0), append=np.int8(0)))
    ranges = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b - 1))}" for a, b in zip(edges[0::2], edges[1::2]))
    return re.compile(f"[{ranges}]+")


def normalize(text: str, *, keep_numbers: bool = KEEP_NUMBERS) -> str:
    """The normalized text the shingles are made of: its tokens joined by single spaces.

    The same rules as the batch path, one text at a time: a regex for text within the Basic Multilingual Plane
    (the common case, ~3 us a sentence), the numpy tokenizer when the text holds other characters (emoji...).
    """
    lowered = text.lower()
    if lowered and max(lowered) >= chr(BMP_END):
        tokens = _tokenize([text], keep_numbers)
        codes = tokens.codes.tobytes().decode("utf-32-le", "surrogatepass")
        return " ".join(codes[s:e] for s, e in zip(tokens.starts.tolist(), tokens.ends.tolist()))
    words = _bmp_token_pattern().findall(lowered)
    return " ".join(words if keep_numbers else [w for w in words if not w.isnumeric()])


# --- step 2: shingle hashes ----------------------------------------------------------------------------------

def fmix64(h: np.ndarray) -> np.ndarray:
    """The murmur3/splitmix64 finalizer on uint64 (a bijection; multiplications wrap mod 2**64 by design)."""
    h = h ^ (h >> _U64(33))
    h *= _U64(MIX1)
    h ^= h >> _U64(33)
    h *= _U64(MIX2)
    h ^= h >> _U64(33)
    return h


@functools.cache
def _powers(size: int) -> tuple[np.ndarray, np.ndarray]:
    """CHAR_PRIME**i and its inverse**i mod 2**64 for i < size (size a power of two, cached)."""
    base = np.full(size, CHAR_PRIME, dtype=np.uint64)
    inverse = np.full(size, pow(CHAR_PRIME, -1, 1 << 64), dtype=np.uint64)
    base[0] = inverse[0] = 1
    return np.cumprod(base), np.cumprod(inverse)


def _powers_for(length: int) -> tuple[np.ndarray, np.ndarray]:
    size = 1 << max(int(length).bit_length(), 10)
    return _powers(size)


def _token_hashes(tokens: _Tokens) -> np.ndarray:
    """fmix64(polynomial hash of each token's code points, xor its length), via prefix sums mod 2**64."""
    pw, inv = _powers_for(len(tokens.codes) + 1)
    prefix = np.zeros(len(tokens.codes) + 1, dtype=np.uint64)
    np.cumsum(tokens.codes.astype(np.uint64) * pw[:len(tokens.codes)], out=prefix[1:])
    spans = (prefix[tokens.ends] - prefix[tokens.starts]) * inv[tokens.starts]
    return fmix64(spans ^ (tokens.ends - tokens.starts).astype(np.uint64))


def _ngrams(values: np.ndarray, group: np.ndarray, n: int, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Horner-combined n-grams of ``values`` that stay inside one group (a text, or a line of one); a group with
    1..n-1 values gives one of them all. ``group`` is ascending; the n-grams come in value order."""
    count = len(values) - n + 1
    grams = np.empty(0, dtype=np.uint64)
    gram_group = np.empty(0, dtype=np.int64)
    if count > 0:
        grams = values[:count].copy()
        for k in range(1, n):
            grams *= _U64(NGRAM_BASE)
            grams += values[k:count + k]
        inside = group[:count] == group[n - 1:]
        grams, gram_group = grams[inside], group[:count][inside]
    per_group = np.bincount(group, minlength=groups)
    short = np.flatnonzero((per_group > 0) & (per_group < n))
    if len(short):
        first = np.searchsorted(group, short)
        sizes = per_group[short]
        extra = values[first].astype(np.uint64)  # Horner over each short group's 1..n-1 values, vectorized
        for k in range(1, n - 1):
            more = sizes > k
            extra[more] = extra[more] * _U64(NGRAM_BASE) + values[first[more] + k]
        grams = np.concatenate((grams, extra))
        gram_group = np.concatenate((gram_group, short))
        order = np.argsort(gram_group, kind="stable")
        grams, gram_group = grams[order], gram_group[order]
    return grams, gram_group


def _normalized_codes(tokens: _Tokens, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Code points of each group's normalized form (its tokens joined by one space; a group is a text, or a line
    of one) and their group."""
    lengths = tokens.ends - tokens.starts
    last = np.append(group[1:] != group[:-1], True) if len(lengths) else np.empty(0, bool)
    width = lengths + (~last).astype(np.int64)  # a space follows each token but the last of its group
    owner = np.repeat(np.arange(len(lengths)), width)
    position = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    is_space = position == lengths[owner]
    source = np.minimum(tokens.starts[owner] + position, len(tokens.codes) - 1)
    codes = np.where(is_space, np.uint32(SPACE), tokens.codes[source]).astype(np.uint64)
    return codes, group[owner]


def _lines(tokens: _Tokens) -> tuple[np.ndarray, np.ndarray]:
    """(each token's line, numbered across the batch; each line's text): a line ends at a line break or at the end
    of its text, so lines are ascending with the texts and none spans two texts."""
    ends = np.flatnonzero(np.isin(tokens.codes, LINE_BREAKS) | (tokens.codes == ord(SEPARATOR)))
    line = np.searchsorted(ends, tokens.starts)
    line_doc = np.zeros(len(ends) + 1, dtype=np.int64)
    line_doc[line] = tokens.doc
    return line, line_doc


def shingle_hashes(texts: Sequence[str], settings: ShingleSettings | None = None) -> Shingles:
    """Hash the shingles of every text (one batch; see ``iter_batches`` for large inputs), in text order. With
    ``settings.lines`` an n-gram stays inside a line (a paragraph of an extracted text: paragraphs that move keep
    their shingles), and a line shorter than n gives one shingle of all of it."""
    settings = settings or ShingleSettings()
    numeric = native.numeric
    if numeric is None or settings.lines:  # the compiled pass knows no line bounds: numpy is the one definition
        return _shingle_hashes_plain(texts, settings)
    hashes, offsets = numeric.shingle_hashes(texts, *_char_bits(), settings.kind == "char", settings.n,
                                             settings.keep_numbers, settings.hash_bits)
    return Shingles(np.frombuffer(hashes, np.uint64), np.frombuffer(offsets, np.int64))


def _shingle_hashes_plain(texts: Sequence[str], settings: ShingleSettings) -> Shingles:
    """``shingle_hashes`` with numpy (its definition, and the path without the compiled module)."""
    tokens = _tokenize(texts, settings.keep_numbers)
    group, group_doc = _lines(tokens) if settings.lines else (tokens.doc, None)
    groups = len(texts) if group_doc is None else len(group_doc)
    if settings.kind == "word":
        grams, gram_group = _ngrams(_token_hashes(tokens), group, settings.n, groups)
    else:
        codes, code_group = _normalized_codes(tokens, group)
        grams, gram_group = _ngrams(codes, code_group, settings.n, groups)
    hashes = fmix64(grams)
    if settings.hash_bits == 32:
        hashes &= MASK32
    gram_doc = gram_group if group_doc is None else group_doc[gram_group]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(gram_doc, minlength=len(texts)))))
    return Shingles(hashes, offsets.astype(np.int64))


# --- step 3: MinHash signatures --------------------------------------------------------------------------------

def splitmix64(seed: int, index: int = 0) -> int:
    """A 64-bit value derived from (seed, index) with plain Python integers (SplitMix64)."""
    z = (seed + (index + 1) * GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


@functools.cache
def _oph_salts(seed: int, permutations: int) -> tuple[np.ndarray, np.ndarray]:
    """One salt per one-permutation round, and one per slot for the fallback hashes."""
    rounds = np.array([splitmix64(seed, r) for r in range(OPH_ROUNDS)], dtype=np.uint64)
    slots = np.array([splitmix64(seed, OPH_ROUNDS + j) for j in range(permutations)], dtype=np.uint64)
    return rounds, slots


@functools.cache
def _kperm_params(seed: int, permutations: int) -> np.ndarray:
    """(3, permutations) uint64: a1, a2, b of each multiply-add-shift hash function."""
    return np.array([[splitmix64(seed, 3 * j + i) for j in range(permutations)] for i in range(3)], dtype=np.uint64)


def sign(texts: Sequence[str], settings: ShingleSettings | None = None) -> Signatures:
    """MinHash signatures of ``texts`` (batched internally by BATCH_CHARS characters)."""
    settings = settings or ShingleSettings()
    hashed = [shingle_hashes(batch, settings) for batch in iter_batches(texts)]
    signed = concat_signatures([sign_shingles(p, settings, anchors=False) for p in hashed], settings)
    return replace(signed, anchors=anchor_keys(concat_shingles(hashed), settings))


def concat_shingles(parts: Sequence[Shingles]) -> Shingles:
    """The shingles of consecutive batches as one (anchor keys are made once for all: each call has a cost)."""
    if not parts:
        return Shingles(np.empty(0, np.uint64), np.zeros(1, np.int64))
    counts = np.concatenate([p.counts for p in parts])
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return Shingles(np.concatenate([p.hashes for p in parts]), offsets)


def concat_signatures(parts: Sequence[Signatures], settings: ShingleSettings) -> Signatures:
    """The signatures (and anchor keys) of consecutive batches as one."""
    if not parts:
        return Signatures(np.empty((0, settings.permutations), np.uint32), np.empty(0, bool), settings,
                          Shingles(np.empty(0, np.int64), np.zeros(1, np.int64)))
    anchors = None
    if all(p.anchors is not None for p in parts):
        counts = np.concatenate([p.anchors.counts for p in parts])
        anchors = Shingles(np.concatenate([p.anchors.hashes for p in parts]),
                           np.concatenate(([0], np.cumsum(counts))).astype(np.int64))
    return Signatures(np.concatenate([p.values for p in parts]), np.concatenate([p.empty for p in parts]), settings,
                      anchors)


def iter_batches(texts: Sequence[str], batch_chars: int = BATCH_CHARS) -> Iterable[Sequence[str]]:
    """Consecutive slices of ``texts`` of about ``batch_chars`` characters (a longer text is a batch alone)."""
    start, size = 0, 0
    for i, text in enumerate(texts):
        size += len(text)
        if size >= batch_chars:
            yield texts[start:i + 1]
            start, size = i + 1, 0
    if start < len(texts):
        yield texts[start:]


def sign_shingles(shingles: Shingles, settings: ShingleSettings, *, anchors: bool = True) -> Signatures:
    """MinHash signatures of shingle hashes (the kernel; ``sign`` = ``shingle_hashes`` + this), with the texts'
    anchor keys unless ``anchors`` is false (``sign`` makes them once for all its batches)."""
    counts = shingles.counts
    if settings.scheme == "oph":
        values = _sign_oph(shingles, settings)
    else:
        values = _sign_kperm(shingles, settings)
    values[counts == 0] = EMPTY_SLOT
    return Signatures(values, counts == 0, settings, anchor_keys(shingles, settings) if anchors else None)


def _compiled(shingles: Shingles) -> tuple | None:
    """(compiled module, uint64 hashes, int64 offsets) when the compiled path can take ``shingles`` (it is built and
    the hashes are unsigned integers), else None."""
    numeric = native.numeric
    if numeric is None or shingles.hashes.dtype.kind != "u" or shingles.offsets.dtype.kind not in "iu":
        return None
    return (numeric, np.ascontiguousarray(shingles.hashes, dtype=np.uint64),
            np.ascontiguousarray(shingles.offsets, dtype=np.int64))


def _sign_oph(shingles: Shingles, settings: ShingleSettings) -> np.ndarray:
    """``_sign_oph_plain``, compiled where it is built."""
    compiled = _compiled(shingles)
    if compiled is None:
        return _sign_oph_plain(shingles, settings)
    numeric, hashes, offsets = compiled
    k = settings.permutations
    values = numeric.sign_oph(hashes, offsets, k, *_oph_salts(settings.seed, k))
    return np.frombuffer(values, np.uint32).reshape(-1, k)


def _sign_oph_plain(shingles: Shingles, settings: ShingleSettings) -> np.ndarray:
    """Rounds of one-permutation hashing, then per-slot fallback hashes for slots still empty.

    Round r sends each shingle to a slot with value (r << VALUE_BITS) | 28 hash bits, so an earlier round always
    wins; a text stops as soon as every slot is filled (later rounds could not change it). Each slot holds the
    minimum over all rounds and the fallback of a function symmetric in the shingles: it matches between two
    sets with probability J.
    """
    k, docs = settings.permutations, len(shingles.offsets) - 1
    round_salts, slot_salts = _oph_salts(settings.seed, k)
    values = np.full((docs, k), EMPTY_SLOT, dtype=np.uint32)
    flat = values.reshape(-1)
    todo = np.flatnonzero(shingles.counts > 0)
    for prefix, salt in enumerate(round_salts.tolist()):
        if not len(todo):
            break
        element, doc = _elements_of(shingles, todo)
        h = fmix64(shingles.hashes[element] ^ np.uint64(salt))
        slot = (((h >> _U64(32)) * _U64(k)) >> _U64(32)).astype(np.int64)
        np.minimum.at(flat, doc * k + slot, _slot_value(h, prefix))
        todo = todo[(values[todo] == EMPTY_SLOT).any(axis=1)]
    _fill_empty_slots(values, shingles, slot_salts, todo)
    return values


def _slot_value(h: np.ndarray, prefix: int) -> np.ndarray:
    return ((h & VALUE_MASK) | _U64(prefix << VALUE_BITS)).astype(np.uint32)


def _elements_of(shingles: Shingles, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices into ``shingles.hashes`` of every shingle of ``docs`` (ascending), and the text of each."""
    sizes = shingles.counts[docs]
    firsts = np.cumsum(sizes) - sizes
    doc = np.repeat(docs, sizes)
    element = np.arange(int(sizes.sum())) + np.repeat(shingles.offsets[docs] - firsts, sizes)
    return element, doc


def _fill_empty_slots(values: np.ndarray, shingles: Shingles, salts: np.ndarray, docs: np.ndarray) -> None:
    """Each slot of ``docs`` still empty takes min over the text's shingles of fmix64(x ^ salt of the slot)."""
    if not len(docs):
        return
    rows, slot_idx = np.nonzero(values[docs] == EMPTY_SLOT)
    doc_idx = docs[rows]
    sizes = shingles.counts[doc_idx]
    firsts = np.cumsum(sizes) - sizes
    element, _ = _elements_of(shingles, doc_idx)
    pair = np.repeat(np.arange(len(doc_idx)), sizes)
    hashed = _slot_value(fmix64(shingles.hashes[element] ^ salts[slot_idx][pair]), OPH_ROUNDS)
    values[doc_idx, slot_idx] = np.minimum.reduceat(hashed, firsts)




def _sign_kperm(shingles: Shingles, settings: ShingleSettings) -> np.ndarray:
    """``_sign_kperm_plain``, compiled where it is built."""
    compiled = _compiled(shingles)
    if compiled is None:
        return _sign_kperm_plain(shingles, settings)
    numeric, hashes, offsets = compiled
    k = settings.permutations
    values = numeric.sign_kperm(hashes, offsets, k, _kperm_params(settings.seed, k))
    return np.frombuffer(values, np.uint32).reshape(-1, k)


def _sign_kperm_plain(shingles: Shingles, settings: ShingleSettings) -> np.ndarray:
    """Slot j of a text: min over its shingles of hash function j (``_kperm_params``), chunk by chunk."""
    k, docs = settings.permutations, len(shingles.offsets) - 1
    a1, a2, b = _kperm_params(settings.seed, k)
    values = np.full((docs, k), EMPTY_SLOT, dtype=np.uint32)
    counts = shingles.counts
    nonempty = np.flatnonzero(counts > 0)
    if not len(nonempty):
        return values
    lo, hi = shingles.hashes & MASK32, shingles.hashes >> _U64(32)
    starts = shingles.offsets[nonempty]
    for j in range(0, k, KPERM_CHUNK):
        sl = slice(j, j + KPERM_CHUNK)
        mixed = a1[sl, None] * lo[None, :] + a2[sl, None] * hi[None, :] + b[sl, None]
        values[nonempty, sl] = np.minimum.reduceat(mixed >> _U64(32), starts, axis=1).T.astype(np.uint32)
    return values


# --- step 4: band keys and similarity --------------------------------------------------------------------------

def band_keys(values: np.ndarray, settings: ShingleSettings) -> np.ndarray:
    """(texts, bands) int64 keys in [0, 2**47): band i hashes slots i*rows .. (i+1)*rows-1 with its index."""
    docs, b, r = len(values), settings.bands, settings.rows
    slots = values[:, :b * r].reshape(docs, b, r).astype(np.uint64)
    acc = np.broadcast_to(np.arange(1, b + 1, dtype=np.uint64) * _U64(GOLDEN), (docs, b)).copy()
    for i in range(r):
        acc *= _U64(BAND_BASE)
        acc += slots[:, :, i]
    return (fmix64(acc) >> KEY_SHIFT).astype(np.int64)


ANCHOR_TAG = 0x2545F4914F6CDD1D  # makes anchor keys a family apart from band keys


def anchor_keys(shingles: Shingles, settings: ShingleSettings) -> Shingles:
    """Each text's anchor keys (int64 in [0, 2**47), distinct, in text order of first occurrence): a shingle is an
    anchor when its hash (already uniform: an fmix64 output) is below 2**hash_bits / ``anchor_rate`` (one
    comparison a shingle; the signature's hashes mix each shingle hash again, so the two do not interact); every
    two consecutive anchors make a key. Two texts that share a passage share its keys whatever surrounds it
    (content-defined sampling, as winnowing does for plagiarism search), so containment candidates do not depend on
    the texts' sizes. A text keeps its first ``anchor_keys`` keys and its last ``anchor_tail_keys`` (a copy cut from
    the start keeps the original's end; a key repeated among them counts once). The shingles must be in text order
    (``shingle_hashes`` output)."""
    counts = shingles.counts
    docs = len(counts)
    head, tail = settings.anchor_keys, settings.anchor_tail_keys
    if settings.anchor_rate == 0 or head + tail == 0 or not len(shingles.hashes):
        return Shingles(np.empty(0, np.int64), np.zeros(docs + 1, np.int64))
    below = ((1 << settings.hash_bits) - 1) // settings.anchor_rate
    compiled = _compiled(shingles)
    if compiled is not None:
        numeric, hashes, offsets = compiled
        keys, offsets = (numeric.anchor_keys(hashes, offsets, below, head, tail) if tail else
                         numeric.anchor_keys(hashes, offsets, below, head))
        return Shingles(np.frombuffer(keys, np.int64), np.frombuffer(offsets, np.int64))
    return _anchor_keys_plain(shingles, settings)


def _anchor_keys_plain(shingles: Shingles, settings: ShingleSettings) -> Shingles:
    """``anchor_keys`` with numpy (its definition, and the path without the compiled module)."""
    docs = len(shingles.counts)
    hashes = shingles.hashes.astype(np.uint64, copy=False)
    chosen = np.flatnonzero(hashes < _U64(((1 << settings.hash_bits) - 1) // settings.anchor_rate))
    doc = np.searchsorted(shingles.offsets, chosen, side="right") - 1
    same = doc[1:] == doc[:-1]
    first, second = hashes[chosen[:-1]][same], hashes[chosen[1:]][same]
    key_doc = doc[:-1][same]
    acc = first * _U64(BAND_BASE) + _U64(ANCHOR_TAG)
    acc = fmix64((acc + second) * _U64(BAND_BASE))
    keys = (acc >> KEY_SHIFT).astype(np.int64)
    # each text's first anchor_keys and last anchor_tail_keys keys in text order (key_doc is ascending), then
    # without repeats
    rank = np.arange(len(keys)) - np.searchsorted(key_doc, key_doc)
    from_end = np.searchsorted(key_doc, key_doc, side="right") - 1 - np.arange(len(keys))
    chosen = (rank < settings.anchor_keys) | (from_end < settings.anchor_tail_keys)
    keys, key_doc = keys[chosen], key_doc[chosen]
    order = np.lexsort((np.arange(len(keys)), keys, key_doc))
    repeat = np.zeros(len(keys), bool)
    repeat[order[1:]] = (keys[order][1:] == keys[order][:-1]) & (key_doc[order][1:] == key_doc[order][:-1])
    keys, key_doc = keys[~repeat], key_doc[~repeat]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(key_doc, minlength=docs)))).astype(np.int64)
    return Shingles(keys, offsets)


def estimate_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """Share of equal slots: the MinHash estimate of Jaccard (rows of 2-D arrays pairwise, or two vectors)."""
    return np.mean(np.asarray(a) == np.asarray(b), axis=-1)


def sorted_set(hashes: np.ndarray) -> np.ndarray:
    """The distinct values of ``hashes``, sorted (np.sort and a neighbour test: ~10x np.unique on 1,000 values)."""
    ordered = np.sort(hashes)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def jaccard_of_sets(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sorted sets (``sorted_set`` output)."""
    if not len(a) or not len(b):
        return float(len(a) == len(b))
    inter = _intersection(a, b)
    return inter / (len(a) + len(b) - inter)


def containment_of_sets(a: np.ndarray, b: np.ndarray) -> float:
    """|A & B| / min(|A|, |B|) of two sorted sets (``sorted_set`` output): 1 when one holds the other."""
    if not len(a) or not len(b):
        return float(len(a) == len(b))
    return _intersection(a, b) / min(len(a), len(b))


def _intersection(a: np.ndarray, b: np.ndarray) -> int:
    at = np.searchsorted(b, a)
    at[at == len(b)] = 0
    return int(np.count_nonzero(b[at] == a))


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two shingle-hash sets (arrays may hold repeats; two empty sets are identical)."""
    return jaccard_of_sets(sorted_set(a), sorted_set(b))


# --- step 5: what verification compares -------------------------------------------------------------------------

def sample_shingles(shingles: Shingles, size: int) -> Shingles:
    """Each text's ``size`` smallest distinct shingle hashes, ascending: a bottom-k sample of its set (the whole
    set when it has fewer). One sort of the batch, no loop per text (numpy), or a sort of each text's smallest
    hashes (compiled)."""
    compiled = _compiled(shingles)
    if compiled is not None:
        numeric, hashes, offsets = compiled
        hashes, offsets = numeric.sample_shingles(hashes, offsets, size)
        return Shingles(np.frombuffer(hashes, np.uint64), np.frombuffer(offsets, np.int64))
    return _sample_shingles_plain(shingles, size)


def _sample_shingles_plain(shingles: Shingles, size: int) -> Shingles:
    """``sample_shingles`` with numpy (its definition, and the path without the compiled module)."""
    counts = shingles.counts
    if not len(shingles.hashes):
        return Shingles(shingles.hashes.astype(np.uint64), np.zeros(len(counts) + 1, np.int64))
    doc = np.repeat(np.arange(len(counts), dtype=np.uint64), counts)
    if int(shingles.hashes.max()) <= 0xFFFFFFFF:
        ordered = np.sort((doc << _U64(32)) | shingles.hashes)
        hashes, doc = ordered & MASK32, ordered >> _U64(32)
    else:
        order = np.lexsort((shingles.hashes, doc))
        hashes, doc = shingles.hashes[order], doc[order]
    distinct = np.r_[True, (hashes[1:] != hashes[:-1]) | (doc[1:] != doc[:-1])]
    hashes, doc = hashes[distinct], doc[distinct].astype(np.int64)
    first = np.searchsorted(doc, np.arange(len(counts)))
    keep = np.arange(len(doc)) - first[doc] < size
    hashes, doc = hashes[keep], doc[keep]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(doc, minlength=len(counts)))))
    return Shingles(hashes, offsets.astype(np.int64))


def as_samples(shingles: Shingles, size: int) -> Shingles:
    """``shingles`` as bottom-``size`` samples: returned as they are when every text already is one (ascending,
    distinct, at most ``size`` hashes: signing samples, and the index need not sort again), else sampled."""
    counts = shingles.counts
    doc = np.repeat(np.arange(len(counts)), counts)
    falling = (shingles.hashes[1:] <= shingles.hashes[:-1]) & (doc[1:] == doc[:-1])
    if (counts <= size).all() and not falling.any():
        return shingles
    return sample_shingles(shingles, size)


def verification_sets(shingles: Shingles, settings: ShingleSettings) -> Shingles:
    """What an index with these settings stores to verify candidates: every shingle hash ("exact") or each
    text's bottom-``sample`` sample ("sample")."""
    return as_samples(shingles, settings.sample) if settings.verify == "sample" else shingles


def comparable_set(hashes: np.ndarray, settings: ShingleSettings) -> np.ndarray:
    """A text's shingle hashes (or stored verification set) in the form ``set_similarity`` compares: sorted and
    distinct, and cut to ``settings.sample`` hashes when verifying by sample (a stored sample is used as it is)."""
    if settings.verify != "sample":
        return sorted_set(hashes)
    ascending = len(hashes) < 2 or bool((hashes[1:] > hashes[:-1]).all())
    return (hashes if ascending else sorted_set(hashes))[:settings.sample]


def comparable_sets(sets: Sequence[np.ndarray], settings: ShingleSettings) -> list[np.ndarray]:
    """``comparable_set`` of each of ``sets``: with verify "sample" the sets already ascending (every stored sample)
    are found by one test over them all, not one per set (an index verifying a batch's candidates takes hundreds)."""
    if settings.verify != "sample" or len(sets) < 2:
        return [comparable_set(h, settings) for h in sets]
    flat = np.concatenate(sets)
    ends = np.cumsum([len(h) for h in sets])
    rising = np.ones(len(flat), dtype=bool)  # rising[i]: flat[i] is above the value before it in its set
    rising[1:] = flat[1:] > flat[:-1]
    rising[ends[:-1][ends[:-1] < len(flat)]] = True  # (each set's first value)
    falls = np.flatnonzero(~rising)
    bad = set(np.searchsorted(ends, falls, side="right").tolist()) if len(falls) else ()
    size = settings.sample
    return [sorted_set(h)[:size] if i in bad else h[:size] for i, h in enumerate(sets)]


def sample_jaccard(a: np.ndarray, b: np.ndarray, size: int) -> float:
    """Jaccard of two texts from their bottom-``size`` samples (``comparable_set`` output).

    Both samples hold every hash of their text up to their largest value, so below the smaller largest value of a
    full sample (``size`` hashes) both sets are known exactly: their Jaccard there, over at least ``size`` of the
    union's smallest hashes, estimates J with standard deviation about sqrt(J(1-J)/size) (0.025 at J = 0.8 and
    256), and is J itself when both texts have fewer than ``size`` distinct shingles.
    """
    full = [s[-1] for s in (a, b) if len(s) >= size]
    if full:
        cut = min(full)
        a, b = a[:np.searchsorted(a, cut, side="right")], b[:np.searchsorted(b, cut, side="right")]
    return jaccard_of_sets(a, b)


def sample_containment(a: np.ndarray, b: np.ndarray, size: int, min_hashes: int = 0) -> float:
    """|A & B| / min(|A|, |B|) of two texts from their bottom-``size`` samples (``comparable_set`` output).

    Below the smaller largest value of a full sample (``cut``) both samples hold their whole sets, so each text's
    hashes there are a uniform random sample of it, and the share of them the other text also has estimates
    |A & B| / |A| (and |A & B| / |B|). The larger of the two shares is the containment: it comes from the text with
    fewer hashes below the cut, the smaller one (exact when both texts have fewer than ``size`` shingles).
    An estimate from fewer than ``min_hashes`` of them (the smaller text has hashes above the cut too, so it is a
    sample) is no verdict: 0.0.
    """
    full = [s[-1] for s in (a, b) if len(s) >= size]
    if full:
        cut = min(full)
        below_a, below_b = np.searchsorted(a, cut, side="right"), np.searchsorted(b, cut, side="right")
        small, whole = min((below_a, len(a)), (below_b, len(b)))
        if small < min_hashes and small < whole:
            return 0.0
        a, b = a[:below_a], b[:below_b]
    return containment_of_sets(a, b)


def set_jaccard(a: np.ndarray, b: np.ndarray, settings: ShingleSettings) -> float:
    """Jaccard of two ``comparable_set`` arrays: on bottom-k samples (verify "sample") or on the whole sets."""
    return sample_jaccard(a, b, settings.sample) if settings.verify == "sample" else jaccard_of_sets(a, b)


def set_similarity(a: np.ndarray, b: np.ndarray, settings: ShingleSettings) -> float:
    """The similarity a candidate pair is verified with (``settings.measure``), from two ``comparable_set``
    arrays: on bottom-k samples (verify "sample") or on the whole sets (verify "exact")."""
    if settings.measure == "containment":
        return sample_containment(a, b, settings.sample, settings.sample_min_hashes) \
            if settings.verify == "sample" else \
            containment_of_sets(a, b)
    return sample_jaccard(a, b, settings.sample) if settings.verify == "sample" else jaccard_of_sets(a, b)
