"""Request bodies a server must not read, under ``raider-sync gateway`` (waitress),
``--workers`` (waitress in gunicorn's workers) and ``--server granian``: faulty framing,
malformed chunking, bodies over ``max_request_bytes``.
All answer them alike: the relay's JSON error, one usage event, the key checked before the
size, no traceback in the log; where granian differs (it reads no chunked body, and hyper
refuses ``Transfer-Encoding`` in HTTP/1.0 itself), the test says so. Raw bytes over a socket:
a client library would not send them."""
from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass

import pytest

from gateway.support import ALICE, read_until_closed, relay_process, stop_group

LIMIT = 1000  # the config's max_request_bytes
KEY = b"X-Api-Key: " + ALICE.encode() + b"\r\n"
SMUGGLED = b"GET /v1/mcp/servers HTTP/1.1\r\nHost: gw\r\n" + KEY + b"\r\n"


@dataclass
class Served:
    """A relay process: where it listens, its usage file and its log (stderr)."""
    name: str
    host: str
    port: int
    usage: str
    log: str

    def mark(self) -> tuple[int, int]:
        return os.path.getsize(self.usage), os.path.getsize(self.log)

    def since(self, mark: tuple[int, int]) -> tuple[list[dict], str]:
        """The usage events and the log written after ``mark``. An event is written before
        its answer is sent, so once a test has read the answer, its event is there."""
        with open(self.usage, "rb") as usage, open(self.log, "rb") as log:
            usage.seek(mark[0])
            log.seek(mark[1])
            events = [json.loads(line) for line in usage.read().splitlines()]
            return events, log.read().decode("utf-8", "replace")

    def connect(self) -> socket.socket:
        return socket.create_connection((self.host, self.port), timeout=15)


