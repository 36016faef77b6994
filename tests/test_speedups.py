"""The fast paths give exactly what their plain definitions give (the speed work must not change any output)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from templater import features
from templater.template import RELATED_SIZE_TEST
from templater.datatypes import Block, Page, Segmented

# Characters that stress the counts: cased and case-changing letters (İ lowers to two code points, Σ to a final
# or medial sigma), digits of other scripts, CJK punctuation, whitespace of every kind, quotes, surrogates.
TRICKY = "aZ9_ .,;:!?\"')\u201d\u00a9\u0130\u03a3\u03c3\u1e9e\u0660\u0967\u3002\uff0c\u3001\uff1f\uff01\u00a0\u2028" \
         "\u3000\t\n\x1c\u01c5\u0307\u00df\ufb01\ud800Copyright ALL RIGHTS RESERVED"
texts = st.text(alphabet=st.sampled_from(TRICKY) | st.characters(), min_size=1, max_size=40)


def page_of(block_texts, title):
    blocks = tuple(Block(i, None, "/html/body/p", "p", text, i % 3, 7 + i, 0, 0) for i, text in enumerate(block_texts))
    return Segmented(page=Page("p", "https://a.example/p", ""), blocks=blocks,
                     vector=np.zeros(len(blocks), dtype=np.uint32), title=title)


@settings(max_examples=400, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8), st.text(alphabet=st.sampled_from(TRICKY) | st.characters(),
                                                         max_size=30))
def test_text_columns_match_the_regex_definition(block_texts, title):
    seg = page_of(block_texts, title)
    plain = features._text_columns_plain(seg).tobytes()
    assert features._text_columns(seg).tobytes() == plain


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(texts, st.booleans()), min_size=1, max_size=8),
       st.text(alphabet=st.sampled_from(TRICKY) | st.characters(), max_size=30))
def test_text_columns_of_some_rows(rows_of, title):
    """With ``rows``, the wanted blocks' columns are those of the whole matrix, the others' lengths and punctuation
    share too, their OWN_TEXT_COLUMNS 0.0; the C pass and the definition agree."""
    seg = page_of([text for text, _ in rows_of], title)
    rows = np.array([wanted for _, wanted in rows_of], dtype=bool)
    whole = features._text_columns_plain(seg)
    some = features._text_columns(seg, rows)
    assert some.tobytes() == features._text_columns_plain(seg, rows).tobytes()
    assert some[rows].tobytes() == whole[rows].tobytes()
    shared = [k for k in range(10) if k not in features.OWN_TEXT_COLUMNS]
    assert some[:, shared].tobytes() == whole[:, shared].tobytes()
    assert not some[~rows][:, features.OWN_TEXT_COLUMNS].any()


ASCII_TRICKY = "aZyYlLrR9_ .,;:!?\"')(c)\t\n\x1c\x7fCopyright ALL RIGHTS RESERVED all rights reserved"
ascii_texts = st.text(alphabet=st.sampled_from(ASCII_TRICKY) | st.characters(max_codepoint=127), min_size=1,
                      max_size=60)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(ascii_texts, st.booleans()), min_size=1, max_size=8),
       st.text(alphabet=st.sampled_from(ASCII_TRICKY) | st.characters(max_codepoint=127), max_size=30))
def test_text_columns_of_ascii_texts(rows_of, title):
    """ASCII texts take the one-loop pass (both passes' counts together): the definition's columns, with title
    words at a text's start, middle and end, with and without ``rows``."""
    block_texts = [text for text, _ in rows_of]
    seg = page_of(block_texts + [" ".join(block_texts)], title)
    rows = np.array([wanted for _, wanted in rows_of] + [True], dtype=bool)
    assert features._text_columns(seg).tobytes() == features._text_columns_plain(seg).tobytes()
    assert features._text_columns(seg, rows).tobytes() == features._text_columns_plain(seg, rows).tobytes()


def test_text_columns_of_ascii_texts_with_a_changed_word_class():
    """Where the class table's word bit of a capital is not its lower-case letter's, ASCII texts take the two
    passes (the one-loop pass takes the word bit from the capital's own class): the words are still read from the
    lower-cased letters' classes, so the columns are the definition's."""
    saved = int(features._CLASS_TABLE[ord("Q")])
    try:
        features._CLASS_TABLE[ord("Q")] = saved & ~features._C_ALNUM & 0xFFFF
        seg = page_of(["QUICK quick Quick", "the QUEEN's quay", "Q"], "queen quick")
        assert features._text_columns(seg).tobytes() == features._text_columns_plain(seg).tobytes()
    finally:
        features._CLASS_TABLE[ord("Q")] = saved


def test_text_columns_title_words_and_case_folding():
    seg = page_of(["ΟΔΟΣ ΣΟΦΟΚΛΕΟΥΣ. The İstanbul river", "Copyright © 2020 all rights reserved  ", "ΣΣ x"],
                  "Istanbul οδος river")
    plain = features._text_columns_plain(seg).tobytes()
    assert features._text_columns(seg).tobytes() == plain


def test_text_columns_read_block_fields_as_python_does():
    """The C pass reads Block's fields from their slots; a block of a subclass whose text is a property, among
    plain blocks (the types alternate), is read through the property, as the definition reads it."""
    class Loud(Block):
        __slots__ = ()
        text = property(lambda self: Block.text.__get__(self).upper() + " LOUD",
                        lambda self, value: Block.text.__set__(self, value))

    seg = page_of(["Hello there. ", "The river", "x"], "river hello")
    blocks = tuple((Loud if i % 2 else Block)(i, None, b.tag_path, b.tag, b.text, b.link_chars, b.markup_bytes, 0, 0)
                   for i, b in enumerate(seg.blocks))
    seg = Segmented(page=seg.page, blocks=blocks, vector=seg.vector, title=seg.title)
    assert blocks[1].text == "THE RIVER LOUD"
    assert features._text_columns(seg).tobytes() == features._text_columns_plain(seg).tobytes()
    assert features._text_columns(seg)[1, 0] == len("THE RIVER LOUD")


# --- the compiled walk (templater._walk, Cython) against the plain walk -----------------------------------------------------

import gzip  # noqa: E402
import json  # noqa: E402
import zlib  # noqa: E402

import pytest  # noqa: E402

from conftest import SAMPLES  # noqa: E402
from templater import blocks, config, datatypes, native  # noqa: E402
from templater.parse import parse_html  # noqa: E402

needs_walk = pytest.mark.skipif(not native.COMPILED, reason="the compiled walk is not built here")


def block_key(block):
    return (block.index, block.xpath, block.tag_path, block.tag, block.text, block.link_chars, block.markup_bytes,
            block.hash, block.shape)


def assert_same_segmentation(markup):
    root = parse_html(markup)
    if root is None:
        return
    page = Page("p", "https://a.example/p", markup)
    fast, plain = blocks.segment(root, page), blocks._segment_plain(root, page)
    assert [block_key(b) for b in fast.blocks] == [block_key(b) for b in plain.blocks]
    assert all(a.element is b.element for a, b in zip(fast.blocks, plain.blocks))
    assert fast.vector.dtype == plain.vector.dtype and fast.vector.tobytes() == plain.vector.tobytes()
    assert fast.title == plain.title
    assert fast.chars.dtype == plain.chars.dtype == np.int64
    assert fast.chars.tolist() == plain.chars.tolist() == [len(b.text) for b in plain.blocks]
    assert fast.links.dtype == plain.links.dtype == np.int64
    assert fast.links.tolist() == plain.links.tolist() == [b.link_chars for b in plain.blocks]
    assert plain.path_index is None
    if fast.path_index is not None:  # counted by the walk: what tag_path_index counts from the blocks
        paths, of = fast.path_index
        plain_paths, plain_of = blocks.tag_path_index(plain)
        assert paths == plain_paths and of.dtype == plain_of.dtype == np.intp and of.tolist() == plain_of.tolist()
        assert blocks.path_mask(fast, lambda path: "/p" in path).tolist() == ["/p" in b.tag_path for b in plain.blocks]
    assert plain.declared is None
    if fast.declared is not None:  # what the segmentation walk gathers for the metadata
        assert_same_declared(fast.declared, root)


def assert_same_declared(found, root):
    from templater import metadata

    declared, props = metadata.declared_elements_plain(root)
    assert found[0] == declared and list(found[1]) == list(props)


@needs_walk
def test_c_walk_matches_the_plain_walk_on_the_samples():
    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    assert records
    for record in records:
        assert_same_segmentation(record["html"])


TAGS = ["div", "p", "a", "b", "i", "span", "br", "li", "ul", "h1", "td", "table", "body", "script", "em", "nav"]
piece = st.one_of(
    st.sampled_from(TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(TAGS).map(lambda t: f'<{t} class="x y" id="\u00e9t\u00e9" data-z>'),
    st.sampled_from([" ", "\n\t", "\u00a0", "\u2003", " \u3000 ", "&nbsp;", "&amp;", "<!-- c -->", "<?pi x?>"]),
    st.text(alphabet=st.sampled_from("ab C\u00e9\u0130\u03a3\u4e2d.,!\t\n\u00a0\u2028"), min_size=1, max_size=12),
)


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(piece, max_size=40), st.booleans())
def test_c_walk_matches_the_plain_walk_on_generated_markup(pieces, wrap):
    body = "".join(pieces)
    assert_same_segmentation(f"<html><head><title>T \u00e9</title></head><body>{body}</body></html>" if wrap
                             else body)


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=70), st.integers(min_value=0, max_value=2**32 - 1))
def test_walk_crc32_is_zlibs(data, start):
    assert native.walk.crc32(data, start) == zlib.crc32(data, start)
    assert native.walk.crc32(data) == zlib.crc32(data)


def sample_pages(limit=None):
    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    for record in records[:limit]:
        root = parse_html(record["html"])
        if root is not None:
            yield blocks.segment(root, Page("p", record["url"], record["html"]))


