"""The settings saved with each template (config.LearnSettings): the thresholds and tag lists learning read and
those extraction reads when it chooses and applies the template are the template's, not config.py's of the day it
is applied."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sitegen import feed_pages, genre_page, guide_pages, interface_pages, reference_pages, site_pages
from store import templates as template_store
from templater import pipeline
from templater.blocks import segment
from templater.config import LearnSettings
from templater.datatypes import Page
from templater.extract import CompiledTemplate, extract_page, own_content
from templater.parse import parse_html
from templater.rule_inspect import explain_blocks
from templater.template import learn_template

FIXTURE = Path(__file__).parent / "fixtures" / "templates_v1.db"
FIXTURE_V2 = Path(__file__).parent / "fixtures" / "templates_v2.db"
FIXTURE_V3 = Path(__file__).parent / "fixtures" / "templates_v3.db"
FIXTURE_V4 = Path(__file__).parent / "fixtures" / "templates_v4.db"
FIXTURE_V5 = Path(__file__).parent / "fixtures" / "templates_v5.db"
FIXTURE_V6 = Path(__file__).parent / "fixtures" / "templates_v6.db"
ADDED = {**template_store.V2_SETTINGS, **template_store.V3_SETTINGS, **template_store.V4_SETTINGS,
         **template_store.V5_SETTINGS, **template_store.V6_SETTINGS, **template_store.V7_SETTINGS}  # every migration's
BEFORE_7 = {"comment_headings": False}  # a heading named like comments dropped alone before migration 7
BEFORE_6 = {"near_copy_lines": False, **BEFORE_7}  # the near-copy tests block by block before migration 6
BEFORE_5 = {"near_copy_lone": 0.8, **BEFORE_6}  # the second near-copy test's last share before migration 5
# (near_copy's value)
BEFORE_4 = {"near_copy_links": 1.0, "near_copy_shared": 1.0, **BEFORE_5}  # the near-copy tests of migration 4, off


def nested_guide(count: int):
    return guide_pages(count, colophon=True, nested=True)


def forum(variant: int):
    def pages(count: int):
        records = [genre_page("forum", variant, number) for number in range(count)]
        return [(segment(parse_html(r["html"]), Page(id=r["id"], url=r["url"], html=r["html"])), r["gold"])
                for r in records]
    return pages


def product_pages(count: int):
    records = [genre_page("product", 1, number) for number in range(count)]
    return [(segment(parse_html(r["html"]), Page(id=r["id"], url=r["url"], html=r["html"])), r["gold"])
            for r in records]


# (site's pages, a threshold or tag list read at extraction, a value that changes what the site's template keeps)
CHANGES = [(guide_pages, "region_min_share", 1.01), (nested_guide, "shape_max_link_density", 1.0),
           (feed_pages, "own_content_gap", 100), (feed_pages, "paragraph_chars", 1000),
           (product_pages, "repeat_min_chars", 10), (site_pages, "text_structure_paths", ("/div/",)),
           (nested_guide, "list_items", frozenset()), (feed_pages, "allowed_threshold", 0.0),
           (forum(1), "trusted_threshold", 0.99), (forum(0), "region_link_density", 0.0),
           (forum(1), "region_chrome_groups", ()),
           (guide_pages, "region_chrome_tags", frozenset({"div", "p", "section"})),
           (forum(1), "protected_tags", frozenset({"div"}))]


def texts(segs, template) -> list[str]:
    compiled = CompiledTemplate(template)
    return [extract_page(seg, compiled).text for seg in segs]


@pytest.mark.parametrize(("make", "name", "value"), CHANGES)
def test_a_template_learned_with_other_values_extracts_with_them(make, name, value):
    segs = [seg for seg, _ in make(8)]
    default = learn_template(segs, site="s/")
    other = learn_template(segs, site="s/", settings=dataclasses.replace(LearnSettings(), **{name: value}))
    assert getattr(other.settings, name) == value and default.settings == LearnSettings()
    assert texts(segs, other) != texts(segs, default)
    # the same rules saved with the other value extract otherwise: extraction reads the template's value
    assert texts(segs, dataclasses.replace(default, settings=other.settings)) != texts(segs, default)


@pytest.mark.parametrize(("make", "name", "value"), CHANGES)
def test_the_store_keeps_a_templates_settings_and_extraction_reads_them_back(make, name, value, tmp_path):
    segs = [seg for seg, _ in make(8)]
    settings = dataclasses.replace(LearnSettings(), **{name: value})
    template = learn_template(segs, site="s/", settings=settings)
    db = pipeline.open_store(tmp_path / "t.db")
    template_store.save_template(db, template, group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    loaded = pipeline.TemplateIndex(db).compiled("s/")
    assert loaded.settings == settings
    assert [extract_page(seg, loaded).text for seg in segs] == texts(segs, template)
    # the same rules with other settings are a new version (they extract otherwise)
    _, written = template_store.save_template(db, dataclasses.replace(template, settings=LearnSettings()),
                                              group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    assert written and pipeline.TemplateIndex(db).compiled("s/").settings == LearnSettings()
    _, written = template_store.save_template(db, dataclasses.replace(template, settings=LearnSettings()),
                                              group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    assert not written


def opened_fixture(fixture: Path, tmp_path: Path):
    """(its stored extractions' texts by page, its templates' settings as saved, the store opened by templater
    (migrated), the settings after the migrations) of a copy of an old store."""
    db_file = tmp_path / "old.db"
    shutil.copy(fixture, db_file)
    conn = sqlite3.connect(db_file)
    before = dict(conn.execute("SELECT page_id, text FROM extractions"))
    old = [json.loads(s) for (s,) in conn.execute("SELECT settings FROM templates ORDER BY id")]
    conn.close()
    db = pipeline.open_store(db_file)
    return before, old, db, [json.loads(s) for (s,) in db.execute("SELECT settings FROM templates ORDER BY id")]


def migrates_with(fixture: Path, tmp_path: Path, values: dict) -> None:
    """A copy of an old store whose templates were saved without the settings ``values`` names: opened by templater,
    each template gets ``values`` (what it was learned with), and the store extracts as before."""
    before, old, db, saved = opened_fixture(fixture, tmp_path)
    assert old and all(set(s) == set(ADDED) - set(values) for s in old)
    assert all(s == {**old_s, **values} for s, old_s in zip(saved, old))
    assert all(t.settings == dataclasses.replace(LearnSettings(), **values)
               for _, _, t in template_store.iter_current(db))
    again = {r.id: r.text for r in pipeline.iter_crawl_extractions(db, sorted(before))}
    assert again == before


def test_an_old_store_gets_the_settings_its_templates_were_applied_with_and_extracts_as_before(tmp_path):
    """tests/fixtures/templates_v1.db (tests/fixtures/make_templates_v1.py, the code of 3cf8f85): templates saved
    without the extraction thresholds, and the extractions that code made with them."""
    before, old, db, saved = opened_fixture(FIXTURE, tmp_path)  # migrations 2 to 7 of the templates component
    assert old and all("wrapper_depth" not in s for s in old)
    assert all(s == ADDED for s in saved)
    again = {r.id: r.text for r in pipeline.iter_crawl_extractions(db, sorted(before))}
    assert again == before
    assert {r.template for r in pipeline.iter_crawl_extractions(db, sorted(before))} >= {"guide.example.com/book/@v1"}


def test_the_migrations_record_every_setting_with_the_value_of_today():
    """What a template saved before a setting existed was made and applied with config.py's value of the day of the
    migration that adds it: today's defaults, as literals (a later config.py must not change old templates), but
    near_copy_links and near_copy_shared, whose tests came with migration 4: 1.0 turns them off, near_copy_lone
    (migration 5), which was near_copy's 0.8, and near_copy_lines (migration 6) and comment_headings (migration 7),
    off."""
    assert ADDED == dataclasses.replace(LearnSettings(), **BEFORE_4).to_dict()
    steps = [template_store.V2_SETTINGS, template_store.V3_SETTINGS, template_store.V4_SETTINGS,
             template_store.V5_SETTINGS, template_store.V6_SETTINGS, template_store.V7_SETTINGS]
    assert sum(len(step) for step in steps) == len(ADDED)  # no setting added twice


def test_a_store_of_schema_2_gets_the_settings_of_migration_3_and_extracts_as_before(tmp_path):
    """tests/fixtures/templates_v2.db (tests/fixtures/make_templates_v2.py, the code of 1a61856): templates saved
    with the settings of migration 2 only, and the extractions that code made with them."""
    before, old, db, saved = opened_fixture(FIXTURE_V2, tmp_path)  # migrations 3 to 7
    assert old and all(set(s) == set(template_store.V2_SETTINGS) for s in old)
    assert all(s == {**old_s, **template_store.V3_SETTINGS, **template_store.V4_SETTINGS, **template_store.V5_SETTINGS,
                     **template_store.V6_SETTINGS, **template_store.V7_SETTINGS} for s, old_s in zip(saved, old))
    assert all(t.settings == dataclasses.replace(LearnSettings(), **BEFORE_4)
               for _, _, t in template_store.iter_current(db))
    again = {r.id: r.text for r in pipeline.iter_crawl_extractions(db, sorted(before))}
    assert again == before


def test_a_store_of_schema_3_records_the_near_copy_size_its_templates_were_learned_with(tmp_path):
    """tests/fixtures/templates_v3.db (tests/fixtures/make_templates_v3.py, the code of 9e66844): templates saved
    without near_copy_size, which learning read from config.py then (0.3), and before the near-copy tests of
    near_copy_links and near_copy_shared: migration 4 writes 0.3 and 1.0 (those tests off) into each."""
    before, old, db, saved = opened_fixture(FIXTURE_V3, tmp_path)  # migrations 4 to 7
    assert old and all(set(s) == set(ADDED) - set(template_store.V4_SETTINGS) - set(BEFORE_5) for s in old)
    assert all(s == {**old_s, "near_copy_size": 0.3, **BEFORE_4} for s, old_s in zip(saved, old))
    assert all(t.settings == dataclasses.replace(LearnSettings(), **BEFORE_4)
               for _, _, t in template_store.iter_current(db))
    again = {r.id: r.text for r in pipeline.iter_crawl_extractions(db, sorted(before))}
    assert again == before


def test_a_store_of_schema_4_records_the_near_copy_lone_its_templates_were_learned_with(tmp_path):
    """tests/fixtures/templates_v4.db (tests/fixtures/make_templates_v4.py, the code of 6b35ed3): templates saved
    without near_copy_lone, whose share the second near-copy test then read from near_copy (0.8): migration 5 writes
    0.8 into each, and the store extracts as before."""
    migrates_with(FIXTURE_V4, tmp_path, BEFORE_5)  # migrations 5 to 7



def test_a_store_of_schema_5_records_that_its_templates_read_near_copies_block_by_block(tmp_path):
    """tests/fixtures/templates_v5.db (tests/fixtures/make_templates_v5.py, the code of 7078a15): templates saved
    without near_copy_lines, when the near-copy tests read a page block by block: migration 6 writes False into each,
    and the store extracts as before."""
    migrates_with(FIXTURE_V5, tmp_path, BEFORE_6)  # migrations 6 and 7


def test_a_store_of_schema_6_records_that_its_templates_dropped_a_comments_heading_alone(tmp_path):
    """tests/fixtures/templates_v6.db (tests/fixtures/make_templates_v6.py, the code of c346579): templates saved
    without comment_headings, when a heading named like comments was dropped without what follows it: migration 7
    writes False into each, and the store extracts as before."""
    migrates_with(FIXTURE_V6, tmp_path, BEFORE_7)  # migration 7


# (site's pages, a tag list or threshold learning reads, a value that changes the rules learned; the reference
# pages' table cells sit between their own text in their declared main: content whatever structure_tags says)
LEARNED = [(guide_pages, "chrome_tags", frozenset({"div", "article"})), (interface_pages, "heading_tags", frozenset()),
           (reference_pages, "label_tags", frozenset()), (interface_pages, "structure_tags", frozenset()),
           (reference_pages, "list_tags", frozenset({"div"})), (interface_pages, "nav_paths", ("/div/",)),
           (site_pages, "related_max_share", 1.0), (site_pages, "content_tags", frozenset({"div"})),
           (guide_pages, "region_chrome_share", 0.0), (guide_pages, "row_cells", 100), (guide_pages, "link_run", 100)]


@pytest.mark.parametrize(("make", "name", "value"), LEARNED)
def test_a_template_is_learned_with_its_settings_and_saves_them(make, name, value, tmp_path):
    segs = [seg for seg, _ in make(8)]
    settings = dataclasses.replace(LearnSettings(), **{name: value})
    other = learn_template(segs, site="s/", settings=settings)
    assert other.rules != learn_template(segs, site="s/").rules
    db = pipeline.open_store(tmp_path / "t.db")
    template_store.save_template(db, other, group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    assert getattr(pipeline.TemplateIndex(db).compiled("s/").settings, name) == value


@pytest.mark.parametrize(("name", "value"), [("chrome_tags", frozenset({"article"})), ("heading_tags", frozenset())])
def test_own_content_reads_the_templates_tag_lists(name, value):
    """own_content (extraction, in the trusted region) starts the page's own content at a paragraph or at a heading
    of heading_tags outside chrome_tags: past three of the site's blocks (<nav>), a line before such a heading is
    not the page's own; without one the whole trusted region is."""
    html = ("<html><body><div><p>intro line</p></div><nav><p>a</p><p>b</p><p>c</p></nav><main><article>"
            "<h2>Heading of the section</h2><p>short line</p><p>another line</p></article></main></body></html>")
    seg = segment(parse_html(html), Page(id="x", url="https://x.example/a", html=html))
    chrome = np.array(["/nav/" in b.tag_path for b in seg.blocks])
    assert own_content(seg, ~chrome, chrome).tolist() == [False, False, False, False, True, True, True]
    other = own_content(seg, ~chrome, chrome, dataclasses.replace(LearnSettings(), **{name: value}))
    assert other.tolist() == (~chrome).tolist()


