"""The layering of SPEC §6, enforced: each package imports only the layers below it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "sipedge"

# Which sipedge packages each layer may import; "*" means any.
ALLOWED: dict[str, set[str]] = {
    "sip": {"sip"},
    # metrics is a leaf (it imports no sipedge module): the stack counts limit hits there.
    "stack": {"sip", "stack", "metrics"},
    "edge": {"sip", "edge"},
    "store": {"store", "config"},
    "api": {"api", "store", "config", "metrics", "sip"},
    "runtime": {"*"},
}
# Third-party imports that are never allowed in the sans-IO core and the pure policy layer.
FORBIDDEN_IN_PURE = {"asyncio", "socket", "sqlalchemy", "fastapi", "uvloop", "selectors", "time"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_downward(layer: str) -> None:
    allowed = ALLOWED[layer]
    violations = []
    for path in _modules(layer):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "sipedge" or len(parts) < 2 or "*" in allowed:
                continue
            if parts[1] not in allowed:
                violations.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert violations == []


@pytest.mark.parametrize("layer", ["sip", "edge"])
def test_pure_layers_do_no_io(layer: str) -> None:
    violations = []
    for path in _modules(layer):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in FORBIDDEN_IN_PURE:
                violations.append(f"{path.relative_to(PACKAGE)} imports {name}")
            elif layer == "sip" and top != "sipedge" and top not in sys.stdlib_module_names:
                violations.append(f"{path.relative_to(PACKAGE)} imports non-stdlib {name}")
    assert violations == []
