"""cli._PlainValues converts option values without typer's pydantic adapters: it must give exactly what typer's own
converter gives (value and type), or leave the value to it (the same error, word for word)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer import _coercion

import cli

SAMPLES = ["0", "1", "2", "-3", "-0", "007", "10", "99999999999999999999999", "1.5", "0.05", "-0.5", "1.", ".5",
           "1e3", "nan", "inf", "abc", "", " 5", "5 ", "5_000", "+4", "a/b", "-", ".", "x.db", "~/x", "a\x00b",
           "md5", "jsonl", "markdown", 3, 0, -1, 2.5, 0.0, True, False, None, Path("templater.db"), Path("."), b"x"]


def every_parameter():
    group = typer.main.get_command(cli.app)

    def walk(command, path):
        for param in command.params:
            if hasattr(param, "type_descriptor"):
                yield path, command, param
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, (*path, name))

    return list(walk(group, ()))


PARAMETERS = every_parameter()


def outcome(runtime, value, param, ctx):
    try:
        result = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as e:  # noqa: BLE001 -- the error itself is what is compared
        return "error", type(e).__name__, str(e)
    return "value", type(result).__name__, repr(result)


def compare(path, command, param, value):
    ctx = command.context_class(command, info_name=" ".join(path) or "templater")
    descriptor = param.type_descriptor
    plain = cli._PlainValues(descriptor, _coercion.build_runtime_param)
    typer_way = _coercion.build_runtime_param(descriptor)
    if param.multiple or param.nargs == -1:
        value = value if value is None or isinstance(value, str) else [value]
    assert outcome(plain, value, param, ctx) == outcome(typer_way, value, param, ctx), (path, param.name, value)


def test_every_plain_option_kind_is_handled():
    kinds = {repr(param.type_descriptor.annotation) for _, _, param in PARAMETERS
             if cli._PlainValues.handles(param.type_descriptor)}
    assert {"<class 'str'>", "<class 'int'>", "<class 'float'>", "<class 'pathlib.Path'>", "<class 'bool'>"} <= kinds


@pytest.mark.parametrize("path,command,param", PARAMETERS,
                         ids=[f"{' '.join(p) or 'root'}:{param.name}" for p, _, param in PARAMETERS])
def test_same_values_and_errors_as_typer(path, command, param, tmp_path):
    existing = tmp_path / "there.txt"
    existing.write_text("x")
    for value in [*SAMPLES, str(existing), str(tmp_path), str(tmp_path / "missing.db"), existing, param.default]:
        compare(path, command, param, value)
    compare(path, command, param, [str(existing), "a", "1"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PARAMETERS), st.text(alphabet="0123456789-+._e /ax", max_size=8))
def test_same_values_and_errors_as_typer_on_any_text(parameter, text):
    compare(*parameter, text)


def test_typer_builds_no_pydantic_adapter_for_a_plain_command():
    group = typer.main.get_command(cli.app)
    command = group.commands["extract"]
    ctx = command.make_context("extract", ["--db", "x.db", "--output", "o.jsonl", "--quiet", "--jobs", "2"])
    assert ctx.params["jobs"] == 2 and ctx.params["db"] == Path("x.db")
    assert all(isinstance(param._runtime_param, cli._PlainValues) for param in command.params
               if param._runtime_param is not None)
