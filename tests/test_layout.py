"""Issue 30: no function in ``sim/`` or ``testbed/`` takes more than 8 positional parameters (the
rest by keyword: one misplaced argument once shifted every later option of the simulator's kernel)."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "netweave"


def wide_functions(text: str, limit: int = 8) -> list[tuple[int, str, int]]:
    """(line, name, count) of every function in ``text`` with more than ``limit`` positional parameters."""
    return [(node.lineno, node.name, n) for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (n := len(node.args.posonlyargs) + len(node.args.args) + (node.args.vararg is not None)) > limit]


@pytest.mark.parametrize("package", ["sim", "testbed"])
def test_no_function_takes_more_than_8_positional_parameters(package):
    wide = [f"{path.relative_to(SRC)}:{line} {name} ({n})" for path in sorted((SRC / package).rglob("*.py"))
            for line, name, n in wide_functions(path.read_text())]
    assert not wide, wide


def test_the_count_sees_positional_parameters_only():
    text = "def f(a, b, c, d, e, f, g, h, i): pass\ndef g(a, b, *, c, d, e, f, g, h, i): pass\ndef h(*args): pass\n"
    assert wide_functions(text) == [(1, "f", 9)]
