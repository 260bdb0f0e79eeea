"""The relay's upstream client: keep-alive connections reused only when that is safe, and bodies
that end early told apart from complete ones -- the same with httptools' parser and with
``http.client`` (the ``parser`` fixture runs each test over both)."""
from __future__ import annotations

import contextlib
import datetime
import gc
import gzip
import http.client
import ipaddress
import socket
import ssl
import subprocess
import sys
import threading
import weakref

import pytest

from raider_sync.gateway import upstream as upstream_pool
from raider_sync.gateway.upstream import PARSERS, Upstream

from gateway.support import Upstream as FakeUpstream
from gateway.support import count_sends, wait_until

JSON = {"Content-Type": "application/json"}


def call(pool: Upstream, url: str) -> bytes:
    answer = pool.send("POST", url, dict(JSON), b"{}", connect=5, read=10)
    try:
        assert answer.status == 200 and answer.length is not None
        return answer.read()
    finally:
        answer.close()


@contextlib.contextmanager
def pool_of(parser: str):
    pool = Upstream(pool_size=4, parser=parser)
    try:
        yield pool
    finally:
        pool.close()


def test_a_connection_is_kept_alive_and_reused(upstream, parser):
    with_pool = Upstream(pool_size=4, parser=parser)
    try:
        for _ in range(5):
            assert b'"method": "POST"' in call(with_pool, f"{upstream.url}/echo")
        assert len(upstream.requests) == 5
        assert len(upstream.connections) == 1  # one keep-alive connection served all five
    finally:
        with_pool.close()
    assert wait_until(lambda: not upstream.connections)  # close() ended it


def test_a_connection_the_upstream_closed_is_not_reused(upstream, parser):
    with pool_of(parser) as pool:
        call(pool, f"{upstream.url}/echo")
        upstream.close_connections()  # the upstream ends its idle keep-alive connection
        assert wait_until(lambda: not upstream.connections)
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")  # on a new one


def test_an_answer_not_read_to_its_end_does_not_go_back_to_the_pool(upstream, parser):
    with pool_of(parser) as pool:
        answer = pool.send("GET", f"{upstream.url}/big", {}, None, connect=5, read=10)
        assert len(next(answer.chunks(1024))) <= 1024
        answer.close()
        assert wait_until(lambda: not upstream.connections)  # closed, not pooled half-read
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")


@pytest.mark.parametrize("mode", ["sse-cut", "sse-truncated"])
def test_a_body_that_ends_early_raises_incomplete_read(upstream, parser, mode):
    with pool_of(parser) as pool:
        answer = pool.send("GET", f"{upstream.url}/{mode}", {}, None, connect=5, read=10)
        received = []
        with pytest.raises(http.client.IncompleteRead):
            for chunk in answer.chunks(1024):
                received.append(chunk)
        answer.close()
        assert b"data: one" in b"".join(received)


def test_a_short_buffered_body_raises_incomplete_read(upstream, parser):
    with pool_of(parser) as pool:
        answer = pool.send("POST", f"{upstream.url}/broken", dict(JSON), b"{}", connect=5,
                           read=10)
        with pytest.raises(http.client.IncompleteRead):
            answer.read()
        answer.close()


def test_a_small_body_goes_out_with_the_head_in_one_send(upstream, parser, monkeypatch):
    sent = count_sends(monkeypatch, upstream.server_address[1])
    with pool_of(parser) as pool:
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")
        assert len(sent) == 1 and sent[0].startswith(b"POST /echo HTTP/1.1\r\n")
        assert sent[0].endswith(b"\r\n\r\n{}") and upstream.requests[-1]["body"] == "{}"
        sent.clear()
        large = b"[" + b"0," * (40 * 1024) + b"0]"  # over JOIN_LIMIT: not copied to the head
        answer = pool.send("POST", f"{upstream.url}/echo", dict(JSON), large, connect=5, read=10)
        answer.read()
        answer.close()
        assert len(sent) == 2 and sent[0].endswith(b"\r\n\r\n") and sent[1] == large
        assert upstream.requests[-1]["body"] == large.decode()


