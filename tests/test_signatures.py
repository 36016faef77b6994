"""The seven signature methods on hand-made documents, the sentence splitter, and pair bucketing."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from templater.errors import InputError, TemplaterError
from templater.shingles import normalize
from templater.signatures import (
    MD5,
    METHODS,
    STOP_WORDS,
    TF,
    TFIDF,
    DescrWords,
    HeavySent,
    LexRand,
    LongSent,
    TermOptions,
    make_method,
    method_params,
    pairs_from_signatures,
    split_sentences,
    stem,
)

WORDS = ("river stone cloud garden window lantern harbor meadow engine ticket violin pepper marble canyon "
         "ladder orchard comet saddle bucket mirror falcon tunnel anchor velvet").split()


def document(seed: int, length: int = 80) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(length))


# --- sentences, terms, stemming ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Dr. Smith came home. He slept.", ["Dr. Smith came home.", "He slept."]),
    ("J. R. R. Tolkien wrote it. It sold.", ["J. R. R. Tolkien wrote it.", "It sold."]),
    ("The rate is 3.5 percent. It rose.", ["The rate is 3.5 percent.", "It rose."]),
    ("It rose to 3.5. Then it fell.", ["It rose to 3.5.", "Then it fell."]),
    ("The U.S. Senate voted. Bills passed.", ["The U.S. Senate voted.", "Bills passed."]),
    ("Apples, pears, etc. are fruit. Yes!", ["Apples, pears, etc. are fruit.", "Yes!"]),
    ("A heading without a stop\nThe body. Its end", ["A heading without a stop", "The body.", "Its end"]),
    ('He said "Stop." Then he left. Why? Nobody knows',
     ['He said "Stop."', "Then he left.", "Why?", "Nobody knows"]),
    ("Wait... Then go.", ["Wait...", "Then go."]),
    ("", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_terms_drop_stop_words_and_accept_a_custom_list():
    assert TermOptions().terms("The cat and the Hat") == ["cat", "hat"]
    assert TermOptions(stop_words=STOP_WORDS | {"cat"}).terms("The cat and the Hat") == ["hat"]
    assert TermOptions(stop_words=frozenset()).terms("The cat") == ["the", "cat"]


def test_stemming_is_optional_and_strips_common_suffixes():
    assert [stem(w) for w in ["parties", "classes", "walked", "quickly", "cats", "bus", "is"]] == [
        "party", "class", "walk", "quick", "cat", "bus", "is"]
    assert TermOptions(stem=True).terms("cats walked") == ["cat", "walk"]
    assert TermOptions().terms("cats walked") == ["cats", "walked"]


# --- MD5 ---------------------------------------------------------------------------------------------------

def test_md5_ignores_what_normalization_removes_and_skips_blank_text():
    text = "Hello, World! A second sentence."
    assert MD5().signatures(text) == MD5().signatures(normalize(text))
    assert MD5().signatures(text) != MD5().signatures("Hello, World! A third sentence.")
    assert MD5().signatures("   ") == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab ,.Ab\n", max_size=12), st.text(alphabet="ab ,.Ab\n", max_size=12))
def test_md5_equal_only_for_equal_normalized_text(a, b):
    sa, sb = MD5().signatures(a), MD5().signatures(b)
    if normalize(a) and normalize(b):
        assert (sa == sb) == (normalize(a) == normalize(b))


# --- TF and TF*IDF -----------------------------------------------------------------------------------------

def test_tf_keeps_the_most_frequent_terms_whatever_their_order():
    text = "apple apple apple pear pear plum fig kiwi"
    method = TF(terms=2)
    assert method.signatures(text) == method.signatures("pear plum apple fig apple kiwi pear apple")
    assert method.signatures(text) == method.signatures(text.replace("kiwi", "lime"))  # not among the top 2
    assert method.signatures(text) != method.signatures(text.replace("pear", "lime"))
    assert method.signatures("the and of") == []


def test_tfidf_prefers_terms_rare_in_the_collection():
    collection = ["common words everywhere"] * 5 + ["zebra common"]
    method = TFIDF(terms=1).fit(collection)
    mostly_common = "common common zebra"  # TF*IDF: common 2 x 1.0, zebra 1 x 2.25
    assert method.signatures(mostly_common) == method.signatures("zebra")
    assert TF(terms=1).signatures(mostly_common) == TF(terms=1).signatures("common")


def test_collection_methods_refuse_to_sign_before_fit():
    for method in (TFIDF(), HeavySent(), LexRand(), DescrWords()):
        with pytest.raises(TemplaterError, match="fit"):
            method.signatures("some text")


# --- Long Sent and Heavy Sent ------------------------------------------------------------------------------

LONG = ("The harbor lights were switched on long before the fishing boats came home.\n"
        "Short one.\n"
        "Nobody in the village remembered a winter as cold as the one that followed the flood.\n"
        "Then it rained.")


def test_long_sent_signs_the_two_longest_sentences():
    method = LongSent()
    assert method.signatures(LONG) == method.signatures(LONG.replace("Short one.", "Another short line."))
    assert method.signatures(LONG) != method.signatures(LONG.replace("winter", "summer"))
    two_longest = "\n".join(LONG.splitlines()[::2])
    assert method.signatures(LONG) == method.signatures(two_longest)


def test_heavy_sent_weighs_sentences_by_rare_terms():
    collection = ["the village and the boats and the weather"] * 6 + ["quasar nebula"]
    method = HeavySent(sentences=1).fit(collection)
    text = "The village and the boats and the weather. Quasar nebula."
    assert method.signatures(text) == method.signatures("Quasar nebula.")
    assert LongSent(sentences=1).signatures(text) != LongSent(sentences=1).signatures("Quasar nebula.")


# --- Lex Rand ----------------------------------------------------------------------------------------------

def test_lex_rand_pairs_a_near_copy_but_not_an_unrelated_document():
    collection = [document(seed) for seed in range(40)]
    method = LexRand(max_df_share=1.0, min_terms=3).fit(collection)
    base = " ".join(WORDS[:12])
    near = base + " " + "zzz"  # a word outside every dictionary
    edited = base.replace("river", "mirror")
    other = " ".join(WORDS[12:])
    sigs = method.signatures(base)
    assert 1 <= len(sigs) <= method.dictionaries
    assert {s >> 32 for s in sigs} <= set(range(method.dictionaries))  # tagged with the dictionary's number
    assert set(sigs) == set(method.signatures(near))
    assert set(sigs) & set(method.signatures(edited))  # a dictionary without "river" or "mirror" still agrees
    assert not set(sigs) & set(method.signatures(other))


def test_lex_rand_dictionaries_drop_rare_and_common_terms_and_are_seeded():
    collection = ["alpha beta gamma"] * 10 + ["delta beta", "epsilon beta"] + [document(s) for s in range(8)]
    method = LexRand(cut=0.0, dictionaries=1, max_df_share=0.5).fit(collection)
    lexicon = method.lexicons[0]
    assert "delta" not in lexicon  # in one document only: among the heaviest
    assert "beta" not in lexicon  # in more than half the documents: among the lightest
    assert "alpha" in lexicon
    again = LexRand().fit(collection)
    assert again.lexicons == LexRand().fit(collection).lexicons
    assert LexRand(min_terms=50).fit(collection).signatures(collection[-1]) == []


# --- Descr Words -------------------------------------------------------------------------------------------

def descr_collection() -> list[str]:
    """Each of ten terms appears twice in half its documents and once in the other half."""
    docs = []
    for d in range(12):
        words = [f"filler{d}"]
        for i, term in enumerate(WORDS[:10]):
            words += [term] * (2 if (d + i) % 2 else 1)
        docs.append(" ".join(words))
    return docs


def test_descr_words_thresholds_split_each_terms_documents_near_the_middle():
    method = DescrWords(min_df=2).fit(descr_collection())
    assert set(method.thresholds) == set(WORDS[:10])  # the fillers are in one document each
    assert set(method.thresholds.values()) == {2}
    vector = method.vector("river river stone stone cloud cloud garden")
    assert vector is not None and sum(vector) == 3
    assert method.vector("river river stone stone cloud garden") is None  # two bits: not judged
    assert method.signatures("river river stone stone cloud garden") == []


def test_descr_words_equal_vectors_share_a_signature_and_the_dictionary_is_capped():
    method = DescrWords(min_df=2, words=4).fit(descr_collection())
    assert list(method.thresholds) == ["cloud", "engine", "garden", "harbor"]  # equal counts: alphabetical
    text = "cloud cloud engine engine garden garden harbor"
    assert method.signatures(text) and method.signatures(text) == method.signatures(text + " river river zebra")
    assert method.signatures(text) != method.signatures(text + " harbor")


@settings(max_examples=60, deadline=None)
@given(st.permutations(("river river stone stone cloud cloud garden window window lantern lantern harbor "
                        "meadow meadow engine").split()))
def test_descr_words_vector_is_stable_under_word_order(words):
    method = DescrWords(min_df=2).fit(descr_collection())
    text = " ".join(words)
    assert method.vector(text) == method.vector(" ".join(sorted(words)))
    assert method.signatures(text) == method.signatures(" ".join(sorted(words)))


# --- registry and pairs ------------------------------------------------------------------------------------

def test_every_method_is_reachable_by_name_and_bad_parameters_are_refused():
    assert list(METHODS) == ["md5", "tf", "tfidf", "long-sent", "heavy-sent", "lex-rand", "descr-words"]
    assert isinstance(make_method("tf", terms=3), TF)
    with pytest.raises(InputError, match="descr-words"):
        make_method("simhash")
    with pytest.raises(InputError, match="terms"):
        TF(terms=0)
    with pytest.raises(InputError, match="coverage"):
        DescrWords(coverage=(0.7, 0.3))


def test_pairs_from_signatures_buckets_shared_signatures():
    ids = ["a", "b", "c", "d"]
    sigs = [[1, 2], [2], [3], [1, 3]]
    assert pairs_from_signatures(ids, sigs) == {("a", "b"), ("a", "d"), ("c", "d")}
    assert pairs_from_signatures(ids, [[], [], [], []]) == set()
    with pytest.raises(InputError):
        pairs_from_signatures(ids, sigs[:2])


def test_every_method_pairs_exact_copies_in_a_fitted_collection():
    texts = [document(seed, 60).replace(" ", ". ", 6) for seed in range(10)]
    ids = list(range(len(texts))) + [100]
    corpus = texts + [texts[3]]
    params = {"lex-rand": {"max_df_share": 1.0}, "descr-words": {"min_df": 2}}  # a tiny, uniform collection
    for name in METHODS:
        method = make_method(name, **params.get(name, {})).fit(corpus)
        pairs = pairs_from_signatures(ids, [method.signatures(t) for t in corpus])
        assert (3, 100) in pairs, name


# --- params and fitted state (what the signature index persists) -----------------------------------------

def test_params_round_trip_as_json_values():
    method = make_method("descr-words", words=50, coverage=[0.3, 0.7], stem=True)
    params = method_params(method)
    assert params["coverage"] == [0.3, 0.7] and params["options"]["stem"] is True
    assert params["options"]["stop_words"] == sorted(STOP_WORDS)
    again = make_method("descr-words", **json.loads(json.dumps(params)))
    assert again.coverage == (0.3, 0.7) and again.options == method.options and method_params(again) == params
    assert method_params(make_method("md5")) == {}
    with pytest.raises(InputError, match="has no parameter stem: give none"):
        make_method("md5", stem=True)
    with pytest.raises(InputError, match="terms"):
        make_method("tf", terms="many")


def test_a_fitted_state_restores_a_method_that_signs_the_same():
    texts = [document(seed, 60).replace(" ", ". ", 6) for seed in range(12)]
    params = {"lex-rand": {"max_df_share": 1.0}, "descr-words": {"min_df": 2}}
    for name in METHODS:
        fitted = make_method(name, **params.get(name, {})).fit(texts)
        state = json.loads(json.dumps(fitted.fitted_state()))
        assert (state is None) == (not fitted.needs_fit), name
        restored = make_method(name, **method_params(fitted)).load_state(state)
        assert [restored.signatures(t) for t in texts] == [fitted.signatures(t) for t in texts], name
    with pytest.raises(TemplaterError, match="index-signatures --replace"):
        TFIDF().load_state({"documents": 3})
