import json

from typer.testing import CliRunner

from cli import app
from store.db import open_db
from sitegen import store_extracted

EVAL_TEXT = ("The harbor lights were switched on long before the fishing boats came home. Nobody in the village "
             "remembered a winter as cold as the one that followed the flood, and the old men said so every day.")


def eval_db(path, texts: dict[str, str]) -> None:
    db = open_db(path)
    store_extracted(db, texts)
    db.conn.close()


def test_eval_dedup_prints_a_table_and_json_lines(tmp_path):
    eval_db(tmp_path / "t.db", {"a": EVAL_TEXT, "b": EVAL_TEXT, "c": "Something else entirely, about trains."})
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a", "cluster": 1}\n{"id": "b", "cluster": 1}\n', encoding="utf-8")
    runner = CliRunner()
    table = runner.invoke(app, ["eval", "dedup", "--db", str(tmp_path / "t.db"), "--truth", str(truth), "-q"])
    assert table.exit_code == 0, table.output
    assert table.output.splitlines()[0].split() == ["method", "precision", "recall", "f1", "seconds", "pairs",
                                                    "judged"]
    lines = runner.invoke(app, ["eval", "dedup", "--db", str(tmp_path / "t.db"), "--truth", str(truth), "--json",
                                "-m", "md5", "-q"]).output.splitlines()
    row = json.loads(lines[0])
    assert len(lines) == 1 and row["method"] == "md5" and (row["precision"], row["recall"], row["pairs"]) == (1, 1, 1)


def test_eval_dedup_refuses_bad_truth_without_a_traceback(tmp_path):
    eval_db(tmp_path / "t.db", {"a": EVAL_TEXT})
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "dedup", "--db", str(tmp_path / "t.db"), "--truth", str(truth)])
    assert result.exit_code == 1 and "cluster" in result.output and "Traceback" not in result.output


def test_eval_extract_prints_the_score_py_summary(tmp_path):
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text('{"id": "1", "gold": "a b c d"}\n{"id": "2", "gold": "e f"}\n', encoding="utf-8")
    pred.write_text('{"id": "1", "text": "a b x y"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "extract", str(gold), str(pred)])
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == "pages=2 precision=0.7500 recall=0.2500 f1=0.2500"
