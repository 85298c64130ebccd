"""grammar/'s own layers (grammar/README.md): parse every import, lazy and type-only ones too, and
fail on a circle or on an arrow between the wings that points the wrong way."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "grammar"
BASE_C = {"grammar._ir"}  # the base's C extensions (grammar/_ir.c: the IR's node measures)
BASE = {"grammar.errors", "grammar.ir", "grammar.time_limit", "grammar.vocab"} | BASE_C
# module prefix -> what it may import besides itself (its own wing) and BASE
WINGS = {
    "grammar.frontends": set(),
    "grammar.automaton": set(),
    "grammar.masks": {"grammar.automaton"},
}
FACE = {"grammar", "grammar.compiled", "grammar.compiler", "grammar.matcher", "grammar.bitmask",
        "grammar.precompute_worker"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    """A module or package of grammar/ (a C extension counts when its source is there)."""
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists() or (
        ROOT / rel.parent / (rel.name + ".c")).exists()


def _imports(path: Path) -> set[str]:
    """The grammar modules `path` imports anywhere in it (`from a import b`: a.b when b is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if _is_module(sub) else node.module)
    return {name for name in found if name == "grammar" or name.startswith("grammar.")}


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) - {_module_name(p)} for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(name: str) -> str:
    if name in BASE:
        return "base"
    for wing in WINGS:
        if name == wing or name.startswith(wing + "."):
            return wing
    assert name in FACE, f"{name} is in no layer of tests/grammar/test_imports.py"
    return "face"


def _may_import(layer: str, target: str) -> bool:
    if layer == "base":  # token facts, the IR, the time limit: nothing but the error type and their C
        return target == "grammar.errors" or target in BASE_C
    t_layer = _layer(target)
    return t_layer in ("base", layer) or t_layer in WINGS[layer]


def test_wings_import_only_down():
    graph = _graph()
    assert sum(len(t) for t in graph.values()) > 80  # the parse found the imports
    bad = [f"{module} ({_layer(module)}) imports {target} ({_layer(target)})"
           for module, targets in graph.items() if _layer(module) != "face"
           for target in sorted(targets) if not _may_import(_layer(module), target)]  # fmt: skip
    assert not bad, "\n".join(bad)


def test_no_import_circles():
    graph = _graph()
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []
    circles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                circles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not circles, "\n".join(circles)


def test_only_the_bitmask_face_imports_torch():
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        if any(name.split(".")[0] == "torch" for name in names):
            assert _module_name(path) in {"grammar.bitmask", "grammar.matcher"}, path