@pytest.fixture(scope="module", params=["waitress", "gunicorn", "granian"])
def served(request, tmp_path_factory):
    """The relay under waitress, under gunicorn (one worker) or under granian, with an
    upstream nobody listens on: a request that got through would be a 502."""
    if request.param != "waitress":
        pytest.importorskip(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    config, usage, log = folder / "gateway.json", folder / "usage.jsonl", folder / "stderr.log"
    config.write_text(json.dumps({
        "servers": [{"name": "x", "url": "http://127.0.0.1:9/mcp"}],
        "keys": [{"id": "alice", "env": "ALICE", "servers": ["x"]}],
        "max_request_bytes": LIMIT}))
    usage.touch()
    workers = {"waitress": [], "gunicorn": ["--workers", "1"],
               "granian": ["--server", "granian"]}[request.param]
    with open(log, "wb") as stderr:
        proc, url = relay_process(str(config), {"ALICE": ALICE}, "--threads", "4",
                                  "--usage-log", str(usage), *workers, stderr=stderr)
    try:
        host, port = url.rsplit("/", 1)[-1].split(":")
        yield Served(request.param, host, int(port), str(usage), str(log))
    finally:
        stop_group(proc)


def answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    """One answer read off ``sock``: status, headers (lower-case names), its body."""
    received = b""
    while b"\r\n\r\n" not in received:
        data = sock.recv(65536)
        assert data, f"closed before an answer: {received!r}"
        received += data
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip()
               for name, _, value in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        data = sock.recv(65536)
        assert data, "closed in the middle of the answer"
        body += data
    assert len(body) == length, "more than one answer"
    return int(lines[0].split()[1]), headers, body


def error_of(headers: dict, body: bytes) -> dict:
    """The relay's error shape: a JSON object with one ``error`` of ``type`` and ``message``."""
    assert headers["content-type"] == "application/json", (headers, body)
    error = json.loads(body)["error"]
    assert set(error) == {"type", "message"}
    return error


def chunked(size: int, piece: int = 10) -> bytes:
    """A chunked body of ``size`` bytes in chunks of ``piece``: half again as many bytes on
    the wire, which is not the body's size."""
    data = b"x" * size
    chunks = [data[i:i + piece] for i in range(0, size, piece)]
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


# -- faulty framing ------------------------------------------------------------------------

@pytest.mark.parametrize("framing", [b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                     b"Transfer-Encoding: chunked\r\n"])
def test_transfer_encoding_in_http10_is_400_and_the_connection_closed(served, framing):
    # RFC 9112 6.1: the framing is faulty whatever Content-Length says; what follows the body
    # must not be served as a next request
    mark = served.mark()
    with served.connect() as sock:
        sock.sendall(b"POST /mcp/x HTTP/1.0\r\nHost: gw\r\nConnection: keep-alive\r\n" + KEY
                     + framing + b"\r\n0\r\n\r\n" + SMUGGLED)
        status, _, _ = answer(sock)
        rest = read_until_closed(sock)
    assert status == 400
    assert rest == b""  # closed, and the smuggled request was never answered
    assert "Traceback" not in served.since(mark)[1]


@pytest.mark.parametrize("framing", [b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                     b"Transfer-Encoding: chunked\r\n"])
def test_transfer_encoding_in_http10_is_the_relays_refusal_and_one_log_line(
        served, framing):
    mark = served.mark()
    with served.connect() as sock:
        sock.sendall(b"POST /mcp/x HTTP/1.0\r\nHost: gw\r\n" + KEY + framing + b"\r\n0\r\n\r\n")
        status, headers, body = answer(sock)
    events, log = served.since(mark)
    if served.name == "granian":
        # hyper answers it before the relay: an empty 400, closed, and no usage event
        assert (status, body, headers["connection"], events) == (400, b"", "close", [])
        assert log == ""
        return
    assert status == 400 and error_of(headers, body)["type"] == "bad_request"
    # no traceback: the usage event is the request's one line (waitress may note that its
    # threads were all busy with earlier connections, which is no line of the request's)
    assert [line for line in log.splitlines() if not line.startswith("Task queue depth")] == []
    assert [(e["status"], e["method"]) for e in events] == [(400, "POST")]


# -- malformed chunking --------------------------------------------------------------------

@pytest.mark.parametrize("body", [b"zz\r\nabc\r\n0\r\n\r\n",      # a chunk size that is no number
                                  b"3\r\nabcXX\r\n0\r\n\r\n"])    # a chunk without its CRLF
def test_a_malformed_chunked_body_is_400_in_the_relays_shape_and_the_connection_closed(
        served, body):
    mark = served.mark()
    with served.connect() as sock:
        sock.sendall(b"POST /mcp/x HTTP/1.1\r\nHost: gw\r\n" + KEY
                     + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + body + SMUGGLED)
        status, headers, answered = answer(sock)
        rest = read_until_closed(sock)
    assert status == 400 and error_of(headers, answered)["type"] == "bad_request"
    assert rest == b""  # where the next request starts is unknown: the connection closes
    events, log = served.since(mark)
    assert [(e["key"], e["status"]) for e in events] == [("alice", 400)]
    assert "Traceback" not in log


# -- bodies over the limit -----------------------------------------------------------------

@pytest.mark.parametrize("key,framing,size,expected", [
    (b"", "length", LIMIT + 1, 401),          # the key first, then the size
    (b"", "length", 10 ** 9, 401),            # announced, never sent
    (b"", "chunked", LIMIT + 1, 401),
    (KEY, "length", LIMIT + 1, 413),
    (KEY, "length", 10 ** 9, 413),
    (KEY, "chunked", LIMIT + 1, 413),
    (KEY, "length", LIMIT, 502),              # exactly the limit goes on (nobody upstream)
    (KEY, "chunked", LIMIT, 502),             # counted as the body, not as the chunked bytes
])
def test_a_body_over_the_limit_is_answered_alike_by_both_servers(served, key, framing, size,
                                                                 expected):
    if served.name == "granian" and framing == "chunked" and key:
        expected = 400  # granian reads no chunked body (raider_sync.gateway.engines)
    mark = served.mark()
    if framing == "length":
        head = b"Content-Length: %d\r\n" % size
        body = b"x" * size if size <= LIMIT + 1 else b""
    else:
        head, body = b"Transfer-Encoding: chunked\r\n", chunked(size)
    with served.connect() as sock:
        sock.sendall(b"POST /mcp/x HTTP/1.1\r\nHost: gw\r\n" + key
                     + b"Content-Type: application/json\r\n" + head + b"\r\n" + body)
        status, headers, answered = answer(sock)
    error = error_of(headers, answered)
    assert status == expected, error
    if expected == 413:
        assert error == {"type": "too_large", "message": f"the request body is over {LIMIT} bytes"}
    if served.name == "granian" and expected == 400:
        assert error["type"] == "bad_request" and "could not be read" in error["message"]
    events, log = served.since(mark)
    assert [(e["key"], e["status"]) for e in events] == [("alice" if key else None, expected)]
    if expected == 502:
        assert events[0]["request_bytes"] == LIMIT
    assert "Traceback" not in log
