"""Serving a WSGI app with waitress, with settings that survive slow and hostile clients.

:class:`Serving` serves the relay (:mod:`raider_sync.gateway`) and a ToolServer's Streamable
HTTP app (:func:`raider_sync.serve.serving_http.serve_http`) alike.

waitress (pure Python, threaded; the ``gateway`` extra) is imported only when serving. It reads
each request in its event loop and hands it to a worker thread only once it is complete, so a
slow client costs a socket, not a thread. What :func:`waitress_settings` sets, from the number
of threads:

- ``connection_limit``: how many connections are held at once, far above waitress's default of
  100 (which about a hundred slow connections would fill): a share of the process's open-file
  limit, at most 10,000.
- a header deadline: a connection that has not sent a request's headers within
  ``header_timeout`` seconds (10 by default) of its first byte is closed, however slowly it
  trickles them (waitress's own ``channel_timeout`` only measures silence).
- ``channel_timeout``: an idle keep-alive connection is closed after 60 seconds.
- ``asyncore_use_poll``: poll() rather than select(), which cannot watch more than 1,024 sockets.
- a request body that cannot be trusted is not read: one over ``max_request_bytes``, chunking
  that is malformed, or framing that is ambiguous (``Content-Length`` with
  ``Transfer-Encoding``, RFC 9112 section 6.3; ``Transfer-Encoding`` in HTTP/1.0, section
  6.1). The request still goes to the app, which answers it as every other refusal (the relay:
  its JSON error and a usage event, the key checked first), with its headers as sent and a
  ``wsgi.input`` that holds what was received and then raises :class:`BodyCut`; the connection
  closes after the answer, and nothing after the head is read as a next request. waitress alone
  would answer 413 and malformed chunking in plain text before the app, follow
  ``Transfer-Encoding`` past a ``Content-Length``, and pass an HTTP/1.0 ``Transfer-Encoding``
  on with the body read by ``Content-Length``.
- a response's head and the first piece of its body (up to ``JOIN_LIMIT`` bytes: a whole
  relayed JSON answer) leave in one ``send()``, where waitress alone sends them apart, one
  system call and one TCP segment more that the client wakes up for on every answer.
"""
from __future__ import annotations

import resource
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from ..errors import InvalidArgument

if TYPE_CHECKING:  # waitress is imported only when serving (the gateway extra)
    from waitress.receiver import ChunkedReceiver, FixedStreamReceiver

HEADER_TIMEOUT = 10.0
CHANNEL_TIMEOUT = 60
MAX_CONNECTIONS = 10_000
JOIN_LIMIT = 64 * 1024  # a larger first piece is sent after the head rather than copied to it


