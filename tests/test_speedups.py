"""The fast paths give exactly what their plain definitions give (the speed work must not change any output)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from templater import features
from templater.types import Block, Page, Segmented

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
    fast, plain = features._text_columns(seg), features._text_columns_plain(seg)
    assert fast.tobytes() == plain.tobytes()


def test_text_columns_title_words_and_case_folding():
    seg = page_of(["ΟΔΟΣ ΣΟΦΟΚΛΕΟΥΣ. The İstanbul river", "Copyright © 2020 all rights reserved  ", "ΣΣ x"],
                  "Istanbul οδος river")
    assert features._text_columns(seg).tobytes() == features._text_columns_plain(seg).tobytes()