def test_a_template_is_chosen_by_the_layout_match_it_saved():
    """A page the build did not assign to a site gets a template of its URL group where it holds the share of the
    template's layout that template saved (layout_match), whatever config.py says."""
    pages = guide_pages(8)
    segs = [seg for seg, _ in pages]
    template = learn_template(segs[:6], site="guide.example.com/book/")
    layout = pipeline.layout_signature([pipeline.shape_set(pipeline.block_shapes(s)) for s in segs[:6]],
                                       LearnSettings())
    new_page = segs[7]

    def index(share: float) -> pipeline.TemplateIndex:
        saved = dataclasses.replace(template, settings=dataclasses.replace(LearnSettings(), layout_match=share))
        return pipeline.TemplateIndex(None, entries=[("guide.example.com/book/", layout, saved)])

    assert index(LearnSettings().layout_match).find(new_page, None) is not None
    assert index(1.01).find(new_page, None) is None


def test_the_store_gives_each_template_its_saved_layout_match(tmp_path):
    segs = [seg for seg, _ in guide_pages(6)]
    db = pipeline.open_store(tmp_path / "t.db")
    for site, share in (("a/", 0.25), ("b/", 0.75)):
        template = learn_template(segs, site=site, settings=dataclasses.replace(LearnSettings(), layout_match=share))
        template_store.save_template(db, template, group_key=site, layout_shapes=np.zeros(0, dtype=np.uint32))
    assert {site: share for _, _, site, _, share in template_store.iter_current_heads(db)} == {"a/": 0.25, "b/": 0.75}
    assert {layouts[0][1]: layouts[0][2] for layouts in pipeline.TemplateIndex(db).layouts.values()} == {
        "a/": 0.25, "b/": 0.75}