@needs_walk
def test_c_numbering_matches_the_plain_numbering():
    for seg in sample_pages():
        fast, plain = features.number_tree(seg), features._number_tree_plain(seg)
        for name in ("parent", "depth", "class_bits", "tag_bits", "hint", "owner"):
            a, b = getattr(fast, name), getattr(plain, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name


@needs_walk
def test_c_inside_matches_the_plain_inside():
    import random

    from templater import extract
    rng = random.Random(7)
    for seg in sample_pages():
        everything = list(seg.root.iter())
        for size in (0, 1, 3, 20):
            chosen = rng.sample(everything, min(size, len(everything)))
            assert extract._inside(seg, chosen).tobytes() == extract._inside_plain(seg, chosen).tobytes()


def plain_tree_passes(monkeypatch):
    monkeypatch.setattr(native, "walk", None)
    monkeypatch.setattr(native, "numeric", None)


@needs_walk
def test_c_tree_passes_match_the_plain_passes(monkeypatch):
    rng = np.random.default_rng(3)
    cases = []
    for seg in sample_pages():
        tree = features.number_tree(seg)
        marked = rng.random(len(tree.parent)) < 0.1
        values = rng.normal(size=len(tree.parent)) * 1e3
        cases.append((tree, marked, values, features.inside(tree, marked), features.sum_up(tree, values)))
    plain_tree_passes(monkeypatch)
    for tree, marked, values, inside, summed in cases:
        assert inside.tobytes() == features.inside(tree, marked).tobytes()
        assert summed.tobytes() == features.sum_up(tree, values).tobytes()



# --- the C feature matrices (block_features, context_features) against their numpy definitions ----------------

def assert_matrix_close(fast, slow, names):
    """Every element within 1e-12 (relative where larger than 1); NaN where the definition gives NaN. The C
    matrices are not the same floats everywhere: libm's log1p and numpy's SIMD one differ in the last bit, and
    numpy adds kernels longer than 11 with BLAS's dot."""
    assert fast.dtype == slow.dtype == np.float64 and fast.shape == slow.shape == (slow.shape[0], len(names))
    assert (np.isnan(fast) == np.isnan(slow)).all()
    error = np.abs(np.nan_to_num(fast) - np.nan_to_num(slow)) / np.maximum(1.0, np.abs(np.nan_to_num(slow)))
    worst = error.max(axis=0, initial=0.0)
    assert worst.max(initial=0.0) <= 1e-12, {n: float(e) for n, e in zip(names, worst) if e > 1e-12}


def assert_features_match(seg, tree=None, scores=None):
    """block_features and context_features (C where built) against _block_features_numpy and
    _context_features_numpy; the C result must have been taken (not a fall back to numpy)."""
    tree = features.number_tree(seg) if tree is None else tree
    text = features._text_columns(seg)
    fast = features.block_features(seg, tree)
    numeric = native.numeric
    assert numeric.block_features(text, tree.parent, tree.depth, tree.owner, tree.tag_bits, tree.class_bits, tree.hint,
                               seg.blocks, features._OWNER_COLUMN, features._BLOCK_SIZES,
                               features._BLOCK_CONSTANTS) is not None
    assert_matrix_close(fast, features._block_features_numpy(seg, tree, text), features.FEATURE_NAMES)
    if scores is None:
        scores = np.random.default_rng(len(seg.blocks)).random(len(seg.blocks))
    context = features.context_features(seg, tree, scores)
    assert numeric.context_features(scores, seg.block_chars(), tree.parent, tree.owner, features.CONTEXT_LEVELS,
                                 features.CONTEXT_WIDTHS, features.MIN_SCORE) is not None
    assert_matrix_close(context, features._context_features_numpy(seg, tree, scores), features.CONTEXT_NAMES)
    return fast


@needs_walk
def test_c_feature_matrices_match_numpy_on_the_samples():
    from templater import ann, fallback
    weights = fallback.default_weights()
    hints = regions = 0
    for seg in sample_pages():
        if not seg.blocks:
            continue
        tree = features.number_tree(seg)
        first = ann.predict_mean(weights.first, features.block_features(seg, tree))
        found = assert_features_match(seg, tree, first)
        for scores in (np.zeros(len(first)), first * (np.arange(len(first)) % 3 == 0), np.ones(len(first))):
            assert_features_match(seg, tree, scores)
        hints += bool(found[:, features.FEATURE_NAMES.index("page_has_hint")].any())
        regions += bool(found[:, features.FEATURE_NAMES.index("in_region")].any())
    assert hints and regions  # the samples exercise both the hint and the region columns


TEXT = st.text(alphabet=st.sampled_from("ab Cd.,!?19 \u00e9\u4e2d\u00a9"), min_size=1, max_size=80)
CLASSES = ["comment", "nav", "footer", "sidebar", "content", "post-body", "share", "ad", "meta", "headline", "x"]


@st.composite
def nested_markup(draw):
    """Nested elements (lists, tables, links, content hints, class/id words) with text between them."""
    out = []
    open_tags = []
    for _ in range(draw(st.integers(0, 40))):
        action = draw(st.integers(0, 3))
        if action == 0 or not open_tags:
            tag = draw(st.sampled_from(["div", "p", "ul", "li", "a", "article", "main", "section", "nav", "footer",
                                        "aside", "table", "td", "h1", "h2", "span", "form", "blockquote", "figure"]))
            attrs = ""
            if draw(st.booleans()):
                attrs += f' class="{draw(st.sampled_from(CLASSES))} {draw(st.sampled_from(CLASSES))}"'
            if draw(st.integers(0, 3)) == 0:
                attrs += draw(st.sampled_from([' itemprop="articleBody"', ' role="main"', ' id="mainContent"',
                                               ' itemtype="https://schema.org/NewsArticle"', ' ID="sideBar"',
                                               ' class="first" class="second comment"', ' class', ' id=""',
                                               ' class="nav&amp;menu &#233;t&#xe9;"', ' role="navigation"',
                                               ' itemprop="articleBody" itemprop="x"', ' data-class="nav"']))
            out.append(f"<{tag}{attrs}>")
            open_tags.append(tag)
        elif action == 1:
            out.append(f"</{open_tags.pop()}>")
        else:
            out.append(draw(TEXT))
    return "".join(out)


def segment_markup(body, title="Title words here"):
    markup = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    root = parse_html(markup)
    return blocks.segment(root, Page("p", "https://a.example/p", markup)) if root is not None else None


@needs_walk
@settings(max_examples=300, deadline=None)
@given(nested_markup())
def test_c_feature_matrices_match_numpy_on_generated_markup(body):
    seg = segment_markup(body)
    if seg is not None and seg.blocks:
        assert_features_match(seg)


@needs_walk
def test_c_feature_matrices_edge_cases():
    cases = {
        "one block": "<p>a single short block</p>",
        "no link chars, no hint, no region": "<div><p>tiny</p><p>text</p></div>",
        "all links": "<ul><li><a href='x'>one link here</a></li><li><a href='y'>two</a></li></ul>",
        "hints": "<main><article><p>" + "Long sentence, with words. " * 8 + "</p></article></main><p>tail</p>",
        # nested 200 deep (libxml2's parser stops near 255)
        "deep": "<div>" * 200 + "<p>" + "deep text, far down. " * 5 + "</p>" + "</div>" * 200 + "<p>top</p>",
        "one block at the top": "text straight in the body",
    }
    for name, body in cases.items():
        seg = segment_markup(body)
        assert seg.blocks, name
        found = assert_features_match(seg)
        assert found.shape == (len(seg.blocks), len(features.FEATURE_NAMES)), name
    seg = segment_markup(cases["no link chars, no hint, no region"])
    found = features.block_features(seg)
    for column in ("in_hint", "in_top_hint", "in_region", "in_region_parent", "page_has_hint", "link_density"):
        assert not found[:, features.FEATURE_NAMES.index(column)].any(), column
    deep = features.block_features(segment_markup(cases["deep"]))
    assert deep[0, features.FEATURE_NAMES.index("depth")] == 1.0 and deep[0, features.FEATURE_NAMES.index("in_region")]


def arrays_page(draw):
    """A random tree numbered parents first (possibly several tops) with owners, flags and text columns; the
    blocks carry only their tags."""
    n = draw(st.integers(1, 30))
    parent = [-1] + [draw(st.integers(-1, e - 1)) for e in range(1, n)]
    depth = []
    for e in range(n):
        depth.append(depth[parent[e]] + 1 if parent[e] >= 0 else 0)
    count = draw(st.integers(1, 25))
    owner = [draw(st.integers(0, n - 1)) for _ in range(count)]
    bits = st.integers(0, (1 << 13) - 1)
    tree = features.Tree(parent=np.array(parent, dtype=np.int64), depth=np.array(depth, dtype=np.int64),
                         class_bits=np.array([draw(bits) for _ in range(n)], dtype=np.uint32),
                         tag_bits=np.array([draw(bits) & 1023 for _ in range(n)], dtype=np.uint32),
                         hint=np.array([draw(st.integers(0, 4)) == 0 for _ in range(n)], dtype=bool),
                         owner=np.array(owner, dtype=np.int64))
    ratio = st.floats(0.0, 1.0)
    rows = []
    for _ in range(count):
        chars = draw(st.integers(1, 5000))
        rows.append((chars, draw(st.integers(0, chars)), draw(st.integers(0, 9000)), draw(st.integers(0, chars)),
                     draw(ratio), float(draw(st.booleans())), draw(ratio), draw(ratio), float(draw(st.booleans())),
                     draw(ratio)))
    tags = [draw(st.sampled_from(["p", "div", "li", "td", "h1", "h3", "pre", "option", "nav", "a", "b"]))
            for _ in range(count)]
    blocks_ = tuple(Block(i, None, "/html/body/" + tag, tag, "x", 0, 0, 0, 0) for i, tag in enumerate(tags))
    seg = Segmented(page=Page("p", "https://a.example/p", ""), blocks=blocks_, vector=np.zeros(count, dtype=np.uint32))
    return seg, tree, np.array(rows, dtype=np.float64)


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_c_feature_matrices_match_numpy_on_generated_arrays(data):
    seg, tree, text = arrays_page(data.draw)
    numeric = native.numeric
    found = numeric.block_features(text, tree.parent, tree.depth, tree.owner, tree.tag_bits, tree.class_bits, tree.hint,
                                seg.blocks, features._OWNER_COLUMN, features._BLOCK_SIZES, features._BLOCK_CONSTANTS)
    fast = np.frombuffer(found, dtype=np.float64).reshape(len(seg.blocks), len(features.FEATURE_NAMES))
    assert_matrix_close(fast, features._block_features_numpy(seg, tree, text), features.FEATURE_NAMES)
    scores = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(seg.blocks), max_size=len(seg.blocks))))
    chars = text[:, 0].astype(np.int64)
    found = numeric.context_features(scores, chars, tree.parent, tree.owner, features.CONTEXT_LEVELS,
                                  features.CONTEXT_WIDTHS, features.MIN_SCORE)
    fast = np.frombuffer(found, dtype=np.float64).reshape(len(seg.blocks), len(features.CONTEXT_NAMES))
    seg = Segmented(page=seg.page, blocks=tuple(Block(i, None, "/p", "p", "x" * int(c), 0, 0, 0, 0)
                                                for i, c in enumerate(chars)), vector=seg.vector)
    assert_matrix_close(fast, features._context_features_numpy(seg, tree, scores), features.CONTEXT_NAMES)


@needs_walk
def test_c_feature_matrices_leave_other_arrays_to_numpy():
    """Trees not numbered parents first, or arrays of other kinds: the C functions answer None and the
    features come from numpy."""
    seg = segment_markup("<div><p>" + "Some words, and more. " * 4 + "</p><p>x</p></div><ul><li>y</li></ul>")
    tree = features.number_tree(seg)
    n = len(tree.parent)
    order = np.arange(n)[::-1].copy()  # renumber from the bottom up: children before parents
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    reversed_tree = features.Tree(parent=np.where(tree.parent[order] >= 0, position[tree.parent[order]], -1),
                                  depth=tree.depth[order], class_bits=tree.class_bits[order],
                                  tag_bits=tree.tag_bits[order], hint=tree.hint[order], owner=position[tree.owner])
    text = features._text_columns(seg)
    numeric = native.numeric
    args = (seg.blocks, features._OWNER_COLUMN, features._BLOCK_SIZES, features._BLOCK_CONSTANTS)
    t = reversed_tree
    assert numeric.block_features(text, t.parent, t.depth, t.owner, t.tag_bits, t.class_bits, t.hint, *args) is None
    assert numeric.block_features(text.astype(np.float32), tree.parent, tree.depth, tree.owner, tree.tag_bits,
                               tree.class_bits, tree.hint, *args) is None
    assert numeric.block_features(np.asfortranarray(text), tree.parent, tree.depth, tree.owner, tree.tag_bits,
                               tree.class_bits, tree.hint, *args) is None
    assert (features.block_features(seg, reversed_tree).tobytes()
            == features._block_features_numpy(seg, reversed_tree, text).tobytes())
    assert_matrix_close(features.block_features(seg, reversed_tree), features.block_features(seg, tree),
                 features.FEATURE_NAMES)
    scores = np.linspace(0.0, 1.0, len(seg.blocks))
    assert numeric.context_features(scores, seg.block_chars(), t.parent, t.owner, 3, (1, 3, 10), 1e-6) is None
    assert numeric.context_features(scores[::-1], seg.block_chars(), tree.parent, tree.owner, 3, (1, 3, 10), 1e-6) is None
    assert (features.context_features(seg, reversed_tree, scores).tobytes()
            == features._context_features_numpy(seg, reversed_tree, scores).tobytes())


def assert_same_numbering(seg):
    fast, plain = features.number_tree(seg), features._number_tree_plain(seg)
    for name in ("parent", "depth", "class_bits", "tag_bits", "hint", "owner"):
        a, b = getattr(fast, name), getattr(plain, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name


@needs_walk
@settings(max_examples=300, deadline=None)
@given(nested_markup())
def test_c_numbering_matches_the_plain_numbering_on_generated_markup(body):
    seg = segment_markup(body)
    if seg is not None and seg.blocks:
        assert native.walk.number_tree(seg.blocks) is not None
        assert_same_numbering(seg)


@needs_walk
def test_c_class_words_cache_forgets_without_changing_the_bits():
    """The C table of (class, id) bits, emptied every few pairs: the same bits as the plain numbering."""
    walk = native.walk
    configure = (sorted(features._TAG_BITS.items()), features._word_bits)
    try:
        walk.configure_tree(*configure, 3)
        for seg in sample_pages(limit=8):
            assert_same_numbering(seg)
    finally:
        walk.configure_tree(*configure, features.CLASS_CACHE_SIZE)
    for seg in sample_pages(limit=8):
        assert_same_numbering(seg)


# What the class/id tokenizer meets: both cases (upper-case runs before a lower-case letter), "x" between digits,
# separators, a stem's ends ("fb", "ads", "signup", "sr"), non-ASCII letters (never part of a word).
CLASS_CHARS = "aAbBxXsSzZ0123456789x -_/:\u00e9\u00c9\u0130\u212a\ufb01\U0001d400"
class_texts = st.lists(st.sampled_from(CLASS_CHARS) | st.characters() | st.sampled_from(
    ["fb", "ADS", "Ad", "signUp", "sr", "navBar", "HTMLNav", "300x250", "mainContent", "comment"]),
    max_size=20).map("".join)


@needs_walk
@settings(max_examples=500, deadline=None)
@given(class_texts, class_texts)
def test_c_class_words_match_the_regex_definition(class_, id_):
    """The numbering's C tokenizer and word table give features._words_bits (the regexes) for any pair."""
    assert native.walk.words_bits(class_, id_) == features._words_bits(class_, id_)


@needs_walk
def test_c_lowering_is_str_lower_on_every_code_point():
    """The walk lowers a block's text for its hash by each code point's simple lower-case mapping: str.lower's on
    every code point but U+0130 and U+03A3, whose text it leaves to str.lower."""
    lower = native.walk.lower_text
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c not in (0x130, 0x3A3))
    assert lower(every) == every.lower()
    for text in ("\u0130stanbul", "\u039f\u0394\u039f\u03a3 x", "a\u03a3", "\u03a3"):
        assert lower(text) is None  # str.lower decides (İ lowers to two code points, Σ by its neighbours)
    assert lower("\u023a\u1e9e\u00c9t\u00c9 \u2019Quote\u201d") == "\u023a\u1e9e\u00c9t\u00c9 \u2019Quote\u201d".lower()


def lxml_rule_elements(seg, rules):
    from lxml import etree
    return [e for xpath in rules for e in xpath(seg.root) if isinstance(e, etree._Element)]