def test_both_parsers_send_the_same_bytes(upstream, monkeypatch):
    pytest.importorskip("httptools")
    sent = count_sends(monkeypatch, upstream.server_address[1])
    heads = {"POST": ({**JSON, "Mcp-Session-Id": "s1"}, b'{"a": 1}'),
             "GET": ({"Accept": "text/event-stream"}, None), "DELETE": ({}, None)}
    for parser in PARSERS:
        with pool_of(parser) as pool:
            for method, (headers, body) in heads.items():
                answer = pool.send(method, f"{upstream.url}/echo?q=1", dict(headers), body,
                                   connect=5, read=10)
                answer.read()
                answer.close()
    assert len(sent) == 6 and sent[:3] == sent[3:], sent
    assert sent[0].startswith(b"POST /echo?q=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 8\r\n" in sent[0]


def test_a_chunked_answer_is_read_whole_and_its_connection_reused(upstream, parser):
    with pool_of(parser) as pool:
        answer = pool.send("GET", f"{upstream.url}/chunked-json", {}, None, connect=5, read=10)
        assert answer.length is None and answer.content_type == "application/json"
        assert ("Mcp-Session-Id", "stream-session") in answer.headers
        assert answer.read() == b'{"part": 1, "part2": 2}'
        answer.close()
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")
        assert len(upstream.connections) == 1  # the chunked answer's connection, reused


def test_a_compressed_answer_is_passed_on_as_it_came(upstream, parser):
    with pool_of(parser) as pool:
        answer = pool.send("GET", f"{upstream.url}/gzip-chunked", {}, None, connect=5, read=10)
        assert ("Content-Encoding", "gzip") in answer.headers
        body = b"".join(answer.chunks(65536))
        answer.close()
        assert gzip.decompress(body) == b'{"zipped": true}'  # the bytes sent, never opened


def test_a_stream_is_handed_out_as_it_arrives(upstream, parser):
    with pool_of(parser) as pool:
        answer = pool.send("GET", f"{upstream.url}/sse-gated", {}, None, connect=5, read=10)
        assert answer.content_type == "text/event-stream" and answer.length is None
        chunks = answer.chunks(65536)
        assert next(chunks) == b"id: 1\ndata: one\n\n"  # while the upstream holds event two
        upstream.gate.set()
        assert b"".join(chunks) == b"id: 2\ndata: two\n\n"
        answer.close()


def test_a_body_that_ends_with_the_connection_is_read_to_its_close(upstream, parser):
    with pool_of(parser) as pool:
        answer = pool.send("GET", f"{upstream.url}/close-delimited", {}, None, connect=5,
                           read=10)
        assert answer.status == 200 and answer.length is None
        assert answer.read() == b'{"until": "the close"}'
        answer.close()
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")  # on a new connection


def test_bytes_past_an_answer_never_reach_the_next_one(upstream, parser):
    with pool_of(parser) as pool:
        assert call(pool, f"{upstream.url}/surplus") == b"{}"
        # the connection holds an answer nobody asked for: never used again
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")


def test_a_malformed_answer_raises_http_exception(upstream, parser):
    with pool_of(parser) as pool:
        with pytest.raises(http.client.HTTPException):
            pool.send("GET", f"{upstream.url}/malformed", {}, None, connect=5, read=10)
        answer = pool.send("GET", f"{upstream.url}/malformed-chunks", {}, None, connect=5,
                           read=10)
        with pytest.raises(http.client.IncompleteRead):
            answer.read()
        answer.close()
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")


def test_an_upstream_silent_past_the_read_timeout_raises_timeout_error(upstream, parser):
    with pool_of(parser) as pool:
        with pytest.raises(TimeoutError):
            pool.send("POST", f"{upstream.url}/slow", dict(JSON), b"{}", connect=5, read=0.2)
        upstream.gate.set()


def test_a_header_that_would_split_the_request_is_refused(upstream, parser):
    with pool_of(parser) as pool:
        for headers in ({"X-Note": "a\r\nInjected: 1"}, {" X-Note": "a"}, {"X:Note": "a"}):
            with pytest.raises(ValueError):
                pool.send("POST", f"{upstream.url}/echo", headers, b"{}", connect=5, read=10)
        assert not upstream.requests  # nothing reached the upstream


def test_the_wire_names_what_it_refuses():
    upstream_wire = pytest.importorskip("raider_sync.gateway.upstream_wire")
    with pytest.raises(ValueError, match="'X-Note'"):
        upstream_wire.request_head("GET", "/", "h", {"X-Note": "a\nb"}, None)
    with pytest.raises(ValueError, match="request target"):
        upstream_wire.request_head("GET", "/a b", "h", {}, None)
    for name in ("", "X Note"):  # a space anywhere, where http.client refuses only a first one
        with pytest.raises(ValueError, match="header name"):
            upstream_wire.request_head("GET", "/", "h", {name: "a"}, None)


def test_an_unknown_parser_is_refused_by_name():
    with pytest.raises(ValueError, match="parser"):
        Upstream(parser="email")


def test_without_httptools_the_pool_reads_answers_with_http_client():
    code = ("import sys; sys.modules['httptools'] = None\n"
            "from raider_sync.gateway import upstream\n"
            "print(upstream.PARSER, upstream.Upstream().parser)\n"
            "try:\n    upstream.Upstream(parser='httptools')\n"
            "except ValueError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.splitlines() == [
        "http.client http.client",
        "parser 'httptools' needs httptools installed (the gateway extra)"]


def test_the_default_parser_is_httptools_when_installed():
    pytest.importorskip("httptools")
    assert upstream_pool.PARSER == "httptools" and Upstream().parser == "httptools"


# -- HTTPS: the upstream's certificate is verified against the CA bundle requests uses -------

def _certificate(tmp_path):
    """A CA and a certificate it signed for 127.0.0.1: (CA file, certificate file, key file)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(1)
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)  # Python 3.13 verifies strictly
            .sign(ca_key, hashes.SHA256()))
    paths = [tmp_path / name for name in ("ca.pem", "cert.pem", "key.pem")]
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return [str(path) for path in paths]


class _TLSUpstream(FakeUpstream):
    """The fake upstream behind TLS (the handshake done as a connection is accepted)."""

    def __init__(self, tls: ssl.SSLContext):
        super().__init__()
        self.tls = tls

    def get_request(self):
        sock, address = super().get_request()
        try:
            return self.tls.wrap_socket(sock, server_side=True), address
        except (OSError, ValueError):
            sock.close()
            raise


@pytest.fixture
def tls_upstream(tmp_path):
    ca, cert, key = _certificate(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = _TLSUpstream(tls)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fake-tls-upstream")
    thread.start()
    server.url = f"https://127.0.0.1:{server.server_address[1]}"
    server.ca = ca
    try:
        yield server
    finally:
        server.shutdown()
        server.close_connections()
        server.server_close()
        thread.join(10)


def test_https_verifies_the_upstream_and_keeps_its_connection(tls_upstream, parser,
                                                              monkeypatch):
    with pool_of(parser) as pool:
        with pytest.raises(ssl.SSLCertVerificationError):  # not signed by a CA requests trusts
            call(pool, f"{tls_upstream.url}/echo")
    import requests.utils

    monkeypatch.setattr(requests.utils, "DEFAULT_CA_BUNDLE_PATH", tls_upstream.ca)
    with pool_of(parser) as pool:
        for _ in range(3):
            assert b'"method": "POST"' in call(pool, f"{tls_upstream.url}/echo")
        answer = pool.send("GET", f"{tls_upstream.url}/sse-truncated", {}, None, connect=5,
                           read=10)
        with pytest.raises(http.client.IncompleteRead):
            list(answer.chunks(1024))
        answer.close()
        assert len(tls_upstream.requests) == 4


# -- the wire path's own answers to what a real server rarely sends ----------------------------

@pytest.fixture
def wire():
    """(send raw bytes, read them as an answer): httptools' Answer on one end of a socket pair;
    ``released`` holds what each answer's close() said of its connection."""
    upstream_wire = pytest.importorskip("raider_sync.gateway.upstream_wire")
    ours, theirs = socket.socketpair()
    ours.settimeout(5)
    released: list[bool] = []

    def answer(data: bytes, head_only: bool = False, close: bool = False):
        theirs.sendall(data)
        if close:
            theirs.shutdown(socket.SHUT_WR)
        return upstream_wire.Answer(ours, released.append, head_only)

    try:
        yield upstream_wire, answer, released
    finally:
        ours.close()
        theirs.close()


def test_an_interim_answer_is_skipped(wire):
    _, answer, released = wire
    got = answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                 b"X-Final: yes\r\n\r\n{}")
    assert got.status == 200 and got.headers == [("Content-Length", "2"), ("X-Final", "yes")]
    assert got.read() == b"{}"
    got.close()
    assert released == [True]


