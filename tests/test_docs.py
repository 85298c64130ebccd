"""The docs stay true: every fence marked `bash runnable` or `python runnable` in README.md and
docs/*.md runs against a server on the tiny random model, the README stays a front door (at most
~250 lines), and every link inside the repository resolves.

A runnable fence is written as a reader would type it, against `http://127.0.0.1:8000`; the test
puts its own server's address there. A bash fence runs with `set -euo pipefail` (use `curl -f`
where a 4xx should fail it); a python fence runs in this interpreter's environment.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import running_server

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)[ \t]+runnable[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
DEFAULT_URL = "http://127.0.0.1:8000"
README_MAX_LINES = 260


def runnable_blocks() -> list[tuple[str, str, str]]:
    """(id, language, code) of every runnable fence, in file order."""
    blocks = []
    for path in DOCS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            blocks.append((f"{path.relative_to(ROOT)}:{line}", match.group(1), match.group(2)))
    return blocks


BLOCKS = runnable_blocks()


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory):
    from tests.helpers.tiny_bert import make_tiny_bert
    from tests.helpers.tiny_model import make_tiny_model

    model = make_tiny_model(tmp_path_factory.mktemp("docs-tiny"), "llama")
    bert = make_tiny_bert(tmp_path_factory.mktemp("docs-bert") / "tiny-bert")
    with running_server("--model", str(model), "--max-model-len", "512", "--num-kv-blocks", "128",
                        "--tool-parser", "hermes", "--embedding-model", str(bert)) as proc:  # fmt: skip
        yield proc


def test_there_are_runnable_blocks_in_bash_and_python():
    assert {lang for _, lang, _ in BLOCKS} == {"bash", "python"}, [b[:2] for b in BLOCKS]


@pytest.mark.parametrize(("where", "language", "code"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_runnable_block(docs_server, where, language, code):
    code = code.replace(DEFAULT_URL, docs_server.url)
    if language == "bash":
        cmd = ["bash", "-c", "set -euo pipefail\n" + code]
    elif language == "python":
        cmd = [sys.executable, "-c", code]
    else:
        pytest.fail(f"{where}: no runner for a {language!r} fence")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{where} exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move the detail to docs/"
    head = "\n".join((ROOT / "README.md").read_text().split("\n")[:60])
    assert "make serve" in head and "make test" in head, "the two commands are in the first screen"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository_and_resolve(path):
    for target in LINK.findall(path.read_text()):
        assert not re.match(r"\w+://", target), f"{path.name}: {target} leaves the repository"
        file_part = target.split("#", 1)[0]
        if not file_part:
            continue
        resolved = (path.parent / file_part).resolve()
        assert resolved.exists(), f"{path.name}: {target} does not resolve"