def rules_of(root):
    """Container rules in both forms template.py writes, for the ids and class tokens a page has."""
    from lxml import etree
    paths = set()
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        if element.get("id") and "'" not in element.get("id"):
            paths.add(f"//*[@id='{element.get('id')}']")
        for token in (element.get("class") or "").split()[:2]:
            if "'" not in token:
                paths.add(f"//{element.tag}[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]")
    # the related boxes' rules carry the size test
    paths |= {f"{p}[{RELATED_SIZE_TEST}]" for p in sorted(paths)[::2]}
    return [etree.XPath(p) for p in sorted(paths)]


@needs_walk
def test_c_rule_matching_matches_lxml_xpath():
    from templater import extract
    for seg in sample_pages():
        rules = tuple(rules_of(seg.root))
        for start in range(0, len(rules), 3):
            chosen = rules[start:start + 3]
            fast, slow = extract._rule_elements(seg, chosen), lxml_rule_elements(seg, chosen)
            assert len(fast) == len(slow) and all(a is b for a, b in zip(fast, slow))
    assert any(r.path.endswith(f"[{RELATED_SIZE_TEST}]") for r in rules)


@needs_walk
def test_rules_c_cannot_take_go_to_lxml_beside_those_it_can():
    from lxml import etree

    from templater import extract
    anchor = "//*[@id='comments']/ancestor-or-self::*[following-sibling::*][1]/following-sibling::*"
    markup = ("<html><body><div class='box'><p>one two</p></div><h2><a id='comments'></a>Comments</h2>"
              "<p class='box'>first comment here</p><p>second</p></body></html>")
    seg = blocks.segment(parse_html(markup), Page("p", "https://a.example/p", markup))
    rules = tuple(etree.XPath(p) for p in (
        anchor, f"//div[contains(concat(' ', normalize-space(@class), ' '), ' box ')][{RELATED_SIZE_TEST}]"))
    fast, slow = extract._rule_elements(seg, rules), lxml_rule_elements(seg, rules)
    assert {id(e) for e in fast} == {id(e) for e in slow} and len(fast) == len(slow) == 3


@needs_walk
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["div", "p", "section", "span"]),
                          st.text(alphabet=st.sampled_from(" \t\n\r\u00a0abc-\u00e9"), max_size=12),
                          st.text(alphabet=st.sampled_from("abc-\u00e9 "), max_size=6)), max_size=12),
       st.sampled_from(["a", "b", "abc", "c-a", "\u00e9", "a b", "", "c\ta"]))
def test_c_rule_matching_matches_lxml_on_generated_classes(elements, token):
    """(A token of one word is looked for in the class value as it is; one with white space, or none, in its
    normalize-space'd copy: both against lxml's XPath.)"""
    from lxml import etree

    from templater import extract
    body = "".join(f'<{tag} class="{cls}" id="{ident}">x</{tag}>' for tag, cls, ident in elements)
    markup = f"<html><body>{body}<div class='{token} z' id='{token}'>y</div></body></html>"
    seg = blocks.segment(parse_html(markup), Page("p", "https://a.example/p", markup))
    rules = tuple(etree.XPath(p) for p in (
        f"//*[@id='{token}']", f"//div[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]",
        f"//span[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]",
        f"//p[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')][{RELATED_SIZE_TEST}]"))
    fast, slow = extract._rule_elements(seg, rules), lxml_rule_elements(seg, rules)
    assert len(fast) == len(slow) and all(a is b for a, b in zip(fast, slow))


@needs_walk
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()) | st.sampled_from("\x00\x1f\x7f\t\n\r\ud800\udfff"),
               max_size=60))
def test_c_clean_encoding_matches_encode_and_translate(text):
    from templater import parse
    assert native.numeric.utf8_controls_to_space(text) == text.encode("utf-8", "replace").translate(
        parse._CONTROL_TO_SPACE)


# --- the C ensemble forward pass (templater._numeric.ensemble) against ann's numpy definition --------------------------
# Not bit for bit: the C pass adds the weighted sums in another order than numpy's matmul (fused where the CPU has
# FMA) and computes tanh and exp itself, so the scores may differ in their last bits. They must agree to 1e-12 and
# give the same keep/drop decisions.

from templater import ann, fallback  # noqa: E402

TOLERANCE = 1e-12


def numpy_ensemble(monkeypatch):
    monkeypatch.setattr(ann, "_predict_mean_c", lambda networks, inputs: None)


def assert_close(fast, plain):
    assert fast.dtype == plain.dtype == np.float64 and fast.shape == plain.shape
    assert np.isfinite(plain).all()
    assert np.abs(fast - plain).max(initial=0.0) <= TOLERANCE


def portable_scores(networks, inputs):
    """The C pass's copy for any CPU (predict_mean takes the AVX2 copy where the CPU has AVX2)."""
    out = np.empty(len(inputs))
    native.numeric.ensemble(ann.packed_ensemble(networks), inputs, out, len(inputs), inputs.shape[1],
                          len(networks[0].hidden_bias), len(networks), True)
    return out


@needs_walk
def test_c_ensemble_matches_numpy_on_the_samples(monkeypatch):
    weights = fallback.default_weights()
    cases, rows = [], 0
    for seg in sample_pages():
        if not seg.blocks:
            continue
        tree = features.number_tree(seg)
        block = features.block_features(seg, tree)
        first = ann._predict_mean_c(weights.first, block)
        assert first is not None  # the C pass takes the shipped ensembles
        plain_first = ann._predict_mean_numpy(weights.first, block)
        assert_close(first, plain_first)
        assert_close(portable_scores(weights.first, block), plain_first)
        # the second stage on the same inputs both ways (the numpy first stage's context)
        both = np.hstack([block, features.context_features(seg, tree, plain_first)])
        plain_second = ann._predict_mean_numpy(weights.second, both)
        assert_close(ann._predict_mean_c(weights.second, both), plain_second)
        assert_close(portable_scores(weights.second, both), plain_second)
        scores = fallback.score_blocks(seg, weights)
        keep = fallback.select_blocks(seg, weights=weights)
        allowed = np.arange(len(seg.blocks)) % 4 != 1
        behind = fallback.select_blocks(seg, weights=weights, allowed=allowed)
        fdr = fallback.select_blocks(seg, weights=weights, method="fdr")
        cases.append((seg, allowed, scores, keep, behind, fdr))
        rows += len(seg.blocks)
    assert len(cases) > 5 and rows > 500
    numpy_ensemble(monkeypatch)
    for seg, allowed, scores, keep, behind, fdr in cases:
        assert_close(scores, fallback.score_blocks(seg, weights))
        assert keep.tobytes() == fallback.select_blocks(seg, weights=weights).tobytes()
        assert behind.tobytes() == fallback.select_blocks(seg, weights=weights, allowed=allowed).tobytes()
        assert fdr.tobytes() == fallback.select_blocks(seg, weights=weights, method="fdr").tobytes()


@st.composite
def ensembles_and_inputs(draw):
    """An ensemble whose members share their standardisation (as training makes them), and inputs for it: moderate
    values, zeros, and rows with one huge entry (|x| >= 1e9) that saturates tanh; biases that saturate tanh and
    the sigmoid. The huge entries are alone in their row, so no sum cancels them (where such sums cancel, the
    order of the additions decides and no tolerance holds). Hypothesis draws the shapes, the scales and which
    rows and weights are extreme or zero; a seeded generator fills in the bulk of the values."""
    hidden, count = draw(st.sampled_from([(8, 3), (1, 1), (3, 2), (5, 4), (8, 1), (10, 3)]))
    width, rows = draw(st.integers(1, 80)), draw(st.integers(0, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    zero_share = draw(st.sampled_from([0.0, 0.3, 1.0]))

    def moderate(shape, scale):
        values = rng.uniform(-scale, scale, shape)
        values[rng.random(shape) < zero_share] = 0.0
        return values

    mean, std = moderate(width, 4.0), rng.uniform(0.5, 4.0, width)
    bias_scale, output_scale = draw(st.sampled_from([1.0, 30.0])), draw(st.sampled_from([1.0, 3.0]))
    networks = tuple(ann.Network(mean=mean.copy(), std=std.copy(), hidden_weights=moderate((width, hidden), 1.0),
                                 hidden_bias=rng.uniform(-bias_scale, bias_scale, hidden),
                                 output_weights=rng.uniform(-output_scale, output_scale, hidden),
                                 output_bias=draw(st.floats(-80, 80))) for _ in range(count))
    inputs = moderate((rows, width), 4.0)
    for row in range(rows):
        if draw(st.booleans()):
            huge = draw(st.floats(1e9, 1e300))
            inputs[row] = 0.0
            inputs[row, draw(st.integers(0, width - 1))] = huge if draw(st.booleans()) else -huge
    return networks, inputs


@needs_walk
@settings(max_examples=300, deadline=None)
@given(ensembles_and_inputs())
def test_c_ensemble_matches_numpy_on_generated_networks(case):
    networks, inputs = case
    fast = ann._predict_mean_c(networks, inputs)
    assert fast is not None
    plain = ann._predict_mean_numpy(networks, inputs)
    assert_close(fast, plain)
    assert_close(portable_scores(networks, inputs), plain)


@needs_walk
def test_c_ensemble_edges():
    weights = fallback.default_weights()
    rng = np.random.default_rng(5)
    for networks in (weights.first, weights.second):
        width = len(networks[0].mean)
        assert_close(ann._predict_mean_c(networks, np.zeros((0, width))), np.zeros(0))
        for inputs in (np.zeros((1, width)), rng.normal(size=(1, width)), np.full((3, width), 1e12),
                       np.full((3, width), -1e12), rng.normal(size=(40, width)) * 1e3):
            plain = ann._predict_mean_numpy(networks, inputs)
            assert_close(ann._predict_mean_c(networks, inputs), plain)
            assert_close(portable_scores(networks, inputs), plain)
        # what the C pass does not take goes to numpy, which gives the same numbers as ever
        inputs = rng.normal(size=(6, width))
        for other in (np.asfortranarray(inputs), inputs.astype(np.float32), np.hstack([inputs, inputs])[:, ::2],
                      inputs[:, :-1], inputs[0]):
            assert ann._predict_mean_c(networks, other) is None
        assert ann._predict_mean_c(networks[:1] + (ann.Network(networks[0].mean + 1, networks[0].std,
                                                                 *[getattr(networks[1], name) for name in (
                                                                     "hidden_weights", "hidden_bias",
                                                                     "output_weights", "output_bias")]),),
                                   inputs) is None  # members that do not share their standardisation
        fortran = np.asfortranarray(inputs)
        assert ann.predict_mean(networks, fortran).tobytes() == ann._predict_mean_numpy(networks, fortran).tobytes()


def rows_one_at_a_time(networks, inputs, portable):
    """The C pass over each row alone (a one-row call takes the one-row kernel)."""
    out = np.empty(len(inputs))
    for row in range(len(inputs)):
        native.numeric.ensemble(ann.packed_ensemble(networks), inputs[row:row + 1], out[row:row + 1], 1,
                                inputs.shape[1], len(networks[0].hidden_bias), len(networks), portable)
    return out


@needs_walk
@settings(max_examples=200, deadline=None)
@given(ensembles_and_inputs())
def test_c_ensemble_two_rows_at_once_give_each_row_its_own_floats(case):
    """The kernel that runs two rows at a time (24 hidden units: the shipped shape, 3 x 8) gives each row the very
    floats the one-row kernel gives it, on either copy (AVX2 with FMA, any CPU)."""
    networks, inputs = case
    for portable in (False, True):
        together = np.empty(len(inputs))
        native.numeric.ensemble(ann.packed_ensemble(networks), inputs, together, len(inputs), inputs.shape[1],
                                len(networks[0].hidden_bias), len(networks), portable)
        assert together.tobytes() == rows_one_at_a_time(networks, inputs, portable).tobytes()


@needs_walk
def test_c_ensemble_two_rows_at_once_on_the_shipped_weights():
    weights = fallback.default_weights()
    rng = np.random.default_rng(11)
    for networks in (weights.first, weights.second, weights.expert_first, weights.expert_second):
        assert len(networks[0].hidden_bias) * len(networks) == 24
        inputs = rng.normal(size=(37, len(networks[0].mean))) * rng.choice([1e-3, 1.0, 1e3], size=(37, 1))
        for portable in (False, True):
            together = np.empty(len(inputs))
            native.numeric.ensemble(ann.packed_ensemble(networks), inputs, together, len(inputs),
                                    inputs.shape[1], len(networks[0].hidden_bias), len(networks), portable)
            assert together.tobytes() == rows_one_at_a_time(networks, inputs, portable).tobytes()


def stage_steps(seg, tree, block, first_stage, second_stage, allowed):
    """fallback.stage_scores' steps one call at a time (the C pass of each where compiled)."""
    first = ann.predict_mean(first_stage, block)
    if allowed is not None:
        first = first * allowed
    return ann.predict_mean(second_stage, np.hstack([block, features.context_features(seg, tree, first)]))


@needs_walk
def test_two_stage_in_one_call_is_the_steps_one_at_a_time():
    """fallback._stage_scores_c (templater._numeric.two_stage) gives the floats of the steps it replaces, with and
    without an allowed mask, for both pairs of stages of the shipped weights. With ``rows`` it runs the second stage
    only over those blocks and the first only over the allowed ones: the wanted rows get the floats of the whole
    pass, the others 0.0, as stage_scores' numpy steps give them (all rows computed, the others zeroed)."""
    weights = fallback.default_weights()
    pages = 0
    for seg in sample_pages():
        if not seg.blocks:
            continue
        tree = features.number_tree(seg)
        block = features.block_features(seg, tree)
        rng = np.random.default_rng(len(seg.blocks))
        for allowed in (None, rng.random(len(seg.blocks)) < 0.7, np.zeros(len(seg.blocks), dtype=bool)):
            for rows in (None, allowed, rng.random(len(seg.blocks)) < 0.5, np.ones(len(seg.blocks), dtype=bool)):
                for first_stage, second_stage in ((weights.first, weights.second),
                                                  (weights.expert_first, weights.expert_second)):
                    fast = fallback._stage_scores_c(seg, tree, block, first_stage, second_stage, allowed, rows)
                    assert fast is not None
                    steps = stage_steps(seg, tree, block, first_stage, second_stage, allowed)
                    assert fast.tobytes() == (steps if rows is None else np.where(rows, steps, 0.0)).tobytes()
        pages += 1
    assert pages > 5


def test_stage_scores_rows_without_the_c_pass(monkeypatch):
    """The numpy steps with ``rows``: the others' scores are 0.0, the wanted rows' those of all rows."""
    seg = next(s for s in sample_pages() if len(s.blocks) > 10)
    weights = fallback.default_weights()
    tree = features.number_tree(seg)
    block = features.block_features(seg, tree)
    allowed = np.arange(len(seg.blocks)) % 3 == 0
    rows = np.arange(len(seg.blocks)) % 2 == 0
    monkeypatch.setattr(native, "numeric", None)
    whole = fallback.stage_scores(seg, tree, block, weights.first, weights.second, allowed)
    some = fallback.stage_scores(seg, tree, block, weights.first, weights.second, allowed, rows=rows)
    assert some.tobytes() == np.where(rows, whole, 0.0).tobytes()
    assert not some[~rows].any()


def test_block_features_of_some_rows_are_the_rows_of_all(monkeypatch):
    """block_features with ``rows``: each wanted row is the row block_features gives without them, bit for bit
    (no other row's features read a block's OWN_TEXT_COLUMNS); and classify_blocks behind a template keeps what it
    keeps with every row's features and scores computed."""
    weights = fallback.default_weights()
    cases = []
    for seg in sample_pages():
        if not seg.blocks:
            continue
        tree = features.number_tree(seg)
        whole = features.block_features(seg, tree)
        rng = np.random.default_rng(len(seg.blocks) + 2)
        for rows in (rng.random(len(seg.blocks)) < 0.3, np.zeros(len(seg.blocks), dtype=bool)):
            some = features.block_features(seg, tree, rows=rows)
            assert some[rows].tobytes() == whole[rows].tobytes()
        allowed = rng.random(len(seg.blocks)) < 0.4
        trusted = allowed & (rng.random(len(seg.blocks)) < 0.5)
        cases.append((seg, allowed, trusted, fallback.classify_blocks(seg, weights, allowed=allowed, trusted=trusted)))
    assert len(cases) > 5
    every_row_features, every_row_scores = fallback.block_features, fallback._score
    monkeypatch.setattr(fallback, "block_features", lambda seg, tree, rows=None: every_row_features(seg, tree))
    monkeypatch.setattr(fallback, "_score", lambda *args, rows=None: every_row_scores(*args))
    for seg, allowed, trusted, kept in cases:
        assert (fallback.classify_blocks(seg, weights, allowed=allowed, trusted=trusted) == kept).all()


@needs_walk
def test_two_stage_declines_what_a_step_would_give_numpy():
    weights = fallback.default_weights()
    seg = next(s for s in sample_pages() if len(s.blocks) > 10)
    tree = features.number_tree(seg)
    block = features.block_features(seg, tree)
    steps = (seg, tree)
    assert fallback._stage_scores_c(*steps, block, weights.first, weights.second, None) is not None
    assert fallback._stage_scores_c(*steps, np.asfortranarray(block), weights.first, weights.second, None) is None
    assert fallback._stage_scores_c(*steps, block.astype(np.float32), weights.first, weights.second, None) is None
    assert fallback._stage_scores_c(*steps, block, weights.first, weights.second,
                                    np.ones(len(seg.blocks))) is None  # a float mask: numpy's product
    assert fallback._stage_scores_c(*steps, block[:, :-1], weights.first, weights.second, None) is None
    order = np.arange(len(tree.parent))[::-1]  # numbered children first: the context step takes numpy
    rank = np.argsort(order)
    reversed_tree = features.Tree(parent=np.where(tree.parent[order] >= 0, rank[tree.parent[order]], -1),
                                  depth=tree.depth[order], class_bits=tree.class_bits[order],
                                  tag_bits=tree.tag_bits[order], hint=tree.hint[order], owner=rank[tree.owner])
    assert fallback._stage_scores_c(seg, reversed_tree, block, weights.first, weights.second, None) is None
    assert (fallback.stage_scores(seg, reversed_tree, block, weights.first, weights.second, None).tobytes()
            == stage_steps(seg, reversed_tree, block, weights.first, weights.second, None).tobytes())


def test_predict_mean_without_the_c_pass_is_the_numpy_definition(monkeypatch):
    monkeypatch.setattr(native, "walk", None)
    monkeypatch.setattr(native, "numeric", None)
    weights = fallback.default_weights()
    inputs = np.random.default_rng(2).normal(size=(30, len(weights.first[0].mean)))
    assert ann._predict_mean_c(weights.first, inputs) is None
    assert ann.predict_mean(weights.first, inputs).tobytes() == ann._predict_mean_numpy(weights.first,
                                                                                     inputs).tobytes()



@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4), st.integers(0, 30), st.sampled_from([1, 2, 3, 9, 10, 20]), st.integers(0, 2**32 - 1),
       st.sampled_from([1.0, 1e-3, 1e6]))
