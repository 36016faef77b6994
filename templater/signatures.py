"""Document signatures for duplicate search: the seven methods the founding lecture compares beside MinHash.

Every method has the same two verbs (the ``SignatureMethod`` protocol):

    method.fit(texts)          collection statistics (IDF, dictionaries, descriptive words); returns the method
    method.signatures(text)    -> list of hashable signatures; an empty list when the document is not judged

Two documents are a candidate pair when they share a signature (``pairs_from_signatures`` buckets by signature,
so the work grows with the bucket sizes, not with the square of the collection).

    md5          MD5 of the normalized text: the exact-duplicate baseline.
    tf           the ``terms`` most frequent terms; CRC32 of their concatenation.
    tfidf        the ``terms`` terms of highest TF*IDF, IDF from the fitted collection.
    long-sent    CRC32 of the ``sentences`` longest sentences (in terms).
    heavy-sent   the same with sentences weighted by the sum of their terms' TF*IDF.
    lex-rand     I-Match with randomised lexicons: the collection's terms without the rarest and the most common,
                 cut by ``cut`` ``dictionaries`` different (seeded) ways; one tagged signature per dictionary
                 whose intersection with the document holds at least ``min_terms`` terms.
    descr-words  about ``words`` descriptive terms, each with a count threshold that splits the documents holding
                 the term near the middle (``coverage``); the document's bit vector is its signature; documents
                 with fewer than ``min_bits`` bits set are not judged.

Text is normalized by ``templater.shingles.normalize`` (the near-duplicate index's own normalization), so the
signatures and the shingles see the same words. Terms are the normalized words without stop words, optionally
stemmed (``TermOptions``). Sentences come from ``split_sentences`` on the raw text (abbreviations, initials,
decimals and paragraphs without a final full stop handled), each then normalized.

Signatures are ``str`` (md5) or non-negative ``int`` below 2**63, so they can be stored in SQLite as they are.

A fitted method can be persisted and restored (what the signature index stores beside its signatures, so a later
incremental add signs with the same collection statistics):

    method_params(method)         -> its parameters as JSON values (every constructor field, the term options too)
    method.fitted_state()         -> its collection statistics as JSON values, None for a method without any
    make_method(name, **params).load_state(state)   the same method again, ready to sign
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import MISSING, dataclass, field, fields
from itertools import combinations
from typing import Protocol

from .errors import InputError, StoreError, TemplaterError
from .shingles import normalize
from .unionfind import UnionFind
from .config import (DESCR_COVERAGE, DESCR_MIN_BITS, DESCR_MIN_DF, DESCR_WORDS, LEX_CUT, LEX_DICTIONARIES,
                     LEX_MAX_DF_SHARE, LEX_MIN_DF, LEX_MIN_TERMS, LEX_SEED, MIN_STEM, TOP_SENTENCES, TOP_TERMS,
                     WORD_WINDOW)

log = logging.getLogger(__name__)

# --- defaults (named here: they are the methods' documented parameters) ------------------------------------
SIGNATURE_VERSION = 1  # bump when a method's signatures change for the same text and parameters: stored
# signature indexes made by another version are refused
MASK32 = 0xFFFFFFFF
MASK63 = (1 << 63) - 1

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves s t d ll m re ve
""".split())  # the last few are what normalization leaves of contractions ("it's" -> "it s")

ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft vs etc eg ie cf al inc ltd co corp llc dept est approx fig figs no nos vol vols
pp ed eds rev gen gov sen rep capt col lt sgt cmdr adm jan feb mar apr jun jul aug sep sept oct nov dec mon tue
wed thu fri sat sun ave blvd rd
""".split())

Signature = Hashable


class SignatureMethod(Protocol):
    name: str
    needs_fit: bool  # True when signatures need collection statistics (fit, or load_state of a fitted one)

    def fit(self, texts: Iterable[str]) -> SignatureMethod: ...

    def signatures(self, text: str) -> list[Signature]: ...

    def fitted_state(self) -> dict | None: ...

    def load_state(self, state: dict | None) -> SignatureMethod: ...


# --- text: terms, stemming, sentences ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TermOptions:
    """How a text becomes terms: normalized words, minus ``stop_words``, stemmed when ``stem`` (off by default).

    ``stop_words`` replaces the built-in English list (give ``STOP_WORDS | {...}`` to extend it). Lemmatization
    is not offered: the stemmer is a light suffix stripper of our own (plurals, -ing, -ed, -ly).
    """

    stop_words: frozenset[str] = STOP_WORDS
    stem: bool = False

    def terms(self, text: str) -> list[str]:
        return self.select(normalize(text).split())

    def select(self, words: Iterable[str]) -> list[str]:
        """The terms among already normalized words."""
        kept = [w for w in words if w not in self.stop_words]
        return [stem(w) for w in kept] if self.stem else kept


_SUFFIXES = (("sses", "ss"), ("ies", "y"), ("ingly", ""), ("edly", ""), ("ing", ""), ("ed", ""), ("ly", ""),
             ("s", ""))


def stem(word: str) -> str:
    """Strip one common English suffix, leaving at least MIN_STEM letters ("parties" -> "party")."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            return word[: len(word) - len(suffix)] + replacement
    return word


