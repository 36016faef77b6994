"""Named settings: thresholds, limits, shingle and LSH defaults, and the learning settings saved with each
template (LearnSettings, at the end). Code uses these names, not bare numbers; a module keeps at its top only what
is its own format (bit masks, hash constants, file layouts, versions) and vocabulary (tag sets, patterns, names)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

# --- input limits ---------------------------------------------------------------------------------------
MAX_PAGE_BYTES = 8 * 1024 * 1024  # a page larger than this is skipped as "huge"
MIN_PAGE_CHARS = 16  # fewer characters of markup than this: "empty"
BINARY_CONTROL_SHARE = 0.10  # share of control characters above which a body is "binary"
SNIFF_BYTES = 64 * 1024  # "binary", "undecodable" and "looks like HTML" are judged on this much of the start
META_SCAN_BYTES = 32 * 1024  # <meta charset> and <?xml encoding?> are looked for in this much of the start
DETECT_BYTES = 64 * 1024  # the charset detector reads at most this much of the start
DETECT_CP1252_CHAOS = 0.05  # windows-1252 wins over the detector's pick when at most this much "chaos" worse
MAX_REPLACEMENT_SHARE = 0.10  # share of U+FFFD (bytes no codec decodes) above which a page is "undecodable"
UTF16_SNIFF_BYTES = 1024  # a body without BOM is taken for UTF-16 when, in this much of its start, ...
UTF16_MIN_NUL_SHARE = 0.30  # ... at least this share of the code units has a NUL on one side ...
UTF16_MAX_OTHER_NUL_SHARE = 0.05  # ... and at most this share a NUL on the other
HTTP_OK_STATUS = "200"  # a WARC response with another HTTP status is skipped as "http-status"
HTML_CONTENT_TYPES = ("text/html", "application/xhtml+xml")  # HTTP Content-Types taken as HTML
# Content-Types servers send for HTML by mistake or laziness: the body decides ("not-html" when no markup).
SNIFFED_CONTENT_TYPES = ("", "text/plain", "text/xml", "application/xml", "application/octet-stream",
                         "binary/octet-stream", "application/unknown", "unknown/unknown")

TOP_SKIP_REASONS = 3  # reasons (with an example each) a run in which every record was skipped prints

# --- page limits: checked before lxml is handed the bytes (parse.markup_counts) or right after segmenting ----
# On the dev corpus (2,447 pages) the most a page had: 10,406 elements, 78 attributes on one element (102 as
# markup_counts counts them), 17,937 attributes, depth 58, 2,349 blocks; the slowest page took 0.07 s to parse and
# segment. The limits are far above that and keep the worst page inside them to seconds: lxml's parse is quadratic
# in the attributes of one element (100k: 28 s).
MAX_START_TAGS = 200_000  # start tags ("<" and a letter) in the markup: a page with more is "over-limit"
MAX_ATTRIBUTES = 256  # attributes in one start tag
MAX_PAGE_ATTRIBUTES = 300_000  # attributes in all start tags (segmenting costs ~6 s a million)
MAX_DEPTH = 256  # element nesting: libxml2's own limit without huge_tree (deeper markup is cut off at this depth)
MAX_BLOCKS = 50_000  # text blocks of a segmented page
MAX_LEARN_BLOCKS = 10_000  # a page with more blocks is extracted but left out of the pages a template learns from
PAGE_TIME_BUDGET = 10.0  # CPU seconds for one page's parse + segment (+ extract); checked between the stages

# --- rules import: what `templater rules import` accepts (a site's learned template has tens of rules) ----------
MAX_RULES_FILE_BYTES = 4 * 1024 * 1024  # a rules file larger than this is refused before it is read
MAX_IMPORT_RULES = 5_000  # rules in one file
RULE_TIME_BUDGET = 2.0  # seconds one rule's XPath may take on the site's sample pages together (run in a child
# process that is stopped at the budget: libxml2 cannot interrupt an XPath, and //*[count(//*[count(//*)>0])>0]
# is cubic in the page's elements)
IMPORT_TIME_BUDGET = 60.0  # seconds for all the rules of one file together

# --- segmentation --------------------------------------------------------------------------------------
BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt fieldset figcaption "
    "figure footer form frameset h1 h2 h3 h4 h5 h6 header hgroup hr html iframe legend li main menu nav noframes "
    "ol option p pre section select summary table tbody td tfoot th thead title tr ul".split()
)
BREAK_TAGS = frozenset({"br"})
DROP_TAGS = ("script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "applet", "select",
             "button", "textarea")

# --- grouping and learning -----------------------------------------------------------------------------
MIN_GROUP_PAGES = 3  # a URL prefix with fewer pages backs off to a shorter prefix
LAYOUT_MATCH = 0.6  # a page fits a layout when it holds this share of the layout's signature tag paths
LAYOUT_SAMPLE = 200  # leaders of layout clusters are chosen among at most this many pages of a group
MIN_TEMPLATE_PAGES = 3  # a layout cluster needs this many pages to learn a template
LAYOUT_SIMILARITY = 0.30  # pages join one layout cluster when the share of shared shapes is at least this
STATIC_SUPPORT = 0.5  # a (tag path, text) block on at least this share of a cluster's pages is boilerplate
MIN_STATIC_PAGES = 2  # ... and on at least this many pages
SHAPE_SUPPORT = 0.5  # a tag path on this share of pages whose text varies ...
SHAPE_MAX_CHARS = 60  # ... and whose median text is this short is dynamic boilerplate (dates, bylines, counts)
SHAPE_MAX_LINK_DENSITY = 0.5  # ... or whose links make up more than this share of its text (related lists)
MAX_LEARN_PAGES = 60  # pages sampled from a cluster to learn from (larger clusters are sampled, seeded)
LEARN_SEED = 7
HEADLINE_TAGS = frozenset({"h1", "h2", "h3"})  # tags a headline may have (learning and the single-page methods) ...
HEADLINE_MIN_OVERLAP = 0.5  # ... and the least share of its words found in the page's <title> (or declared titles)
COMMENT_SUPPORT = 0.2  # a comments (or related-articles) container on this share of a cluster's pages: a drop rule
COMMENT_HEADINGS = True  # a heading named like comments (<h2 id="comments">) after the headline: what follows it is
# dropped too (its siblings, the comments of blog engines that give them no container), as after an empty anchor
META_SUPPORT = 0.5  # a meta rule finds the right value on at least this share of the pages that declare it ...
META_PRECISION = 0.8  # ... and is wrong on at most 1 - this share of those where it finds a value
META_VISIBLE_SUPPORT = 0.5  # without declarations: a byline or date shape on this share of the pages
META_MIN_VALUES = 2  # ... that shows at least this many different values (a fixed date is the site's, not the page's)


# --- metadata (templater/metadata.py): dates, authors, tags, language ----------------------------------------
MAX_AUTHOR_CHARS = 80  # a longer "author" is a sentence, not a name
MAX_NAME_WORDS = 5  # words of one author's name
MAX_ACRONYM_LETTERS = 4  # a one-word name in capitals of at most this many letters is kept so ("AFP", "CNN")
MAX_DATE_TEXT_CHARS = 80  # a block longer than this is not a date line
MAX_BYLINE_CHARS = 100  # a block longer than this is not a byline
NEAR_HEADLINE_BLOCKS = 12  # visible dates and bylines are looked for this many blocks around the headline
HEAD_BLOCKS = 40  # ... or, without a headline, among the page's first blocks
MIN_YEAR = 1990  # dates before this are not publication dates of web pages
MAX_FUTURE_YEARS = 1  # ... nor dates more than this many years after today
LANG_MIN_CHARS = 200  # shorter text: the page's declared language instead of a detected one
LANG_SAMPLE_CHARS = 256  # the detector reads this much of the text (its cost grows with the length)
MAX_TAGS = 30  # tags kept
MAX_TAG_CHARS = 40  # a longer "keyword" is a phrase of the text, not a tag
BYLINE_DATE_LEVELS = 3  # a date beside a byline is looked for this many ancestors up
TEXT_MEMO = 4096  # distinct texts whose date and author are kept (metadata.find_date, normalize_author)
NAMED_SCAN_BLOCKS = 40  # named bylines and dates are looked for among this many blocks from the headline on
RULE_ELEMENTS = 5  # a meta rule's first elements tried for a value
MAX_INLINE_CHILDREN = 12  # a block element with more children is not searched for inline bylines and dates
MAX_JSONLD_BYTES = 512 * 1024  # a JSON-LD block larger than this is skipped
MAX_SCRIPT_DATES = 20  # occurrences of each publication key looked at in a page's markup
MIN_SCRIPT_NAME_WORDS = 2  # words of each name a script's author value gives
SCRIPT_KEY_CHARS = 60  # ... with its date (or name) in this many characters after it
LANGID_STALE_SECONDS = 3600  # a half-written copy of the language model this old is a killed writer's: removed
LANGID_UNUSED_SECONDS = 30 * 86400  # another install's copy of the language model (93 MB) unused this long is
# removed when a new copy is written (each install of py3langid gets its own copy; a copy in use is marked daily)
# --- start-up (templater/codecache.py) --------------------------------------------------------------------------
CODE_CACHE_ENTRIES = 4096  # compiled patterns and dataclass methods kept in the cache file (a start uses ~400)
# --- pipeline (templater/pipeline.py: ingest, build, extract; --jobs) ------------------------------------------
PIPELINE_BATCH_PAGES = 200  # pages per committed transaction (ingest), per index call and first transaction (extract)
GC_YOUNG_OBJECTS = 20_000  # the collector's youngest generation where pages are extracted (pipeline.tune_collector)
WORK_CHUNK = 16  # pages a worker process reads and extracts (or prepares for ingest) per task (--jobs)
WORK_AHEAD = 4  # tasks handed out per worker before their results are taken back: bounds what waits in memory
POOL_STOP_S = 10.0  # seconds a pool left early (an error, Ctrl-C) waits for the tasks it handed out (at most
# WORK_AHEAD a worker) before it stops its workers: one stopped while it sends a result hung Pool.terminate
LAYOUT_SHAPE_SHARE = 0.5  # a tag path on this share of a cluster's pages belongs to its layout signature

GROWING_PAGES = 12_800  # extract's largest transaction (pages): a killed run redoes at most this many
TEMPLATE_CACHE = 256  # compiled templates kept per process (about 88 KB each): read again when a site comes back
LAYOUT_CACHE = 1_024  # sites' template ids and URL groups' layout signatures (about 650 bytes a site) a process
# keeps (pipeline.TemplateIndex): read when a page first needs them (one indexed query), not every site's up front
# (3.9 MiB at the 6,355 sites of bench_scale's 40,000 pages)
PATH_TESTS_KEPT = 2048  # tag paths whose tests a compiled template keeps (extract.PathTests; about 100 bytes each)
# --- store (store/db.py, store/pages.py) ---------------------------------------------------------------------
BUSY_TIMEOUT_MS = 30_000  # how long a connection waits for another process's lock before it fails
HEAP_LIMIT_BYTES = 64 * 2**20  # SQLite's soft heap limit (process-wide): page caches give pages back above it (and
# a long transaction spills its dirty pages to the WAL), so a connection's cache_size (the index asks for 128 MiB)
# cannot grow the process with the crawl. extract of 10,000 pages (bench_scale's pages, --jobs 1): SQLite's memory
# climbed to the limit and stayed there, 137 MB and a peak RSS of 357 MB at 128 MiB, 69 MB and ~285 MB at 64 MiB
# (the rest is Python's: the language model, the compiled templates, numpy, lxml)
FOREIGN_TABLES_SHOWN = 5  # the tables a refusal of another application's database names
# zstd level of stored HTML. Measured on the dev corpus (avg 87 KB of HTML a page; zlib level 6, used before,
# compresses in 1.38 ms to 20.3 KB and decompresses in 0.22 ms): level 5 compresses in 0.48 ms to 19.7 KB, and
# decompression takes 0.05 ms at any level. Level 3 is cheaper still (0.21 ms) but larger than zlib (20.7 KB);
# from level 6 on, each level costs another 0.1-0.3 ms for under 2% of size.
HTML_ZSTD_LEVEL = 5
HEAP_TRIM_PAGES = 1_000  # extract gives glibc's free heap back to the system (``native.trim_heap``) after this many
# pages written: the heap's free space (blocks between live ones, and its top, which glibc keeps below a trim threshold
# that rises with its dynamic mmap threshold) grew from 3.9 to 25.1 MiB over bench_scale's 40,000 pages
STORE_ID_CHUNK = 500  # ids per IN (...) list of the page and run stores' lookups
PAGE_READ_CHUNK = 200  # stored pages (or extractions) read per query: their HTML or text is what a query holds
PAGE_ID_CHUNK = 4_096  # live page ids extract reads per query (store.pages.iter_live_ids): the whole crawl's ids in
# one list took about 80 bytes a page (12.7 MB at 160,000 pages, read before the first page)
SKIP_DETAIL_CHARS = 300  # a skip's detail (an exception's message) is cut to this many characters ...
STORED_DETAIL_CHARS = 500  # ... and stored with at most this many
# --- extract (templater/extract.py) ----------------------------------------------------------------------------
REGION_MIN_SHARE = 0.5  # the region is used only when it holds this share of the text the rules left
PARAGRAPH_CHARS = 80  # a page with a block this long of which the template allows nothing falls back to single-page
OWN_CONTENT_GAP = 3  # this many blocks of static and shape rules between two trusted blocks split the page's own
# content from what lies past the site's chrome (3, LINK_RUN; 10 measured the same on the dev suites)
OWN_CONTENT_LINKS = 0.5  # a paragraph of the page's own content is at most this share link text
TEXT_STRUCTURE_PATHS = ("/dl/", "/pre/")  # definition lists and code (not tables: old sites lay pages out in them)
NAME_LINE_BLOCKS = 3  # a manual page's name line ("name - summary") is looked for this many blocks after the headline
REPEAT_MIN_CHARS = 100  # a kept block this long whose text was already kept is a repeat, not more content
LIST_ITEMS = frozenset({("ul", "li"), ("ol", "li"), ("dl", "dt"), ("dl", "dd")})  # a shape rule on these (list,
# item) steps also drops the link-heavy entries of lists nested in that list (extract.nested_entries)

# --- template (templater/template.py) --------------------------------------------------------------------------
REFERENCE_CANDIDATES = 15  # pages tried as the alignment reference
NEAR_COPY = 0.8  # containment (shared / the smaller set) of two pages' own texts' word 3-grams above which they count
# as one page when learning: a copy cut short keeps most of the original's shingles, one with a few words replaced
# (which changes its paragraphs' block hashes) most of them
NEAR_COPY_CHARS = 80  # blocks this long (paragraphs, not menu items) make a page's own text
NEAR_COPY_LINKS = 0.5  # ... unless more than this share of their text is links (lists of other stories' headlines,
# which pages crawled on other days show otherwise); 1.0: links count (what a template learned before it was made
# with)
NEAR_COPY_COMMON_PAGES = 3  # ... unless this many pages (and half of them) have them: then they are the site's
NEAR_COPY_SIZE = 0.3  # ... and the smaller own text has at least this share of the larger's shingles (a page whose
# own text is a rotating sidebar block or two is not a copy of every page that shows them)
NEAR_COPY_SHARED = 0.5  # ... or two pages share at least this share of the smaller own text, and the rest of it is
# mostly on other pages of the cluster (NEAR_COPY of what the two share and what only the smaller has): in a cluster
# of 3-4 pages a page's lists of other stories, footer or sign-up box are on too few pages to leave its own text,
# and a copy with its boilerplate rewritten shares 64-73% of it with the original (docs/near-duplicates.md). 1.0:
# this test off (what a template learned before it was made with)
NEAR_COPY_LONE = 0.5  # ... and what the two alone share is at least this share of itself and what one of the two has
# alone (text no other page of the cluster shows), when they alone have a long paragraph word for word (else
# near_copy): a blog post's copy whose comments or author box are half rewritten shares the post and half the
# comments with the original and has the other half alone (0.60-0.79 on the typed set); at 0.5 the shared part
# outweighs either page's own rest. Entries of a series that share an intro and an outro inside their paragraphs
# (googledesktop.blogspot.com's "featured gadget" posts: 0.69) share no paragraph word for word. 0.8 (near_copy's
# value, which the test read before) in templates learned before the setting
NEAR_COPY_LINES = True  # the near-copy tests read a run of consecutive blocks of one element (lines broken by <br>:
# a poem, an address, a list) as one text, long when the run is near_copy_chars long; False: block by block, so a page
# whose text is short lines has no own text and its copies count as pages of their own (what a template learned before
# the setting was made with)
REGION_TEXT_SHARE = 0.8  # the content region holds at least this share of a page's remaining text
REGION_PAGE_SHARE = 0.5  # ... on at least this share of the pages
NAV_PATHS = ("/nav/", "/aside/")  # a varying block inside <nav> (breadcrumbs, section menus) or <aside> is not the
# page's own content, whatever its text
LINKED_HEADINGS_PER_PAGE = 2  # linked headings of one tag path, on average a page, that make a list of links
RELATED_MAX_SHARE = 0.3  # a related-articles container holds less than this share of the page's text
WRAPPER_DEPTH = 3  # steps of a region XPath right under <body> (/html/body/div[1])
REGION_CHROME_SHARE = 0.1  # a region right under <body> is trusted on a page where the blocks the rules drop inside
# it add up to at most this share of the text they leave in it: it holds the page's text, not the site's chrome
# (page wrappers hold the menus and sidebars: from 0.2 to several times the article on the dev news sites; the
# content divisions of the dev documentation sites 0.01-0.05)
CONTENT_TAGS = frozenset({"main", "article"})  # elements (and role="main") that declare the page's own content
CHROME_TAGS = frozenset({"nav", "aside", "header", "footer", "form"})  # ... and what stays chrome inside them
HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})  # headings title the section they open
LABEL_TAGS = HEADING_TAGS | {"dt", "th", "caption", "legend", "summary"}  # a short
# block with one of these tags titles the content that follows it; any other short block is a label (chrome,
# template.SHORT_LABEL) ...
STRUCTURE_TAGS = frozenset({"pre", "table", "dl"})  # code, tables and definition lists of the text
LIST_TAGS = frozenset({"ul", "ol", "menu"})  # a block of links in a list is a navigation list ...
LINK_RUN = 3  # ... and so is one of this many link-heavy blocks in a row (a table of contents as a <dl>)
ROW_CELLS = 2  # a short label is content among this many of the page's own short blocks under one parent (a grid's
# header cell; with one, a news blog's sidebar boxes passed for its content on the dev news sites)

# --- features (templater/features.py) ---------------------------------------------------------------------
REGION_MIN_CHARS = 25  # a block shorter than this adds nothing to a container's content score
REGION_GRANDPARENT_SHARE = 0.5  # share of a block's content score its grandparent receives (readability)
NEIGHBOUR_WINDOW = 3  # blocks either side averaged into the context features
LENGTH_SCALE = 100.0  # text lengths enter as log1p(chars / LENGTH_SCALE)
CLASS_CACHE_SIZE = 1 << 16  # distinct (class, id) pairs whose flags are remembered
FAR = 1_000  # the distance recorded when no ancestor carries a flag
CONTEXT_LEVELS = 3  # containers above a block whose text-weighted score the second stage sees
MIN_SCORE = 1e-6  # floor of a page's best score when scores are divided by it
CONTEXT_WIDTHS = (1, 3, 10)  # blocks either side of the three neighbour means of the first-stage scores

# --- training (templater/training.py; the shipped weights were made with these) ----------------------------
LINE_HIDDEN = 6  # hidden units of the nine-input line network
AUTO_HIDDEN = 8  # hidden units of each default-classifier network
ENSEMBLE = 3  # networks averaged per stage of the default classifier
FOLDS = 5  # page folds for the out-of-fold scores the second stage and the FDR null are fitted on
AUTO_L2 = 3e-3  # weight decay of the default classifier's networks (its inputs are many, its pages few)
LABEL_SHARE = 0.5  # a block is content when more than this share of its tokens is found in the gold
# Label weight multiplier per page source (the part of a page id before its first "/"): news pages are the most
# varied and the genre the product is judged on first; other genres' long, mostly-content pages would otherwise
# pull the networks toward keeping more (x2 gives news 75% of the label weight of the genre-mixed set, not 59%).
SOURCE_WEIGHTS = {"news": 2.0}
TRAIN_SEED = 7
EPOCHS = 1000  # full-batch Adam steps per network
# Weights trained on a genre-mixed set (training.train_mixture) hold a second pair of stages fitted on the pages of
# this source alone; the default classifier scores a block with the mean of both pairs' scores (on held-out news
# pages of the training datasets the mean beat either pair and a page-level genre gate; docs/single-page.md).
EXPERT_SOURCE = "news"
# --- document (templater/document.py): the headline and the structure of the extracted document -------------
HEADLINE_MAX_CHARS = 300  # a block longer than this is no headline
HEADLINE_MIN_WORDS = 0.5  # a heading echoing the declared titles holds at least this share of the headline's words
SITE_NAME_WORDS = 4  # a title's end part this short (or shorter) may be the site's name ...
SITE_NAME_CUTS = 3  # ... and so may the one before it ("Headline | Section | Site")
SITE_LABEL_CHARS = 4  # a host's label this long (or longer) may spell the site's name ...
SITE_LABEL_SHARE = 0.5  # ... in a short text it makes up this share of the letters of
MIN_TABLE_CELLS = 2  # a table whose rows never hold more than one kept cell is text laid out, not a table
FILE_STEM_CHARS = 80  # a page file's name keeps this much of the page id

# --- ann (templater/ann.py): training the single-page networks ----------------------------------------------------
LEARNING_RATE = 0.01
ADAM_BETAS = (0.9, 0.999)
ADAM_EPSILON = 1e-8
L2_PENALTY = 1e-4  # weight decay on the two weight matrices
INIT_SCALE = 1.0  # hidden weights start as normal(0, INIT_SCALE / sqrt(inputs))
MIN_STD = 1e-6  # an input whose spread is below this is only centred, not scaled
# --- shingles (templater/shingles.py): the near-duplicate index's defaults (persisted with each index; an index
# refuses data made with other settings) and signing -----------------------------------------------------
SHINGLE_KIND = "word"  # "word" n-grams, or "char" n-grams of the normalized text
SHINGLE_LINES = False  # n-grams stay inside a line (a paragraph of an extracted text)
LEGACY_LINES = False  # what an index stored before ``lines`` was a setting did: its n-grams crossed lines
SHINGLE_N = 3  # word 3-grams: one replaced word in 100 costs 3% of the shingles, not 5% (docs/near-duplicates.md)
HASH_BITS = 32  # shingle hash width: 32 (the default: exact verification stores 4 bytes a shingle) or 64
PERMUTATIONS = 128  # signature slots
BANDS = 16  # LSH bands (a page's band rows: the cost of an insert) ...
ROWS = 3  # ... of this many slots: P(candidate | J) = 1 - (1 - J**3)**16 is 0.88 at J = 0.5, 0.99 at 0.6 and 0.9988
# at 0.7 (a copy cut by 30%); S-curve threshold (1/16)**(1/3) = 0.40 (docs/near-duplicates.md)
SEED = 1
KEEP_NUMBERS = True
THRESHOLD = 0.8  # a candidate pair is a near-duplicate when its similarity (MEASURE) is at least this
MEASURE = "containment"  # the similarity verified: "containment" |A & B| / min(|A|, |B|) (a cut copy, a story
# with another last paragraph stays near 1) or "jaccard" |A & B| / |A | B|; chosen on held-out halves of the typed
# truth set of bench/neardup.py --typed (docs/near-duplicates.md)
LEGACY_MEASURE = "jaccard"  # what an index stored before the measure was a setting verified
SCHEME = "oph"  # "oph" (one-permutation MinHash, the fast default) or "kperm" (k independent hash functions)
VERIFY = "sample"  # how a candidate pair is verified: "sample" (Jaccard of stored bottom-k samples of the shingle
# sets: exact for texts of fewer than SAMPLE distinct shingles), "exact" (Jaccard of every stored shingle hash) or
# "estimate" (signature agreement: nothing more stored, but at 128 slots its error of +-0.035 near J = 0.8 costs
# about 7% of precision and recall). Measured in bench/README_dedup.md.
SAMPLE = 256  # shingle hashes a page keeps for verify="sample": its smallest (1 KiB a page at 32 bits)
SAMPLE_MIN_HASHES = 8  # a containment estimated from samples needs at least this many of the smaller text's hashes
# below the larger text's sample (a 200-shingle text against a 45,000-shingle page has one there: its "containment"
# is 0 or 1 by chance); fewer, and the pair is not verified (0: no minimum, what an index built before it keeps).
# 8 keeps a story inside a page 30 times its length; 16 lost a syndicated copy of the typed set
# (docs/near-duplicates.md)
ANCHOR_RATE = 16  # one shingle in this many is an anchor (by its hash); each pair of consecutive anchors of
# a text (in text order) is one more index key: a passage two texts share gives them the same keys whatever else
# either holds, so a story inside a much longer page becomes a candidate (its Jaccard is far below the S-curve).
# 0: no anchor keys. Chosen on the typed truth set (docs/near-duplicates.md)
ANCHOR_KEYS = 10  # anchor keys a page keeps at most: its first in text order (a page's index rows: 16 bands + these
# + its tail keys)
ANCHOR_TAIL_KEYS = 2  # ... and its last this many (a copy cut from the start keeps the original's end, not its start).
# 10 + 2 (the 12 index rows a page of 12 + 0) found a 30% cut from the start on two of eight seeds of the typed set and
# lost nothing; the same batches cost 10 + 2 0-2% more CPU a page than 12 + 0 when the two indexes take turns
# (bench/bench_index_paired.py at 500,000 and 1,000,000 pages; docs/near-duplicates.md: the 14% measured before came
# from separate runs on a loaded machine, which differ by 10-15% for one code). Every index stores its anchor_keys (since
# anchors were a setting) and anchor_tail_keys (else LEGACY_ANCHOR_TAIL_KEYS), so one built with 12 + 0 keeps 12 + 0
LEGACY_ANCHOR_TAIL_KEYS = 0  # what an index stored before ``anchor_tail_keys`` was a setting kept: no tail keys
SAME_SITE_JACCARD = 0.3  # pages of one site must also reach this Jaccard: a short extraction that sits inside a
# longer one of its site is mostly the site's own leftovers, not a copy (pairs this far below the S-curve seldom
# were candidates before anchor keys made them so); 0: no floor
CROSS_SITE_THRESHOLD = 0.75  # the threshold for two pages of different sites (hosts): they share no template, so
# shared text is the story (syndication: new headline, another last paragraph, the host's own leftovers); pages
# of one site keep THRESHOLD (their extractions can share leaked template text). Chosen on held-out halves of the
# typed truth set (docs/near-duplicates.md)
RESEMBLANCE = 0.5  # a candidate pair whose Jaccard reaches this passes too, whatever its containment: what the two
# texts share outweighs what either has alone (|A & B| >= |A ^ B|), so a copy whose extraction kept other (rewritten)
# boilerplate on each side is one page; 0: off (what an index stored before it keeps). Chosen on the typed truth set
# (docs/near-duplicates.md: the closest pair of different articles of one site has Jaccard 0.44)
RESEMBLANCE_MIN_SHINGLES = 50  # ... when the smaller text has at least this many distinct shingles (two short
# extractions of mostly the same menu and caption are not an article twice)
BATCH_CHARS = 1 << 16  # texts are hashed in batches of about this many characters (fastest on 2,000 gold texts)
OPH_ROUNDS = 8  # one-permutation rounds before the per-slot fallback; the fallback's prefix is OPH_ROUNDS
KPERM_CHUNK = 16  # hash functions evaluated per numpy pass (bounds the temporary array)

# --- dedup (templater/dedup.py): runs over the near-duplicate index ---------------------------------------------
DEDUP_BATCH_PAGES = 50_000  # pages per index transaction: each commit rewrites most of the band index (every batch
# of random keys touches nearly all its pages), so at a million pages 10,000-page batches index at half the rate of
# 50,000-page ones (bench/README_dedup.md); a batch holds its texts, signatures and samples in memory
SIMILAR_LIMIT = 10  # near-duplicates `templater similar` lists by default

# --- lsh (store/lsh.py): the near-duplicate index in SQLite ----------------------------------------------------
BUCKET_CAP = 256  # candidates offered by one band key
ID_CHUNK = 10_000  # ids per IN (...) list
IN_LIST_IDS = 512  # ids per IN (...) list of the index's reads by doc (store.lsh._select_in), padded to a power of
# two: a connection keeps its last 128 statements prepared, each about 190 bytes an id of its list, and lists of up to
# ID_CHUNK ids (about 5 MB of statements for each of the dozen queries read this way) made extract's SQLite memory grow
# with the crawl as the candidate lists lengthened (2.5 MiB of statements at 10,000 pages, 10.6 at 38,000, over the
# heap limit); at 512 a query's statements take at most about 0.2 MB
SITE_CACHE = 4_096  # URLs whose site (store.lsh.site_of) is remembered: each new page's URL is seen once or twice, so
# a larger cache only grew with the crawl (about 300 bytes an entry: 20 MB at its former 65,536)
CACHE_KIB = 128 * 1024  # SQLite page cache for this connection: lsh_bands' upper levels stay in it; its leaves are
# read at random (by the few keys its filters pass) and the OS caches the file (was 512 MiB, more than the 400 MB a
# whole run may take)
CHECKPOINT_BYTES = 512 * 2**20  # let the WAL grow to this before a checkpoint: a batch of random band inserts
# dirties most of the band index, and a checkpoint per batch copied and synced it all every time (14,400 docs/s
# against 21,800 at 1M pages, bench/README_dedup.md)
WAL_KEEP_BYTES = 64 * 2**20  # after a checkpoint the WAL file is cut back to this
RECENT_PAGES = 50_000  # pages whose keys wait in lsh_runs before one sorted merge into lsh_bands: random keys
# dirty pages all over a big band index, so adding them 200 pages at a time (what extract does) rewrote most of it
# at every commit and cost grew with the index (issue: 4.4k docs per CPU second at 200k pages); small inserts now
# touch only the small table, and the big one takes a batch of RECENT_PAGES pages at once, as 50,000-page
# batches did (bench/bench_index.py, docs/near-duplicates.md)
RECENT_ROWS = 1 << 19  # key rows the recent runs hold at most (in memory, as their sorted tiers: 8 MiB of keys and
# docs, about 18,000 pages of 16 bands, anchor keys and a page key): past it they are written as a segment of level 0
# as at RECENT_PAGES, so what they hold stops growing with the crawl at about 18,000 pages, not 50,000 (about 1.5 MB
# per 1,000 pages until then, with the heap's free space between their arrays; docs/benchmarks.md). Smaller costs
# inserts: the pages a new page duplicates are more often in a segment on disk (a block read) than in memory
# (bench_index_paired against 50,000-page flushes, whole 200,000-page runs: 2**20 rows -1.3%, 2**19 -2.8%; over the
# first 150,000 pages, before the other index's first merge, 2**19 -10.7%, over 250,000 -4.8%; 2**18 -12% over the
# first 100,000)
FILTER_BITS_PER_KEY = 8  # Bloom filter bits per key of the recent runs' filter (and of migration 5's parts): with
# FILTER_HASHES = 5 a full part answers "maybe" for 2.2% of absent keys
FILTER_HASHES = 5  # bits set and probed per key
FILTER_FIRST_KEYS = 1 << 18  # keys of the first filter part (a power of two); each next part holds as many as all
# before it, so no part is ever rebuilt and a probe reads about log2(keys / FILTER_FIRST_KEYS) parts
RECENT_FILTER_KEYS = 1 << 20  # keys the recent runs' Bloom filter is sized for (in memory only, 2 MiB; rebuilt twice
# as large past it: the runs hold at most RECENT_ROWS rows and a batch, so a flush comes first): most keys of a batch
# are in no run, and probing the filter costs less than a binary search of every tier (two thirds of an insert's numpy
# time without it)
RECENT_FILTER_BITS = 16  # its bits per key: a key's RECENT_FILTER_HASHES bits lie in one 64-bit word (a batch's keys
# are added word by word, 3.4x faster than bit by bit); about 0.2% false "maybe" when full
RECENT_FILTER_HASHES = 4
RECENT_TIER_FANOUT = 4  # tiers of one level of the recent runs (in memory) merged into one of the next: each row is
# merged about log4(runs) times (a binary counter, 2, merged each twice as often: 0.92 against 0.44 ms a 200-page batch)
PAIR_CHUNK = 4_096  # candidate pairs measured per call of the compiled templater._pairs (their sets are copied into one
# array for it: a bounded copy, where the all-pairs pass asks for 100,000 pairs at once)
INSERT_WIDTH = 256  # (key, doc) rows per INSERT statement of migration 5's merge into the row table lsh_bands (0.8 s
# CPU for 1.4M rows, against 2.7 s one row a statement)
SEGMENT_BLOCK_ROWS = 254  # (key, doc) rows per block of a segment of the band index (4,064 bytes of BLOB: a key found
# by its segment's filter costs one small read; the blocks' first keys, 8 bytes a block, stay in memory). Four blocks
# fill a 16 KiB database page whatever the block's row id (a cell and its pointer: 4,078-4,082 bytes); 256 rows made
# 4,110-4,114, so a page held three blocks and a quarter of lsh_blocks was empty space: every flush, merge and
# checkpoint wrote a third more pages and the cache held a quarter fewer blocks
SEGMENT_FANOUT = 4  # segments of one level merged into one of the next level: each key row is rewritten about
# log4(pages / RECENT_PAGES) times (4 times at 10M pages) and a lookup probes at most 3 segments a level
SEGMENT_SLICE_ROWS = 1 << 18  # key rows a merge (or a scan of every candidate pair) holds at once, about: it reads
# every segment one key range at a time, so memory stays bounded whatever the size of the index
SEGMENT_FILTER_BITS = 10  # Bloom filter bits per key row of a segment: with FILTER_HASHES = 5 its filter answers
# "maybe" for 0.9% of absent keys (2.2% at 8 bits, with a segment probed per level and a batch's 5,000 keys)
SEGMENT_FILTER_MAX_BITS = 24  # bits a row a small segment's filter may take at most (its share grows with the ratio of
# the index's rows to its own: store.lsh._filter_targets)
BLOOM_CHUNK_KEYS = 1 << 16  # keys whose filter bit positions are made at once (five int64 positions a key and their
# temporaries: a merge's whole slice at once took ~200 MB)
BLOOM_DENSE_SPAN = 8  # filter bits a chunk of keys spans per bit position it sets, at most, for the chunk to be set as
# one packed slice (keys in order: a segment's); past it, position by position (measured: about 2.4 ns a spanned bit
# against 19 ns a position)
FILTER_MEMORY_BYTES = 192 * 2**20  # the segments' Bloom filters together take at most about this much memory:
# SEGMENT_FILTER_BITS a row on average while they fit, fewer as the index grows past about 150M key rows (5M pages),
# shared by segment size (a small segment gets more bits a row: store.lsh._filter_targets; past the budget the top
# level holds one segment: _merged_with_top): more false "maybe" answers (each a block read), but memory that does
# not grow with the crawl (store.lsh._share_filters; a cap that went to the segments in the order they came left the
# newest with 1 KiB filters that answer "maybe" for every key: inserts fell from 5,901 to 1,571 docs per CPU second at
# 6.4M)
FILTER_MIN_BITS = 4  # bits a row below which no filter is thinned (5 hashes at 4 bits: about 20% false "maybe";
# thinner filters answer "maybe" for most keys): past about 400M key rows the filters' memory grows instead
FILTER_HEADROOM = 1.25  # filters thinned to share the budget are made this much thinner than their share, so the
# next thinning comes after the index grows by about a quarter (each rebuilds filters from their segments' keys)
FILTER_IO_BYTES = 1 << 22  # bytes of a segment's filter written to or read from its BLOB at once (SQLite's incremental
# BLOB I/O): a filter bound as one value was held three times over while written (the bytes, SQLite's copy, the
# record it builds: +360 MiB for a 120 MiB filter, the peak of a merge into the top at 6.4M pages) and twice when read
FILTER_REBUILD_BLOCKS = 4_096  # segment blocks whose keys a filter's rebuild reads at once (1M rows: 8 MB of keys)
VERIFY_BYTES = 2 * 2**20  # stored candidates' rows a batch's verification reads and holds at once, in bytes of their
# verification sets (a stored sample is at most SAMPLE hashes: 1 KiB at 32 bits, so about 2,048 stored pages): the
# new pages' candidate pairs are verified a slice of new pages at a time, each slice's partners read, held and let go
# (store.lsh._verification_slices). Without it a batch held all its candidates' rows, about 2.6 KB a candidate with
# their arrays and pairs: the candidates a page grow with the crawl (4-5 a page at 10,000 pages of bench_scale, 15-18
# at 40,000, about 110 at 160,000), and so did a 200-page batch's peak (4-6 MiB, 10-12, some 50 projected), and a
# `templater dedup` batch of 50,000 pages held all of its own. Same verdicts, edges and clusters whatever its value
# (tests/test_lsh.py, bench/index_identity.py --verify-bytes); smaller costs a few statements and numpy passes a slice
ROUND_LIMITS = (1, 4, 16, 64, 256, 1 << 62)  # candidates verified per (page, cluster) before giving up, cumulative
REFERENCE_MEMBERS = 1_000  # a cluster's reference pages (its longest text per site, which a page joining it must
# pass with) are chosen among its this many longest members: a popular cluster costs a bounded read

# --- recrawl: batches and template health (templater/recrawl.py) -------------------------------
# On big9 (dev corpus) a page's coverage by its own site-year template was at least 0.56 on 174 of 178 pages
# (lowest 0.28); pages of the next redesign fitted no learned layout at all, or covered at most 0.16.
RECRAWL_BATCH_PAGES = 200  # records per committed batch of a recrawl (a killed run loses at most one batch)
DRIFT_COVERAGE = 0.5  # an extraction covering less than this share of its template's static blocks is "low" ...
DRIFT_SHARE = 0.5  # ... and a group's templates are stale when at least this share of its recent pages are low
DRIFT_WINDOW = 50  # the recent pages: a group's last this many extracted since its templates were last learned
DRIFT_MIN_PAGES = 3  # a group is judged once it has this many recent pages (a site is learned from them)

# --- the single-page methods (templater/fallback.py) ---------------------------------------------------------
ANN_THRESHOLD = 0.5  # the line network keeps blocks whose probability is above this
REGION_BASE = 0.3  # a block adds (score - this) x its characters to the content region's sum
REGION_INSIDE = 0.4  # inside the content region, blocks scoring above this are kept
REGION_OUTSIDE = 0.7  # outside it, only blocks scoring above this
SIDE_FORM_SHARE = 0.25  # a form apart from the headline holding this share of a page's text (a registration form's
# terms) adds nothing to the content region's sum and is never kept (fallback.side_forms)
ALLOWED_THRESHOLD = 0.3  # behind a site template, allowed blocks scoring above this are kept
TRUSTED_THRESHOLD = 0.05  # inside the template's trusted content region, a block scoring at most this is dropped ...
REGION_CHROME_GROUPS = ("nav", "related", "share", "account", "ad", "comment", "hidden")  # ... only when it sits in
# an element whose class/id names one of these CLASS_GROUPS (share bars, promos, ads, related boxes, ...) ...
REGION_LINK_DENSITY = 0.5  # ... or its text is mostly link text (a list of links) ...
REGION_CHROME_TAGS = frozenset({"nav", "aside", "header", "footer", "form"})  # ... or it sits in one of these below
# the region (an author box in the article's <footer>) ...
PROTECTED_TAGS = frozenset({"pre", "table", "dl"})  # ... but never in code, a table or a definition list (signatures,
# terms) below the region
DENSITY_BOUNDS = (0.3, 0.9)  # the per-page density threshold is clamped to this range
DENSITY_ITERATIONS = 50  # at most this many EM steps of the per-page two-normal fit ...
DENSITY_TOLERANCE = 1e-4  # ... stopping once neither mean moves more than this
DENSITY_MIN_SPREAD = 0.02  # floor of each normal's standard deviation
DENSITY_WINDOW = 2  # blocks either side whose density is averaged into a block's
FDR_Q = 0.05  # default false-discovery rate of the single-page fdr method (--fdr-q)

# --- Spark (templater/spark_job.py) -----------------------------------------------------------------------------
JOIN_SALTS = 16  # a template's rows are copied to this many keys, so a site's pages spread over as many tasks
PARTITIONS_PER_CORE = 2  # default partitions of every stage: this many per core Spark reports
BROADCAST_BYTES = 256 << 20  # the current templates, pickled, up to this size go to every executor as a broadcast
DRIVER_COMPONENTS = 5_000_000  # up to this many verified pairs (16 bytes each) are collected for a union-find

# --- rule inspection (templater/rule_inspect.py) ----------------------------------------------------------------
PIN_SAMPLE_PAGES = 20  # a pinned XPath rule's support and sample are measured on at most this many site pages
REPORT_MAX_PAGES = 200  # the report's coverage table covers at most this many of the site's pages
SAMPLE_CHARS = 120  # characters of matched text kept as a rule's sample

# --- signature methods (templater/signatures.py): their documented default parameters ------------------------
TOP_TERMS = 6  # L of TF and TF*IDF
TOP_SENTENCES = 2  # how many longest / heaviest sentences make the signature
LEX_DICTIONARIES = 10  # Lex Rand: number of randomised dictionaries ...
LEX_CUT = 0.30  # ... each without this share of the collection dictionary
LEX_MIN_DF = 2  # collection dictionary: terms in fewer documents are the "heaviest" (highest IDF) and dropped
LEX_MAX_DF_SHARE = 0.01  # ... terms in more than this share of documents (and more than LEX_MIN_DF) are the
# "lightest" and dropped. Picked on the near-duplicate benchmark (docs/signatures.md): a smaller dictionary leaves fewer of a
# document's terms for an edit to touch; recall there was 0.11 at 0.30, 0.23 at 0.05, 0.47 at 0.01.
LEX_MIN_TERMS = 5  # a dictionary gives a signature when the document holds at least this many of its terms
LEX_SEED = 7
DESCR_WORDS = 2000  # Descr Words: size of the descriptive dictionary
DESCR_COVERAGE = (0.35, 0.65)  # a term's threshold sets its bit in this share of the documents holding it
DESCR_MIN_DF = 4  # a term must occur in this many fitted documents to be considered
DESCR_MIN_BITS = 3  # documents with fewer bits set are not judged
MIN_STEM = 3  # the stemmer leaves at least this many letters
WORD_WINDOW = 64  # characters looked back for the word before a full stop (abbreviations are short)
SIGNATURE_BATCH_PAGES = 10_000  # pages signed and stored per batch (templater/signature_run.py)
SIGNATURE_ID_CHUNK = 10_000  # ids per IN (...) list of the signature store (store/signature_index.py)

# --- the command line (cli.py) ----------------------------------------------------------------------------------
INTERRUPT_GRACE_S = 10.0  # seconds the unwinding after Ctrl-C may take (rollbacks, stopping workers) before exit

# --- parsing (templater/parse.py) -------------------------------------------------------------------------------
MAX_TITLE_CHARS = 1000  # a longer <title> text means the tag was never closed

# --- reports (templater/report.py): how much of a text `rules explain` and the HTML report show -----------------
SHORT_TEXT = 70  # characters of a block's text shown in one line of `rules explain`
GROUP_PREVIEW_CHARS = 360  # a run of dropped blocks shows this much text before "show all"
REPORT_SAMPLE_CHARS = 90  # characters of a rule's sample shown in the report


@dataclass(frozen=True, slots=True)
class LearnSettings:
    """Settings of a template: the thresholds and tag lists learning reads, the share of its layout a page must
    hold to be given the template (layout_match), and those extraction reads when it applies the template's rules
    (the content region's trust, the page's own content, rows of links, repeats, the single-page classifier's
    thresholds behind a template, ...). Saved with each template they shaped (``store.templates``, JSON: tag sets as
    sorted lists) and read back with it, so a template is chosen and extracts as it was learned to whatever
    config.py says later; shown by ``templater rules show`` and ``rules export``. A store's templates saved before a
    field existed get the value of that day by a store migration (store.templates). The module constants of the
    same names are the defaults: code that applies a template reads its settings, not them."""

    min_group_pages: int = MIN_GROUP_PAGES
    min_template_pages: int = MIN_TEMPLATE_PAGES
    layout_similarity: float = LAYOUT_SIMILARITY
    layout_match: float = LAYOUT_MATCH  # (learning, and choosing a template for a page: the template's own)
    static_support: float = STATIC_SUPPORT
    min_static_pages: int = MIN_STATIC_PAGES
    shape_support: float = SHAPE_SUPPORT
    shape_max_chars: int = SHAPE_MAX_CHARS
    shape_max_link_density: float = SHAPE_MAX_LINK_DENSITY
    max_learn_pages: int = MAX_LEARN_PAGES
    comment_support: float = COMMENT_SUPPORT
    meta_support: float = META_SUPPORT
    meta_precision: float = META_PRECISION
    meta_visible_support: float = META_VISIBLE_SUPPORT
    meta_min_values: int = META_MIN_VALUES
    layout_sample: int = LAYOUT_SAMPLE
    learn_seed: int = LEARN_SEED
    reference_candidates: int = REFERENCE_CANDIDATES
    near_copy: float = NEAR_COPY
    near_copy_chars: int = NEAR_COPY_CHARS
    near_copy_links: float = NEAR_COPY_LINKS
    near_copy_common_pages: int = NEAR_COPY_COMMON_PAGES
    near_copy_size: float = NEAR_COPY_SIZE
    near_copy_shared: float = NEAR_COPY_SHARED
    near_copy_lone: float = NEAR_COPY_LONE
    near_copy_lines: bool = NEAR_COPY_LINES
    comment_headings: bool = COMMENT_HEADINGS
    region_text_share: float = REGION_TEXT_SHARE
    region_page_share: float = REGION_PAGE_SHARE
    linked_headings_per_page: float = LINKED_HEADINGS_PER_PAGE
    region_chrome_share: float = REGION_CHROME_SHARE  # (learning and extraction)
    row_cells: int = ROW_CELLS  # (learning and `rules explain`)
    link_run: int = LINK_RUN  # (learning and extraction)
    wrapper_depth: int = WRAPPER_DEPTH  # from here on: read when a template is applied
    region_min_share: float = REGION_MIN_SHARE
    paragraph_chars: int = PARAGRAPH_CHARS
    own_content_gap: int = OWN_CONTENT_GAP
    own_content_links: float = OWN_CONTENT_LINKS
    repeat_min_chars: int = REPEAT_MIN_CHARS
    text_structure_paths: tuple[str, ...] = TEXT_STRUCTURE_PATHS
    list_items: frozenset[tuple[str, str]] = LIST_ITEMS
    allowed_threshold: float = ALLOWED_THRESHOLD  # the single-page classifier behind the template (fallback.py)
    trusted_threshold: float = TRUSTED_THRESHOLD
    region_link_density: float = REGION_LINK_DENSITY
    region_chrome_groups: tuple[str, ...] = REGION_CHROME_GROUPS
    region_chrome_tags: frozenset[str] = REGION_CHROME_TAGS
    protected_tags: frozenset[str] = PROTECTED_TAGS
    chrome_tags: frozenset[str] = CHROME_TAGS  # from here on: the tag lists learning reads (the first two
    heading_tags: frozenset[str] = HEADING_TAGS  # extraction too), and the shares it writes into what it saves
    label_tags: frozenset[str] = LABEL_TAGS
    content_tags: frozenset[str] = CONTENT_TAGS
    structure_tags: frozenset[str] = STRUCTURE_TAGS
    list_tags: frozenset[str] = LIST_TAGS
    nav_paths: tuple[str, ...] = NAV_PATHS
    related_max_share: float = RELATED_MAX_SHARE  # (in the related-box rules' XPath)
    layout_shape_share: float = LAYOUT_SHAPE_SHARE  # (the layout signature a template is chosen by)
    name_line_blocks: int = NAME_LINE_BLOCKS  # (extract.name_line: a manual page's NAME line after its heading)

    def to_dict(self) -> dict:
        """The settings as saved with a template (JSON's types: a tag set as a sorted list)."""
        return {name: _json_value(value) for name, value in asdict(self).items()}

    @classmethod
    def from_stored(cls, values: dict) -> LearnSettings:
        """Settings from a saved template's values: fields it lacks (saved by an older version) take their
        defaults, names no longer known are left out; lists become the field's tuple or set."""
        return cls(**{f.name: _field_value(f.default, values[f.name]) for f in fields(cls) if f.name in values})


def _json_value(value):
    if isinstance(value, frozenset):
        return sorted(_json_value(v) for v in value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


def _field_value(default, value):
    """A saved value as the type of the field's default (a list as a tuple or a frozenset, of tuples for pairs)."""
    if isinstance(default, (tuple, frozenset)) and isinstance(value, list):
        items = (tuple(v) if isinstance(v, list) else v for v in value)
        return frozenset(items) if isinstance(default, frozenset) else tuple(items)
    return value