def test_window_means_are_window_mean_per_column(count, rows, width, seed, scale):
    rng = np.random.default_rng(seed)
    columns = [rng.normal(size=rows) * scale for _ in range(count)]
    for column in columns:
        column[rng.random(rows) < 0.2] = 0.0
    together = features.window_means(columns, width)
    assert together.shape == (rows, count) and together.dtype == np.float64
    for j, column in enumerate(columns):
        alone = features.window_mean(column, width)
        assert np.ascontiguousarray(together[:, j]).tobytes() == alone.tobytes()


def test_window_means_on_the_samples_features():
    for seg in sample_pages():
        values = features.block_features(seg)
        columns = [np.ascontiguousarray(values[:, j]) for j in range(0, values.shape[1], 5)]
        for width in (1, features.NEIGHBOUR_WINDOW, 3 * features.NEIGHBOUR_WINDOW, 10):
            together = features.window_means(columns, width)
            for j, column in enumerate(columns):
                assert np.ascontiguousarray(together[:, j]).tobytes() == features.window_mean(column, width).tobytes()

def test_shift_is_the_roll_definition():
    def rolled(values, step):
        shifted = np.roll(values, step, axis=0)
        if step > 0:
            shifted[:step] = 0.0
        else:
            shifted[step:] = 0.0
        return shifted

    rng = np.random.default_rng(1)
    for n in range(6):
        for shape in ((n,), (n, 3)):
            values = rng.normal(size=shape)
            for step in (0, 1, -1, 2, -2, 7, -7):
                fast, slow = features.shift(values, step), rolled(values, step)
                assert fast.dtype == slow.dtype and fast.shape == slow.shape and fast.tobytes() == slow.tobytes()


@needs_walk
def test_c_head_title_is_find_head_title():
    from lxml import etree
    cases = ["<html><head><title>a</title></head><body>x</body></html>", "<html><body>x</body></html>",
             "<html><head></head><head><title>b</title></head></html>", "<title>t</title><p>x</p>",
             "<html><head><meta x='1'><title>c</title><title>d</title></head></html>"]
    for markup in cases:
        root = etree.fromstring(markup, etree.HTMLParser())
        assert blocks.head_title(root) is root.find("head/title")
    for seg in sample_pages():
        assert blocks.head_title(seg.root) is seg.root.find("head/title")


def assert_same_sizes(root):
    """The C size test's counts are libxml2's string-length(normalize-space(.)) of every element and of the
    page's /html/body."""
    from lxml import etree

    from templater import template
    xpath_size = etree.XPath("string-length(normalize-space(.))")
    assert template.size_limit(root) == float(template._SIZE_LIMIT(root))
    for element in root.iter():
        if isinstance(element.tag, str):
            assert native.walk.normalized_length(element) == float(xpath_size(element))


@needs_walk
def test_c_size_test_matches_libxml2_xpath_on_the_samples():
    for seg in sample_pages(limit=12):
        assert_same_sizes(seg.root)


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(piece | st.sampled_from(["<![CDATA[ x  y ]]>", "\r\n", "\u4e2d\u6587 ", "\U0001f600"]), max_size=40),
       st.booleans())
def test_c_size_test_matches_libxml2_xpath_on_generated_markup(pieces, wrap):
    body = "".join(pieces)
    root = parse_html(f"<html><head><title>T</title></head><body>{body}</body></html>" if wrap else body)
    if root is not None:
        assert_same_sizes(root)


@needs_walk
def test_c_size_test_without_a_body_is_zero_as_in_xpath():
    from lxml import etree

    from templater import template
    root = etree.fromstring("<svg><text>a b</text></svg>")  # no /html/body: the XPath's string is empty
    assert template.size_limit(root) == float(template._SIZE_LIMIT(root)) == 0.0
    assert native.walk.normalized_length(root[0]) == 3


# --- a stored page parsed from its UTF-8 bytes against its decoded text -------------------------------------------

import re  # noqa: E402

from templater import parse  # noqa: E402

XML_DECLARATION = "<?xml version='1.0' encoding='utf-16'?>"


def handed_to_lxml(markup) -> list[bytes]:
    """What parse_html(markup) hands lxml: one byte string, two when it repairs an unclosed <title>."""
    seen = []
    original = parse._parse

    def spy(data):
        seen.append(data)
        return original(data)

    parse._parse = spy
    try:
        parse.parse_html(markup)
    finally:
        parse._parse = original
    return seen


def stored_forms(source: str) -> tuple[str, bytes]:
    """(the text load_pages gave before, the bytes it gives now) of a page ingested as ``source``."""
    data = source.encode("utf-8", "replace")
    return data.decode("utf-8"), data


def test_unicode_spaces_are_what_a_str_pattern_calls_whitespace():
    space = re.compile(r"\s")
    assert parse.UNICODE_SPACES == "".join(c for c in map(chr, range(0x110000)) if space.match(c))


@pytest.mark.parametrize("source, cleaned", [
    ("", b""),
    ("  \n ", b"  \n "),
    ("<p>a</p>", b"<p>a</p>"),
    (XML_DECLARATION + "<p>a</p>", b"<p>a</p>"),
    ("\u00a0" + XML_DECLARATION + "<p>a</p>", b"<p>a</p>"),  # no-break space: str \s, not bytes \s
    ("\u2028\u3000\u205f\x85 \t" + XML_DECLARATION + "<p>a</p>", b"<p>a</p>"),
    ("\x1c\x1f\x0b\x0c" + XML_DECLARATION + "<p>a</p>", b"<p>a</p>"),  # str \s control characters
    ("\u200b" + XML_DECLARATION + "<p>a</p>", "\u200b".encode() + XML_DECLARATION.encode() + b"<p>a</p>"),
    ("\x00" + XML_DECLARATION + "<p>a</p>", b" " + XML_DECLARATION.encode() + b"<p>a</p>"),  # NUL: no space
    ("<?XmL version='1.0'?>" + XML_DECLARATION + "<p>a</p>", XML_DECLARATION.encode() + b"<p>a</p>"),  # one only
    ("<p>a</p>" + XML_DECLARATION, b"<p>a</p>" + XML_DECLARATION.encode()),
    ("<?xml unclosed <p>\u00e9</p>", "\u00e9</p>".encode()),  # up to the first ">"
    ("<?xml never closed \u00e9", "<?xml never closed \u00e9".encode()),
    ("<p>\x00a\x01b\x08\x0b\x0c\x0e\x1f\x7f\tc\nd\re</p>", b"<p> a b" + b" " * 6 + b"\tc\nd\re</p>"),
    ("<p>a\ud800b\udfff</p>", b"<p>a?b?</p>"),  # lone surrogates of the source: stored as "?"
    ("<p>\u00e9\u6771\U0001f600\x85\u2028</p>", "<p>\u00e9\u6771\U0001f600\x85\u2028</p>".encode()),
])
def test_stored_bytes_parse_as_their_decoded_text(source, cleaned):
    text, data = stored_forms(source)
    assert parse.clean_utf8(data) == parse.clean_text(text) == cleaned
    assert handed_to_lxml(data) == handed_to_lxml(text)


def test_stored_bytes_repair_an_unclosed_title_as_their_text_does():
    source = "\u00a0<?xml version='1.0'?><html><head><title>" + "caf\u00e9 " * 300 + "<body><p>x\x00</p></body></html>"
    text, data = stored_forms(source)
    handed = handed_to_lxml(data)
    assert len(handed) == 2 and handed == handed_to_lxml(text)
    root = parse.parse_html(data)
    assert root is not None and root.findtext("body/p") == "x "


