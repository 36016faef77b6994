"""Single-page extraction: which blocks of one page are its main content, where no site template helps.

Four methods, chosen by name:

- ``density``: the founding notes' line text density. Each block's density is text bytes over text plus
  markup bytes (averaged with its two neighbours either side, weighted by text length); the page's densities
  are modelled as two normal distributions (boilerplate, content), fitted per page, and the blocks above the
  point where the two meet are kept.
- ``ann``: the notes' small neural line classifier: nine inputs (density, markup bytes and text length of
  the block, of the previous block and of the next block), one hidden layer, shipped weights.
- ``fdr``: the notes' false-discovery-rate cut: each block's classifier score becomes a p-value against the
  scores boilerplate blocks get, and Benjamini-Hochberg at q picks the cut, so that the expected share of
  boilerplate among the kept blocks stays under q.
- ``auto`` (the default): a two-stage classifier on DOM-aware features (text shape, link density, tag,
  ancestors' class/id words and tags, depth, position, content hints, readability's content region,
  neighbours), whose second stage also sees what the first stage made of the neighbours and containers;
  then the content region (the subtree where the scores add up best) bounds what is kept, and the headline
  (the heading before the content that echoes the page <title>) is kept with the text.

Where a site template already dropped its boilerplate, ``allowed`` marks the blocks it kept; the classifier
then decides among those only.
"""

from __future__ import annotations

import functools
import os
import posixpath
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from . import ann, config, native
from .errors import InputError
from .features import (CLASS_GROUPS, CONTEXT_NAMES, FEATURE_NAMES, TAG_GROUPS, Tree, block_features,
                       context_features, group_bits, inside, line_features, number_tree, sum_up)
from .blocks import in_declared_main, path_mask
from .headline import find_headline, heading_words, keep_headline
from .template import link_runs
from .datatypes import Segmented
from .config import (ANN_THRESHOLD, DENSITY_BOUNDS, DENSITY_ITERATIONS, DENSITY_MIN_SPREAD, DENSITY_TOLERANCE,
                     DENSITY_WINDOW, REGION_BASE, REGION_INSIDE, REGION_OUTSIDE, SIDE_FORM_SHARE,
                     LearnSettings)

METHODS = ("density", "ann", "fdr", "auto")
DEFAULT_METHOD = "auto"

FDR_Q = config.FDR_Q  # default false-discovery rate of the fdr method
FORM_TAG_GROUP = "in_form"  # features.TAG_GROUPS' group of form elements (form, fieldset, label, ...): side_forms
CAPTION_PATH = "/figcaption"  # blocks whose tag path holds this are captions, never kept by the classifier
OUTSIDE_TRUSTED = "(outside a trusted content region)"  # drop_reasons' words for an allowed block the region does not
# vouch for
WEIGHTS_FILE = "ann_weights.npz"
_FORM_BITS = np.uint32(sum(1 << n for n, (name, _) in enumerate(TAG_GROUPS) if name == FORM_TAG_GROUP))
NOTE_ROLES = frozenset({"note", "doc-footnote", "doc-endnote", "doc-endnotes"})  # ARIA roles of an element holding a
# note to the page's text (page_notes)
LIST_ENTRY_TAGS = frozenset({"li", "dt", "dd"})  # a block with one of these on its tag path is a list's entry
COMMENT_CLASS_GROUP = "comment"  # CLASS_GROUPS' group of comment threads (comment_threads)
_COMMENT_BITS = np.uint32(sum(1 << n for n, (name, _) in enumerate(CLASS_GROUPS) if name == COMMENT_CLASS_GROUP))


