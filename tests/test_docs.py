"""The docs stay true: the CLI reference matches the commands, every `$ ` example runs, the README's set-up and
Python examples run, every benchmark named runs (its --help, naming every option shown), every other command shown
is one of these or listed in SHOWN_NOT_RUN with what runs it instead, and no page names a path of one developer's
machine."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_BYTES = 10_500  # about 10 KB: a front door; the rest goes in docs/
MACHINE_PATHS = re.compile(r"\.\./data/|/home/\w|/work/|/root/|/tmp/templater")
sys.path.insert(0, str(ROOT / "docs"))

import make_cli_reference  # noqa: E402


def code_lines(text: str) -> list[str]:
    """Lines of the page's code: indented blocks (4 spaces) and fenced blocks, without the indentation."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            lines.append(line)
        elif line.startswith("    "):
            lines.append(line[4:])
    return lines


def shell_examples(text: str) -> list[tuple[str, bool]]:
    """(command, expected to fail) for every `$ ` line; a quoted argument may go on over following lines, and an
    example whose shown output starts with `error:` is expected to exit non-zero."""
    lines, out = code_lines(text), []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line.startswith("$ "):
            continue
        command = line[2:]
        while not complete(command) and i < len(lines):
            command += " " + lines[i].strip()
            i += 1
        fails = i < len(lines) and lines[i].strip().startswith("error:")
        out.append((command, fails))
    return out