ODD = parse.UNICODE_SPACES + "\x00\x01\x7f\u200b\ud800\udfff\u00e9"


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=st.sampled_from(ODD), max_size=4),
       st.lists(st.sampled_from(["<?xml", "<?XmL a=1", ">", "<p>", "</title>", "<title>", XML_DECLARATION])
                | st.text(alphabet=st.sampled_from(ODD) | st.characters(blacklist_categories=()), max_size=6),
                max_size=12))
def test_clean_utf8_is_clean_text_of_the_decoded_bytes(lead, pieces):
    text, data = stored_forms(lead + "".join(pieces))
    assert parse.clean_utf8(data) == parse.clean_text(text)
    assert parse.clean_utf8(data) == parse._XML_DECL.sub("", text, count=1).encode("utf-8").translate(
        parse._CONTROL_TO_SPACE)  # the plain definition, whichever encoding step clean_text uses


def test_has_controls_finds_exactly_the_bytes_clean_utf8_replaces():
    """A page without control characters is handed on as it is (no translation); one byte of any of them, at any
    place, is found."""
    for value in range(256):
        for data in (bytes([value]), b"<p>" + bytes([value]) + b"</p>" * 50, b"x" * 5000 + bytes([value]),
                     b"x" * 4095 + bytes([value]) + b"x" * 4096, b"x" * 4096 + bytes([value]),
                     *(b"\t" * at + bytes([value]) + b"\n" * (300 - at) for at in range(0, 300, 37))):
            assert parse.has_controls(data) == (data.translate(parse._CONTROL_TO_SPACE) != data)
            assert parse.has_controls(data) == any(control in data for control in parse._CONTROL_BYTES)  # plain
    page = "<p>caf\u00e9\t\r\n</p>".encode("utf-8") * 100
    assert parse.clean_utf8(page) is page


@needs_walk
def test_c_walk_makes_blocks_by_calling_a_class_it_cannot_fill_by_its_slots():
    """Blocks are made through Block's slot descriptors; a block class that is not a plain __slots__ class of
    exactly Block's fields (here: one whose __init__ changes a field) is called instead, and its blocks are kept."""
    walk = native.walk
    assert walk.fast_blocks() and walk.BLOCK_FIELDS == datatypes.Block.__slots__
    assert walk.direct_fields()  # Block's fields are plain object slots: stored straight into them

    class Shouting(datatypes.Block):
        __slots__ = ()

        def __init__(self, *args):
            super().__init__(*args)
            self.text = self.text.upper()

    markup = "<html><body><p>Hello <b>you</b></p><div>there</div></body></html>"
    try:
        walk.configure(tuple(sorted(config.BLOCK_TAGS)), tuple(sorted(config.BLOCK_TAGS | config.BREAK_TAGS)), Shouting)
        assert not walk.fast_blocks() and not walk.direct_fields()
        seg = blocks.segment(parse_html(markup), Page("p", "https://a.example/p", markup))
        assert [(type(b), b.text) for b in seg.blocks] == [(Shouting, "HELLO YOU"), (Shouting, "THERE")]
    finally:
        walk.configure(tuple(sorted(config.BLOCK_TAGS)), tuple(sorted(config.BLOCK_TAGS | config.BREAK_TAGS)),
                       datatypes.Block)
    assert walk.fast_blocks() and walk.direct_fields()
    assert_same_segmentation(markup)


# --- the <meta>, <link>, <time> and microdata elements the metadata reads: the walks against lxml -----------------

META_PIECES = st.one_of(
    piece,
    st.sampled_from(["<meta name=author content='Jane Doe'>", "<meta property='og:title' content=x>",
                     "<link rel=canonical href=/a>", "<time datetime=2020-01-02>Jan 2</time>", "<time>", "</time>",
                     "<span itemprop=author>Jo Roe</span>", "<meta itemprop=datePublished content=2020-01-01>",
                     "<div ITEMPROP=name>", "<body>", "</body>", "<head>", "</head>", "<link>", "<META NAME=x>",
                     "<svg:meta itemprop=x>", "<p xml:lang=en itemprop=y>", "<html>", "</html>", "<x:time>",
                     "<b itemprop>"]))


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(META_PIECES, max_size=40), st.booleans())
def test_walk_declared_elements_match_lxml(pieces, wrap):
    from templater import metadata

    body = "".join(pieces)
    markup = f"<html><head><meta charset=utf-8><title>T</title></head><body>{body}</body></html>" if wrap else body
    root = parse_html(markup)
    if root is None:
        return
    seg = blocks.segment(root, Page("p", "https://a.example/p", markup))
    if seg.declared is not None:
        assert_same_declared(seg.declared, root)
    # the fields read from the gathered elements are those read by walking the tree (lxml's iter and XPath)
    plain = metadata.declared_metadata(root, markup, "https://a.example/p",
                                       elements=metadata.declared_elements_plain(root))
    assert metadata.declared_metadata(root, markup, "https://a.example/p", elements=seg.declared) == plain
    native_walk = native.walk
    try:
        native.walk = None
        assert metadata.declared_metadata(root, markup, "https://a.example/p") == plain
    finally:
        native.walk = native_walk


def test_microdata_is_read_only_where_the_markup_spells_itemprop():
    from templater import metadata

    markup = "<html><body><h1>T</h1><span ITEMPROP=author>Jane Doe</span></body></html>"
    root = parse_html(markup)
    assert metadata.declared_elements_plain(root)[1]  # the parser lowers the name ...
    assert metadata.declared_metadata(root, markup, "https://a.example/p")["author"] is None  # ... and it is not read
    lower = markup.replace("ITEMPROP", "itemprop")
    assert metadata.declared_metadata(parse_html(lower), lower, "https://a.example/p")["author"] == "Jane Doe"


# --- the <meta>s' own reading (metadata._declared_fields, document._head_titles): the compiled loop against lxml's ---

HEAD_PIECES = st.one_of(
    META_PIECES,
    st.sampled_from(["<meta property=' OG:Site_Name ' content=' Site '>", "<meta name=Keywords content='a, b;c'>",
                     "<meta name='' property=og:title content=Headline>", "<meta name=twitter:title content=''>",
                     "<meta itemprop=' ' name=author content=x>", "<meta http-equiv=Content-Language content=de>",
                     "<meta name=DESCRIPTION content='  d\u2003'>", "<meta name=\u0130mage content=i>",
                     "<meta name=author content='&amp; Co'>", "<meta name=author content='J&eacute; Doe'>",
                     "<meta name=author content>", "<meta content='no name'>", "<meta name=author>",
                     "<meta name='og:title' property=x content=y>", "<meta name=\x1fdate\x1f content=2020-01-01>",
                     "<head>", "</head>", "<meta name=date content='2021-02-03' name=author>",
                     "<link rel='Canonical Alternate' href=/c>", "<link rel=IMAGE_SRC href=i.png>", "<link rel=icon>",
                     "<link rel=stylesheet href=s.css>", "<link rel='' href=x>", "<link href=y>"]))


def plain_meta_reading(elements):
    """What _declared_fields' loop reads of each element without the compiled walk: a <meta>'s hit (or nothing), a
    <time> as it is, any other element as it is where it may declare a link."""
    from templater import metadata

    out = []
    for element in elements:
        if element.tag != "meta":
            if element.tag == "time" or metadata._may_declare_link(element):
                out.append(element)
            continue
        hit = metadata._meta_field(element)
        if hit is not None:
            out.append((hit[0], hit[1], ", ".join(hit[2])) if hit[0] == "tags" else hit)
    return out


def assert_same_meta_reading(root):
    from templater import document, metadata

    elements = list(root.iter())
    fast = native.walk.meta_fields(elements, metadata._META_RANK)
    if fast is not None:
        plain = plain_meta_reading(elements)
        assert len(fast) == len(plain)
        for got, want in zip(fast, plain):
            if type(got) is tuple and got[0] == "tags":
                assert (got[0], got[1], ", ".join(metadata._split_tags(got[2]))) == want
            else:
                assert got == want if type(got) is tuple else got is want
    top = root.getroottree().getroot()
    titles = native.walk.head_titles(top, elements, document.SOCIAL_TITLES)
    if titles is not None:
        walk = native.walk
        try:
            native.walk = None
            assert titles == document._head_titles(top, elements)
        finally:
            native.walk = walk


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(HEAD_PIECES, max_size=40), st.booleans())
def test_c_meta_reading_is_lxmls_on_generated_markup(pieces, wrap):
    body = "".join(pieces)
    markup = f"<html><head><meta charset=utf-8>{body}<title>T</title></head><body>{body}</body></html>" if wrap \
        else body
    root = parse_html(markup)
    if root is not None:
        assert_same_meta_reading(root)


@needs_walk
def test_c_meta_reading_is_lxmls_on_the_samples():
    for seg in sample_pages(limit=40):
        assert_same_meta_reading(seg.root)


@needs_walk
def test_c_meta_reading_declines_entities_and_reads_plain_values():
    from lxml import etree

    from templater import metadata

    root = etree.fromstring('<!DOCTYPE x [<!ENTITY e "Jane">]><html><head><meta name="author" content="&e;"/>'
                            '</head></html>', etree.XMLParser(resolve_entities=False))
    assert native.walk.meta_fields(list(root.iter("meta")), metadata._META_RANK) is None
    assert native.walk.head_titles(root, list(root.iter("meta")), ("author",)) is None
    root = parse_html("<html><head><meta name=' Author ' content=' Jane Doe '><link rel=canonical href=/a>"
                      "<meta property=og:title content=T></head></html>")
    meta, link, title = root.iter("meta", "link")
    assert native.walk.meta_fields([meta, link, title], metadata._META_RANK) == [("author", 0, "Jane Doe"), link]
    icon, time = parse_html("<html><head><link rel=Icon href=/i></head><body><time>x</time></body></html>").iter(
        "link", "time")
    assert native.walk.meta_fields([icon, time], metadata._META_RANK) == [time]
    assert native.walk.head_titles(root, [meta, link, title], ("og:title",)) == ["T"]


# --- document._Contexts.of (where a kept block's element sits): the compiled walk up against the memoised chain ----

CONTEXT_PIECES = st.one_of(
    piece,
    st.sampled_from(["<pre>", "</pre>", "<table>", "</table>", "<tr>", "<td>", "<th>", "</td>", "<li>", "</li>",
                     "<ul>", "</ul>", "<ol>", "</ol>", "<menu>", "<dir>", "<dl><dd>", "<blockquote>", "</blockquote>",
                     "<h1>", "<h3>", "</h3>", "<h7>", "<hr>", "<p>", "</p>", "<svg:td>", "<x:pre>", "<!-- c -->",
                     "<div>", "</div>", "<caption>", "<tbody>"]))


def on_samples(check, limit):
    """``check`` of the parsed root of each of the first ``limit`` sample pages."""
    for seg in sample_pages(limit=limit):
        check(seg.root)


def check_parsed(markup, check):
    """``check`` of the markup's parsed root, where it parses to one."""
    root = parse_html(markup)
    if root is not None:
        check(root)


def assert_same_contexts(root):
    from templater import document

    elements = [e for e in root.iter() if isinstance(e.tag, str)]
    fast = native.walk.block_contexts(elements)
    plain = document._Contexts()
    assert len(fast) == len(elements)
    for element, got in zip(elements, fast):
        want = plain.of(element)
        assert type(got) is tuple and len(got) == 8
        assert all(a is b for a, b in zip(got[:4], want[:4])) and got[4:] == tuple(want[4:])
        assert type(got[5]) is bool


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(CONTEXT_PIECES, max_size=40))
def test_c_block_contexts_are_the_memoised_contexts_on_generated_markup(pieces):
    check_parsed(f"<html><body>{''.join(pieces)}</body></html>", assert_same_contexts)


@needs_walk
def test_c_block_contexts_on_the_samples_and_what_they_decline():
    on_samples(assert_same_contexts, 20)
    assert native.walk.block_contexts([None]) is None
    assert native.walk.block_contexts(()) is None


def test_documents_are_the_same_without_the_compiled_contexts(monkeypatch):
    """build_document over the compiled contexts and over the memoised chain."""
    from templater import document

    pages = list(sample_pages(limit=20))
    keep = [np.ones(len(seg.blocks), dtype=bool) for seg in pages]
    fast = [document.build_document(seg, k, links=True) for seg, k in zip(pages, keep)]
    if native.walk is not None:
        monkeypatch.setattr(native.walk, "block_contexts", lambda elements: None, raising=False)
    assert [document.build_document(seg, k, links=True) for seg, k in zip(pages, keep)] == fast


def documents_by_the_method(monkeypatch, segs, keeps):
    """build_document of each page with each block added by _Builder.add (the compiled loop taken away)."""
    from templater import document

    with monkeypatch.context() as patch:
        if native.walk is not None:
            patch.setattr(native.walk, "add_blocks", None, raising=False)
        return [document.build_document(seg, keep) for seg, keep in zip(segs, keeps)]


