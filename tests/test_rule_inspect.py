import gzip
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import pins as pin_store
from store import templates as template_store
from templater import rule_inspect as rules
from templater import pipeline
from templater.errors import InputError, RuleError
from templater.extract import extract_page
from templater.parse import parse_html

from conftest import SAMPLES
from sitegen import article_html, sentence

SITE = "news.example.com/story/"
MENU_ITEM = '<li><a href="/arts/">Arts</a></li>'


def comments_html(seed):
    rng = random.Random(1000 + seed)
    return '<div id="comments">' + "".join(f"<p>Reader {seed}-{i}: {sentence(rng, 14)}</p>" for i in range(3)) + \
        "</div>"


def write_site(path, seeds, *, extra_menu=False, comments=False):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for seed in seeds:
            html, _ = article_html(seed)
            if extra_menu:
                html = html.replace(MENU_ITEM, MENU_ITEM + '<li><a href="/food/">Food</a></li>')
            if comments:
                html = html.replace('<div class="related">', comments_html(seed) + '<div class="related">')
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html",
                                "html": html}) + "\n")


@pytest.fixture
def site_db(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", range(6))
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    list(pipeline.extract(db))
    pin_store.ensure_schema(db)
    return db


@pytest.fixture
def page_file(tmp_path):
    path = tmp_path / "new.html"
    path.write_text(article_html(77)[0], encoding="utf-8")
    return path


def stored_segment(db, url):
    return rules._stored_page(db, url)[0]


def test_learning_settings_are_saved_with_the_template_and_shown(site_db):
    """The LearnSettings a template was learned with are stored with it and shown by rules show and export; a
    template saved before a setting existed (fewer keys) still shows, exports and extracts."""
    from templater.config import LearnSettings

    shown = rules.show_rules(site_db, SITE)
    assert shown.settings == LearnSettings().to_dict()
    assert shown.to_json()["settings"]["comment_support"] == LearnSettings().comment_support
    assert rules.export_rules(site_db, SITE)["settings"] == shown.settings
    older = {k: v for k, v in shown.settings.items() if not k.startswith(("meta_", "comment_"))}
    site_db.execute("UPDATE templates SET settings = ?", [json.dumps(older)])
    assert rules.show_rules(site_db, SITE).settings == older
    assert LearnSettings.from_stored(older) == LearnSettings()
    assert LearnSettings.from_stored({**older, "gone": 1, "static_support": 0.7}).static_support == 0.7
    assert all(r.method == "template" for r in pipeline.extract(site_db))


def test_list_templates_counts_pages_rules_and_coverage(site_db):
    (summary,) = rules.list_templates(site_db)
    assert (summary.site, summary.version, summary.pages, summary.pinned, summary.stale) == (SITE, 1, 6, 0, False)
    assert summary.rules == site_db.execute("SELECT count(*) FROM rules").fetchone()[0]
    assert summary.median_coverage == 1.0
    assert set(summary.to_json()) == {"site", "version", "pages", "rules", "pinned", "median_coverage",
                                      "learned_at", "stale", "learned_from"}


def test_list_templates_over_the_samples(tmp_path):
    db = pipeline.open_store(tmp_path / "s.db")
    pipeline.ingest(db, [SAMPLES / "pages.jsonl.gz"])
    pipeline.build(db)
    summaries = rules.list_templates(db)
    assert [s.site for s in summaries] == sorted(r[0] for r in db.execute("SELECT site FROM templates"))
    assert sum(s.pages for s in summaries) == db.execute(
        "SELECT count(*) FROM pages WHERE site IS NOT NULL").fetchone()[0]
    assert all(s.median_coverage is None for s in summaries)  # nothing extracted yet


def test_show_rules_gives_every_rule_with_a_sample(site_db):
    shown = rules.show_rules(site_db, SITE)
    assert shown.current and shown.version == 1 and shown.pages == 6 and not shown.pinned
    assert {r.action for r in shown.learned} == {"drop", "drop-shape", "drop-xpath", "content", "meta-author", "meta-date"}
    assert all(r.sample for r in shown.learned)
    with pytest.raises(InputError, match="has versions 1"):
        rules.show_rules(site_db, SITE, version=4)
    with pytest.raises(InputError, match="rules list"):
        rules.show_rules(site_db, "nowhere.example/")


def test_explanation_agrees_with_extraction_and_names_the_rules(site_db):
    seg = stored_segment(site_db, "https://news.example.com/story/3.html")
    compiled = pipeline.TemplateIndex(site_db).by_site[SITE]
    explained = rules.explain_blocks(seg, compiled)
    extraction = extract_page(seg, compiled)
    assert [b.index for b in explained.blocks if b.kept] == list(extraction.kept)
    assert explained.text == extraction.text and explained.template == f"{SITE}@v1"
    template_rules = compiled.template.rules
    for block in explained.blocks:
        if block.reason == "drop":
            assert template_rules[block.rule].hash == seg.blocks[block.index].hash
        elif block.reason == "drop-shape":
            assert template_rules[block.rule].tag_path == seg.blocks[block.index].tag_path
        elif block.reason == "drop-xpath":
            assert template_rules[block.rule].action == "drop-xpath"
        elif block.reason == "region":
            assert not block.xpath.startswith(template_rules[block.rule].xpath + "/")
        else:
            assert block.reason == "classifier" and block.rule is None
    footer = next(b for b in explained.blocks if b.text.startswith("Copyright"))
    assert not footer.kept and footer.reason == "drop" and footer.label.startswith("drop rule #")


def test_a_learned_comments_rule_is_named(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", range(6), comments=True)
    db = pipeline.open_store(tmp_path / "c.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    compiled = pipeline.TemplateIndex(db).by_site[SITE]
    (position,) = [i for i, r in enumerate(compiled.template.rules)
                   if r.action == "drop-xpath" and "comments" in r.xpath]
    explained = rules.explain_blocks(stored_segment(db, "https://news.example.com/story/2.html"), compiled,
                                     method="none")
    comments = [b for b in explained.blocks if b.text.startswith("Reader 2-")]
    assert len(comments) == 3 and all((b.kept, b.reason, b.rule) == (False, "drop-xpath", position) for b in comments)
    assert comments[0].label == f"container rule #{position} (support 100%)"
    assert rules.rule_json(compiled.template.rules[position], position)["matched_by"] == "container"
    url = "https://news.example.com/story/2.html"
    learned = rules.explain_page(db, url, method="none")
    rules.import_rules(db, json.loads(json.dumps(rules.export_rules(db, SITE))))  # a round trip changes nothing
    pinned = rules.explain_page(db, url, method="none")
    assert pinned.pinned and not learned.pinned
    assert [(b.kept, b.reason, b.rule) for b in pinned.blocks] == [(b.kept, b.reason, b.rule) for b in learned.blocks]


def test_explain_a_stored_url_and_a_saved_copy_alike(site_db, tmp_path):
    url = "https://news.example.com/story/2.html"
    saved = tmp_path / "saved.html"
    saved.write_text(article_html(2)[0], encoding="utf-8")
    by_url = rules.explain_page(site_db, url)
    by_file = rules.explain_page(site_db, str(saved), url=url)
    assert by_url.blocks == by_file.blocks and by_url.template == by_file.template == f"{SITE}@v1"
    alone = rules.explain_page(site_db, str(saved))  # a file:// URL matches no site
    assert alone.template is None and {b.reason for b in alone.blocks} == {"fallback:auto"}
    with pytest.raises(InputError, match="no stored page"):
        rules.explain_page(site_db, "https://news.example.com/story/99.html")


def test_test_rules_applies_a_template_without_storing(site_db, page_file):
    before = list(site_db.conn.iterdump())
    tested = rules.test_rules(site_db, SITE, page_file)
    assert tested.template == f"{SITE}@v1" and tested.coverage == 1.0
    assert "Copyright" not in tested.text and article_html(77)[1].splitlines()[1][:40] in tested.text
    assert list(site_db.conn.iterdump()) == before


def test_diff_names_the_rule_a_new_menu_item_added(site_db, tmp_path):
    write_site(tmp_path / "v2.jsonl.gz", range(6), extra_menu=True)
    pipeline.ingest(site_db, [tmp_path / "v2.jsonl.gz"])
    assert pipeline.build(site_db).counts["templates learned"] == 1
    diff = rules.diff_rules(site_db, SITE, 1, 2)
    assert [(r.action, r.sample) for _, r in diff.added] == [("drop", "Food")]
    assert not diff.removed
    assert diff.unchanged + len(diff.changed) == len(rules.show_rules(site_db, SITE, version=1).learned)
    same = rules.diff_rules(site_db, SITE, 2, 2)
    assert not (same.added or same.removed or same.changed)
    assert set(diff.to_json()) == {"site", "old", "new", "added", "removed", "changed", "unchanged"}


def test_export_then_import_unchanged_extracts_the_same(site_db, page_file):
    learned = rules.test_rules(site_db, SITE, page_file)
    document = json.loads(json.dumps(rules.export_rules(site_db, SITE)))
    assert document["source"] == "learned" and document["site"] == SITE
    shown = rules.import_rules(site_db, document)
    assert [r for r, _ in shown.pinned] == list(shown.learned)
    pinned = rules.test_rules(site_db, SITE, page_file)
    assert pinned.pinned and pinned.text == learned.text
    assert [b.kept for b in pinned.blocks] == [b.kept for b in learned.blocks]
    assert rules.export_rules(site_db, SITE)["source"] == "pinned"


def test_a_pinned_xpath_rule_drops_what_it_selects(site_db, page_file):
    document = rules.export_rules(site_db, SITE)
    document["rules"].append({"action": "drop", "xpath": "//div[@class='article']/p[1]", "note": "lead paragraph"})
    shown = rules.import_rules(site_db, document)
    rule, note = shown.pinned[-1]
    assert rule.pinned and note == "lead paragraph" and rule.support == 1.0
    assert rule.sample in {article_html(seed)[1].splitlines()[1][:rules.SAMPLE_CHARS] for seed in range(6)}
    tested = rules.test_rules(site_db, SITE, page_file)
    lead = next(b for b in tested.blocks if b.text == article_html(77)[1].splitlines()[1])
    assert not lead.kept and (lead.reason, lead.rule) == ("pinned", len(shown.pinned) - 1)
    assert lead.label == f"pinned drop rule #{lead.rule}"
    assert rules.list_templates(site_db)[0].pinned == len(shown.pinned)


def test_a_pinned_content_rule_keeps_only_what_it_selects(site_db, page_file):
    document = {"site": SITE, "rules": [{"action": "content", "xpath": "//div[@class='article']"}]}
    rules.import_rules(site_db, document)
    tested = rules.test_rules(site_db, SITE, page_file)
    root = parse_html(page_file.read_text(encoding="utf-8"))
    article = root.getroottree().getpath(root.xpath("//div[@class='article']")[0])
    inside = [b.xpath.startswith(article + "/") or b.xpath == article for b in tested.blocks]
    assert any(inside) and not all(inside)
    for block, within in zip(tested.blocks, inside):
        if not within:
            assert not block.kept and block.reason == "pinned" and block.label == "outside pinned content #0"
        else:
            assert block.reason == "classifier"


def test_pins_override_learned_rules_until_removed(site_db):
    ((_, _, learned),) = template_store.iter_current(site_db)
    assert pin_store.apply_pins(site_db, learned) is learned
    rules.import_rules(site_db, {"site": SITE, "rules": [{"action": "drop", "xpath": "//p"}]})
    pinned = pin_store.apply_pins(site_db, learned)
    assert pinned.reason == "pinned" and [r.xpath for r in pinned.rules] == ["//p"]
    assert rules.remove_pinned(site_db, SITE) == 1
    assert pin_store.apply_pins(site_db, learned) is learned
    with pytest.raises(InputError, match="no pinned rules"):
        rules.remove_pinned(site_db, SITE)


def test_extract_honours_pinned_rules(site_db):
    """Needs pipeline.TemplateIndex to apply pin_store.apply_pins to each current template."""
    rules.import_rules(site_db, {"site": SITE, "rules": [{"action": "content", "xpath": "//div[@id='footer']"}]})
    results = list(pipeline.extract(site_db, method="none"))
    assert all(r.text.startswith("Copyright Example News") for r in results)


@pytest.mark.parametrize("xpath, column", [
    ("//div[@class='a'", 17),  # the predicate never closes: the end
    ("//p]", 4),  # a stray bracket
    ("//p[@class='a]", 15),  # an unfinished string: the end (the hint names column 12, where it opens)
    ("//div[@@id]", 8),
    ("count(", 6),  # compiles, fails when run: the unclosed parenthesis
    ("//x:div", 3),  # an undeclared prefix
    ("//p[foo(1)]", 5),  # an unknown function
])
def test_an_invalid_xpath_is_refused_with_its_column(site_db, xpath, column):
    document = {"site": SITE, "rules": [{"action": "drop", "xpath": xpath}]}
    with pytest.raises(RuleError, match=rf"rule 0: invalid XPath at column {column}\b"):
        rules.import_rules(site_db, document, source="edited.json")
    assert pin_store.pinned_sites(site_db) == {}


@pytest.mark.parametrize("rule, message", [
    ({"action": "keep", "xpath": "//p"}, "action 'keep' is not one of"),
    ({"action": "drop", "xpath": "//p", "matched_by": "shape"}, "use hash or xpath"),
    ({"action": "drop", "xpath": "//p", "matched_by": "hash"}, "needs its \"tag_path\""),
    ({"action": "drop", "xpath": "//p", "matched_by": "hash", "tag_path": "/html/body/p"}, "needs its \"hash\""),
    ({"action": "drop", "xpath": "//p", "colour": "red"}, "unknown field colour"),
    ({"action": "drop", "xpath": "//p/text()"}, "not elements"),
    ({"action": "drop", "xpath": "count(//p)"}, "not elements"),
    ({"action": "drop"}, "must be a non-empty string"),
])
def test_a_bad_rule_is_refused_and_nothing_is_stored(site_db, rule, message):
    with pytest.raises(RuleError, match=message):
        rules.import_rules(site_db, {"site": SITE, "rules": [rule]})
    assert pin_store.pinned_sites(site_db) == {}


def test_import_needs_a_known_site_and_some_rules(site_db):
    with pytest.raises(InputError, match="no template for site"):
        rules.import_rules(site_db, {"site": "elsewhere.example/", "rules": [{"action": "drop", "xpath": "//p"}]})
    with pytest.raises(RuleError, match="remove-pinned"):
        rules.import_rules(site_db, {"site": SITE, "rules": []})
    with pytest.raises(RuleError, match="\"rules\" list"):
        rules.import_rules(site_db, ["not", "an", "object"])


def test_a_broken_rules_file_names_line_and_column(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text('{"site": "a/",\n "rules": [,]}', encoding="utf-8")
    with pytest.raises(RuleError, match="line 2 column 12"):
        rules.read_rules_file(path)


def test_build_report_shows_the_page_and_every_site_page(site_db):
    document = rules.build_report(site_db, SITE, page_url="https://news.example.com/story/4.html")
    assert document.count("<tr") >= 6 + len(rules.show_rules(site_db, SITE).learned)
    assert "https://news.example.com/story/4.html" in document and "Copyright Example News" in document
    with pytest.raises(InputError, match="no stored page"):
        rules.build_report(site_db, SITE, page_url="https://news.example.com/story/404.html")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="/[]()'\"@=*:.,|$ abpdiv0123456789-", max_size=30))
def test_check_xpath_accepts_or_names_a_column_inside_the_expression(expr):
    try:
        rules.check_xpath(expr)
    except RuleError as e:
        column = int(str(e).split("column ")[1].split(":")[0])
        assert 1 <= column <= len(expr) + 1


def test_explain_blocks_without_a_template_uses_the_fallback(site_db):
    seg = stored_segment(site_db, "https://news.example.com/story/1.html")
    explained = rules.explain_blocks(seg, None, method="auto")
    extraction = extract_page(seg, None)
    assert explained.template is None and explained.coverage is None
    assert np.array_equal(np.flatnonzero([b.kept for b in explained.blocks]), np.array(extraction.kept, dtype=int))


def test_meta_rules_are_shown_exported_and_pinned(site_db, page_file):
    """The learned byline and date rules show with the others, survive export and import, and a hand-written
    meta rule (matched_by xpath) reads the page where it points, without dropping any block."""
    shown = rules.show_rules(site_db, SITE)
    meta = {r.action: r for r in shown.learned if r.action.startswith("meta-")}
    assert set(meta) == {"meta-author", "meta-date"} and rules.matched_by(meta["meta-author"]) == "meta"
    document = rules.export_rules(site_db, SITE)
    exported = [r for r in document["rules"] if r["action"].startswith("meta-")]
    assert {r["matched_by"] for r in exported} == {"meta"}
    pinned = rules.import_rules(site_db, document)
    assert {r.action for r, _ in pinned.pinned} >= {"meta-author", "meta-date"}
    before = rules.test_rules(site_db, SITE, page_file)
    document["rules"] = [r for r in document["rules"] if not r["action"].startswith("meta-")] + [
        {"action": "meta-author", "matched_by": "xpath", "xpath": "//div[@id='header']/a"}]
    rules.import_rules(site_db, document)
    after = rules.test_rules(site_db, SITE, page_file)
    assert [b.kept for b in after.blocks] == [b.kept for b in before.blocks]
    compiled = pipeline.TemplateIndex(site_db).by_site[SITE]
    seg = pipeline.segment_file(page_file, url="https://news.example.com/story/77.html")
    assert extract_page(seg, compiled).author.startswith("Example")  # where the pinned rule points, not the byline
