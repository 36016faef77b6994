import gzip
import json
import sqlite3

import pytest
from typer.testing import CliRunner

from cli import app

from conftest import SAMPLES

runner = CliRunner()
SITE = "sqlite.org/"
LTS = "https://sqlite.org/lts.html"
NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))

LIST_FIELDS = {"site": str, "version": int, "pages": int, "rules": int, "pinned": int,
               "median_coverage": OPTIONAL_NUMBER, "learned_at": str, "stale": bool, "learned_from": int}
SHOW_FIELDS = {"site": str, "version": int, "current": bool, "learned_at": str, "pages": int, "rules": list,
               "pinned_rules": list, "settings": dict}
RULE_FIELDS = {"position": int, "action": str, "matched_by": str, "xpath": str, "support": NUMBER, "sample": str}
LEARNED_EXTRA = {"hash": {"tag_path": str, "hash": int}, "shape": {"tag_path": str}, "container": {}, "region": {},
                 "xpath": {}}
EXPLAIN_FIELDS = {"url": str, "site": (str, type(None)), "template": (str, type(None)), "pinned": bool,
                  "coverage": OPTIONAL_NUMBER, "method": str, "kept_chars": int, "total_chars": int, "blocks": list,
                  "text": str}
BLOCK_FIELDS = {"index": int, "xpath": str, "tag": str, "text": str, "kept": bool, "reason": str,
                "rule": (int, type(None)), "action": (str, type(None)), "support": OPTIONAL_NUMBER, "label": str,
                "why": str}
DIFF_FIELDS = {"site": str, "old": int, "new": int, "added": list, "removed": list, "changed": list, "unchanged": int}
REASONS = {"drop", "drop-shape", "drop-xpath", "pinned", "region", "classifier", "template"}


def check_fields(record: dict, fields: dict) -> None:
    assert set(record) == set(fields), sorted(set(record) ^ set(fields))
    for name, kind in fields.items():
        assert isinstance(record[name], kind), (name, record[name])


def check_rule(rule: dict, *, note: bool = False) -> None:
    extra = LEARNED_EXTRA[rule["matched_by"]]
    check_fields(rule, {**RULE_FIELDS, **extra, **({"note": str} if note else {})})
    assert rule["action"] in {"drop", "drop-shape", "drop-xpath", "content"}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def ok(*args):
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result