def test_documents_are_the_same_without_the_compiled_loop(monkeypatch):
    """build_document with its blocks added in C (paragraphs, headings, items; code and cells by the method) and by
    _Builder.add alone: every sample page, all its blocks kept and a random half of them."""
    from templater import document

    pages = list(sample_pages(limit=20))
    random = np.random.default_rng(7)
    keeps = [np.ones(len(seg.blocks), dtype=bool) for seg in pages] + [
        random.random(len(seg.blocks)) < 0.5 for seg in pages]
    segs = pages + pages
    fast = [document.build_document(seg, keep) for seg, keep in zip(segs, keeps)]
    assert documents_by_the_method(monkeypatch, segs, keeps) == fast
    assert {node.kind for doc in fast for node in doc.nodes} >= {"item", "heading", "paragraph"}


@settings(max_examples=300, deadline=None)
@given(st.lists(CONTEXT_PIECES, max_size=40), st.randoms(use_true_random=False))
def test_documents_are_the_same_without_the_compiled_loop_on_generated_markup(pieces, random):
    same_documents_on_markup(pieces, random, 0.7)


def same_documents_on_markup(pieces, random, share):
    """build_document of the page the pieces make, a random ``share`` of its blocks kept, with and without the
    compiled loop."""
    from templater import document

    markup = f"<html><body>{''.join(pieces)}</body></html>"
    root = parse_html(markup)
    if root is None:
        return
    seg = blocks.segment(root, Page("p", "https://a.example/p", markup))
    keep = np.array([random.random() < share for _ in seg.blocks], dtype=bool)
    fast = document.build_document(seg, keep)
    with pytest.MonkeyPatch.context() as patch:
        assert documents_by_the_method(patch, [seg], [keep]) == [fast]


def test_the_compiled_loop_declines_what_it_does_not_add():
    from templater import document

    if native.walk is None:
        return
    builder = document._Builder("https://a.example/")  # (links: the method collects them)
    assert native.walk.add_blocks(builder, [], [], None, document.DocNode) is False
    builder = document._Builder(None)
    assert native.walk.add_blocks(builder, [None], [document._Context()], None, document.DocNode) is False
    assert native.walk.add_blocks(builder, [None], [], None, document.DocNode) is False
    assert builder.nodes == []


# --- metadata._in_comments: the compiled walk up against the regex over each ancestor's class and id -------------

COMMENT_PIECES = st.one_of(
    piece,
    st.sampled_from(['<div class="Comments">', '<div id="disqus_thread">', '<section class="post-REPLY x">', "</div>",
                     '<div class="re\u017fpond">', '<div id="commentaire">', '<ol class="replies-list">', "</ol>",
                     '<div class="c0mment">', '<span class="reply&amp;x">', '<div class="respon d">', "</section>",
                     '<div class="\u212aomment">', '<div class="x" class="comment">', '<li id="">', "<!-- c -->",
                     "<p>", "</p>", '<b class="D\u0130squs">', '<i class="commentary">']))


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(COMMENT_PIECES, max_size=30))
def test_c_in_comments_is_the_regex_walk_on_generated_markup(pieces):
    from templater import metadata

    root = parse_html(f"<html><body><main>{''.join(pieces)}<p>end</p></main></body></html>")
    if root is None:
        return
    walk = native.walk
    for element in root.iter():
        found = walk.in_comments(element)
        try:
            native.walk = None
            plain = metadata._in_comments(element)
        finally:
            native.walk = walk
        assert found is None or found == plain
        assert metadata._in_comments(element) == plain


@needs_walk
def test_c_in_comments_on_the_samples():
    from templater import metadata

    walk = native.walk
    for seg in sample_pages(limit=10):
        for block in seg.blocks[:200]:
            found = walk.in_comments(block.element)
            native.walk = None
            try:
                plain = metadata._in_comments(block.element)
            finally:
                native.walk = walk
            assert found == plain  # (the samples' names are ASCII: nothing declined)
    assert walk.in_comments(None) is None


# --- the elements named_metadata reads the names of: the compiled walk against the plain list ----------------------

NAMED_PIECES = st.one_of(
    piece,
    st.sampled_from(['<span class="byline">', '<span class="Post-Date">', '<div class="Au\u0130thor">',
                     '<a href="/authors/jane">', '<a href="/Author/x">', '<a rel="author" href="#">', "</span>",
                     "</a>", '<time class="pub\u017fdate">', '<b class="x" class="date">', '<i rel="tag">',
                     '<em class="&amp;time">', '<p class="writer">', "<section>", "</section>", "<br>"]))


def assert_same_named_candidates(root):
    from templater import metadata

    last = None
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for previous in (last, element.getparent()):
            fast = native.walk.named_candidates(element, previous, metadata.MAX_INLINE_CHILDREN)
            plain = metadata.named_candidates_plain(element, previous)
            if fast is None:
                continue
            assert [c for c in fast if metadata._kind(c)] == [c for c in plain if metadata._kind(c)]
            rest = iter(plain)
            assert all(any(c is p for p in rest) for c in fast)  # a part of the plain list, in its order
        last = element.getparent()


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(NAMED_PIECES, max_size=40))
def test_c_named_candidates_match_the_plain_list_on_generated_markup(pieces):
    check_parsed(f"<html><body><div class='author'>{''.join(pieces)}</div></body></html>",
                 assert_same_named_candidates)


@needs_walk
def test_c_named_candidates_match_the_plain_list_on_the_samples():
    on_samples(assert_same_named_candidates, 20)


def assert_same_candidates_each(root, drop):
    """named_candidates_each over the tree's elements (some left out as None) is named_candidates element by element,
    each with the parent of the last element before it that was not left out, nor a <body> or <html>."""
    from templater import metadata

    elements = [e if isinstance(e.tag, str) and not drop(k) else None for k, e in enumerate(root.iter())]
    each = native.walk.named_candidates_each(elements, metadata.MAX_INLINE_CHILDREN)
    expected, last = [], None
    for element in elements:
        if element is None or element.tag in ("body", "html"):
            expected.append(None)
            continue
        expected.append(native.walk.named_candidates(element, last, metadata.MAX_INLINE_CHILDREN))
        last = element.getparent()
    if any(e is not None and x is None for e, x in zip(elements, expected) if e is not None
           and e.tag not in ("body", "html")):
        assert each is None  # one declines: all do
        return
    assert each is not None and len(each) == len(expected)
    for got, want in zip(each, expected):
        assert (got is None) == (want is None)
        if got is not None:
            assert len(got) == len(want) and all(a is b or a == b for a, b in zip(got, want))


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(NAMED_PIECES, max_size=40), st.randoms(use_true_random=False))
def test_c_named_candidates_each_is_named_candidates_one_by_one(pieces, random):
    root = parse_html(f"<html><body><div class='author'>{''.join(pieces)}</div></body></html>")
    if root is not None:
        assert_same_candidates_each(root, lambda k: random.random() < 0.3)


@needs_walk
def test_named_metadata_reads_the_same_without_the_batch(monkeypatch):
    """named_metadata over the compiled batch (named_candidates_each) and over the element-by-element path."""
    from templater import metadata

    pages = list(sample_pages(limit=20))
    batch = [metadata.named_metadata(seg, None) for seg in pages] + [metadata.named_metadata(seg) for seg in pages]
    monkeypatch.setattr(native.walk, "named_candidates_each", lambda elements, limit: None, raising=False)
    one_by_one = [metadata.named_metadata(seg, None) for seg in pages] + [metadata.named_metadata(seg) for seg in pages]
    assert batch == one_by_one


@needs_walk
def test_c_named_candidates_decline_and_keep():
    from lxml import etree

    from templater import metadata

    xml = etree.fromstring('<!DOCTYPE d [<!ENTITY e "x">]><d><p class="date">a&e;b</p></d>',
                           etree.XMLParser(resolve_entities=False))
    assert native.walk.named_candidates(xml, None, metadata.MAX_INLINE_CHILDREN) is None  # an entity inside
    assert native.walk.named_candidates("not an element", None, 3) is None
    root = parse_html("<html><body><p class='x'><span class='DATE'>May 3, 2017</span> by "
                      "<a href='/staff/jo'>Jo</a><b>x</b></p></body></html>")
    p = root.find(".//p")
    assert [c.tag for c in native.walk.named_candidates(p, None, 12)] == ["span", "a"]
    assert native.walk.named_candidates(p, None, 2) == []  # too many children: the inline elements are not read


# --- the markup searches of the metadata: _numeric.first_places against bytes.find -------------------------------

@needs_walk
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200) | st.lists(st.sampled_from([b"ld+json", b"LD+JSON", b"ld+", b"+json", b"uthor", b"a",
                                                           b"<script", b"\xff", b" ", b"uthouth", b"u",
                                                           b"b" * 15]), max_size=30).map(b"".join),
       st.lists(st.sampled_from([b"ld+json", b"LD+JSON", b"uthor", b"ublish", b"a", b"", b"\xff", b"+", b"zz+"]) |
                st.binary(max_size=4), max_size=6),
       st.integers(min_value=0, max_value=250))
def test_c_first_places_are_bytes_find(data, needles, start):
    assert native.numeric.first_places(data, tuple(needles)) == [data.find(n) for n in needles]
    assert native.numeric.first_places(data, tuple(needles), start) == [data.find(n, start) for n in needles]


@needs_walk
def test_c_first_places_refuse_what_find_reads_otherwise():
    from templater import metadata

    with pytest.raises(ValueError):
        native.numeric.first_places(b"abc", (b"a",), -1)
    with pytest.raises(TypeError):
        native.numeric.first_places(b"abc", ("a",))
    assert metadata.find_in("a ld+json", "ld+json") == 2 and metadata.find_in(b"a ld+json", b"ld+json", 3) == -1


AUTHOR_NAME_PIECES = st.one_of(
    piece,
    st.builds(lambda tag, attr, value: f'<{tag} {attr}="{value}">', st.sampled_from(["div", "span", "p", "a"]),
              st.sampled_from(["class", "id", "rel", "itemprop", "data-x", "CLASS"]),
              st.sampled_from(["author", "post-Author", "by-line x", "byLINE", "writer_x", "Contributor", "reporter-",
                               "creator", "authors", "xauthor", "entry author", "\u0130 author", "w\u017fiter",
                               "&amp;author", "plain", ""])),
    st.sampled_from(["</div>", "</span>", "</p>", "</a>"]))


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(AUTHOR_NAME_PIECES, max_size=30))
def test_c_author_name_look_never_misses_what_the_regex_finds(pieces):
    from templater import metadata

    root = parse_html(f"<html><body>{''.join(pieces)}</body></html>")
    if root is None:
        return
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for levels in (1, 3):
            if native.walk.may_be_named_author(element, levels) is False:
                assert not metadata._named(element, metadata._AUTHOR_NAMES, levels)
    assert native.walk.may_be_named_author("not an element", 3) is None


def test_link_look_never_misses_a_declared_link():
    from templater import metadata

    root = parse_html("<html><head><link rel='stylesheet' href='/s.css'><link rel='Canonical' href='/c'>"
                      "<link rel='alternate image_src' href='/i.png'><link href='/x'><link rel='CANONICAL'>"
                      "</head><body><p>x</p></body></html>")
    for link in root.iter("link"):
        assert metadata._may_declare_link(link) or not list(metadata._element_fields(link))
    assert [metadata._may_declare_link(link) for link in root.iter("link")] == [False, True, True, False, True]


SHORT_TEXT_PIECES = st.one_of(
    piece,
    st.sampled_from(["<![CDATA[a b]]>", "<br>", "<b>x</b>y", "\u2028", "\x1c", "\u0085", "<img>", "<i></i>",
                     "March 21, 2017", " by Jane Doe "]))


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(SHORT_TEXT_PIECES, max_size=40), st.integers(min_value=0, max_value=120))
def test_c_short_text_is_the_plain_short_text(pieces, limit):
    from templater import metadata

    root = parse_html(f"<html><body><div>{''.join(pieces)}</div><p>tail</p></body></html>")
    if root is None:
        return
    for element in root.iter():
        if isinstance(element.tag, str):
            found = native.walk.short_text(element, limit)
            assert found is False or found == metadata._short_text_plain(element, limit)


@needs_walk
def test_c_short_text_on_the_samples_and_what_it_declines():
    from lxml import etree

    from templater import metadata

    for seg in sample_pages(limit=10):
        for block in seg.blocks[:60]:
            for limit in (80, 200):
                assert native.walk.short_text(block.element, limit) == metadata._short_text_plain(block.element, limit)
    xml = etree.fromstring('<!DOCTYPE d [<!ENTITY e "x">]><d><p>a&e;b</p></d>', etree.XMLParser(resolve_entities=False))
    assert native.walk.short_text(xml, 10) is False
    assert metadata._short_text(xml, 10) == metadata._short_text_plain(xml, 10)
    assert native.walk.short_text("not an element", 10) is False
    commented = etree.fromstring("<d>a<!-- c -->b<?p i?>c<x>d</x>e</d>")
    assert native.walk.short_text(commented, 20) == metadata._short_text_plain(commented, 20) == "a b c d e"


# --- ids registered on demand (parse.compile_xpath) against a parser that collects them ---------------------------

ID_PIECE = st.one_of(
    st.sampled_from(["div", "p", "span", "a", "section"]).flatmap(
        lambda tag: st.sampled_from(["x", "y", "x y", " z", ""]).map(
            lambda value: f'<{tag} id="{value}">' if tag != "a" else f'<a name="{value}">')),
    st.sampled_from(["</div>", "</p>", "</a>", "<b>t</b>", "text ", '<i ID="y">', "<p id>", '<p id="x" id="y">']),
)