def connection_limit(threads: int) -> int:
    """The connections held at once by default: the open-file limit less what the threads'
    upstream connections and some files need, halved for the streams' upstream sockets, at
    least 100 and at most 10,000."""
    try:
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        files = 1024
    if files == resource.RLIM_INFINITY:
        files = 2 * MAX_CONNECTIONS
    return max(100, min(MAX_CONNECTIONS, (files - 2 * threads - 64) // 2 + threads))


def waitress_settings(threads: int, max_request_bytes: Optional[int] = None,
                      connections: Optional[int] = None) -> dict[str, Any]:
    """The keyword arguments :class:`Serving` gives ``waitress.create_server``."""
    settings = {
        "threads": threads, "connection_limit": connections or connection_limit(threads),
        "channel_timeout": CHANNEL_TIMEOUT, "cleanup_interval": 1, "asyncore_use_poll": True,
        "backlog": 2048,
        # lets waitress notice a client that left mid-answer, which the relay uses to close
        # the upstream of a silent SSE stream
        "channel_request_lookahead": 1,
        "ident": "raider-sync-gateway", "expose_tracebacks": False}
    if max_request_bytes is not None:
        # waitress counts a body of max_request_body_size bytes or more as too large: one over
        # ours (the gateway's parser cuts such a body before waitress would refuse it)
        settings["max_request_body_size"] = max_request_bytes + 1
    return settings


class BodyCut(OSError):
    """Raised by the ``wsgi.input`` of a request whose body the server did not read to its end
    (see the module's docstring), once what was received is read; the message says why."""


class _CutBody:
    """The ``wsgi.input`` of a cut request: the bytes received before the cut, then
    :class:`BodyCut` for a read that wants more -- never a body that looks complete."""

    def __init__(self, received, reason: str):
        self._received, self._reason = received, reason

    def read(self, size: Optional[int] = -1) -> bytes:
        data = self._received.read(-1 if size is None else size)
        if size is None or size < 0 or len(data) < size:
            raise BodyCut(self._reason)
        return data

    def readline(self, size: Optional[int] = -1) -> bytes:
        line = self._received.readline(-1 if size is None else size)
        if not line.endswith(b"\n") and (size is None or size < 0 or len(line) < size):
            raise BodyCut(self._reason)
        return line

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self):
        return iter(self.readline, b"")


def _strict(server, header_timeout: float) -> None:
    """Give a waitress server the cut of bodies it must not read (handed to the app, the
    connection closed after the answer), the header deadline and the head sent with the body."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser
    from waitress.task import WSGITask

    class Parser(HTTPRequestParser):
        cut: Optional[str] = None  # why the body was not read to its end

        def __init__(self, adj):
            super().__init__(adj)
            self.begun = time.monotonic()
            self.limit = adj.max_request_body_size - 1  # see waitress_settings

        def parse_header(self, header_plus):
            super().parse_header(header_plus)
            if self.chunked and "CONTENT_LENGTH" in self.headers:
                # waitress has popped Transfer-Encoding and would follow it: the app is told
                self.headers["TRANSFER_ENCODING"] = "chunked"
                self._cut("Content-Length and Transfer-Encoding together")
            elif self.version == "1.0" and "TRANSFER_ENCODING" in self.headers:
                # waitress leaves it to the app and reads by Content-Length, as a proxy in
                # front may not
                self._cut("Transfer-Encoding in an HTTP/1.0 request")
            elif self.content_length > self.limit:
                self._cut(f"the request body is over {self.limit} bytes")

        def _cut(self, reason: str) -> None:
            """Read no body: the request is complete with its head."""
            self.cut = reason
            self.chunked = self.expect_continue = False  # no 100 Continue invites the body
            self.content_length = 0
            if self.body_rcv is not None:
                self.body_rcv.getbuf().close()
            self.body_rcv = None

        def received(self, data):
            if self.completed or self.body_rcv is None:
                consumed = super().received(data)  # the head: parse_header cuts what it must
            else:
                consumed = self._received_body(self.body_rcv, data)
            if self.cut is not None and self.completed:
                return len(data)  # the rest belongs to the unread body, not to a next request
            return consumed

        def _received_body(self, body: ChunkedReceiver | FixedStreamReceiver, data: bytes) -> int:
            # waitress's own accounting counts the chunked framing against the limit and
            # answers a malformed chunk itself; the limit is on the body the app would read
            consumed = body.received(data)
            self.body_bytes_received += consumed
            if body.error is not None:
                self.cut, self.completed = f"the chunked body is malformed: {body.error.body}", True
            elif len(body) > self.limit:
                self.cut, self.completed = f"the request body is over {self.limit} bytes", True
            elif body.completed:
                self.completed = True
                if self.chunked:  # as waitress does: the app sees a body of known length
                    # a dict in waitress (parse_header fills it); its stubs say Mapping
                    self.headers["CONTENT_LENGTH"] = str(len(body))  # type: ignore[index]
            return consumed

        def get_body_stream(self):
            stream = super().get_body_stream()
            return stream if self.cut is None else _CutBody(stream, self.cut)

    class Task(WSGITask):
        def execute(self):
            if self.request.cut is not None:
                # the rest of the body is unread: no next request can be found after it
                self.set_close_on_finish()
            super().execute()

        def write(self, data):
            if self.wrote_header or not data or len(data) > JOIN_LIMIT:
                return super().write(data)  # an empty write sends the head alone, at once
            channel = self.channel
            channel.head = []  # the channel holds the head back for the body's write
            try:
                super().write(data)
            finally:
                head, channel.head = channel.head, None
                if head:  # no body went out (HEAD, 204, 304): the head alone
                    channel.write_soon(head[0])

    class Channel(HTTPChannel):
        parser_class = Parser
        task_class = Task
        head: Optional[list] = None  # set by the task thread around its first write
        discarding = False  # after a cut request: what arrives is its body, never parsed

        def received(self, data):
            if self.discarding:
                return bool(data)
            received = super().received(data)
            with self.requests_lock:
                # a cut request still queued; once served, waitress closes and reads no more
                self.discarding = any(request.cut is not None for request in self.requests)
            return received

        def write_soon(self, data):
            head = self.head
            if head is not None:
                if not head:
                    head.append(data)
                    return len(data)
                data = head.pop() + data
            return super().write_soon(data)

    server.channel_class = Channel
    maintenance = server.maintenance

    def deadline(now):
        maintenance(now)
        cutoff = time.monotonic() - header_timeout
        for channel in list(server.active_channels.values()):
            request = channel.request
            if request is not None and not request.headers_finished \
                    and getattr(request, "begun", cutoff) < cutoff:
                channel.will_close = True

    server.maintenance = deadline


class Serving:
    """A waitress server for ``app`` on ``host:port`` (port 0: any free port, see ``port``), or
    on ``sock``, a socket already bound and listening (shared by several processes, see
    :mod:`raider_sync.gateway.workers`).

    ``run()`` serves in the calling thread until :meth:`stop`; ``start()`` serves in a thread
    named ``raider-gateway-serve``. ``stop(timeout)`` closes every connection and the listening
    socket, joins the serving thread and waitress's worker threads (each bounded by ``timeout``
    seconds). Raises ImportError when waitress is not installed, OSError when the address is
    taken, InvalidArgument for a host name with several addresses (waitress would listen on
    each).

    waitress reads a whole request body before it calls ``app``; a body over
    ``max_request_bytes`` (default: the relay's ``config.max_request_bytes``) is not read nor
    spooled: the app gets the request at once, cut (see the module's docstring), and the relay
    answers 413 once it has checked the key. ``connection_limit``
    (default :func:`connection_limit`) and ``header_timeout`` are described above; the settings
    given to waitress are in ``settings``.
    """

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, threads: int = 16,
                 max_request_bytes: Optional[int] = None, *,
                 connection_limit: Optional[int] = None,
                 header_timeout: float = HEADER_TIMEOUT, sock: Optional[socket.socket] = None):
        import waitress.server  # lazily: only serving needs it

        if max_request_bytes is None:
            max_request_bytes = getattr(getattr(app, "config", None), "max_request_bytes", None)
        self.settings = waitress_settings(threads, max_request_bytes, connection_limit)
        where = {"sockets": [sock]} if sock is not None else {"host": host, "port": port}
        server = waitress.server.create_server(app, **where, **self.settings)
        if not isinstance(server, waitress.server.BaseWSGIServer):
            # a host name with several addresses: waitress would listen on each, with a
            # server of another kind that has none of the hooks below
            server.close()
            raise InvalidArgument(f"host {host!r} has {len(server.effective_listen)} "
                                  f"addresses; give one of them")
        self.server = server
        _strict(server, header_timeout)
        # waitress sets these (and _map, trigger) in BaseWSGIServer.__init__; its stubs omit them
        self.host = server.effective_host  # type: ignore[attr-defined]
        self.port = server.effective_port  # type: ignore[attr-defined]
        self._thread: Optional[threading.Thread] = None
        self._running = threading.Event()
        self._done = threading.Event()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in str(self.host) else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        """Serve in this thread until :meth:`stop`, or until KeyboardInterrupt, which it
        raises. (waitress's own ``run()`` takes a KeyboardInterrupt and waits up to 5 s for
        the worker threads first, while they still serve: an open stream held Ctrl-C for all
        of it. The caller closes the app, then calls :meth:`stop`.)"""
        self._done.clear()
        self._running.set()
        server = self.server
        adj = server.adj
        try:
            server.asyncore.loop(timeout=adj.asyncore_loop_timeout,
                                 map=server._map,  # type: ignore[attr-defined]
                                 use_poll=adj.asyncore_use_poll)
        finally:
            self._running.clear()
            self._done.set()

    def start(self) -> "Serving":
        """Serve in a background thread; returns once the loop runs."""
        self._thread = threading.Thread(target=self.run, name="raider-gateway-serve", daemon=True)
        self._thread.start()
        return self

    def _close_connections(self) -> None:
        """Close the listening sockets and every connection, not the trigger: a worker thread
        still finishing a request wakes the loop through it."""
        from waitress import wasyncore

        server = self.server
        for dispatcher in list(server._map.values()):  # type: ignore[attr-defined]
            if dispatcher is server:  # its own close() closes the trigger too
                wasyncore.dispatcher.close(server)
            elif dispatcher is not server.trigger:
                dispatcher.close()

    def _close_all(self) -> None:
        self._close_connections()
        self.server.trigger.close()  # type: ignore[attr-defined]

    def _in_loop(self, thunk) -> bool:
        """Have the running loop call ``thunk`` (the loop owns its sockets); False when it is
        not running."""
        if not (self._running.is_set() or (self._thread is not None and self._thread.is_alive())):
            return False
        try:
            self.server.trigger.pull_trigger(thunk)  # type: ignore[attr-defined]
        except OSError:  # the loop has closed its trigger: it has ended or is ending
            return False
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listening socket and every connection, join the worker threads, then
        end the serving loop and join it (each bounded by ``timeout`` seconds). May be called
        twice.

        The trigger (the pipe through which a worker thread wakes the loop) is closed last,
        once the workers are done: a worker that finished its request as the connections
        closed would otherwise write to a closed descriptor (an ``OSError`` traceback on the
        way out) or to whatever file was given its number next."""
        if not self._in_loop(self._close_connections) and self.server._map:  # type: ignore[attr-defined]
            self._close_connections()
        # waitress takes any number of seconds; its stubs say int
        self.server.task_dispatcher.shutdown(timeout=timeout)  # type: ignore[arg-type]
        if self._in_loop(self._close_all):
            self._done.wait(timeout)
            if self._thread is not None:
                self._thread.join(timeout)
        if self.server._map:  # type: ignore[attr-defined]  # the loop is not running any more
            self._close_all()

    def __enter__(self) -> "Serving":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
