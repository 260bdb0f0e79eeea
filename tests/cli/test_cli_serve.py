"""``raider-sync serve``: the target imported from the current folder as the installed command
runs it, its help, and ``--http`` served end to end until SIGTERM or SIGINT."""
from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import requests

from raider_sync import McpServer
from raider_sync.cli import main

from conftest import config_of

WAIT = 30.0
#: what setuptools writes for the raider-sync console script: run as a file, it puts its own
#: folder first on sys.path, not the current one (unlike `python -m raider_sync`)
LAUNCHER = """\
import sys
from raider_sync.cli import main
if __name__ == '__main__':
    sys.exit(main())
"""
#: the command line in a child that sets its own SIGINT handler (CI may start it ignored)
WITH_SIGINT = """\
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from raider_sync.cli import main
sys.exit(main(sys.argv[1:]))
"""
MY_TOOLS = textwrap.dedent("""\
    from raider_sync import ToolServer

    def build():
        tools = ToolServer("mine")
        tools.add_tool("shout", lambda text: text.upper(), description="Shout.")
        return tools
    """)


@pytest.fixture
def launcher(tmp_path) -> str:
    path = tmp_path / "bin" / "raider-sync"
    path.parent.mkdir()
    path.write_text(LAUNCHER)
    return str(path)


def test_serve_imports_the_target_from_the_current_folder(tmp_path, launcher):
    app = tmp_path / "app"
    app.mkdir()
    (app / "my_tools.py").write_text(MY_TOOLS)
    spec = config_of({"mine": {"command": sys.executable,
                               "args": [launcher, "serve", "my_tools:build"],
                               "cwd": str(app)}}).server("mine")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
        assert server.call_tool("mcp__mine__shout", {"text": "hi"}).text == "HI"


def test_app_dir_names_the_folder_to_import_from(tmp_path, launcher):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "my_tools.py").write_text(MY_TOOLS)
    spec = config_of({"mine": {"command": sys.executable, "cwd": str(tmp_path),
                               "args": [launcher, "serve", "my_tools:build", "--app-dir",
                                        "elsewhere"]}}).server("mine")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
        assert server.tool_names == ["mcp__mine__shout"]
    missing = subprocess.run([sys.executable, launcher, "serve", "nowhere_module:build"],
                             capture_output=True, text=True, timeout=WAIT, cwd=str(tmp_path),
                             stdin=subprocess.DEVNULL)
    assert missing.returncode == 2
    assert "cannot load nowhere_module:build" in missing.stderr
    assert "--app-dir" in missing.stderr


def test_serve_help_describes_stdio_and_http(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Serve a ToolServer as an MCP server" in text
    assert "--http HOST:PORT" in text and "--app-dir DIR" in text and "SIGTERM" in text


def test_a_bad_http_address_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--http", "nowhere"])
    assert exited.value.code == 2
    assert "--http: expected HOST:PORT, got 'nowhere'" in capsys.readouterr().err


def test_serve_http_without_waitress_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "waitress", None)  # as if not installed
    assert main(["serve", "--http", "127.0.0.1:0"]) == 1
    err = capsys.readouterr().err
    assert "waitress" in err and "raider_sync[gateway]" in err


def serving_url(proc: subprocess.Popen, timeout: float) -> str:
    """The URL of the "serving NAME on URL" line ``proc`` prints on stderr, read within
    ``timeout`` seconds; fails if the process ends first."""
    deadline = time.monotonic() + timeout
    seen = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stderr, selectors.EVENT_READ)
        while True:
            found = re.search(rb"serving \S+ on (http://\S+)\n", seen)
            if found:
                return found.group(1).decode()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no serving line within {timeout} s: {seen!r}")
            if selector.select(left):
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"exited with {proc.wait(WAIT)} first: {seen!r}")
                seen += chunk


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_serve_http_serves_a_client_until_a_signal(stop):
    if stop == signal.SIGINT:
        command = [sys.executable, "-c", WITH_SIGINT]
    else:  # the command sets its own SIGTERM handler
        command = [sys.executable, "-m", "raider_sync"]
    proc = subprocess.Popen([*command, "serve", "--http", "127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        url = serving_url(proc, WAIT)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url), url
        spec = config_of({"served": {"type": "http", "url": url}}).server("served")
        with McpServer(spec) as server:
            assert server.status == "connected", server.reason
            assert server.call_tool("mcp__served__add", {"a": 2, "b": 3}).text == "5"
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0, err
        assert b"Traceback" not in err and out == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)
        for stream in (proc.stdout, proc.stderr):
            stream.close()


def test_serve_http_with_sessions_and_another_allowed_host():
    proc = subprocess.Popen([sys.executable, "-m", "raider_sync", "serve", "--http",
                             "127.0.0.1:0", "--sessions", "--allow-host", "tools.example"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        url = serving_url(proc, WAIT)
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}
        with requests.Session() as http:
            opened = http.post(url, json=initialize, timeout=WAIT,
                               headers={"Host": "tools.example"})
            assert opened.status_code == 200 and opened.headers["Mcp-Session-Id"]
            assert http.post(url, json=initialize, timeout=WAIT,
                             headers={"Host": "elsewhere.example"}).status_code == 403
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)
        for stream in (proc.stdout, proc.stderr):
            stream.close()
