"""Serving the relay with waitress, with settings that survive slow and hostile clients.

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
- a request with both ``Content-Length`` and ``Transfer-Encoding`` is refused with 400 and the
  connection closed (RFC 9112 section 6.3), before the relay is called: waitress alone would
  follow ``Transfer-Encoding`` and keep reading requests from the same connection.
- a response's head and the first piece of its body (up to ``JOIN_LIMIT`` bytes: a whole
  relayed JSON answer) leave in one ``send()``, where waitress alone sends them apart, one
  system call and one TCP segment more that the client wakes up for on every answer.
"""
from __future__ import annotations

import resource
import signal
import socket
import threading
import time
from typing import Any, Optional

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
        # waitress refuses a body of max_request_body_size bytes or more: one over ours
        settings["max_request_body_size"] = max_request_bytes + 1
    return settings


def reload_keys_on_sighup(relay) -> Any:
    """Make SIGHUP call ``relay.reload_keys()`` (in the main thread only, where signal handlers
    live); returns the previous handler, or ``None`` when not in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGHUP, lambda signum, frame: relay.reload_keys())


def _strict(server, header_timeout: float) -> None:
    """Give a waitress server the refusal of ambiguous framing, the header deadline and the
    head sent with the body."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser, ParsingError
    from waitress.task import WSGITask

    class Parser(HTTPRequestParser):
        def __init__(self, adj):
            super().__init__(adj)
            self.begun = time.monotonic()

        def parse_header(self, header_plus):
            super().parse_header(header_plus)
            # waitress has popped Transfer-Encoding and follows it; Content-Length is left
            if self.chunked and "CONTENT_LENGTH" in self.headers:
                self.chunked = False  # nothing of the body is read as a next request
                raise ParsingError("Content-Length and Transfer-Encoding together")

    class Task(WSGITask):
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
    taken.

    waitress reads a whole request body before it calls ``app``; ``max_request_bytes`` (default:
    the relay's ``config.max_request_bytes``) makes it refuse a larger one with 413 at once,
    before anything is spooled and before the key is even looked at. ``connection_limit``
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
        self.server = waitress.server.create_server(app, **where, **self.settings)
        _strict(self.server, header_timeout)
        self.host = self.server.effective_host
        self.port = self.server.effective_port
        self._thread: Optional[threading.Thread] = None
        self._running = threading.Event()
        self._done = threading.Event()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in str(self.host) else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        """Serve in this thread until :meth:`stop` (or KeyboardInterrupt)."""
        self._done.clear()
        self._running.set()
        try:
            self.server.run()
        finally:
            self._running.clear()
            self._done.set()

    def start(self) -> "Serving":
        """Serve in a background thread; returns once the loop runs."""
        self._thread = threading.Thread(target=self.run, name="raider-gateway-serve", daemon=True)
        self._thread.start()
        return self

    def _close_all(self) -> None:
        for dispatcher in list(self.server._map.values()):
            dispatcher.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listening socket and every connection, then join (bounded by ``timeout``
        seconds each) the serving loop and the worker threads. May be called twice."""
        if self._running.is_set() or (self._thread is not None and self._thread.is_alive()):
            # the loop owns its sockets: close them from inside it
            self.server.trigger.pull_trigger(self._close_all)
            self._done.wait(timeout)
            if self._thread is not None:
                self._thread.join(timeout)
        if self.server._map:  # the loop is not running any more
            self._close_all()
        self.server.task_dispatcher.shutdown(timeout=timeout)

    def __enter__(self) -> "Serving":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