_BOUNDARY = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019\u00bb)\]]*\s+")
_LAST_WORD = re.compile(r"(\S+)$")
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")  # e.g, i.e, u.s (the final dot is the boundary's); not 3.5


def split_sentences(text: str) -> list[str]:
    """Sentences of a text, in order. Every line is a paragraph: its last sentence needs no full stop.

    A full stop after a known abbreviation ("Dr.", "etc."), a single letter (initials: "J. R. R. Tolkien"),
    a dotted abbreviation ("U.S.") or before a lower-case word does not end a sentence; decimals ("3.14") are
    never split because the stop is not followed by a space.
    """
    return [s for line in text.splitlines() for s in _split_paragraph(line)]


def _split_paragraph(paragraph: str) -> list[str]:
    sentences, start = [], 0
    for boundary in _BOUNDARY.finditer(paragraph):
        if _ends_sentence(paragraph, boundary):
            sentences.append(paragraph[start:boundary.end()].strip())
            start = boundary.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


def _ends_sentence(paragraph: str, boundary: re.Match) -> bool:
    following = paragraph[boundary.end():boundary.end() + 1]
    if following.islower():
        return False
    if not boundary.group().startswith(".") or boundary.group().startswith(".."):
        return True
    last = _LAST_WORD.search(paragraph, max(0, boundary.start() - WORD_WINDOW), boundary.start())
    word = last.group(1).lstrip("(\"'\u201c\u2018\u00ab[").lower() if last else ""
    is_initial = len(word) == 1 and word.isalpha()
    return not (is_initial or word in ABBREVIATIONS or _DOTTED.fullmatch(word))


# --- shared helpers -----------------------------------------------------------------------------------------

def crc32(text: str) -> int:
    return zlib.crc32(text.encode("utf-8")) & MASK32


def digest63(data: bytes) -> int:
    """A stable 63-bit hash (fits a signed SQLite integer)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") & MASK63


def top_keys(weights: dict[str, float], count: int) -> list[str]:
    """The ``count`` keys of highest weight; ties broken by the key, so the choice is deterministic."""
    return sorted(weights, key=lambda k: (-weights[k], k))[:count]


@dataclass(slots=True)
class Collection:
    """Document frequencies of the fitted texts' terms; ``idf`` is smoothed, positive, highest for unseen terms."""

    documents: int = 0
    df: Counter = field(default_factory=Counter)

    def add(self, terms: Iterable[str]) -> None:
        self.documents += 1
        self.df.update(set(terms))

    def idf(self, term: str) -> float:
        return math.log((1 + self.documents) / (1 + self.df.get(term, 0))) + 1.0


def fit_collection(texts: Iterable[str], options: TermOptions) -> Collection:
    collection = Collection()
    for text in texts:
        collection.add(options.terms(text))
    return collection


