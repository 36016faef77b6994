#!/usr/bin/env python3
"""Write docs/cli.md, the reference of every command and option, from the typer app itself.

    python docs/make_cli_reference.py            # rewrite docs/cli.md
    python docs/make_cli_reference.py --check    # exit 1 when docs/cli.md is not what the app says

tests/test_docs.py runs the check, so the reference cannot fall behind the commands.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "cli.md"
sys.path.insert(0, str(ROOT))

HEADER = """# Command-line reference

Every command and option of `templater`, generated from the command definitions by
`python docs/make_cli_reference.py` (a test fails when this page and the commands disagree). What the commands
are for: [the README](../README.md); the rules commands with real output: [rules.md](rules.md).
"""


def iter_commands(command, path: tuple[str, ...]):
    """(path, command) for every command below ``command``, in name order."""
    if hasattr(command, "commands"):  # a group (typer's click or its vendored copy: duck-typed)
        for name in sorted(command.commands):
            sub = command.commands[name]
            if not sub.hidden:
                yield from iter_commands(sub, path + (name,))
    else:
        yield path, command


def usage(command, path: tuple[str, ...]) -> str:
    ctx = command.context_class(command, info_name=" ".join(("templater",) + path))
    return " ".join([ctx.command_path] + command.collect_usage_pieces(ctx))


def is_argument(param) -> bool:
    return param.param_type_name == "argument"


def default_text(param) -> str:
    if param.default is None or param.default == () or is_argument(param):
        return ""
    if getattr(param, "is_flag", False) and not param.default:
        return ""
    value = param.default
    if isinstance(value, (list, tuple)):
        value = ", ".join(map(str, value))
    return f" (default: `{value}`)"


def param_line(param) -> str:
    if is_argument(param):
        name = getattr(param, "metavar", None) or param.name.upper()
        help_text = getattr(param, "help", None) or ""
        required = "" if param.required else " (optional)"
        return f"- `{name}`{required}: {help_text}".rstrip(": ")
    names = ", ".join(f"`{n}`" for n in param.opts + param.secondary_opts)
    help_text = (getattr(param, "help", None) or "").strip()
    return f"- {names}: {help_text}{default_text(param)}".rstrip(": ")


def render(app: typer.Typer) -> str:
    root = typer.main.get_command(app)
    parts = [HEADER]
    for path, command in iter_commands(root, ()):
        parts.append(f"\n## `templater {' '.join(path)}`\n")
        parts.append(f"\n    {usage(command, path)}\n")
        if command.help:
            parts.append("\n" + " ".join(command.help.split()) + "\n")
        params = [p for p in command.params if p.name != "help" and not getattr(p, "hidden", False)]
        if params:
            parts.append("\n" + "\n".join(param_line(p) for p in params) + "\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    import cli

    text = render(cli.app)
    if args.check:
        if REFERENCE.exists() and REFERENCE.read_text(encoding="utf-8") == text:
            return 0
        print(f"{REFERENCE} is out of date: run python docs/make_cli_reference.py", file=sys.stderr)
        return 1
    REFERENCE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