def test_the_layout_signature_is_learned_with_the_templates_layout_shape_share():
    """The tag paths (shape hashes) on at least layout_shape_share of a cluster's pages."""
    sets = [np.array(s, dtype=np.uint32) for s in ([1, 2, 3], [1, 2], [1, 4], [1, 2, 4])]
    assert pipeline.layout_signature(sets, LearnSettings()).tolist() == [1, 2, 4]
    assert pipeline.layout_signature(sets, dataclasses.replace(LearnSettings(), layout_shape_share=1.0)).tolist() == [1]


def test_rules_explain_reads_the_templates_thresholds():
    """`rules explain` says why the classifier behind a template dropped a block with the template's thresholds."""
    segs = [seg for seg, _ in feed_pages(8)]
    template = learn_template(segs, site="s/")
    strict = dataclasses.replace(template, settings=dataclasses.replace(LearnSettings(), allowed_threshold=0.97))
    assert any("<= 0.97" in b.why for b in explain_blocks(segs[0], CompiledTemplate(strict)).blocks)
    assert not any("<= 0.97" in b.why for b in explain_blocks(segs[0], CompiledTemplate(template)).blocks)


def test_a_build_that_changes_only_the_settings_saves_a_new_version(tmp_path):
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text("".join(json.dumps({"url": f"https://daily.example.com/story/{i}.html", "html": html}) + "\n"
                             for i, html in enumerate(feed_html_pages(6))), encoding="utf-8")
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [crawl])
    pipeline.build(db)
    first = {t.site: (t.version, t.rules) for _, _, t in template_store.iter_current(db)}
    pipeline.build(db)
    assert {t.site: t.version for _, _, t in template_store.iter_current(db)} == {s: v for s, (v, _) in first.items()}
    pipeline.build(db, settings=dataclasses.replace(LearnSettings(), repeat_min_chars=50))
    now = {t.site: (t.version, t.rules, t.settings) for _, _, t in template_store.iter_current(db)}
    assert {s: (v, r) for s, (v, r, _) in now.items()} == {s: (v + 1, r) for s, (v, r) in first.items()}
    assert all(settings.repeat_min_chars == 50 for _, _, settings in now.values())


def feed_html_pages(count: int) -> list[str]:
    from sitegen import feed_html
    return [feed_html(seed)[0] for seed in range(count)]


def test_the_history_shows_each_versions_saved_layout_match(tmp_path):
    from store import runs as run_store

    segs = [seg for seg, _ in guide_pages(6)]
    db = pipeline.open_store(tmp_path / "t.db")
    for share in (0.25, 0.75):
        template = learn_template(segs, site="s/", settings=dataclasses.replace(LearnSettings(), layout_match=share))
        template_store.save_template(db, template, group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    history = run_store.template_history(db, "s/")
    assert [(row.version.version, row.version.layout_match, row.stale_at) for row in history] == [
        (1, 0.25, None), (2, 0.75, None)]
    assert [v.layout_match for v in run_store.current_versions(db, "s/")] == [0.75]
