"""One implementation of each one-line format (issue 14): ``short``, ``id_list``,
``to_json`` and ``age`` are defined once (console.text / console.times); the
CLI and the console's widgets use them, each in its own documented form."""

from __future__ import annotations

import ast
from pathlib import Path

import console.cli.output as cli_out
import console.text as text
import console.times as times
import console.widgets.format as fmt
from engine.redact import Redactor

ROOT = Path(__file__).resolve().parents[2]


def test_each_formatter_is_defined_once_in_the_console_and_the_cli() -> None:
    defined: dict[str, list[str]] = {}
    for path in sorted((ROOT / "console").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:  # module level (methods are not formatters)
            if isinstance(node, ast.FunctionDef) and node.name in {"short", "id_list", "to_json", "age"}:
                defined.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    assert defined.pop("short") == ["console/text.py", "console/widgets/format.py"]  # format: the app's Redactor
    assert defined == {"to_json": ["console/text.py"], "id_list": ["console/text.py"], "age": ["console/times.py"]}
    assert cli_out.short.func is text.short and cli_out.id_list.func is text.id_list
    assert fmt.id_list is text.id_list and fmt.to_json is text.to_json and fmt.age is times.age


def test_the_cli_form() -> None:
    assert cli_out.short(None, 60) == ""
    assert cli_out.short({"a": [1, 2]}, 60) == '{"a":[1,2]}'
    assert cli_out.short("x" * 80, 10) == "xxxxxxx..."
    assert cli_out.short("a\n  b\x1b[2J", 60) == "a b\u241b[2J"  # folded, and shown, never obeyed
    assert cli_out.id_list([], 8) == "none"
    assert cli_out.id_list([f"i{n}" for n in range(10)], 8) == "i0, i1, i2, i3, i4, i5, i6, i7 (+2 more)"


def test_the_console_form_masks_with_the_apps_redactor() -> None:
    red = Redactor(show=False)
    assert fmt.short(None, 40, red) == "null"
    assert fmt.short({"a": 1}, 40, red) == '{"a": 1}'
    assert fmt.short("x" * 80, 10, red) == "xxxxxxxxx…"
    assert "hunter2" not in fmt.short({"password": "hunter2"}, 40, red)
    assert "hunter2" in fmt.short({"password": "hunter2"}, 40, Redactor(show=True))
    assert fmt.id_list(["a", "b", "c", "d", "e"]) == "a, b, c +2" and fmt.id_list([]) == ""