def assert_ids_like_the_collecting_parser(markup):
    """An XPath calling id() finds on a page parsed without ids what it finds on the same page parsed with them."""
    from lxml import etree

    from templater import parse
    collecting = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True,
                                  default_doctype=False)
    data = markup.encode("utf-8")
    expected_root, root = etree.fromstring(data, collecting), parse._parse(data)
    if expected_root is None:
        assert root is None
        return
    for expression in ("id('x')", "id('y')", "id('x y z')", "count(id(' z'))", "id('')"):
        expected = etree.XPath(expression)(expected_root)
        found = parse.compile_xpath(expression)(root)
        if isinstance(expected, list):
            assert [expected_root.getroottree().getpath(e) for e in expected] == \
                [root.getroottree().getpath(e) for e in found]
        else:
            assert expected == found


@needs_walk
def test_parser_leaves_ids_to_xpaths_that_call_id():
    from lxml import etree

    from templater import parse
    root = parse.parse_html('<html><body><div id="main"><p id="a">one</p></div><p id="a">two</p>'
                            '<a name="n">x</a></body></html>')
    assert etree.XPath("id('main')")(root) == []  # not collected while parsing ...
    assert isinstance(parse.compile_xpath("id('main')"), parse.IdXPath)
    assert not isinstance(parse.compile_xpath("//div[@id='main']"), parse.IdXPath)
    assert [e.text for e in parse.compile_xpath("id('a')")(root)] == ["one"]  # ... registered on demand, the first
    assert parse.compile_xpath("id('main')")(root)[0].get("id") == "main"
    assert parse.compile_xpath("id('main')").path == "id('main')"
    assert_ids_like_the_collecting_parser('<html><body><div id="main"><p id="a">one</p></div><p id="a">two</p>'
                                          '<a name="n">x</a></body></html>')


@needs_walk
@settings(max_examples=300, deadline=None)
@given(st.lists(ID_PIECE, max_size=25))
def test_ids_registered_on_demand_match_the_collecting_parser(pieces):
    assert_ids_like_the_collecting_parser("<html><body>" + "".join(pieces) + "</body></html>")


@needs_walk
def test_parser_collects_ids_itself_where_they_cannot_be_registered_on_demand(monkeypatch):
    """Where the compiled walk cannot register ids (libxml2's functions not found in the lxml it runs with), the
    parser keeps collecting them: id() never silently finds nothing."""
    from templater import parse

    assert parse._ids_on_demand() is True
    monkeypatch.setattr(native.walk, "register_ids", lambda root: False)
    assert parse._ids_on_demand() is False


def test_status_names_every_compiled_module_or_its_absence():
    """`templater --version` shows native.STATUS: on the compiled path it says whether pair verification is C."""
    if not native.COMPILED:
        assert native.STATUS.startswith("pure Python")
        return
    assert "templater._walk" in native.STATUS and "templater._numeric" in native.STATUS
    if native.pairs is not None:
        assert "templater._pairs: C" in native.STATUS
    else:
        assert "templater._pairs not built" in native.STATUS


# --- parse.lean_markup: script and style content left out before libxml2 reads the page -------------------------

import sys  # noqa: E402

from conftest import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from check_lean_markup import stripped_tree  # noqa: E402  (the tree once parse.py strips DROP_TAGS, serialized)

needs_lean = pytest.mark.skipif(not parse._LEAN, reason="lean_markup hands lxml the page as it is here")


LEAN_PIECES = [
    "<script>", "<script type='a>b'>", "<SCRIPT\tsrc=x>", "<script/>", "<script >", "</script>", "</SCRIPT >",
    "</script/x>", "</scripts>", "<style>", "</style>", "<style media=\"</style>\">", "<title>", "</title>",
    "<textarea>", "</textarea>", "<xmp>", "</xmp>", "<iframe>", "</iframe>", "<noembed>", "</noembed>",
    "<noframes>", "</noframes>", "<plaintext>", "<noscript>", "</noscript>", "<!--", "-->", "--!>", "<!-->",
    "<!--->", "<!-- a -- b -->", "<!", "<!x>", "<?php x ?>", "<!DOCTYPE html>", "<!doctype x \"a>b\">", "</>",
    "</ x>", "</p a='>'>", "<p>", "</p>", "<div class=\"<script>\">", "<a href=x>", "<a b='", "<a b=\"",
    "<br/>", "<img src=x/>", "< p>", "<", ">", "-", "--", "x", " ", "\n", "\r\n", "&lt;", "&#60;", "&amp",
    "var s = '</scr' + 'ipt>';", "if (a<b) c--;", "\u00e9", "<body>", "<head>", "<html>", "</body>",
    "<script src=x/>", "<script a=\"b\"/>", "<script/a=b>", "<style\nx = 'y' >", "<iframe src='a' />", "<noscript id=n>",
    "<textarea rows=2 cols='3'>", "<embed src=x>", "<p id=n>",
]
# the elements whose whole content lean_markup may leave out, and what may stand in it
LEAN_CONTENT_PIECES = [
    "<svg>", "<svg class='a>b'>", "<SVG/>", "</svg>", "</SVG >", "<g>", "</g>", "<path d=x/>", "<path>", "</path>",
    "<title>", "</title>", "<select>", "</select>", "<option>", "<option value=1>", "</option>", "<optgroup>",
    "</optgroup>", "<noscript>", "</noscript>", "<img src=x>", "</img>", "<br>", "<math>", "</math>", "<button>",
    "</button>", "<template>", "</template>", "<object>", "</object>", "<param x=1>", "<embed>", "<applet>",
    "</applet>", "<div>", "</div>", "<span>", "</span>", "<a href=x>", "</a>", "<p>", "</p>", "<li>", "</li>",
    "<table>", "<td>", "</table>", "<b>", "</b>", "<head>", "<body>", "</body>", "<html>", "</html>",
    "<!DOCTYPE html>", "<!-- c -->", "<!x>", "<?x?>", "<style>", "</style>", "<script>", "</script>",
    "<iframe>", "</iframe>", "<textarea>", "</textarea>", "<plaintext>", "<xmp>", "</xmp>", "</>", "</ x>",
    "<source>", "<wbr>", "text", " ", "\n", "<", "&amp;", "<h1>", "</h1>", "<form>", "</form>", "<frameset>",
    "<center>", "<fieldset>", "</fieldset>", "<legend>", "<i>", "</i>", "<font>", "<u>", "<em>", "<a>", "<div class=x>",
    "<select name=s multiple>", "<button type=submit/>", "<object data='x' type=y>", "<template id=t>",
    "<math display=block>", "<applet code=x>", "<svg viewBox=\"0 0 1 1\"/>", "<noscript/a>",
]


@needs_lean
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(LEAN_PIECES), max_size=25))
def test_lean_markup_gives_the_tree_the_page_gives(pieces):
    """What libxml2 builds of the lean bytes, once script and style elements are stripped, is what it builds of
    the page: comments, bogus comments, doctypes, quoted attributes, raw text of every kind and a script's escape
    states end where libxml2's tokenizer ends them."""
    data = parse.clean_utf8("".join(pieces).encode("utf-8"))
    lean = parse.lean_markup(data)
    assert len(lean) <= len(data)
    assert stripped_tree(lean) == stripped_tree(data)


@needs_lean
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(LEAN_CONTENT_PIECES + LEAN_PIECES[:12]), max_size=30))
def test_lean_markup_leaves_content_out_only_where_the_tree_stays(pieces):
    """The subtree of an svg, select, noscript, ... is left out only where libxml2 builds the rest of the page as
    it would with it: start tags that close others (p, li, a, div, table's parts, html, head, body...), end tags
    of elements opened outside, doctypes and unclosed content keep it."""
    data = parse.clean_utf8("".join(pieces).encode("utf-8"))
    lean = parse.lean_markup(data)
    assert len(lean) <= len(data)
    assert stripped_tree(lean) == stripped_tree(data)


@needs_lean
def test_lean_markup_leaves_out_content_nobody_reads():
    page = (b"<p>a<svg class=x><g><path d=1/><title>t</title><use/></g></svg>b<select name=s><option value=1>x"
            b"<optgroup><option>y</select><noscript><img src=x></noscript><iframe>x</iframe><textarea>x</textarea>"
            b"<button><span>x</span></button><noscript><div><a href=x><img src=y></a></div></noscript>"
            b"<svg><p>keeps its content</p></svg><noscript><div>keeps its content</noscript></p>")
    assert parse.lean_markup(page) == (b"<p>a<svg></svg>b<select></select><noscript></noscript>"
                                       b"<iframe></iframe><textarea></textarea><button></button><noscript></noscript>"
                                       b"<svg><p>keeps its content</p></svg><noscript><div>keeps its content"
                                       b"</noscript></p>")
    assert stripped_tree(parse.lean_markup(page)) == stripped_tree(page)
    unclosed = b"<div><svg><g></div><p>x</p>"  # the svg's content runs on to the page's end: it stays
    assert parse.lean_markup(unclosed) is unclosed


@needs_lean
def test_lean_markup_leaves_out_the_raw_text_of_stripped_elements_only():
    page = (b"<html><head><title>t</title><style>p{}</style><script>if (a<b) x = '</p>';</script></head>"
            b"<body><p a='<script>'>x</p><script type=x><!--<script></script>--></script><xmp><script>"
            b"</xmp><!--<script>--></body></html>")
    assert parse.lean_markup(page) == (b"<html><head><title>t</title><style></style><script></script></head>"
                                       b"<body><p a='<script>'>x</p><script></script><xmp><script>"
                                       b"</xmp><!--<script>--></body></html>")
    plain = b"<p>no script here</p>"
    assert parse.lean_markup(plain) is plain
    for seg in sample_pages(8):
        data = parse.clean_utf8(seg.page.html.encode("utf-8"))
        assert stripped_tree(parse.lean_markup(data)) == stripped_tree(data)


@needs_lean
def test_lean_markup_leaves_the_stripped_elements_start_tags_bare_only_where_ids_wait():
    """The start tags of the elements parse.py strips lose their attributes (the blanks and slashes between them
    too, a "/>" kept) where the parser registers no ids; with ids registered by the parser, they keep them."""
    page = (b"<p id=a>x<script type='a>b' src=y></script><SCRIPT/async>z</SCRIPT><svg class=s></svg><iframe src=x />"
            b"<button\tdisabled>go</button><embed src=e><select name=n id=a><option>1</select>y</p>")
    bare = (b"<p id=a>x<script></script><SCRIPT></SCRIPT><svg></svg><iframe/><button></button><embed><select>"
            b"</select>y</p>")
    assert parse._LEAN_BARE == parse._IDS_ON_DEMAND
    if parse._LEAN_BARE:
        assert parse.lean_markup(page) == bare
    assert native.numeric.lean_markup_bare(page) == bare
    assert stripped_tree(bare) == stripped_tree(page)
    assert set(native.numeric.lean_bare) <= set(parse.config.DROP_TAGS)
    kept = native.numeric.lean_markup(page)  # (the parser registers ids: the attributes stay)
    assert b"src=y" in kept and b"class=s" in kept and stripped_tree(kept) == stripped_tree(page)


def test_lean_markup_without_the_c_pass_is_the_page(monkeypatch):
    monkeypatch.setattr(parse, "_LEAN", False)
    data = b"<script>x</script><p>y</p>"
    assert parse.lean_markup(data) is data


# --- parse.strip_dropped: the compiled strip against lxml's strip_elements (its definition) ----------------------

def assert_same_strip(data: bytes):
    """The compiled strip of a page's tree finishes (True) and gives the tree lxml's strip_elements gives."""
    from lxml import etree

    ours, theirs = parse._parse(data), parse._parse(data)
    if ours is None:
        return
    assert native.walk.strip_elements(ours, config.DROP_TAGS) is True
    etree.strip_elements(theirs, *config.DROP_TAGS, with_tail=False)
    assert etree.tostring(ours) == etree.tostring(theirs)


@needs_walk
def test_c_strip_is_lxmls_strip_elements_on_the_samples():
    for seg in sample_pages():
        data = parse.clean_utf8(seg.page.html.encode("utf-8"))
        assert_same_strip(data)  # the page's own bytes: the dropped elements with their content
        assert_same_strip(parse.lean_markup(data))  # the bytes parse_html hands libxml2


@needs_walk
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(LEAN_CONTENT_PIECES + LEAN_PIECES), max_size=30))
def test_c_strip_is_lxmls_strip_elements(pieces):
    """Dropped elements nested in each other, first and last among their siblings, alone under their parent, with
    tails, comments and processing instructions beside them."""
    assert_same_strip("".join(pieces).encode("utf-8"))


@needs_walk
def test_c_strip_hands_back_to_lxml_where_it_stops():
    from lxml import etree

    markup = b"<html><body><p>a<script>s</script>b</p><div><svg><g/></svg><span>c</span></div></body></html>"
    root = parse._parse(markup)
    held = root.find(".//g")  # a proxy inside an element to remove: lxml moves that subtree to a document of its own
    assert native.walk.strip_elements(root, config.DROP_TAGS) is False
    parse.strip_dropped(root)
    assert etree.tostring(root) == b"<html><body><p>ab</p><div><span>c</span></div></body></html>"
    assert held.tag == "g" and held.getparent().tag == "svg"
    root = parse._parse(markup)
    etree.SubElement(root.find("body"), "{urn:x}script").text = "kept"  # in a namespace: not a dropped name
    etree.SubElement(root.find("body"), "script").text = "dropped"
    parse.strip_dropped(root)
    assert etree.tostring(root) == (b'<html><body><p>ab</p><div><span>c</span></div>'
                                    b'<ns0:script xmlns:ns0="urn:x">kept</ns0:script></body></html>')
    plain = parse._parse(b"<p>no dropped element</p>")  # names the document's dictionary lacks: nothing to do
    assert native.walk.strip_elements(plain, ("nosuchelement",)) is True
    assert etree.tostring(plain) == b"<html><body><p>no dropped element</p></body></html>"


