"""docs/notebook.ipynb runs top to bottom in a real Jupyter kernel, and shows what it says.

The kernel is this venv's Python with ipykernel, named by a kernelspec written to a temporary
folder, and nbclient drives it from a child process of its own. Nothing is read from or
written to the user's home: Jupyter's and IPython's folders point into the test's temporary
directory. The notebook runs in a working directory whose ``node_modules`` links to
tests/peers/node_modules, so its ``npx`` server-everything is the copy ``make peers``
installed (see tests/test_docs.py).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PEERS, everything_available

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebook.ipynb"
CELL_TIMEOUT_S = 60
RUN_TIMEOUT_S = 180


#: runs in a child process, so the kernel, its ZeroMQ sockets and threads are that process's
#: and go with it; it waits for (reaps) the kernel before it exits
RUNNER = """
import sys

import nbformat
import psutil
from nbclient import NotebookClient

source, target, workdir, timeout = sys.argv[1:]
notebook = nbformat.read(source, as_version=4)
try:
    NotebookClient(notebook, kernel_name="raider-sync-docs", timeout=float(timeout),
                   startup_timeout=float(timeout), allow_errors=True,
                   resources={"metadata": {"path": workdir}}).execute()
finally:
    nbformat.write(notebook, target)
    for child in psutil.Process().children():  # the kernel, shut down by execute()
        try:
            child.wait(10)
        except psutil.TimeoutExpired:
            child.kill()
            child.wait(10)
"""


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed: install the docs extra")
        pytest.skip(f"{module} is not installed: install the docs extra "
                    f"(pip install -e '.[docs]') to run the notebook")


def _execute(tmp_path: Path):
    """The notebook after a run in a fresh kernel (an nbformat node)."""
    import nbformat

    home = tmp_path / "jupyter"
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    for variable, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                             ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        (home / folder).mkdir(parents=True)
        env[variable] = str(home / folder)
    kernel = home / "data" / "kernels" / "raider-sync-docs"  # found through JUPYTER_DATA_DIR
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "raider_sync (tests)", "language": "python"}), encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    os.symlink(os.path.join(PEERS, "node_modules"), workdir / "node_modules")
    executed = tmp_path / "executed.ipynb"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(NOTEBOOK), str(executed), str(workdir),
         str(CELL_TIMEOUT_S)],
        env=env, cwd=workdir, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"the notebook did not run:\n{done.stdout}\n{done.stderr}"
    return nbformat.read(executed, as_version=4)


def _text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


def _html(cell) -> str:
    return "".join(output.get("data", {}).get("text/html", "")
                   for output in cell.get("outputs", []))


def test_the_example_notebook_runs_and_shows_its_results(tmp_path):
    for module in ("nbclient", "nbformat", "ipykernel", "jupyter_client"):
        _need(module)
    if not everything_available():
        if os.environ.get("CI"):
            pytest.fail("server-everything is not installed: run `make peers`")
        pytest.skip("the notebook uses server-everything, which is not installed: run `make peers`")

    notebook = _execute(tmp_path)

    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [o for cell in code for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, "\n".join("\n".join(e.get("traceback", [])) for e in errors)
    assert all(cell.get("execution_count") for cell in code), "a cell did not run"

    start, call, resource, progress, stop = code
    assert "demo" in _html(start) and "everything" in _html(start)
    assert "connected" in _html(start) and "failed" not in _html(start)
    assert "text: 42 | error: False" in _text(call)
    assert "42" in _html(call)
    assert "['demo://guide.md']" in _text(resource) and "# raider_sync demo" in _text(resource)
    assert "1 attachment(s)" in _text(resource)
    assert "Long running operation completed" in _text(progress)
    assert "progress updates: 5 last: (5, 5, None)" in _text(progress)
    assert "<progress" in _html(progress)        # the bar, drawn as HTML in the notebook
    assert "{'demo': 'stopped', 'everything': 'stopped'}" in _text(stop)