def complete(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:  # a quotation still open
        return False
    return True


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    return tmp_path


def environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def test_cli_reference_is_up_to_date():
    import cli

    expected = make_cli_reference.render(cli.app)
    current = make_cli_reference.REFERENCE.read_text(encoding="utf-8")
    assert current == expected, "docs/cli.md is out of date: run python docs/make_cli_reference.py"


def test_cli_reference_names_every_command_and_option():
    import typer

    import cli

    reference = make_cli_reference.REFERENCE.read_text(encoding="utf-8")
    for path, command in make_cli_reference.iter_commands(typer.main.get_command(cli.app), ()):
        assert f"## `templater {' '.join(path)}`" in reference
        section = reference.split(f"## `templater {' '.join(path)}`", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert f"`{param.opts[0]}`" in section, (path, param.opts)


@pytest.mark.parametrize("page", [p for p in DOCS if shell_examples(p.read_text(encoding="utf-8"))], ids=doc_id)
def test_shell_examples_run(page: Path, workdir: Path):
    for command, fails in shell_examples(page.read_text(encoding="utf-8")):
        done = subprocess.run(["bash", "-c", command], cwd=workdir, env=environment(), capture_output=True,
                              text=True, timeout=300)
        if fails:
            assert done.returncode != 0 and "error:" in done.stderr, (command, done.stderr)
        else:
            assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
            assert "Traceback" not in done.stderr, (command, done.stderr)


def test_readme_python_example_runs(workdir: Path):
    blocks = python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert blocks
    for block in blocks:
        done = subprocess.run([sys.executable, "-c", block], cwd=workdir, env=environment(), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip(), "the example prints what it extracted"


def bench_invocations() -> list[tuple[Path, str, list[str]]]:
    found = []
    for page in [*DOCS, *sorted((ROOT / "bench").glob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            for match in re.finditer(r"python3? (bench/\w+\.py)((?: +[^`#|)]*)?)", line):
                options = re.findall(r"(?<![\w-])(--[a-z][\w-]*)", match.group(2))
                found.append((page, match.group(1), options))
    return found


COMMAND = re.compile(r"^(?:\$ )?(?:(?:templater|python3?|pip|spark-submit) |\.venv/bin/|env/bin/)")
SETUP_HEADING = "## Set up"
# Commands shown but not run by the docs' tests, each with what runs it instead (or why nothing can here)
SHOWN_NOT_RUN = {
    "pip install 'site-templater[spark]'": "the package index; CI installs the spark extra from the checkout",
    "templater spark crawl/*.warc.gz": "tests/test_spark.py runs the same job (templater spark) on samples/",
    "python -m venv env && env/bin/pip install '.[spark]' venv-pack": "packing for a cluster (network, minutes)",
    "spark-submit --master yarn": "needs a YARN cluster; tests/test_spark.py runs the job, "
                                  "test_spark_submit_runs_the_cli the file spark-submit runs",
    "templater train SET/": "needs the dev corpus; tests/test_training.py trains on generated pages",
    "python CORPUS/eval/suites.py": "the dev corpus's own script (not in this repository)",
}


def setup_commands() -> list[str]:
    """The README's set-up commands: the code lines of its set-up section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SETUP_HEADING, 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in code_lines(section)]


def test_readme_setup_commands_run(workdir: Path):
    """The first set-up command's run (after the install) runs as shown; the second is what .ci/run does."""
    install_and_run, install_and_test = setup_commands()
    run = install_and_run.split(" && ")[-1]
    assert run.startswith(".venv/bin/templater run ")
    done = subprocess.run(["bash", "-c", run.removeprefix(".venv/bin/")], cwd=workdir, env=environment(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (workdir / "samples-extracted.jsonl").read_text(encoding="utf-8").count("\n") >= 30
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install, test = install_and_test.split(" && ")[1:]
    assert install.replace(".venv/bin/pip", "python -m pip") in ci
    assert test.replace(".venv/bin/python", "python") in ci


def shown_commands() -> list[tuple[Path, str]]:
    """Every command line of the docs' code that is not a `$ ` example (those run in test_shell_examples_run)."""
    found = []
    for page in DOCS:
        for line in code_lines(page.read_text(encoding="utf-8")):
            line = line.strip()
            if COMMAND.match(line) and not line.startswith("$ "):
                found.append((page, line))
    return found


def test_every_command_shown_is_run():
    setup = setup_commands()
    bench = {script for _, script, _ in bench_invocations()}
    for page, line in shown_commands():
        synopsis = page.name == "cli.md" and "[OPTIONS]" in line
        benchmark = re.match(r"python3? (bench/\w+\.py)", line)
        known = any(line.startswith(prefix) for prefix in SHOWN_NOT_RUN)
        assert (synopsis or line in setup or (benchmark and benchmark.group(1) in bench) or known), \
            f"{page.name} shows `{line}`, which no test runs: make it a `$ ` example on samples/"
    lines = [line for _, line in shown_commands()]
    assert all(any(line.startswith(prefix) for line in lines) for prefix in SHOWN_NOT_RUN)


@pytest.mark.parametrize("script", sorted({script for _, script, _ in bench_invocations()}))
def test_benchmarks_named_run(script: str):
    """Each benchmark the docs name starts (its --help: the runs themselves need the dev corpus and take minutes)
    and has every option the docs give it."""
    done = subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=ROOT, env=environment(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    for _, named, options in bench_invocations():
        if named == script:
            assert all(option in done.stdout for option in options), (script, options)


def test_benchmark_invocations_exist():
    invocations = bench_invocations()
    assert invocations
    for page, script, options in invocations:
        source = ROOT / script
        assert source.exists(), f"{page.name} names {script}, which does not exist"
        text = source.read_text(encoding="utf-8")
        for option in options:
            assert f'"{option}"' in text, f"{page.name}: {script} has no option {option}"


@pytest.mark.parametrize("page", DOCS, ids=doc_id)
def test_no_machine_paths(page: Path):
    found = MACHINE_PATHS.findall(page.read_text(encoding="utf-8"))
    assert not found, f"{page.name} names paths of one machine: {found}"


def test_readme_is_a_front_door():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes: move detail into docs/"
    links = re.findall(r"\]\((docs/[\w.-]+\.md)\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    for link in links:
        assert (ROOT / link).exists(), link


def test_vocabularies_are_documented():
    """Every skip reason is in docs/limits.md's table and every rule action in docs/rules.md's, as stored."""
    from templater.datatypes import RuleAction, SkipReason

    limits = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    rules = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert [reason for reason in SkipReason if f"`{reason}`" not in limits] == []
    assert [action for action in RuleAction if f"| `{action}`" not in rules and f"/ `{action}`" not in rules] == []
