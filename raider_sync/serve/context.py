"""What a tool (or prompt) handler may know of its request and do with its client.

    @tools.tool()
    def book(city: str, ctx: Context) -> str:
        ctx.log("info", f"booking in {city}")
        ctx.progress(1, 3, "looking")
        answer = ctx.elicit("Which date?", {"type": "object",
                                            "properties": {"date": {"type": "string"}},
                                            "required": ["date"]})
        if answer["action"] != "accept":
            return "nothing booked"
        return f"booked {city} on {answer['content']['date']}"

A handler gets a :class:`Context` when it has a parameter named ``ctx`` (it is not an
argument of the tool and not in its input schema). The context reaches the client through a
:class:`ClientLink` that the serving side gives it, one per protocol era:

- the handshake era (a session: stdio, in-process, HTTP): progress and log messages are
  notifications, and asking the client (:meth:`Context.elicit`, :meth:`Context.sample`,
  :meth:`Context.list_roots`, :meth:`Context.ask`) is a request to the client that blocks the
  handler until the client answers;
- the stateless era (2026-07-28): asking is an ``input_required`` round. The handler is run
  again from the start when the client sends the answers (``inputResponses``), so it asks the
  same questions in the same order and this time gets the answers; answers of earlier rounds
  travel in a signed ``requestState`` (:mod:`.request_state`). A handler should therefore do
  its side effects after its questions, not before.

A call of the stateless era may also run as a task (:mod:`.tasks`): its link then parks the
task in ``input_required`` for a question and blocks the handler until the client answers
with ``tasks/update``; :meth:`Context.begin_task` begins the task where the tool says the
handler does.

One handler API serves both eras. Without a client (a ToolServer called in-process by the
application itself) progress goes to the caller's ``on_progress``, log messages to Python's
logging, and asking raises :class:`~raider_sync.errors.McpError` (-32021).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from ..errors import McpError
from ..protocol.codes import INVALID_PARAMS, MISSING_CAPABILITY

log = logging.getLogger("raider_sync.serve.context")

#: a handler parameter of this name receives the request's :class:`Context`
CONTEXT_PARAM = "ctx"
#: the levels of ``notifications/message``, least severe first (RFC 5424's names)
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: the client capability each kind of question needs
NEEDS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling",
         "roots/list": "roots"}
_PY_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
              "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
              "alert": logging.CRITICAL, "emergency": logging.CRITICAL}


@dataclass(frozen=True)
class InputRequest:
    """One question for the client: an MCP ``method`` (elicitation/create,
    sampling/createMessage, roots/list) and its ``params``."""
    method: str
    params: dict = field(default_factory=dict)

    def wire(self) -> dict:
        """As an entry of ``inputRequests``."""
        return {"method": self.method, "params": dict(self.params)}


def elicitation(message: str, requested_schema: dict, **params: Any) -> InputRequest:
    """A form elicitation: ``message`` and the flat object schema of the answer."""
    return InputRequest("elicitation/create", {"message": message,
                                               "requestedSchema": requested_schema, **params})


def sampling(messages: list[dict] | str, max_tokens: int, **params: Any) -> InputRequest:
    """A sampling request; ``messages`` may be one user text."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    return InputRequest("sampling/createMessage", {"messages": messages,
                                                   "maxTokens": max_tokens, **params})


def roots() -> InputRequest:
    """A request for the client's roots."""
    return InputRequest("roots/list", {})


class InputRequired(Exception):
    """The stateless era's answer to a question the request did not answer yet: the serving
    side turns it into an ``input_required`` result. ``requests``: key -> InputRequest;
    ``answers``: what the client already answered (they go into ``requestState``)."""

    def __init__(self, requests: dict[str, InputRequest], answers: dict[str, dict]):
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests
        self.answers = answers