def copy_db(source, target) -> None:
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def dump(path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "samples.db"
    ok("run", SAMPLES / "pages.jsonl.gz", "--db", path, "--output", path.with_suffix(".jsonl"), "--quiet")
    return path


@pytest.fixture
def db(samples_db, tmp_path):
    path = tmp_path / "copy.db"
    copy_db(samples_db, path)
    return path


@pytest.fixture
def lts_file(tmp_path):
    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        record = next(r for r in map(json.loads, f) if r["url"] == LTS)
    path = tmp_path / "lts.html"
    path.write_text(record["html"], encoding="utf-8")
    return path


def test_list_as_text_and_json(samples_db):
    rows = json.loads(ok("rules", "list", "--db", samples_db, "--json").stdout)
    assert rows and [r["site"] for r in rows] == sorted(r["site"] for r in rows)
    for row in rows:
        check_fields(row, LIST_FIELDS)
        assert 0 <= row["median_coverage"] <= 1 and row["pages"] >= 1 and not row["pinned"]
    text = ok("rules", "list", "--db", samples_db).stdout
    assert text.startswith("SITE") and all(r["site"] in text for r in rows)


def test_show_lists_rules_with_xpath_support_and_sample(samples_db):
    shown = json.loads(ok("rules", "show", "--db", samples_db, SITE, "--json").stdout)
    check_fields(shown, SHOW_FIELDS)
    assert shown["site"] == SITE and shown["current"] and shown["rules"] and not shown["pinned_rules"]
    for position, rule in enumerate(shown["rules"]):
        check_rule(rule)
        assert rule["position"] == position and rule["sample"]
    text = ok("rules", "show", "--db", samples_db, SITE).stdout
    assert shown["rules"][0]["xpath"] in text and "SUPPORT" in text
    missing = invoke("rules", "show", "--db", samples_db, SITE, "--version", "9")
    assert missing.exit_code == 1 and "has versions 1" in missing.stderr


def test_explain_a_stored_page(samples_db):
    explained = json.loads(ok("rules", "explain", "--db", samples_db, LTS, "--json").stdout)
    check_fields(explained, EXPLAIN_FIELDS)
    assert explained["template"] == f"{SITE}@v1" and explained["url"] == LTS
    for block in explained["blocks"]:
        check_fields(block, BLOCK_FIELDS)
        assert block["reason"] in REASONS
        assert (block["rule"] is None) == (block["reason"] in {"classifier", "template"})
        assert bool(block["why"]) == (not block["kept"])  # every dropped block says why, no kept one does
    assert explained["kept_chars"] == sum(len(b["text"]) for b in explained["blocks"] if b["kept"])
    text = ok("rules", "explain", "--db", samples_db, LTS).stdout
    assert text.startswith(f"page      {LTS}") and "DROP  drop rule #0" in text


def test_explain_a_page_nobody_has_a_template_for(samples_db):
    url = "https://www.vg247.com/2019/11/20/star-wars-jedi-fallen-order-pc-review/"
    explained = json.loads(ok("rules", "explain", "--db", samples_db, url, "--json").stdout)
    assert explained["template"] is None and {b["reason"] for b in explained["blocks"]} == {"fallback:auto"}
    assert all(b["why"] for b in explained["blocks"] if not b["kept"])
    missing = invoke("rules", "explain", "--db", samples_db, "https://example.org/never-seen.html")
    assert missing.exit_code == 1 and "no stored page" in missing.stderr and "Traceback" not in missing.output


def test_test_applies_a_template_to_a_file_and_stores_nothing(samples_db, lts_file):
    before = dump(samples_db)
    tested = json.loads(ok("rules", "test", "--db", samples_db, SITE, lts_file, "--json").stdout)
    check_fields(tested, EXPLAIN_FIELDS)
    stored = json.loads(ok("rules", "explain", "--db", samples_db, LTS, "--json").stdout)
    assert tested["template"] == f"{SITE}@v1" and tested["url"].startswith("file://")
    assert [b["kept"] for b in tested["blocks"]] == [b["kept"] for b in stored["blocks"]]
    assert dump(samples_db) == before


def test_diff_between_two_versions(tmp_path):
    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        sqlite_pages = [line for line in f if json.loads(line)["url"].startswith("https://sqlite.org/")]
    early, full = tmp_path / "early.jsonl", tmp_path / "full.jsonl"
    early.write_text("".join(sqlite_pages[:5]), encoding="utf-8")
    full.write_text("".join(sqlite_pages), encoding="utf-8")
    path = tmp_path / "diff.db"
    ok("ingest", early, "--db", path, "-q")
    ok("build", "--db", path, "-q")
    ok("ingest", full, "--db", path, "-q")
    ok("build", "--db", path, "-q")
    diff = json.loads(ok("rules", "diff", "--db", path, SITE, "1", "2", "--json").stdout)
    check_fields(diff, DIFF_FIELDS)
    for rule in diff["added"] + diff["removed"]:
        check_rule(rule)
    for change in diff["changed"]:
        check_fields(change, {"fields": list, "before": dict, "after": dict})
    old = json.loads(ok("rules", "show", "--db", path, SITE, "--version", "1", "--json").stdout)["rules"]
    new = json.loads(ok("rules", "show", "--db", path, SITE, "--version", "2", "--json").stdout)["rules"]
    assert len(diff["removed"]) + len(diff["changed"]) + diff["unchanged"] == len(old)
    assert len(diff["added"]) + len(diff["changed"]) + diff["unchanged"] == len(new)
    assert diff["added"] or diff["removed"] or diff["changed"]
    assert all(old[r["position"]] == r for r in diff["removed"])
    text = ok("rules", "diff", "--db", path, SITE, "1", "2").stdout
    assert text.startswith(f"{SITE}  v1 -> v2: {len(diff['added'])} added, {len(diff['removed'])} removed")


def test_export_edit_import_explain_remove(db, tmp_path):
    exported = tmp_path / "rules.json"
    ok("rules", "export", "--db", db, SITE, "--output", exported)
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert document["site"] == SITE and document["source"] == "learned" and document["format"] == 1
    for rule in document["rules"]:
        check_rule(rule, note=True)
    document["rules"].append({"action": "drop", "xpath": "//p[contains(., 'last modified')]",
                              "note": "the change date is not content"})
    exported.write_text(json.dumps(document, indent=2), encoding="utf-8")
    imported = invoke("rules", "import", "--db", db, exported)
    assert imported.exit_code == 0 and f"pinned {len(document['rules'])} rules for {SITE}" in imported.stderr
    (row,) = [r for r in json.loads(ok("rules", "list", "--db", db, "--json").stdout) if r["site"] == SITE]
    assert row["pinned"] == len(document["rules"])
    shown = json.loads(ok("rules", "show", "--db", db, SITE, "--json").stdout)
    for rule in shown["pinned_rules"]:
        check_rule(rule, note=True)
    assert shown["pinned_rules"][-1]["support"] > 0 and "last modified" in shown["pinned_rules"][-1]["sample"]
    explained = json.loads(ok("rules", "explain", "--db", db, LTS, "--json").stdout)
    (changed,) = [b for b in explained["blocks"] if "last modified" in b["text"]]
    assert explained["pinned"] and changed["reason"] == "pinned" and not changed["kept"]
    removed = invoke("rules", "remove-pinned", "--db", db, SITE)
    assert removed.exit_code == 0 and "its learned rules apply again" in removed.stderr
    assert not json.loads(ok("rules", "explain", "--db", db, LTS, "--json").stdout)["pinned"]


def test_import_refuses_an_invalid_xpath_with_its_column(db, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"site": SITE, "rules": [{"action": "drop", "xpath": "//div]"}]}), encoding="utf-8")
    refused = invoke("rules", "import", "--db", db, path)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "rule 0: invalid XPath at column 6" in refused.stderr
    assert not any(r["pinned"] for r in json.loads(ok("rules", "list", "--db", db, "--json").stdout))


def test_report_writes_one_self_contained_page(samples_db, tmp_path):
    out = tmp_path / "report" / "sqlite.html"
    ok("report", "--db", samples_db, SITE, "--page", LTS, "--output", out, "-q")
    document = out.read_text(encoding="utf-8")
    assert document.startswith("<!DOCTYPE html>") and SITE in document and LTS in document
    assert "<script" not in document and "<link" not in document
    unknown = invoke("report", "--db", samples_db, "nowhere.example/", "--output", out)
    assert unknown.exit_code == 1 and "no template for site" in unknown.stderr


def test_every_rules_command_has_help_with_an_example():
    for command in (["rules", "list"], ["rules", "show"], ["rules", "explain"], ["rules", "test"], ["rules", "diff"],
                    ["rules", "export"], ["rules", "import"], ["rules", "remove-pinned"], ["report"]):
        result = runner.invoke(app, command + ["--help"])
        assert result.exit_code == 0 and "Example:" in result.stdout, command
