"""The docs stay true: the CLI reference matches the commands, every `$ ` example runs, the README's Python
example runs, benchmark invocations name scripts and options that exist, and no page names a path of one
developer's machine."""

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
README_MAX_BYTES = 12_000
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
