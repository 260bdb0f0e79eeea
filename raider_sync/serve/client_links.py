"""How a handler's :class:`~.context.Context` reaches its client, one link per protocol era.

- :class:`RequestLink` (the handshake era): notifications go out as they are; a question is
  a request to the client (``elicitation/create``, ...) whose answer the handler waits for.
  Whatever carries the session provides the two callables (a :class:`~raider_sync.jsonrpc.Session`
  over stdio or in-process; the call's event stream over HTTP).
- :class:`RoundsLink` (the stateless era, 2026-07-28): a question is answered from the
  request's ``inputResponses`` and its ``requestState``; one that is not yet answered ends the
  round with :class:`~.context.InputRequired`, which the serving side turns into an
  ``input_required`` result (:func:`input_required_result`).
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from ..errors import McpError, RequestTimeout
from ..protocol.codes import INVALID_PARAMS, REQUEST_CANCELLED
from . import request_state
from .context import Context, InputRequest, InputRequired

log = logging.getLogger("raider_sync.serve.context")

#: the methods whose handlers may end a round with input_required (SEP-2322)
ROUND_METHODS = ("tools/call", "prompts/get", "resources/read")
#: the stateless era's _meta keys
META = "io.modelcontextprotocol/"


class RequestLink:
    """A link of the handshake era: ``notify(method, params)`` sends a notification (it must
    not raise); ``request(method, params, timeout)`` asks the client and returns a Future of
    its answer (failing with what the session fails it with: McpError, RequestTimeout,
    ConnectionClosed). :meth:`cancel` (the context's, when its request is cancelled or its
    session ends) cancels the questions waiting for their answer."""

    def __init__(self, notify: Callable[[str, dict], None],
                 request: Callable[[str, dict, float], Future] | None,
                 close_stream: Callable[[], None] | None = None):
        self._notify = notify
        self._request = request
        #: ends the HTTP stream carrying the answer (the client resumes it); None: no such
        self.close_stream = close_stream
        self._lock = threading.Lock()
        self._waiting: set[Future] = set()
        self._cancelled = False

    def notify(self, method: str, params: dict) -> None:
        try:
            self._notify(method, params)
        except Exception:  # noqa: BLE001 - a lost notification does not fail the handler
            log.debug("notification %s not sent", method, exc_info=True)

    def ask(self, requests: dict[str, InputRequest], timeout: float) -> dict[str, dict]:
        if self._request is None:
            raise McpError(INVALID_PARAMS, "this request cannot carry a question to the client "
                           "(it was not sent with Accept: text/event-stream)")
        return {key: self._answer(request, timeout) for key, request in requests.items()}

    def cancel(self) -> None:
        """The request is cancelled: a question waiting for its answer (and any asked later)
        ends with McpError -32800 instead of blocking its handler."""
        with self._lock:
            self._cancelled = True
            waiting = list(self._waiting)
        for future in waiting:
            future.cancel()

    def _answer(self, request: InputRequest, timeout: float) -> Any:
        assert self._request is not None
        future = self._request(request.method, dict(request.params), timeout)
        with self._lock:
            self._waiting.add(future)
            cancelled = self._cancelled
        if cancelled:
            future.cancel()
        try:
            return future.result(timeout)
        except CancelledError:
            raise McpError(REQUEST_CANCELLED, f"the request was cancelled while its handler "
                           f"waited for the client's answer to {request.method}") from None
        except FutureTimeout:
            if future.done():  # the session's own timeout: a RequestTimeout already
                raise
            future.cancel()
            raise RequestTimeout(f"the client did not answer {request.method} within "
                                 f"{timeout:g} s") from None
        finally:
            with self._lock:
                self._waiting.discard(future)


class RoundsLink:
    """A link of the stateless era for one round of ``method`` on ``name``: ``answers`` are
    what the client answered so far (:func:`round_answers`); ``notify`` sends on the
    request's own stream (None: nowhere)."""

    def __init__(self, answers: dict[str, dict], notify: Callable[[str, dict], None] | None):
        self.answers = answers
        self._notify = notify

    def notify(self, method: str, params: dict) -> None:
        if self._notify is None:
            return
        try:
            self._notify(method, params)
        except Exception:  # noqa: BLE001
            log.debug("notification %s not sent", method, exc_info=True)

    def ask(self, requests: dict[str, InputRequest], timeout: float) -> dict[str, dict]:
        missing = {key: request for key, request in requests.items() if key not in self.answers}
        if missing:
            raise InputRequired(missing, self.answers)
        return {key: self.answers[key] for key in requests}


def round_answers(secret: bytes, method: str, name: str, params: dict) -> dict[str, dict]:
    """The answers a request of the stateless era carries: those of earlier rounds (its
    ``requestState``, verified) and this round's (``inputResponses``). Raises McpError
    -32602 for a tampered or foreign state, or ``inputResponses`` that are not an object of
    objects."""
    answers: dict[str, dict] = {}
    if "requestState" in params:
        answers.update(request_state.unseal(secret, method, name, params["requestState"]))
    if "inputResponses" in params:
        given = params["inputResponses"]
        if not isinstance(given, dict):
            raise McpError(INVALID_PARAMS, "inputResponses must be an object of answers by key")
        for key, answer in given.items():
            if not isinstance(answer, dict):
                raise McpError(INVALID_PARAMS, f"inputResponses[{key!r}] must be an object "
                               f"(the client's result for that input request)")
        answers.update(given)
    return answers


def input_required_result(secret: bytes, method: str, name: str, exc: InputRequired) -> dict:
    """The ``input_required`` result of a round that ``exc`` ended."""
    return {"resultType": "input_required",
            "inputRequests": {key: request.wire() for key, request in exc.requests.items()},
            "requestState": request_state.seal(secret, method, name, exc.answers)}


def stateless_context(params: dict, notify: Callable[[str, dict], None] | None,
                      answers: dict[str, dict], on_progress: Callable | None = None, *,
                      link: Any = None, ask_timeout: float = 300.0) -> Context:
    """The context of a request of the stateless era (its ``_meta`` says who the client is
    and whether it wants log messages: without ``logLevel`` none are sent). Its link is
    ``link``, by default a :class:`RoundsLink` of ``answers`` and ``notify``."""
    given = params.get("_meta")
    meta: dict = given if isinstance(given, dict) else {}
    capabilities, info = meta.get(META + "clientCapabilities"), meta.get(META + "clientInfo")
    level = meta.get(META + "logLevel")
    return Context(meta=meta,
                   client_capabilities=capabilities if isinstance(capabilities, dict) else {},
                   client_info=info if isinstance(info, dict) else None,
                   protocol_version=meta.get(META + "protocolVersion"),
                   link=link if link is not None else RoundsLink(answers, notify),
                   on_progress=on_progress, log_level=level if isinstance(level, str) else None,
                   ask_timeout=ask_timeout)