def select_blocks(seg: Segmented, *, method: str = DEFAULT_METHOD, allowed: np.ndarray | None = None,
                  trusted: np.ndarray | None = None, q: float = FDR_Q,
                  weights: ann.Weights | None = None, settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """Per block of ``seg``, True where it is main content by ``method``; blocks not ``allowed`` stay False.

    ``trusted`` (with ``allowed``) marks blocks inside the site template's trusted content region: the default
    classifier drops those only when it is nearly sure (trusted_threshold) and the block looks like chrome
    (region_chrome); the thresholds behind a template are the template's ``settings``."""
    if method not in METHODS:
        raise InputError(f"unknown fallback method {method!r} for {seg.page.url}; choose one of {', '.join(METHODS)}")
    if allowed is not None and len(allowed) != len(seg.blocks):
        raise InputError(f"allowed mask has {len(allowed)} entries but {seg.page.url} has {len(seg.blocks)} blocks")
    if not seg.blocks:
        return np.zeros(0, dtype=bool)
    allowed = None if allowed is None else np.asarray(allowed, dtype=bool)
    if method == "density":
        keep = keep_dense(seg)
    else:
        weights = default_weights() if weights is None else weights
        if method == "ann":
            keep = ann.predict(weights.line, line_features(seg)) > ANN_THRESHOLD
        elif method == "fdr":
            scores = score_blocks(seg, weights, allowed=allowed)
            keep = benjamini_hochberg(p_values(scores, weights.null_scores), q)
        else:
            keep = classify_blocks(seg, weights, allowed=allowed, trusted=trusted, settings=settings)
    return keep if allowed is None else keep & allowed


def extract_text(seg: Segmented, keep: np.ndarray) -> str:
    """The kept blocks' text in document order, one block a line."""
    return "\n".join(block.text for block, kept in zip(seg.blocks, keep) if kept)


# --- density ----------------------------------------------------------------------------------------------------

def keep_dense(seg: Segmented) -> np.ndarray:
    """Blocks whose text density (averaged with their neighbours', weighted by text length) is above the
    page's own threshold."""
    chars = seg.block_chars().astype(np.float64)
    density = np.fromiter((b.text_density for b in seg.blocks), dtype=np.float64, count=len(seg.blocks))
    smoothed = smooth_density(density, chars)
    return smoothed > density_threshold(smoothed, chars)


def smooth_density(density: np.ndarray, chars: np.ndarray, width: int = DENSITY_WINDOW) -> np.ndarray:
    """Each block's density averaged over the ``width`` blocks either side, weighted by text length, so a
    short line inside a dense paragraph run is judged with its run."""
    window = np.ones(2 * width + 1)
    text = np.convolve(np.pad(density * chars, width), window, mode="valid")
    weight = np.convolve(np.pad(chars, width), window, mode="valid")
    return text / np.maximum(weight, 1.0)


def density_threshold(density: np.ndarray, chars: np.ndarray) -> float:
    """The page's density cut: fit two normal distributions to the blocks' densities (each block weighted by
    its text length, by EM from the lower and upper quartiles) and return where the weighted densities of
    the two meet between their means, clamped to DENSITY_BOUNDS."""
    low, high = DENSITY_BOUNDS
    if len(density) < 2 or np.ptp(density) < DENSITY_MIN_SPREAD:
        return low
    weight = chars / chars.sum()
    means = np.quantile(density, [0.25, 0.75])
    spreads = np.full(2, max(float(np.std(density)), DENSITY_MIN_SPREAD))
    shares = np.full(2, 0.5)
    previous = means
    for _ in range(DENSITY_ITERATIONS):
        likelihood = shares * _normal(density[:, None], means, spreads)
        responsibility = likelihood / np.maximum(likelihood.sum(axis=1, keepdims=True), 1e-300)
        mass = (weight[:, None] * responsibility).sum(axis=0)
        if (mass <= 0).any():
            break
        shares = mass
        means = (weight[:, None] * responsibility * density[:, None]).sum(axis=0) / mass
        spreads = np.sqrt((weight[:, None] * responsibility * (density[:, None] - means) ** 2).sum(axis=0) / mass)
        spreads = np.maximum(spreads, DENSITY_MIN_SPREAD)
        if np.abs(means - previous).max() < DENSITY_TOLERANCE:
            break
        previous = means
    return float(np.clip(_crossing(means, spreads, shares), low, high))


def _normal(x: np.ndarray, mean: np.ndarray, spread: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * ((x - mean) / spread) ** 2) / spread


def _crossing(means: np.ndarray, spreads: np.ndarray, shares: np.ndarray) -> float:
    """Where share0*N(mean0, spread0) equals share1*N(mean1, spread1) between the means; the midpoint if
    they do not cross there."""
    order = np.argsort(means)
    (m0, m1), (s0, s1), (w0, w1) = means[order], spreads[order], shares[order]
    grid = np.linspace(m0, m1, 201)
    gap = w0 * _normal(grid, m0, s0) - w1 * _normal(grid, m1, s1)
    change = np.flatnonzero(np.diff(np.sign(gap)) != 0)
    return float(grid[change[0] + 1]) if len(change) else float((m0 + m1) / 2)


# --- classifiers ---------------------------------------------------------------------------------------------------

def classify_blocks(seg: Segmented, weights: ann.Weights, *, allowed: np.ndarray | None = None,
                    trusted: np.ndarray | None = None, settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """The default method's choice. On a page of its own: the content region (the subtree whose blocks'
    scores, less REGION_BASE, weighted by their text length, sum highest), the blocks inside it that score
    above REGION_INSIDE, and any block elsewhere that scores above REGION_OUTSIDE. Behind a site template:
    the allowed blocks that score above the template's allowed_threshold (the template already found the region);
    inside the template's trusted content region, every allowed block but those scoring at most its
    trusted_threshold that look like chrome (region_chrome). Then the headline, where the classifier left it out."""
    tree = number_tree(seg)
    # behind a template, only the allowed blocks' features and scores are read, and the headings' title overlap
    features = block_features(seg, tree, rows=None if allowed is None else allowed | headings(seg))
    scores = _score(seg, tree, features, weights, allowed, rows=allowed)
    if allowed is None:
        keep = _keep_region(seg, tree, scores)
    else:
        keep = (scores > settings.allowed_threshold) & allowed
        if trusted is not None and trusted.any():
            vouched = trusted & allowed
            doubtful = vouched & (scores <= settings.trusted_threshold)
            if doubtful.any():  # region_chrome only judges these: on a page with none it is not asked
                vouched &= ~(doubtful & region_chrome(seg, tree, trusted, settings, among=doubtful))
            keep |= vouched
    return keep_headline(seg, features, keep & ~captions(seg))


def headings(seg: Segmented) -> np.ndarray:
    """Per block, whether it is a heading (HEADLINE_TAGS: what keep_headline may add by its title overlap)."""
    out = np.zeros(len(seg.blocks), dtype=bool)
    out[[index for index, _ in heading_words(seg)]] = True
    return out


def region_chrome(seg: Segmented, tree: Tree, trusted: np.ndarray,
                  settings: LearnSettings = LearnSettings(), *, among: np.ndarray | None = None) -> np.ndarray:
    """Blocks that look like chrome even inside the trusted content region: under an element whose class or id
    names one of region_chrome_groups, mostly link text (above region_link_density; not the entries of the page's
    table of contents: document_contents), or under one of region_chrome_tags below the region; never a block in
    code, a table or a definition list below the region (protected_tags), nor in a note to the page's text
    (page_notes): the template's ``settings``. ``among``: the blocks asked about (default every trusted block; the
    others' answer may say chrome where a note or a table of contents is not looked for)."""
    named = inside(tree, (tree.class_bits & np.uint32(group_bits(settings.region_chrome_groups))) != 0)[tree.owner]
    chars = seg.block_chars()
    links = seg.block_links()
    below = _below_region(seg, trusted)
    position = np.zeros(len(seg.blocks), dtype=bool)  # only trusted blocks are judged by their place
    position[trusted.nonzero()[0]] = [not settings.region_chrome_tags.isdisjoint(tags) for tags in below]
    linked = (links > settings.region_link_density * chars) & ~among_own_text(seg, trusted, links, settings)
    chrome = (named | linked | position) & ~protected_blocks(seg, trusted, below, settings=settings)
    judged = chrome & trusted & (True if among is None else among)
    if judged.any():  # (a page's few blocks that look like chrome in its region: their elements are read)
        chrome &= ~(page_notes(seg, judged) | document_contents(seg, judged & linked & ~named & ~position,
                                                               settings.heading_tags))
    return chrome


def page_notes(seg: Segmented, candidates: np.ndarray) -> np.ndarray:
    """Among ``candidates``, the blocks inside an element whose ARIA role makes it a note to the page's text
    (NOTE_ROLES: a footnote or endnote, as docutils writes <aside class="footnote" role="note"> and pandoc its
    endnotes' section): the page's own text set apart, in an <aside> or not, and never chrome."""
    out = np.zeros(len(seg.blocks), dtype=bool)
    blocks = seg.blocks
    for i in np.flatnonzero(candidates).tolist():
        node = blocks[i].element
        while node is not None and node.get("role") not in NOTE_ROLES:
            node = node.getparent()
        out[i] = node is not None
    return out


def document_contents(seg: Segmented, candidates: np.ndarray, heading_tags: frozenset[str] = config.HEADING_TAGS
                      ) -> np.ndarray:
    """Among ``candidates``, the entries of the page's table of contents: list entries (a step of their tag path is
    one of LIST_ENTRY_TAGS) in the element the page declares its main content (<main>, [role=main]) whose links
    all stay in the page's document tree, by relative URLs into the page's folder or below (in_document_tree), or
    name one of the page's sections (an anchor of a heading, or of an element that opens with one:
    section_anchors): a chapter's list of its sections' pages, a list of the page's sections, as documentation
    generators (Sphinx's toctree, a book's contents) link the pages of one book. Mostly links, after the page's
    last paragraph, they look like a "see also" list, yet they are the page's content. A news page's related
    stories and tag lists link by absolute or site-rooted URLs, most into other folders; its tabs' anchors name
    panels, not sections."""
    out = np.zeros(len(seg.blocks), dtype=bool)
    blocks = seg.blocks
    folder = sections = None
    for i in np.flatnonzero(candidates).tolist():
        block = blocks[i]
        if LIST_ENTRY_TAGS.isdisjoint(block.tag_path.split("/")) or not in_declared_main(block):
            continue
        if folder is None:
            path = urlsplit(seg.page.url).path
            folder = path[: path.rfind("/") + 1] or "/"
        hrefs = own_links(block.element)
        inside = bool(hrefs) and all(in_document_tree(href, folder) for href in hrefs)
        if inside and any(href.lstrip().startswith("#") for href in hrefs):
            sections = section_anchors(seg.root, heading_tags) if sections is None else sections
            inside = all(href.strip()[1:] in sections for href in hrefs if href.lstrip().startswith("#"))
        out[i] = inside
    return out


def section_anchors(root, heading_tags: frozenset[str] = config.HEADING_TAGS) -> frozenset[str]:
    """The ids of the page's headings and of its elements whose first child element is a heading (a <section
    id="usage"><h2>), and of an empty element right before a heading (<span id="usage"></span><h2>): what a
    table of the page's own contents links to."""
    out = set()
    for element in root.iter():
        ident = element.get("id") if isinstance(element.tag, str) else None
        if not ident:
            continue
        if element.tag in heading_tags:
            out.add(ident)
            continue
        first = next((child for child in element if isinstance(child.tag, str)), None)
        if first is None and not (element.text or "").strip():
            first = element.getnext()
            while first is not None and not isinstance(first.tag, str):
                first = first.getnext()
        if first is not None and first.tag in heading_tags:
            out.add(ident)
    return frozenset(out)


def own_links(element) -> list[str]:
    """The href of each link among the element's own inline content (not inside a block-level descendant: another
    block's)."""
    hrefs = []
    stack = [element]
    while stack:
        for child in stack.pop():
            tag = child.tag
            if not isinstance(tag, str) or tag in config.BLOCK_TAGS:
                continue
            if tag == "a" and child.get("href") is not None:
                hrefs.append(child.get("href"))
            stack.append(child)
    return hrefs


def in_document_tree(href: str, folder: str) -> bool:
    """Whether a link leads to a file of the page's document tree: a relative URL (no scheme, no host, not rooted
    at the site's top) into ``folder`` (the page's folder, ending in "/") or below it, without a query (a static
    file, not a script's page: "blog.php?post=12"), or an anchor of the page itself ("#usage"; not a bare "#", the
    target of a script's button)."""
    href = href.strip()
    if href.startswith("#"):
        return len(href) > 1
    try:
        parts = urlsplit(href)
    except ValueError:  # a malformed URL ("http://[x") is no link into the tree
        return False
    if not parts.path or parts.scheme or parts.netloc or parts.query or href.startswith(("/", "\\")):
        return False
    return (posixpath.normpath(folder + parts.path) + "/").startswith(folder)


def among_own_text(seg: Segmented, trusted: np.ndarray, links: np.ndarray | None = None,
                   settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """Trusted blocks with the page's own text (trusted blocks mostly not links) both before and after them: a
    list of links there (the sections a chapter lists under its headings) sits among the page's content, not at
    its edges where tables of contents and "see also" lists stand."""
    chars = seg.block_chars()
    if links is None:
        links = seg.block_links()
    own = trusted & (chars > 0) & (links <= settings.region_link_density * chars)
    before = np.cumsum(own) - own
    after = own.sum() - np.cumsum(own)
    return trusted & (before > 0) & (after > 0)


def protected_blocks(seg: Segmented, trusted: np.ndarray, below: list[list[str]] | None = None, *,
                     settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """Trusted blocks in code, a table or a definition list below the trusted region (protected_tags), but not
    a definition list's terms in a run of links (template.link_runs: a table of contents marked up as <dl>)."""
    if not trusted.any():
        return np.zeros(len(seg.blocks), dtype=bool)
    below = _below_region(seg, trusted) if below is None else below
    where = trusted.nonzero()[0]
    runs = link_runs(seg, settings)[where].tolist()
    out = np.zeros(len(seg.blocks), dtype=bool)  # only trusted blocks are judged
    out[where] = [_protected(tags, run, settings.protected_tags) for tags, run in zip(below, runs)]
    return out


def _protected(tags: list[str], run: bool, protected_tags: frozenset[str]) -> bool:
    return not protected_tags.isdisjoint(tags) and not (run and "dl" in tags and "table" not in tags
                                                        and "pre" not in tags)


def _below_region(seg: Segmented, trusted: np.ndarray) -> list[list[str]]:
    """Per trusted block, in order, the tags of its tag path below the trusted blocks' deepest common ancestor
    (what is not trusted is never judged by these tags). A page's blocks share a few tag paths: each is split and
    cut once."""
    tag_paths = [seg.blocks[i].tag_path for i in trusted.nonzero()[0].tolist()]
    steps = {path: path.split("/") for path in tag_paths}
    depth = len(os.path.commonprefix(list(steps.values())))  # of lists: the steps all the paths begin with
    top = max(depth - 1, 0)  # the common ancestor itself stays in: a region that is a <table> protects its cells
    below = {path: split[top:] for path, split in steps.items()}
    return [below[path] for path in tag_paths]


def drop_reasons(seg: Segmented, *, allowed: np.ndarray, trusted: np.ndarray,
                 weights: ann.Weights | None = None, settings: LearnSettings = LearnSettings()) -> list[str]:
    """Why the default classifier behind a template drops each allowed block it drops, in words ('' for the
    blocks it keeps and those the template dropped): the score and the threshold it missed, and inside the
    trusted region what made the block look like chrome (region_chrome)."""
    weights = default_weights() if weights is None else weights
    tree = number_tree(seg)
    features = block_features(seg, tree)
    scores = _score(seg, tree, features, weights, allowed)
    keep = classify_blocks(seg, weights, allowed=allowed, trusted=trusted, settings=settings)
    chrome = region_chrome(seg, tree, trusted, settings) if trusted.any() else np.zeros(len(seg.blocks), dtype=bool)
    bits = _ancestor_bits(tree)[tree.owner]
    names = [name for name, _ in CLASS_GROUPS]
    caption = captions(seg)
    reasons = []
    for i, block in enumerate(seg.blocks):
        if keep[i] or not allowed[i]:
            reasons.append("")
        elif caption[i]:
            reasons.append("image caption")
        elif not trusted[i]:
            reasons.append(f"score {scores[i]:.2f} <= {settings.allowed_threshold} {OUTSIDE_TRUSTED}")
        else:
            why = [n for n in settings.region_chrome_groups if n in names and bits[i] & (1 << names.index(n))]
            why = f"class/id '{why[0]}'" if why else ("mostly links" if block.link_chars > (
                settings.region_link_density * len(block.text)) else "chrome position")
            reasons.append(f"score {scores[i]:.2f} <= {settings.trusted_threshold} and {why}" if chrome[i] else "")
    return reasons


def _ancestor_bits(tree: Tree) -> np.ndarray:
    """Per element, the CLASS_GROUPS bits of itself and its ancestors."""
    bits = tree.class_bits.copy()
    for level in tree.levels()[1:]:
        bits[level] |= bits[tree.parent[level]]
    return bits


def captions(seg: Segmented) -> np.ndarray:
    """Blocks inside a <figcaption>: image captions and credits, which no benchmark's gold counts as main text
    (on the dev corpus, dropping them costs no dataset any recall)."""
    return path_mask(seg, _caption_path)


def _caption_path(tag_path: str) -> bool:
    return CAPTION_PATH in tag_path


def score_blocks(seg: Segmented, weights: ann.Weights, *, allowed: np.ndarray | None = None) -> np.ndarray:
    """The default classifier's probability that each block is main content. Blocks not ``allowed`` count
    as boilerplate in the context the second stage sees."""
    tree = number_tree(seg)
    return _score(seg, tree, block_features(seg, tree), weights, allowed)


def _score(seg: Segmented, tree: Tree, features: np.ndarray, weights: ann.Weights,
           allowed: np.ndarray | None, *, rows: np.ndarray | None = None) -> np.ndarray:
    """The second stage's scores; with an expert in the weights (genre-mixed training), the mean of the scores of
    the stages fitted on every page and of the expert's stages, each second stage seeing its own first stage.
    ``rows`` (bool per block): only those blocks' scores are wanted, the others are 0.0 (stage_scores)."""
    scores = stage_scores(seg, tree, features, weights.first, weights.second, allowed, rows=rows)
    if weights.expert_first:
        scores += stage_scores(seg, tree, features, weights.expert_first, weights.expert_second, allowed, rows=rows)
        scores /= 2
    return scores


def stage_scores(seg: Segmented, tree: Tree, features: np.ndarray, first_stage, second_stage,
                 allowed: np.ndarray | None = None, *, rows: np.ndarray | None = None) -> np.ndarray:
    """One pair of stages' scores: the second stage over the features and the context of the first's (in one
    call of templater._numeric.two_stage where compiled: _stage_scores_c). With ``rows`` (bool per block), the
    scores of the other blocks are 0.0: the compiled pass runs only the wanted rows through the second stage, and
    only the allowed ones through the first (a block not allowed counts as 0.0 in the context either way)."""
    found = _stage_scores_c(seg, tree, features, first_stage, second_stage, allowed, rows)
    if found is not None:
        return found
    first = ann.predict_mean(first_stage, features)
    if allowed is not None:
        first = first * allowed
    scores = ann.predict_mean(second_stage, np.hstack([features, context_features(seg, tree, first)]))
    return scores if rows is None else np.where(rows, scores, 0.0)


def _stage_scores_c(seg: Segmented, tree: Tree, features: np.ndarray, first_stage, second_stage,
                    allowed: np.ndarray | None, rows: np.ndarray | None = None) -> np.ndarray | None:
    """stage_scores in one call of templater._numeric.two_stage, which runs the C code each of its steps takes
    (ann.predict_mean's ensemble, features.context_features) without numpy's arrays in between: the same floats.
    None where a step would not take C (no extension, an ensemble the C pass does not take, arrays of other
    kinds, a tree not numbered parents first): stage_scores' steps then run one by one."""
    numeric = native.numeric
    if (numeric is None or not isinstance(features, np.ndarray) or features.dtype != np.float64
            or features.ndim != 2 or not features.flags.c_contiguous or not len(features)
            or (allowed is not None and (not isinstance(allowed, np.ndarray) or allowed.dtype != bool))
            or (rows is not None and (not isinstance(rows, np.ndarray) or rows.dtype != bool))):
        return None
    first, second = ann.packed_ensemble(first_stage), ann.packed_ensemble(second_stage)
    if first is None or second is None or len(first_stage) != len(second_stage):
        return None
    hidden = len(first_stage[0].hidden_bias)
    if len(second_stage[0].hidden_bias) != hidden or features.shape[1] != first_stage[0].inputs:
        return None
    out = np.empty(len(features))
    found = numeric.two_stage(first, second, features, seg.block_chars(), tree.parent, tree.owner, allowed, rows,
                              out, hidden, len(first_stage), config.CONTEXT_LEVELS, config.CONTEXT_WIDTHS,
                              config.MIN_SCORE)
    return None if found is None else out


def _keep_region(seg: Segmented, tree: Tree, scores: np.ndarray) -> np.ndarray:
    """The content region (the subtree whose blocks' scores, less REGION_BASE, weighted by their text length,
    sum highest; a side form's blocks add nothing to it), its blocks scoring above REGION_INSIDE, and any block
    elsewhere scoring above REGION_OUTSIDE; never a side form's blocks (side_forms)."""
    chars = seg.block_chars().astype(np.float64)
    form = side_forms(seg, tree, chars)[tree.owner]
    # (np.bincount adds in input order from zeros, as np.add.at into zeros does: the same floats, in half the time)
    per_element = np.bincount(tree.owner, weights=np.where(form, 0.0, chars * (scores - REGION_BASE)),
                              minlength=len(tree.parent))
    sums = sum_up(tree, per_element)
    best = int(np.argmax(sums))
    if _in_named(tree, best, _COMMENT_BITS):  # never a comment thread apart from the headline (comment_threads)
        threads = comment_threads(seg, tree)
        if threads[best]:
            best = int(np.argmax(np.where(threads, -np.inf, sums)))
    region = np.zeros(len(tree.parent), dtype=bool)
    region[best] = True
    return ((inside(tree, region)[tree.owner] & (scores > REGION_INSIDE)) | (scores > REGION_OUTSIDE)) & ~form


def _in_named(tree: Tree, node: int, bits: np.uint32) -> bool:
    """Whether the element or one of its ancestors has a class/id of the groups of ``bits``."""
    while node >= 0:
        if tree.class_bits[node] & bits:
            return True
        node = int(tree.parent[node])
    return False


def comment_threads(seg: Segmented, tree: Tree) -> np.ndarray:
    """Per element: inside an element whose class or id names comments (CLASS_GROUPS' "comment": comment, disqus,
    reply, ...) and that does not hold the page's headline (find_headline). The content region is never one of
    them: on a story whose thread outweighs it (a copy with the story's first paragraphs cut, under hundreds of
    comments) a branch of the thread has the largest sum, and the region went there instead of the story. An
    element that holds the headline wraps the page, not a thread; no headline: no thread."""
    return _apart_from_headline(seg, tree, (tree.class_bits & _COMMENT_BITS) != 0)


def _apart_from_headline(seg: Segmented, tree: Tree, elements: np.ndarray) -> np.ndarray:
    """Per element: inside one of ``elements`` (changed in place) that does not hold the page's headline (its block's
    owner and that owner's ancestors hold it); no headline: none."""
    out = np.zeros(len(tree.parent), dtype=bool)
    if not elements.any():
        return out
    headline = find_headline(seg)
    if headline is None:
        return out
    node = int(tree.owner[headline])
    while node >= 0 and elements.any():
        elements[node] = False
        node = int(tree.parent[node])
    return inside(tree, elements) if elements.any() else out


def side_forms(seg: Segmented, tree: Tree, chars: np.ndarray | None = None) -> np.ndarray:
    """Per element: inside a form (FORM_TAG_GROUP) that does not hold the page's headline (find_headline) and holds at
    least SIDE_FORM_SHARE of the page's text: a registration form with its terms and conditions, a long sign-up or
    survey form beside the article. Its sentences score as prose, and added to the region's sum they move the region
    from the article up to a wrapper of both; a form's text is not the page's content. A form that holds the headline
    wraps the page (ASP.NET pages hold all their content in one <form>); a smaller form never moves the region (a
    comment form under a post), and leaving its text out of the sum there moved the region onto wider wrappers on the
    dev corpus. No headline: no side form."""
    forms = (tree.tag_bits & _FORM_BITS) != 0
    if forms.any():
        chars = seg.block_chars().astype(np.float64) if chars is None else chars
        per_element = np.bincount(tree.owner, weights=chars, minlength=len(tree.parent))  # (as np.add.at would)
        forms &= sum_up(tree, per_element) >= SIDE_FORM_SHARE * chars.sum()
    return _apart_from_headline(seg, tree, forms)


def p_values(scores: np.ndarray, null_scores: np.ndarray) -> np.ndarray:
    """Per score, the share of boilerplate scores at least as high (with the +1 that keeps it a valid
    p-value): how surprising the score would be if the block were boilerplate."""
    above = len(null_scores) - np.searchsorted(null_scores, scores, side="left")
    return (above + 1) / (len(null_scores) + 1)


def benjamini_hochberg(p: np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Hochberg: keep the k smallest p-values, k the largest rank with p_(k) <= k q / m."""
    if not 0 < q <= 1:
        raise InputError(f"the FDR level q must lie in (0, 1], got {q}")
    m = len(p)
    order = np.argsort(p, kind="stable")
    passed = np.flatnonzero(p[order] <= q * np.arange(1, m + 1) / m)
    keep = np.zeros(m, dtype=bool)
    if len(passed):
        keep[order[: passed[-1] + 1]] = True
    return keep


@functools.lru_cache(maxsize=1)
def default_weights() -> ann.Weights:
    """The weights shipped with the package (trained on the genre-mixed set of bench/build_training_set.py)."""
    # read beside this file, as chartable reads its table (importlib.resources would cost a start-up ~3 ms)
    with open(Path(__file__).resolve().parent / "data" / WEIGHTS_FILE, "rb") as handle:
        return load_weights(handle, source=f"templater/data/{WEIGHTS_FILE}")


def load_weights(file, *, source: str | None = None) -> ann.Weights:
    """Weights from a path or binary file written by ``templater train`` (training.save_weights), checked
    against the block features this version computes."""
    source = source or str(file)
    try:
        weights = ann.read_weights(file)
    except (OSError, KeyError, ValueError, _bad_zip_file()) as error:
        raise InputError(f"cannot read weights from {source}: {error}; write them with `templater train`") from error
    check_weights(weights, source)
    return weights


def _bad_zip_file() -> type[Exception]:
    """zipfile.BadZipFile, imported only when an error is matched (an except clause's classes are evaluated then):
    a start that reads the shipped weights' uncompressed copy imports no zipfile (~1% of a short extract's start)."""
    from zipfile import BadZipFile

    return BadZipFile


def check_weights(weights: ann.Weights, source: str) -> None:
    """Refuse weights trained on other block features than this version computes."""
    expected = FEATURE_NAMES + CONTEXT_NAMES
    if weights.features != expected:
        raise InputError(f"weights in {source} were trained on other block features than this version computes; "
                         "retrain them with `templater train`")