# --- parse._parse: the compiled parse against lxml's etree.fromstring with parse.py's parser (its definition) -------

def assert_same_parse(data: bytes):
    """The compiled parse gives the tree, the document's encoding and the names' dictionary that lxml's fromstring
    gives with parse._PARSER (None where lxml finds nothing)."""
    from lxml import etree

    ours = native.walk.parse_html(data, parse._thread_probe(), parse._PARSER, parse.PARSE_OPTIONS, parse._ENCODING)
    theirs = parse._parse_lxml(data)
    assert ours is not False
    if theirs is None:
        assert ours is None
        return
    assert etree.tostring(ours.getroottree()) == etree.tostring(theirs.getroottree())
    assert ours.getroottree().docinfo.encoding == theirs.getroottree().docinfo.encoding
    assert native.walk.names_outside_dict(ours) == native.walk.names_outside_dict(theirs) == (0, 0)
    assert [e.tag for e in ours.iter("p", "div", "a")] == [e.tag for e in theirs.iter("p", "div", "a")]


@needs_walk
def test_c_parse_is_lxmls_fromstring_on_the_samples():
    assert parse._DIRECT  # (libxml2 2.14 here: the parse takes the compiled path)
    for seg in sample_pages():
        data = parse.clean_utf8(seg.page.html.encode("utf-8"))
        assert_same_parse(data)
        assert_same_parse(parse.lean_markup(data))


@needs_walk
@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(LEAN_CONTENT_PIECES + LEAN_PIECES) | piece, max_size=30))
def test_c_parse_is_lxmls_fromstring(pieces):
    assert_same_parse("".join(pieces).encode("utf-8"))


@needs_walk
def test_c_parse_edges():
    for data in (b"x", b"<", b"</p>", b"<!-- only a comment -->", b"<?pi only?>", b"\xef\xbb\xbf<p>bom</p>",
                 b"<!DOCTYPE html>", b"<html></html>", b"<![CDATA[x]]>", b"<p id=a id=b>twice</p>",
                 b"<html><head><title>" + b"t" * 300):
        assert_same_parse(data)
    assert parse._parse(b"") is None and parse._parse(b" \n") is None
    import threading  # each thread parses with its own dictionary (lxml's per thread), as fromstring does

    out = []
    worker = threading.Thread(target=lambda: out.append(parse._parse(b"<p class=c>in a thread</p>")))
    worker.start()
    worker.join()
    assert out[0].find(".//p").get("class") == "c" and native.walk.names_outside_dict(out[0]) == (0, 0)


def test_tune_heap_turns_glibc_fast_bins_off_where_glibc_runs():
    """native.tune_heap's C step says whether it set the allocator (glibc: mallopt M_MXFAST 0); a second call is
    harmless, and the library's own call changes nothing of what extraction gives (the other tests run with it)."""
    import platform

    if native.numeric is None:
        pytest.skip("the C extension is not built")
    expected = platform.libc_ver()[0] == "glibc"
    assert native.numeric.tune_heap() is expected
    assert native.numeric.tune_heap() is expected
    native.tune_heap()


def test_trim_heap_gives_glibc_free_memory_back_and_does_nothing_elsewhere(monkeypatch):
    """native.trim_heap calls glibc's malloc_trim (True) where glibc runs, its resident memory no larger after than
    before; on another C library (no glibc version to read) it does nothing and says so, and never loads ctypes'
    libc."""
    import platform
    import resource

    monkeypatch.setattr(native, "_malloc_trim", None)
    glibc = platform.libc_ver()[0] == "glibc"
    blocks = [bytearray(100_000) for _ in range(300)]  # (about 30 MB from the heap, most of it then freed)
    del blocks[:-1]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert native.trim_heap() is glibc and native.trim_heap() is glibc
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss == before  # (the peak is not raised by a trim)

    def no_glibc(name):
        raise ValueError(name)

    monkeypatch.setattr(native, "_malloc_trim", None)
    monkeypatch.setattr(native.os, "confstr", no_glibc)
    assert native.trim_heap() is False and native._malloc_trim is False
    assert native.trim_heap() is False


# libxml2's allocator (native.tune_heap's numeric.xml_heap): where a tree's blocks lie changes, nothing else. Each
# side runs in a process of its own (the allocator is set for a process's life): the same trees, serialized, with
# glibc's malloc and with the chunks, blocks made and freed by several threads, grown (long texts built from
# pieces), above the chunks' size limit, and in a forked child.
_XML_HEAP_RUN = r"""
import gzip, hashlib, json, os, queue, sys, threading
from lxml import etree
from templater import native
from templater.parse import parse_html

if sys.argv[1] == "chunks":
    assert native.numeric.xml_heap(etree.__file__) is True
    assert native.numeric.xml_heap(etree.__file__) is True  # (once a process: a second call changes nothing)
with gzip.open(sys.argv[2], "rt", encoding="utf-8") as f:
    pages = [json.loads(line)["html"] for line in f]
pages += ["<p>" + "&amp;x" * 40000 + "</p>",  # a text node grown piece by piece past the chunks' size limit
          "<div title='" + "v" * 20000 + "'>" + "<b>w</b> " * 3000 + "</div>",
          "<table>" + "<tr><td>c</td></tr>" * 5000 + "</table>"]
digest = hashlib.sha256()
for html in pages:
    root = parse_html(html)
    digest.update(b"-" if root is None else etree.tostring(root))
    if root is not None:
        digest.update(repr(root.xpath("count(//*)")).encode())
handed = queue.Queue()
failures = []

def parse_some(k):  # trees made here, freed by the other threads
    try:
        for html in pages[k::4] * 3:
            handed.put(parse_html(html))
    except BaseException as e:
        failures.append(e)

def free_some():
    while (tree := handed.get()) is not None:
        del tree

freeing = [threading.Thread(target=free_some) for _ in range(2)]
parsing = [threading.Thread(target=parse_some, args=(k,)) for k in range(4)]
for t in freeing + parsing:
    t.start()
for t in parsing:
    t.join()
for t in freeing:
    handed.put(None)
for t in freeing:
    t.join()
assert not failures, failures
child = os.fork()
if child == 0:
    root = parse_html(pages[0])
    os._exit(0 if root is not None and etree.tostring(root) else 1)
assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
print(digest.hexdigest())
"""


def test_xml_heap_gives_the_trees_glibc_gives():
    import subprocess
    import sys

    if native.numeric is None:
        pytest.skip("the C extension is not built")
    pages = str(SAMPLES / "pages.jsonl.gz")
    runs = {side: subprocess.run([sys.executable, "-c", _XML_HEAP_RUN, side, pages], capture_output=True, text=True)
            for side in ("glibc", "chunks")}
    for side, run in runs.items():
        assert run.returncode == 0, (side, run.stderr[-3000:])
    assert runs["chunks"].stdout == runs["glibc"].stdout and len(runs["glibc"].stdout.strip()) == 64


# After a tree larger than the resident chunks' limit is freed, the chunks beyond it are given back to the system;
# later pages take resident chunks only (a chunk given back faults again on each of its pages when it is reused).
_XML_HEAP_REUSE = r"""
import gzip, json, sys
from lxml import etree
from templater import native
from templater.parse import parse_html

assert native.numeric.xml_heap(etree.__file__) is True
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f:
    pages = [json.loads(line)["html"] for line in f]
big = parse_html("<table>" + "<tr><td>c</td><td>d</td></tr>" * 40000 + "</table>")
resident, given_back, made = native.numeric.xml_heap_chunks()
del big
after_big = native.numeric.xml_heap_chunks()
for html in pages * 3:
    root = parse_html(html)
    del root
after_pages = native.numeric.xml_heap_chunks()
print(json.dumps([[resident, given_back, made], list(after_big), list(after_pages)]))
"""


def test_xml_heap_reuses_resident_chunks_before_those_given_back():
    import json
    import subprocess
    import sys

    if native.numeric is None:
        pytest.skip("the C extension is not built")
    run = subprocess.run([sys.executable, "-c", _XML_HEAP_REUSE, str(SAMPLES / "pages.jsonl.gz")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    (_, _, made), (resident, given_back, made_big), (resident_end, given_back_end, made_end) = json.loads(run.stdout)
    if made == 0:
        pytest.skip("xml_heap is not available here")
    assert given_back > 0 and resident > 0  # the big tree's chunks: some kept, the rest given back
    assert made_big == made and resident + given_back <= made  # (the chunks that stay hold blocks still alive)
    assert given_back_end == given_back  # the pages took and returned resident chunks only
    assert made_end == made and 0 < resident_end <= resident  # (nothing new made: the pages' trees fit in those)


def test_xml_heap_needs_a_loaded_libxml2():
    if native.numeric is None:
        pytest.skip("the C extension is not built")
    if native.numeric.xml_heap("/no/such/module.so"):  # (True only where a process set it up already)
        from lxml import etree

        assert native.numeric.xml_heap(etree.__file__) is True


floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), floats), max_size=40), st.integers(0, 5))
def test_bincount_sums_as_add_at(pairs, extra):
    """fallback's per-element sums (np.bincount with weights, in input order from zeros) are np.add.at's into zeros,
    bit for bit, signed zeros, infinities and NaN included."""
    owner = np.array([o for o, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    size = (int(owner.max()) + 1 if len(owner) else 0) + extra
    plain = np.zeros(size)
    np.add.at(plain, owner, values)
    assert np.bincount(owner, weights=values, minlength=size).tobytes() == plain.tobytes()


@settings(max_examples=100, deadline=None)
@given(st.booleans(), st.booleans(), st.one_of(st.none(), st.text(max_size=5)), st.integers(0, 9))
def test_extraction_with_parts_is_replace(give_document, give_metadata, title, chars):
    import dataclasses

    from templater.datatypes import Document, Extraction, Metadata

    result = Extraction(id="i", url="u", site="s", text="t", method="template", template="s@v1", coverage=0.5,
                        kept=(1, 2), boilerplate_chars=chars, title=title, document=Document(title=title, nodes=()),
                        metadata=Metadata(author="a"))
    changes = {**({"document": None} if give_document else {}),
               **({"metadata": Metadata(date="2020-01-01")} if give_metadata else {})}
    fast, plain = result.with_parts(**changes), dataclasses.replace(result, **changes)
    assert [getattr(fast, f.name) for f in dataclasses.fields(Extraction)] == \
        [getattr(plain, f.name) for f in dataclasses.fields(Extraction)]


def test_now_is_the_second_of_datetime_now():
    from datetime import datetime, timezone

    from templater import pipeline

    before = datetime.now(timezone.utc).isoformat(timespec="seconds")
    stamp = pipeline.now()
    after = datetime.now(timezone.utc).isoformat(timespec="seconds")
    assert before <= stamp <= after and len(stamp) == len(before)


TABLE_PIECES = st.one_of(
    piece,
    st.sampled_from(["<table>", "<table role=presentation>", "</table>", "<tr>", "</tr>", "<td>", "<th>", "</td>",
                     "<caption>", "<tbody>", "<h1>", "</h1>", "<h3>", "<pre>", "</pre>", "<li>", "<ul>", "</ul>",
                     "<p>", "</p>", "<div>", "</div>"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(TABLE_PIECES, max_size=40), st.randoms(use_true_random=False))
def test_compiled_loop_adds_table_cells_as_the_method(pieces, random):
    """The compiled loop adds a data table's cells (and a layout or presentation table's cells as paragraphs) as
    _Builder.add does: tables of every kind, nested, open and cut off."""
    same_documents_on_markup(pieces, random, 0.8)


def test_the_first_code_point_classes_are_those_of_the_definition():
    """features' class table, filled at import for the code points below 256 with each pattern run once over all of
    them, holds what _code_point_class gives each one (and so would for the code points above, checked to 0x3000)."""
    from templater import features

    assert features._CLASS_TABLE[:256].tolist() == [features._code_point_class(code) for code in range(256)]
    assert features._first_classes(0x3000) == [features._code_point_class(code) for code in range(0x3000)]

# --- a mask's indexes: ndarray.nonzero()[0] where the extraction steps took np.flatnonzero (a quarter of its cost) --

@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, float("nan"), float("inf")]), max_size=40), st.integers(1, 3))
def test_nonzero_of_a_one_dimensional_array_is_flatnonzero(values, step):
    """For the 1-D arrays the extraction steps index (masks, comparisons, a column of a matrix: a strided view),
    ``array.nonzero()[0]`` is ``np.flatnonzero(array)``: the same indexes, in order, of the same dtype."""
    floats = np.array(values, dtype=np.float64)
    for array in (floats, floats != 0, floats[::step], np.tile(floats, (2, 1)).T.copy()[:, 0] if len(floats) else floats):
        ours, theirs = array.nonzero()[0], np.flatnonzero(array)
        assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist()