class ClientLink(Protocol):
    """How a context reaches the client of one request."""

    def notify(self, method: str, params: dict) -> None:
        """Send a notification about the request (progress, log). Never raises."""

    def ask(self, requests: dict[str, InputRequest], timeout: float) -> dict[str, dict]:
        """The client's answers, by key. Blocks up to ``timeout`` s (handshake era) or raises
        :class:`InputRequired` (stateless era); McpError for a refused question."""

    # A link may have ``cancel()``: :meth:`Context.cancel` calls it, so that a question
    # blocked in :meth:`ask` ends when its request is cancelled.

    # A link may also have ``begin_task(message) -> bool`` and ``task_id``: the link of a
    # call that may become a task (:mod:`.tasks`); the context asks for them with getattr.


class Context:
    """One request as its handler sees it. Thread-safe to read; the methods may be called
    from the handler's thread (or threads it starts).

    ``meta``: the request's ``_meta``; ``client_capabilities`` and ``client_info``: what the
    client declared (at initialize, or in the request's ``_meta``); ``protocol_version``;
    ``request_id``; ``log_level``: the least severe level the client wants (None: the era's
    default, see :meth:`log`)."""

    def __init__(self, *, request_id: Any = None, meta: Mapping | None = None,
                 client_capabilities: Mapping | None = None,
                 client_info: Mapping | None = None, protocol_version: str | None = None,
                 link: ClientLink | None = None,
                 on_progress: Callable[..., None] | None = None,
                 log_level: str | None = "debug", ask_timeout: float = 300.0):
        self.request_id = request_id
        self.meta = dict(meta or {})
        self.client_capabilities = dict(client_capabilities) if client_capabilities is not None else None
        self.client_info = dict(client_info or {})
        self.protocol_version = protocol_version
        self.log_level = log_level
        self._link = link
        self._on_progress = on_progress
        self._ask_timeout = ask_timeout
        self._cancelled = threading.Event()
        self._keys: dict[str, int] = {}
        self._keys_lock = threading.Lock()

    # -- what the handler reports --------------------------------------------------------

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Report progress (a ``notifications/progress`` when the client asked for it with a
        progress token; else nothing). Never raises."""
        if self._on_progress is None:
            return
        try:
            self._on_progress(progress, total, message)
        except Exception:  # noqa: BLE001 - the work goes on
            log.exception("a progress report failed")

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client (``notifications/message``) when ``level`` is at
        or above the client's :attr:`log_level`; in the stateless era only when the request
        asked for logs. Without a client, to Python's logging. Raises ValueError for a level
        that is not one of :data:`LOG_LEVELS`."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        if self._link is None:
            log_locally(level, data, logger)
            return
        if self.log_level is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        self._link.notify("notifications/message", params)

    def close_stream(self) -> bool:
        """End the HTTP event stream that carries this request's answer now, as a server
        that polls does (SEP-1699): the client resumes it with ``Last-Event-ID`` and gets
        what follows, the answer included. Only a session's resumable streams can be closed
        so; True when one was. Never raises."""
        close = getattr(self._link, "close_stream", None)
        if close is None:
            return False
        close()
        return True

    # -- cancellation --------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled the request, or its time ran out: a long handler
        polls this and stops early (its result is then not sent)."""
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Mark the request cancelled (the serving side calls this): a question to the
        client waiting for its answer ends too, with McpError -32800."""
        self._cancelled.set()
        cancel = getattr(self._link, "cancel", None)
        if cancel is not None:
            cancel()

    def wait_cancelled(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the request to be cancelled; whether it was. A
        handler that works in steps, or waits for something, waits here rather than in
        ``time.sleep``, so that a cancellation ends the wait at once. Blocks."""
        return self._cancelled.wait(timeout)

    # -- tasks ---------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (the stateless era's tasks extension), or
        None: not (yet) a task."""
        return getattr(self._link, "task_id", None)

    def begin_task(self, message: str | None = None) -> bool:
        """Turn this call into a task now, with ``message`` as its first status message:
        the client is answered with the task at once, and the handler goes on, its result
        becoming the task's. For a tool declared with ``task_begins="handler"``: the
        questions asked before this were ordinary rounds of the request. True when the call
        runs as a task (it already did: True again); False where it cannot (the handshake
        era, a client that did not declare the tasks extension, no client, a request whose
        time ran out): the handler then simply goes on and its result answers the call.
        Does not block."""
        begin = getattr(self._link, "begin_task", None)
        return bool(begin(message)) if begin is not None else False

    # -- asking the client ---------------------------------------------------------------

    def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, dict]:
        """Ask the client several questions at once; their answers by key. Blocks until the
        client answers (handshake era; at most ``ask_timeout`` s) or ends this round of the
        request (stateless era: the handler runs again with the answers). Raises McpError
        -32021 when the client did not declare the capability a question needs, McpError
        -32800 when the request is cancelled (or its session ends) while it waits, and
        RequestTimeout when the client does not answer in time."""
        if not requests:
            return {}
        for key, request in requests.items():
            if not isinstance(request, InputRequest):
                raise TypeError(f"question {key!r} must be an InputRequest "
                                f"(elicitation(), sampling(), roots()), not {type(request).__name__}")
            self._check_capability(request.method)
        if self._link is None:
            raise McpError(MISSING_CAPABILITY, "no client to ask: this call did not come from "
                           "an MCP client", {"requiredCapabilities": _needed(requests)})
        return self._link.ask(dict(requests), self._ask_timeout)

    def elicit(self, message: str, requested_schema: dict, *, key: str | None = None,
               **params: Any) -> dict:
        """Ask the user (through the client) for input of ``requested_schema``; the client's
        answer ``{"action": "accept"|"decline"|"cancel", "content": {...}}``. See :meth:`ask`
        for what blocks and what is raised; ``key`` names the question in the stateless era
        (default ``elicitation``, ``elicitation_2``, ...)."""
        key = key or self._next_key("elicitation")
        return self.ask({key: elicitation(message, requested_schema, **params)})[key]

    def sample(self, messages: list[dict] | str, max_tokens: int, *, key: str | None = None,
               **params: Any) -> dict:
        """Ask the client's model for a message; its answer
        ``{"role", "content", "model", ...}``. See :meth:`ask`."""
        key = key or self._next_key("sampling")
        return self.ask({key: sampling(messages, max_tokens, **params)})[key]

    def list_roots(self, *, key: str | None = None) -> list[dict]:
        """The client's roots ``[{"uri", "name"?}]``. See :meth:`ask`."""
        key = key or self._next_key("roots")
        answer = self.ask({key: roots()})[key]
        listed = answer.get("roots") if isinstance(answer, dict) else None
        if not isinstance(listed, list):
            raise McpError(INVALID_PARAMS, f"the client's answer to roots/list has no roots list: {answer!r}")
        return listed

    def _check_capability(self, method: str) -> None:
        need = NEEDS.get(method)
        if need is None:
            raise ValueError(f"a client can be asked {', '.join(NEEDS)}, not {method!r}")
        if self.client_capabilities is not None and need not in self.client_capabilities:
            raise McpError(MISSING_CAPABILITY, f"the client did not declare the {need} "
                           f"capability that {method} needs", {"requiredCapabilities": {need: {}}})

    def _next_key(self, kind: str) -> str:
        with self._keys_lock:
            count = self._keys[kind] = self._keys.get(kind, 0) + 1
        return kind if count == 1 else f"{kind}_{count}"


def log_locally(level: str, data: Any, logger: str | None = None) -> None:
    """A handler's log message with no client to send it to, to Python's logging (the
    logger ``logger``, by default ``raider_sync.serve.handler``)."""
    logging.getLogger(logger or "raider_sync.serve.handler").log(_PY_LEVELS.get(level, logging.INFO),
                                                                 "%s", data)


def _needed(requests: Mapping[str, InputRequest]) -> dict:
    return {NEEDS[r.method]: {} for r in requests.values() if r.method in NEEDS}


def takes_context(fn: Callable) -> bool:
    """Whether ``fn`` has a parameter named :data:`CONTEXT_PARAM`."""
    import inspect
    try:
        return CONTEXT_PARAM in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