def test_an_answer_without_a_body_is_complete_at_its_head(wire):
    _, answer, released = wire
    got = answer(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert got.length == 0 and got.read() == b""
    got.close()
    got = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", head_only=True)
    assert got.length == 10 and got.read() == b""  # a HEAD answer's length is the GET's
    got.close()
    assert released == [True, False]  # after a HEAD, not trusted to be where it seems


def test_an_http_1_0_answer_ends_its_connection(wire):
    _, answer, released = wire
    got = answer(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    assert got.read() == b"{}"
    got.close()
    assert released == [False]


def test_an_answer_cut_before_its_head_ends_is_remote_disconnected(wire):
    _, answer, _ = wire
    with pytest.raises(http.client.RemoteDisconnected):
        answer(b"HTTP/1.1 200 OK\r\nContent-", close=True)


def test_a_head_too_large_or_with_too_many_headers_is_refused(wire, monkeypatch):
    upstream_wire, answer, _ = wire
    many = b"".join(b"X-%d: 1\r\n" % n for n in range(upstream_wire.MAX_HEADERS + 1))
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        answer(b"HTTP/1.1 200 OK\r\n" + many + b"\r\n")
    monkeypatch.setattr(upstream_wire, "MAX_HEAD", 1000)
    monkeypatch.setattr(upstream_wire, "RECEIVE", 500)
    with pytest.raises(http.client.HTTPException, match="over 1000 bytes"):
        answer(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 5000)


@pytest.mark.parametrize("head", [
    b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",  # which one frames the body?
    b"Content-Length: 2\r\nContent-Length: 3\r\n",
    b"Content-Length: 2\r\n folded\r\n",
])
def test_an_ambiguous_head_is_malformed_rather_than_guessed_at(wire, head):
    # http.client lets these through; on a pooled connection a guess could leave the next
    # answer's start in this one's body, or this one's end in the next
    _, answer, _ = wire
    with pytest.raises(http.client.HTTPException, match="malformed answer"):
        answer(b"HTTP/1.1 200 OK\r\n" + head + b"\r\n{}")


def test_a_closed_answer_is_freed_at_once_and_reads_no_more(wire):
    # the parser holds the answer's callbacks: a cycle the answer breaks when it is closed,
    # so a busy relay's answers do not wait for the cyclic collector
    _, answer, released = wire
    got = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n{}")  # two bytes still to come
    got.close()
    assert released == [False]
    with pytest.raises(ValueError, match="closed"):
        got.read()
    gone = weakref.ref(got)
    gc.disable()
    try:
        del got
        assert gone() is None
    finally:
        gc.enable()