def _require_fit(method: object, fitted: object) -> None:
    if fitted is None:
        raise TemplaterError(f"{type(method).__name__} needs collection statistics: call .fit(texts) before "
                             ".signatures(text)")


def _check_positive(name: str, value: float) -> None:
    if value <= 0:
        raise InputError(f"{name} must be positive, got {value}")


def _state_value(state: dict | None, key: str, method: object) -> object:
    if not isinstance(state, dict) or key not in state:
        raise StoreError(f"the stored fitted state of {getattr(method, 'name', method)} has no {key!r}: the "
                         "signature index is damaged; rebuild it (`templater index-signatures --replace`)")
    return state[key]


class _Stateless:
    """A method that needs no collection statistics: fit does nothing, there is no state to keep."""

    needs_fit = False

    def fit(self, texts: Iterable[str]):
        return self

    def fitted_state(self) -> dict | None:
        return None

    def load_state(self, state: dict | None):
        return self


class _CollectionBased:
    """A method whose statistics are the document frequencies of the fitted collection (``self.collection``)."""

    needs_fit = True

    def fitted_state(self) -> dict | None:
        if self.collection is None:
            return None
        return {"documents": self.collection.documents, "df": dict(sorted(self.collection.df.items()))}

    def load_state(self, state: dict | None):
        df = _state_value(state, "df", self)
        self.collection = Collection(int(_state_value(state, "documents", self)), Counter(df))
        return self


# --- the seven methods --------------------------------------------------------------------------------------

@dataclass(eq=False)
class MD5(_Stateless):
    """MD5 of the normalized text (hex). Equal exactly when the normalized texts are equal; blank: not judged."""

    name = "md5"

    def signatures(self, text: str) -> list[Signature]:
        normalized = normalize(text)
        return [hashlib.md5(normalized.encode("utf-8")).hexdigest()] if normalized else []


@dataclass(eq=False)
class TF(_Stateless):
    """CRC32 of the ``terms`` most frequent terms (ties by the term), concatenated in alphabetical order."""

    terms: int = TOP_TERMS
    options: TermOptions = field(default_factory=TermOptions)
    name = "tf"

    def __post_init__(self) -> None:
        _check_positive("terms", self.terms)

    def signatures(self, text: str) -> list[Signature]:
        counts = Counter(self.options.terms(text))
        return [crc32(" ".join(sorted(top_keys(counts, self.terms))))] if counts else []


@dataclass(eq=False)
class TFIDF(_CollectionBased):
    """CRC32 of the ``terms`` terms of highest TF*IDF (IDF from the fitted collection), in alphabetical order."""

    terms: int = TOP_TERMS
    options: TermOptions = field(default_factory=TermOptions)
    name = "tfidf"
    collection: Collection | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _check_positive("terms", self.terms)

    def fit(self, texts: Iterable[str]) -> TFIDF:
        self.collection = fit_collection(texts, self.options)
        return self

    def signatures(self, text: str) -> list[Signature]:
        _require_fit(self, self.collection)
        counts = Counter(self.options.terms(text))
        weights = {term: tf * self.collection.idf(term) for term, tf in counts.items()}
        return [crc32(" ".join(sorted(top_keys(weights, self.terms))))] if weights else []


def _sentence_terms(text: str, options: TermOptions) -> dict[str, list[str]]:
    """Each distinct sentence's normalized text -> its terms (sentences with no term are left out)."""
    out = {}
    for sentence in split_sentences(text):
        normalized = normalize(sentence)
        terms = options.select(normalized.split())
        if terms:
            out[normalized] = terms
    return out


def _sentences_signature(weights: dict[str, float], count: int) -> list[Signature]:
    return [crc32("\n".join(sorted(top_keys(weights, count))))] if weights else []


@dataclass(eq=False)
class LongSent(_Stateless):
    """CRC32 of the ``sentences`` longest sentences (length in terms; ties by text), in alphabetical order."""

    sentences: int = TOP_SENTENCES
    options: TermOptions = field(default_factory=TermOptions)
    name = "long-sent"

    def __post_init__(self) -> None:
        _check_positive("sentences", self.sentences)

    def signatures(self, text: str) -> list[Signature]:
        lengths = {sentence: float(len(terms)) for sentence, terms in _sentence_terms(text, self.options).items()}
        return _sentences_signature(lengths, self.sentences)


