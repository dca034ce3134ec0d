"""The testbed's three wings (issue 30): ``net/`` serves both, and ``agg/`` and ``gnn/`` never
import each other."""

import ast
from pathlib import Path

TESTBED = Path(__file__).resolve().parents[2] / "src" / "netweave" / "testbed"


def _imports(path: Path, text: str | None = None) -> set[str]:
    """Absolute module names ``path`` (or ``text`` as if it were there) imports, relative imports resolved."""
    package = ["netweave", "testbed"] + ([path.parent.name] if path.parent != TESTBED else [])
    out = set()
    for node in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            out.add(".".join(base + ([node.module] if node.module else [])))
    return out


def test_agg_and_gnn_do_not_import_each_other():
    crossing = [f"{path.relative_to(TESTBED)} imports {name}"
                for wing, other in (("agg", "gnn"), ("gnn", "agg"))
                for path in sorted((TESTBED / wing).glob("*.py"))
                for name in _imports(path) if name.startswith(f"netweave.testbed.{other}")]
    assert not crossing, crossing


def test_net_imports_neither_wing():
    up = [f"{path.name} imports {name}" for path in sorted((TESTBED / "net").glob("*.py"))
          for name in _imports(path) if name.startswith(("netweave.testbed.agg", "netweave.testbed.gnn"))]
    assert not up, up


def test_the_resolver_sees_a_crossing():
    """The checks above can fail: a relative import into the other wing resolves to it."""
    text = "from ..gnn.wire import UNIT\nfrom .plan import plan_training\nimport numpy\n"
    assert _imports(TESTBED / "agg" / "x.py", text) == {"netweave.testbed.gnn.wire", "netweave.testbed.agg.plan",
                                                          "numpy"}
