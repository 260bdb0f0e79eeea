"""The manual: every code example in docs/*.md runs, and the HTML build passes with -W.

How a fenced block of a page is treated, by its info string:

- ```` ```python ````: executed. The blocks of one page run in order, in one namespace that
  is fresh for each page, in a temporary working directory. They must clean up after
  themselves: the autouse leak guard (tests/conftest.py) fails a page that leaves a thread, a
  child process or a file descriptor behind.
- ```` ```python no-run ````: shown, never executed, because it needs something the suite does
  not have (flask, django, a remote URL). It must still compile, and there may be at most
  ``MAX_NO_RUN`` of them in the whole manual.
- ```` ```python file=PATH ````: not executed but written to PATH in the page's working
  directory before the page runs, for a later block to use (a module, a conftest.py). The
  working directory is first on ``sys.path`` while the page runs, as a script's folder is,
  and modules imported from it are forgotten afterwards. The environment variables a page
  set (a Django ``wsgi.py`` sets ``DJANGO_SETTINGS_MODULE``) are undone after it.
- anything else (sh, json, text, ...): not executed.

The working directory holds ``node_modules``, a link to tests/peers/node_modules (what
``make peers`` installs), so an example that runs ``npx -y @modelcontextprotocol/server-everything``
gets that copy without the network. A page that uses server-everything is skipped when it is
not installed (and fails on CI, as the peers' fixture does).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

import raider_sync

from conftest import PEERS, everything_available

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
MAX_NO_RUN = 5
SPHINX_TIMEOUT_S = 300

_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")


@dataclass
class Block:
    page: Path
    line: int       # 1-based line of the block's first code line
    info: str       # the fence's info string: "python", "python no-run", "json", ...
    code: str

    @property
    def words(self) -> list[str]:
        return self.info.split()

    @property
    def is_python(self) -> bool:
        return bool(self.words) and self.words[0] == "python"

    @property
    def runs(self) -> bool:
        return self.is_python and len(self.words) == 1

    @property
    def no_run(self) -> bool:
        return self.is_python and "no-run" in self.words[1:]

    @property
    def file(self) -> str | None:
        for word in self.words[1:]:
            if word.startswith("file="):
                return word[len("file="):]
        return None

    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, outermost fences only, in order."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        fence, info = opened.group(1), opened.group(2).strip()
        start = i + 1
        i = start
        closing = re.compile(re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*")
        while i < len(lines) and not closing.fullmatch(lines[i]):
            i += 1
        if i >= len(lines):
            raise AssertionError(f"{page.name}:{start}: a fence that is never closed")
        blocks.append(Block(page, start + 1, info, "\n".join(lines[start:i]) + "\n"))
        i += 1
    return blocks


def uses_everything(blocks: list[Block]) -> bool:
    return any("server-everything" in b.code for b in blocks if b.runs or b.file)


def _stop_what_is_left(namespace: dict) -> None:
    """After a failed page only: stop what its blocks started, so one failure does not make
    the leak guard report a second one (a passing page must clean up by itself)."""
    for value in list(namespace.values()):
        if isinstance(value, (type, types.ModuleType, types.FunctionType,
                              types.BuiltinFunctionType)):
            continue
        for method in ("stop_all", "stop", "close", "kill"):
            stop = getattr(value, method, None)
            if callable(stop):
                try:
                    stop()
                except Exception:  # noqa: BLE001 - best effort after a failure
                    pass
                break
        if hasattr(value, "wait") and hasattr(value, "pid"):  # a subprocess.Popen
            try:
                value.wait(10)
            except Exception:  # noqa: BLE001
                pass


EXAMPLE_PAGES = [page for page in PAGES if any(b.runs for b in blocks_of(page))]


def test_the_pages_with_examples_are_found():
    assert {p.stem for p in PAGES} - {p.stem for p in EXAMPLE_PAGES} == {"api"}  # autodoc only


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=[p.stem for p in EXAMPLE_PAGES])
def test_every_python_example_of_the_page_runs(page, tmp_path, monkeypatch):
    blocks = blocks_of(page)
    runnable = [b for b in blocks if b.runs]
    if uses_everything(blocks) and not everything_available():
        if os.environ.get("CI"):
            pytest.fail("server-everything is not installed: run `make peers`")
        pytest.skip(f"{page.name} uses server-everything, which is not installed: run `make peers`")
    monkeypatch.chdir(tmp_path)
    if os.path.isdir(os.path.join(PEERS, "node_modules")):
        os.symlink(os.path.join(PEERS, "node_modules"), tmp_path / "node_modules")
    for block in blocks:
        if block.file:
            target = tmp_path / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    modules_before = set(sys.modules)
    environ_before = dict(os.environ)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    try:
        for block in runnable:
            # padded so a traceback names the line of the Markdown page
            code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
            exec(code, namespace)  # noqa: S102 - the manual's own examples
    except BaseException:
        _stop_what_is_left(namespace)
        raise
    finally:
        for name in set(sys.modules) - modules_before:  # the page's own modules, if any
            if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(tmp_path)):
                del sys.modules[name]
        for name in set(os.environ) - set(environ_before):
            del os.environ[name]
        for name, value in environ_before.items():
            if os.environ.get(name) != value:
                os.environ[name] = value


def test_blocks_that_do_not_run_are_few_and_still_compile():
    held_back = [b for page in PAGES for b in blocks_of(page) if b.no_run]
    for block in held_back:
        compile(block.code, block.where(), "exec")
    assert len(held_back) <= MAX_NO_RUN, [b.where() for b in held_back]
    unknown = [b.where() for page in PAGES for b in blocks_of(page)
               if b.is_python and not (b.runs or b.no_run or b.file)]
    assert not unknown, f"python blocks with an unknown marker: {unknown}"


def test_every_page_has_examples_that_run():
    """The pages that describe a part show it working (reference pages may only list)."""
    without = [p.name for p in PAGES if p.stem not in ("api", "benchmarks")
               and not any(b.runs for b in blocks_of(p))]
    assert not without, f"pages without a python example that runs: {without}"


def test_the_fence_parser_reads_nested_and_marked_blocks(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n````md\n```python\nnot a block of its own\n```\n````\n"
                    "```python no-run\nimport flask\n```\n\n```python file=a/b.py\nX = 1\n```\n",
                    encoding="utf-8")
    blocks = blocks_of(page)
    assert [(b.info, b.line) for b in blocks] == [("md", 3), ("python no-run", 8),
                                                   ("python file=a/b.py", 12)]
    assert blocks[0].code.startswith("```python") and not blocks[0].is_python
    assert blocks[1].no_run and not blocks[1].runs
    assert blocks[2].file == "a/b.py" and blocks[2].code == "X = 1\n"


# -- the reference pages cover what exists ------------------------------------------------------

def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _environment_variables() -> set[str]:
    """Every environment variable the package reads (or sets for a server) by name."""
    names: set[str] = set()
    for path in (ROOT / "raider_sync").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
                    r"(MCP|MAX_MCP|CLAUDE|RAIDER)_[A-Z_]+", node.value):
                names.add(node.value)
    return names


def test_the_configuration_reference_names_every_field_and_variable():
    from raider_sync.config import ServerSpec
    page = _read("configuration.md")
    fields = {info.alias or name for name, info in ServerSpec.model_fields.items()} - {"name"}
    missing = sorted(f for f in fields | {"type"} if f"`{f}`" not in page)
    assert not missing, f"configuration.md does not describe the .mcp.json fields {missing}"
    variables = _environment_variables()
    assert {"MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "MAX_MCP_OUTPUT_TOKENS"} <= variables
    missing = sorted(v for v in variables if f"`{v}`" not in page)
    assert not missing, f"configuration.md does not describe the variables {missing}"


def test_the_api_reference_covers_every_exported_class_and_function():
    page = _read("api.md")
    exported = [name for name in raider_sync.__all__ if not name.startswith("_")]
    missing = [name for name in exported if not re.search(
        rf"\.\. auto(class|function|exception):: raider_sync\.(\w+\.)*{name}\b", page)
        and f"raider_sync.{name}" not in page]
    assert not missing, f"api.md does not document {missing}"


# -- the HTML build -----------------------------------------------------------------------------

def test_the_manual_builds_with_warnings_as_errors(tmp_path):
    for module in ("sphinx", "myst_parser"):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI"):
                pytest.fail(f"{module} is not installed: install the docs extra")
            pytest.skip(f"{module} is not installed: install the docs extra "
                        f"(pip install -e '.[docs]') to build the manual")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=SPHINX_TIMEOUT_S, stdin=subprocess.DEVNULL,
        cwd=ROOT)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout}\n{done.stderr}"
    built = {p.name for p in (tmp_path / "html").glob("*.html")}
    assert {f"{p.stem}.html" for p in PAGES} <= built
    api = (tmp_path / "html" / "api.html").read_text(encoding="utf-8")
    for name in ("McpServer", "call_tool_f", "BashTools", "ToolTimeout", "upstream_url"):
        assert name in api, f"the API reference lacks {name}"