@dataclass(eq=False)
class HeavySent(_CollectionBased):
    """CRC32 of the ``sentences`` heaviest sentences: weight = sum of the TF*IDF of the sentence's distinct terms,
    where TF counts the term in the whole document and IDF comes from the fitted collection."""

    sentences: int = TOP_SENTENCES
    options: TermOptions = field(default_factory=TermOptions)
    name = "heavy-sent"
    collection: Collection | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _check_positive("sentences", self.sentences)

    def fit(self, texts: Iterable[str]) -> HeavySent:
        self.collection = fit_collection(texts, self.options)
        return self

    def signatures(self, text: str) -> list[Signature]:
        _require_fit(self, self.collection)
        sentences = _sentence_terms(text, self.options)
        tf = Counter(t for terms in sentences.values() for t in terms)
        weights = {s: sum(tf[t] * self.collection.idf(t) for t in set(terms)) for s, terms in sentences.items()}
        return _sentences_signature(weights, self.sentences)


@dataclass(eq=False)
class LexRand:
    """I-Match with randomised lexicons (Kolcz et al.): up to ``dictionaries`` signatures per document.

    The collection dictionary keeps the fitted terms found in at least ``min_df`` documents (rarer terms are the
    heaviest by IDF) and in at most ``max_df_share`` of them, or ``min_df`` if that is more (commoner ones are the
    lightest). Each of the
    ``dictionaries`` dictionaries drops a seeded random ``cut`` share of it. For dictionary k, a document whose
    distinct terms meet it in at least ``min_terms`` terms gets the signature (k << 32) | CRC32(sorted
    intersection). One shared signature makes a pair.
    """

    dictionaries: int = LEX_DICTIONARIES
    cut: float = LEX_CUT
    min_df: int = LEX_MIN_DF
    max_df_share: float = LEX_MAX_DF_SHARE
    min_terms: int = LEX_MIN_TERMS
    seed: int = LEX_SEED
    options: TermOptions = field(default_factory=TermOptions)
    name = "lex-rand"
    needs_fit = True
    lexicons: list[frozenset[str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("dictionaries", "min_df", "max_df_share", "min_terms"):
            _check_positive(name, getattr(self, name))
        if not 0 <= self.cut < 1:
            raise InputError(f"cut must be in [0, 1), got {self.cut}")

    def fit(self, texts: Iterable[str]) -> LexRand:
        collection = fit_collection(texts, self.options)
        most = max(self.max_df_share * collection.documents, self.min_df)
        base = sorted(t for t, df in collection.df.items() if self.min_df <= df <= most)
        if not base:
            log.warning("lex-rand: no term of the %d fitted documents is in %d to %d of them: every document goes "
                        "unjudged (fit on more documents, or lower min_df)", collection.documents, self.min_df, most)
        keep = len(base) - round(self.cut * len(base))
        self.lexicons = [frozenset(random.Random(self.seed * 1_000 + k).sample(base, keep))
                         for k in range(self.dictionaries)]
        return self

    def fitted_state(self) -> dict | None:
        return None if self.lexicons is None else {"lexicons": [sorted(lexicon) for lexicon in self.lexicons]}

    def load_state(self, state: dict | None) -> LexRand:
        self.lexicons = [frozenset(lexicon) for lexicon in _state_value(state, "lexicons", self)]
        return self

    def signatures(self, text: str) -> list[Signature]:
        _require_fit(self, self.lexicons)
        terms = set(self.options.terms(text))
        out = []
        for k, lexicon in enumerate(self.lexicons):
            shared = terms & lexicon
            if len(shared) >= self.min_terms:
                out.append((k << 32) | crc32(" ".join(sorted(shared))))
        return out


@dataclass(eq=False)
class DescrWords:
    """Descriptive words: a bit vector over about ``words`` terms, each with a count threshold.

    Fitting: a term found in at least ``min_df`` documents gets the count threshold t >= 2 whose share of the
    documents holding the term (those with count >= t) lies in ``coverage`` and nearest its middle (the smaller t
    on a tie): a bit that splits the term's documents near the middle tells most. Terms with no such threshold
    are left out; of the rest the ``words`` found in most documents are kept, in alphabetical order. (The
    lecture's "words covering 35-65% of documents" read as a share of all documents would leave only function
    words: in the dev corpus's 2,409 gold texts, 19 terms outside the stop list are in 35% of them.)
    A document's bit i is set when term i occurs at least its threshold times. Documents with fewer than
    ``min_bits`` bits set are not judged; the signature is a 63-bit hash of the vector, so equal vectors make
    a cluster.
    """

    words: int = DESCR_WORDS
    coverage: tuple[float, float] = DESCR_COVERAGE
    min_df: int = DESCR_MIN_DF
    min_bits: int = DESCR_MIN_BITS
    options: TermOptions = field(default_factory=TermOptions)
    name = "descr-words"
    needs_fit = True
    thresholds: dict[str, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("words", "min_df", "min_bits"):
            _check_positive(name, getattr(self, name))
        low, high = self.coverage
        if not 0 < low <= high < 1:
            raise InputError(f"coverage must be two shares 0 < low <= high < 1, got {self.coverage}")

    def fit(self, texts: Iterable[str]) -> DescrWords:
        histograms: dict[str, Counter] = defaultdict(Counter)  # term -> {count in a document: documents}
        for text in texts:
            for term, count in Counter(self.options.terms(text)).items():
                histograms[term][count] += 1
        chosen = {}
        for term, histogram in histograms.items():
            threshold = self._threshold(histogram)
            if threshold is not None:
                chosen[term] = (sum(histogram.values()), threshold)
        kept = sorted(chosen, key=lambda t: (-chosen[t][0], t))[: self.words]
        self.thresholds = {term: chosen[term][1] for term in sorted(kept)}
        return self

    def _threshold(self, histogram: Counter) -> int | None:
        holding = sum(histogram.values())
        if holding < self.min_df:
            return None
        low, high = self.coverage
        best, best_gap = None, None
        for t in range(2, max(histogram) + 1):
            share = sum(n for count, n in histogram.items() if count >= t) / holding
            gap = abs(share - (low + high) / 2)
            if low <= share <= high and (best_gap is None or gap < best_gap):
                best, best_gap = t, gap
        return best

    def fitted_state(self) -> dict | None:
        return None if self.thresholds is None else {"thresholds": [[t, n] for t, n in self.thresholds.items()]}

    def load_state(self, state: dict | None) -> DescrWords:
        self.thresholds = {term: int(count) for term, count in _state_value(state, "thresholds", self)}
        return self

    def vector(self, text: str) -> tuple[bool, ...] | None:
        """The document's bits in dictionary order, or None when fewer than ``min_bits`` are set."""
        _require_fit(self, self.thresholds)
        counts = Counter(self.options.terms(text))
        bits = tuple(counts.get(term, 0) >= t for term, t in self.thresholds.items())
        return bits if sum(bits) >= self.min_bits else None

    def signatures(self, text: str) -> list[Signature]:
        bits = self.vector(text)
        if bits is None:
            return []
        packed = int("".join("1" if b else "0" for b in bits), 2).to_bytes((len(bits) + 7) // 8, "big")
        return [digest63(packed)]


METHODS: dict[str, type] = {m.name: m for m in (MD5, TF, TFIDF, LongSent, HeavySent, LexRand, DescrWords)}


_PARAM_KINDS = ((bool, "true or false"), (int, "a whole number"), (float, "a number"),
                (tuple, "a list, e.g. [0.3,0.7]"), (str, "a word"))


def _check_param_type(method: str, key: str, value, default) -> None:
    """InputError when a parameter's value is not of the kind its default is (terms=abc where a number goes)."""
    if default is None:
        return
    kind, words = next(((k, w) for k, w in _PARAM_KINDS if isinstance(default, k)), (None, None))
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    fits = (isinstance(value, bool) if kind is bool else number and isinstance(value, int) if kind is int else
            number if kind is float else kind is None or isinstance(value, kind))
    if not fits:
        raise InputError(f"--param {key}={json.dumps(value) if not isinstance(value, str) else value}: {method}'s "
                         f"{key} takes {words} (default {json.dumps(list(default) if kind is tuple else default)})")


def make_method(name: str, **params) -> SignatureMethod:
    """A method by its name (``METHODS``) with its parameters; InputError names the known methods or parameters.

    Parameters may come as JSON values (what ``method_params`` gives and the index stores): ``options`` as
    {"stop_words": [...], "stem": bool}, tuples as lists. ``stem`` and ``stop_words`` may also be given on their
    own; they go into the term options.
    """
    try:
        factory = METHODS[name]
    except KeyError:
        raise InputError(f"unknown signature method {name!r}: choose one of {', '.join(METHODS)}") from None
    known = {f.name for f in fields(factory) if f.init}
    accepted = known | ({"stem", "stop_words"} if "options" in known else set())
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise InputError(f"{name} has no parameter {', '.join(unknown)}: give "
                         f"{'one of ' + ', '.join(sorted(accepted)) if accepted else 'none'}")
    kwargs = {key: tuple(value) if isinstance(value, list) else value
              for key, value in params.items() if key in known and key != "options"}
    defaults = {f.name: f.default for f in fields(factory) if f.init and f.default is not MISSING}
    for key, value in kwargs.items():
        _check_param_type(name, key, value, defaults.get(key))
    if "options" in known:
        kwargs["options"] = _term_options(params)
    try:
        return factory(**kwargs)
    except TypeError as e:  # a value of the wrong type reaching a comparison in __post_init__
        raise InputError(f"bad parameter value for {name} ({params}): {e}") from None


def _term_options(params: dict) -> TermOptions:
    given = params.get("options") or {}
    if isinstance(given, TermOptions):
        given = {"stop_words": given.stop_words, "stem": given.stem}
    merged = {**given, **{k: params[k] for k in ("stop_words", "stem") if k in params}}
    stop_words = merged.get("stop_words", STOP_WORDS)
    if isinstance(stop_words, str):
        raise InputError("stop_words must be a list of words, not a string")
    return TermOptions(stop_words=frozenset(stop_words), stem=bool(merged.get("stem", False)))


def method_params(method: SignatureMethod) -> dict:
    """Every constructor parameter of ``method`` as JSON values, in field order (stop words sorted)."""
    out = {}
    for f in fields(method):
        if not f.init:
            continue
        value = getattr(method, f.name)
        if isinstance(value, TermOptions):
            value = {"stop_words": sorted(value.stop_words), "stem": value.stem}
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def pairs_from_signatures(ids: Sequence[Hashable], signatures: Sequence[Iterable[Signature]]) -> set[tuple]:
    """Unordered pairs (a, b), a < b, of ids that share at least one signature; bucketed, not all-pairs."""
    if len(ids) != len(signatures):
        raise InputError(f"{len(ids)} ids but {len(signatures)} signature lists: give one list per id")
    buckets: dict[Signature, list] = defaultdict(list)
    for page_id, sigs in zip(ids, signatures):
        for sig in set(sigs):
            buckets[sig].append(page_id)
    return {(a, b) if a < b else (b, a)
            for members in buckets.values() if len(members) > 1
            for a, b in combinations(members, 2) if a != b}


def signature_components(buckets: Iterable[Sequence[Hashable]]) -> list[list]:
    """Connected components of the ids that share a bucket (a signature), each in first-met order; components
    ordered by their first id met. Every id of a bucket joins the bucket's first, so the work is linear."""
    sets = UnionFind()
    for bucket in buckets:
        if bucket:
            sets.add(bucket[0])
        for other in bucket[1:]:
            sets.union(bucket[0], other)
    groups = sets.components()
    return [members for members in groups.values() if len(members) > 1]
