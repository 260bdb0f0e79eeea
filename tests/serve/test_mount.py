"""raider_sync.serve.mount: which requests go to the mounted app, what it sees of the path, what
it answers, and the refusals of a bad mount (the mounts in real Flask and Django apps:
test_mounts.py)."""
from __future__ import annotations

import io
import json
import wsgiref.util

import pytest

from raider_sync import ToolServer
from raider_sync.serve.mount import Mounted, mount
from raider_sync.serve.serving_http import wsgi_app


class Recorder:
    """A WSGI app that records the environ it was called with and answers its own name."""

    def __init__(self, name: str):
        self.name = name
        self.seen: list[dict] = []

    def __call__(self, environ, start_response):
        self.seen.append(environ)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [self.name.encode()]


def environ_for(path: str, script: str = "", **extra) -> dict:
    environ = {"PATH_INFO": path, "SCRIPT_NAME": script, **extra}
    wsgiref.util.setup_testing_defaults(environ)
    return environ


def call(app, environ) -> tuple[str, bytes]:
    status = []
    body = b"".join(app(environ, lambda s, headers, exc_info=None: status.append(s)))
    return status[0], body


@pytest.fixture
def apps():
    outer, inner = Recorder("outer"), Recorder("inner")
    return outer, inner, mount(outer, "/mcp", inner)


@pytest.mark.parametrize("path,script,rest", [
    ("/mcp", "", ""), ("/mcp/", "", "/"), ("/mcp/a/b", "", "/a/b"),
    ("/mcp", "/site", ""), ("/mcp/x", "/site/", "/x")])
def test_the_prefix_and_below_go_to_the_mounted_app_with_the_prefix_moved(apps, path, script,
                                                                         rest):
    outer, inner, app = apps
    environ = environ_for(path, script, QUERY_STRING="a=1")
    assert call(app, environ) == ("200 OK", b"inner")
    seen = inner.seen[0]
    assert seen["SCRIPT_NAME"] == script.rstrip("/") + "/mcp" and seen["PATH_INFO"] == rest
    assert seen["QUERY_STRING"] == "a=1" and seen["wsgi.input"] is environ["wsgi.input"]
    assert environ["PATH_INFO"] == path and environ["SCRIPT_NAME"] == script, \
        "the caller's environ is left as it was"
    assert not outer.seen


@pytest.mark.parametrize("path", ["/", "", "/mcpx", "/mc", "/other/mcp", "/MCP"])
def test_every_other_path_goes_to_the_outer_app_untouched(apps, path):
    outer, inner, app = apps
    environ = environ_for(path)
    environ["PATH_INFO"] = path  # setup_testing_defaults fills an empty one
    assert call(app, environ) == ("200 OK", b"outer")
    assert outer.seen == [environ] and outer.seen[0] is environ and not inner.seen


def test_a_prefix_beyond_ascii_matches_the_path_as_wsgi_carries_it():
    outer, inner = Recorder("outer"), Recorder("inner")
    app = mount(outer, "/outils-é", inner)
    wire = "/outils-é/x".encode().decode("latin-1")  # PEP 3333's PATH_INFO
    assert call(app, environ_for(wire)) == ("200 OK", b"inner")
    assert inner.seen[0]["PATH_INFO"] == "/x"
    assert call(app, environ_for("/outils-é/x")) == ("200 OK", b"outer")  # not the wire form


def test_the_mounted_apps_answer_is_passed_on_as_it_is():
    """The same iterable: a stream is sent as it is produced, and the server's close()
    reaches it."""
    closed = []

    def streaming(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        try:
            yield b"one"
            yield b"two"
        finally:
            closed.append(True)

    answer = mount(Recorder("outer"), "/mcp", streaming)(environ_for("/mcp"),
                                                         lambda *args: None)
    assert next(answer) == b"one"
    answer.close()
    assert closed == [True]


def test_a_tool_server_answers_at_the_prefix_with_path_slash():
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()

    def post(app, path: str) -> tuple[str, bytes]:
        return call(app, environ_for(path, REQUEST_METHOD="POST", CONTENT_TYPE="application/json",
                                     CONTENT_LENGTH=str(len(ping)),
                                     **{"wsgi.input": io.BytesIO(ping)}))

    with ToolServer("local") as tools:
        app = mount(Recorder("site"), "/mcp", wsgi_app(tools, path="/"))
        for path in ("/mcp", "/mcp/"):
            status, body = post(app, path)
            assert status == "200 OK" and json.loads(body)["result"] == {}, path
        assert post(app, "/mcp/other")[0] == "404 Not Found"
        assert post(app, "/elsewhere") == ("200 OK", b"site")
        default_path = mount(Recorder("site"), "/mcp", wsgi_app(tools))  # answers at /mcp/mcp
        assert post(default_path, "/mcp")[0] == "404 Not Found"
        assert post(default_path, "/mcp/mcp")[0] == "200 OK"


@pytest.mark.parametrize("prefix", ["", "/", "mcp", "/mcp/", "/mcp?x", "/m#cp", None, b"/mcp"])
def test_a_bad_prefix_is_refused_by_name(prefix):
    with pytest.raises(ValueError, match=r"^prefix must begin with '/'"):
        mount(Recorder("outer"), prefix, Recorder("inner"))  # type: ignore[arg-type]


def test_an_app_that_is_not_callable_is_refused_by_name():
    with pytest.raises(TypeError, match=r"^app must be a WSGI app"):
        mount(None, "/mcp", Recorder("inner"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^mounted must be a WSGI app"):
        mount(Recorder("outer"), "/mcp", "app:module")  # type: ignore[arg-type]
    assert isinstance(mount(Recorder("a"), "/b", Recorder("c")), Mounted)
