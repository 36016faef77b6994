"""The vocabularies (rule actions, skip reasons) keep the strings databases and outputs already hold."""

import json
import pickle
import sqlite3

from templater.datatypes import Rule, RuleAction, Skip, SkipReason

STORED_ACTIONS = ["drop", "drop-shape", "drop-xpath", "content", "meta-author", "meta-date"]
STORED_REASONS = ["empty", "huge", "binary", "not-html", "undecodable", "bad-url", "bad-record", "http-status",
                  "unparsable", "no-text", "revisit", "duplicate-id", "bad-text", "over-limit", "over-time", "error",
                  "unreadable"]


def test_vocabularies_keep_their_stored_strings():
    assert [action.value for action in RuleAction] == STORED_ACTIONS
    assert [reason.value for reason in SkipReason] == STORED_REASONS


def test_members_print_store_and_compare_as_their_strings():
    for member in [*RuleAction, *SkipReason]:
        text = member.value
        assert member == text and hash(member) == hash(text) and {text: 1}[member] == 1
        assert (str(member), f"{member}", f"{member:<14}", "%s" % member) == (text, text, f"{text:<14}", text)
        assert json.dumps({member: member}) == json.dumps({text: text})
        assert pickle.loads(pickle.dumps(member)) is member
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (value TEXT)")
    db.execute("INSERT INTO t VALUES (?)", [RuleAction.DROP_XPATH])
    assert db.execute("SELECT value, typeof(value) FROM t").fetchone() == ("drop-xpath", "text")


def test_rules_and_skips_hold_the_plain_string():
    rule = Rule(xpath="/html/body", action=RuleAction.CONTENT, support=1.0)
    skip = Skip(SkipReason.OVER_TIME, "x.html")
    assert type(rule.action) is str and rule.action == "content" and rule == Rule("/html/body", "content", 1.0)
    assert type(skip.reason) is str and skip.reason == "over-time"
