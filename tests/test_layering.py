"""The one-way layers of DESIGN.md: parse every import and fail on an arrow pointing the wrong way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"gateway", "parsing", "grammar", "engine", "compute_kernels", "schemas"}
ALLOWED = {
    "schemas": set(),
    "parsing": {"schemas"},
    "grammar": {"schemas"},
    "compute_kernels": {"schemas"},
    "engine": {"grammar", "compute_kernels", "schemas"},
    "gateway": {"parsing", "engine", "grammar", "compute_kernels", "schemas"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down_only(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for target in imported_packages(path) - ALLOWED[package] - {package}:
            bad.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not bad, "\n".join(bad)


def test_parsing_and_schemas_do_not_import_torch():
    for package in ("parsing", "schemas"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
            assert not any(name.split(".")[0] == "torch" for name in names), path
