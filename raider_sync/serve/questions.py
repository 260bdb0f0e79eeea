"""Questions a served handler puts to its client over HTTP (the handshake era), and the
answers that come back in later POSTs.

A request whose handler asks the client (``elicitation/create``, ``sampling/createMessage``,
``roots/list``) is answered with an event stream; the question goes out on that stream as a
JSON-RPC request with an id of the app's own, and the client POSTs its answer to the same
endpoint. :class:`Questions` matches the answer to the question by that id. The answer must
reach the process that asked: with several processes behind a load balancer, asking the
client in the handshake era needs sticky routing (the stateless era asks with
``input_required`` rounds instead, which any process can answer).
"""
from __future__ import annotations

import secrets
import threading
from concurrent.futures import Future
from typing import Callable

from ..errors import McpError
from ..protocol.codes import INTERNAL_ERROR
from ..threads.futures import settle


class Questions:
    """The open questions of one app. Thread-safe."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._open: dict[str, Future] = {}

    def asker(self, send: Callable[[dict], None]) -> Callable[[str, dict, float], Future]:
        """``ask(method, params, timeout)``: put the question with ``send`` (onto the
        request's stream) and return a Future of the client's answer, failed with McpError
        for an error answer; the caller bounds its wait by ``timeout`` and cancels the
        future to give up on the question. Raises what ``send`` raises."""
        def ask(method: str, params: dict, timeout: float) -> Future:
            # unguessable: any client may POST an answer, and it must not answer (or
            # refuse) a question put to another client
            question_id = f"q-{secrets.token_urlsafe(16)}"
            future: Future = Future()
            with self._lock:
                self._open[question_id] = future
            future.add_done_callback(lambda _: self._forget(question_id))
            try:
                send({"jsonrpc": "2.0", "id": question_id, "method": method, "params": params})
            except BaseException:
                future.cancel()
                raise
            return future
        return ask

    def _forget(self, question_id: str) -> None:
        with self._lock:
            self._open.pop(question_id, None)

    def answered(self, message: dict) -> bool:
        """Hand a client's answer to the question it answers; False for an answer to no
        open question (a late one, or not ours)."""
        question_id = message.get("id")
        with self._lock:
            future = self._open.pop(question_id, None) if isinstance(question_id, str) else None
        if future is None:
            return False
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            settle(future, error=McpError(code if isinstance(code, int) else INTERNAL_ERROR,
                                          str(text or "the client refused the question"),
                                          error.get("data") if isinstance(error, dict) else None))
        else:  # settle: the asker may have given up on it meanwhile
            settle(future, result=message.get("result"))
        return True
