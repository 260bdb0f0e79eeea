"""Multi round-trip requests: ``input_required`` answered and the request sent again.

In the stateless revision a server does not send requests of its own; a ``tools/call``,
``prompts/get`` or ``resources/read`` may instead answer ``resultType: "input_required"`` with
``inputRequests`` (key -> ``{method, params}``: elicitation, sampling, roots) and an opaque
``requestState``. The client answers every input request with its handlers and sends the
original request again, under a new id, with ``inputResponses`` and the ``requestState``
byte-exact. :func:`request_rounds_f` runs those rounds behind one future and one deadline.
"""
from __future__ import annotations

import logging
from concurrent.futures import Executor, Future
from typing import Any, Callable

from ...errors import McpError
from ...jsonrpc import MethodNotFound
from ...protocol.codes import HEADER_MISMATCH, INTERNAL_ERROR
from ...threads.futures import Deadline, settle
from .modern import result_type

log = logging.getLogger("raider_sync.eras.rounds")

#: rounds a request may take before it fails (a server that asks forever)
MAX_INPUT_ROUNDS = 10

Send = Callable[..., Future]


def request_rounds_f(send: Send, method: str, params: dict, *,
                     timeout: float | None = None, deadline: Deadline | None = None,
                     answer: Callable[[str, dict], dict], pool: Executor,
                     max_rounds: int = MAX_INPUT_ROUNDS,
                     transform: Callable[[Any], Any] | None = None,
                     on_mismatch: Callable[[float], None] | None = None,
                     **options: Any) -> Future:
    """A future of ``method``'s final result, through as many ``input_required`` rounds as the
    server asks for (at most ``max_rounds``), every leg within the one ``deadline`` (or
    ``timeout`` s from now).

    ``send(method, params, deadline=..., **options)`` sends one leg (a new id each time) and
    returns its future; ``answer(method, params)`` fulfils one input request (it may block:
    it runs on ``pool``). ``on_mismatch(seconds)``, when given, runs once after a -32020
    (header mismatch) answer, before the request is sent once more. The future fails with
    McpError for a server that asks more than ``max_rounds`` times, for an input request
    the client has no handler for, or for an unknown resultType; cancelling it cancels the
    leg under way.
    """
    outer: Future = Future()
    if deadline is None:
        if timeout is None or isinstance(timeout, Deadline):
            raise TypeError("request_rounds_f needs a timeout or a deadline")
        deadline = Deadline(timeout)
    state: dict[str, Any] = {"leg": None, "rounds": 0, "mismatch": on_mismatch is None}

    left = deadline.left

    def send_leg(leg_params: dict) -> None:
        if outer.cancelled():
            return
        leg = send(method, leg_params, deadline=deadline, **options)
        options.pop("wait", None)  # later legs are sent from the pool, which waits for none
        state["leg"] = leg
        leg.add_done_callback(settled)

    def settled(leg: Future) -> None:
        if leg.cancelled() or outer.done():
            return
        error = leg.exception()
        if error is not None:
            if (isinstance(error, McpError) and error.code == HEADER_MISMATCH
                    and on_mismatch is not None and not state["mismatch"]):
                state["mismatch"] = True
                _submit(pool, outer, relist_and_resend, on_mismatch)
                return
            settle(outer, error=error)
            return
        result = leg.result()
        try:
            kind = result_type(result, tasks=method == "tools/call")
        except McpError as exc:
            settle(outer, error=exc)
            return
        if kind != "input_required":  # complete, or the task a tools/call became (as sent)
            if kind == "complete" and isinstance(result, dict) and "resultType" in result:
                # protocol machinery, like the id: results read the same in both eras
                result = {k: v for k, v in result.items() if k != "resultType"}
            try:
                settle(outer, result=transform(result) if transform is not None else result)
            except Exception as exc:  # noqa: BLE001 - the future carries it
                settle(outer, error=exc)
            return
        state["rounds"] += 1
        if state["rounds"] > max_rounds:
            settle(outer, error=McpError(INTERNAL_ERROR, f"{method}: the server asked for input "
                                                       f"{max_rounds} times and still wants more; "
                                                       f"given up"))
            return
        _submit(pool, outer, fulfil_and_resend, result)

    def relist_and_resend(relist: Callable[[float], None]) -> None:
        relist(left())
        send_leg(dict(params))

    def fulfil_and_resend(result: dict) -> None:
        requests = result.get("inputRequests")
        if requests is not None and not isinstance(requests, dict):
            raise McpError(INTERNAL_ERROR, f"{method}: inputRequests is not an object")
        responses = {}
        for key, request in (requests or {}).items():
            responses[key] = fulfil(method, key, request, answer)
        retry = dict(params)
        if responses:
            retry["inputResponses"] = responses
        if "requestState" in result:
            retry["requestState"] = result["requestState"]
        send_leg(retry)

    def cancelled(done: Future) -> None:
        if done.cancelled() and state["leg"] is not None:
            state["leg"].cancel()

    outer.add_done_callback(cancelled)
    try:
        send_leg(dict(params))
    except Exception as exc:  # noqa: BLE001 - the future carries it
        settle(outer, error=exc)
    return outer


def fulfil(method: str, key: str, request: Any, answer: Callable[[str, dict], dict]) -> dict:
    """The client's result for one input request ``key`` (``{method, params}``) of a
    ``method`` round or task, from ``answer`` (the client's handlers; it may block). Raises
    McpError for a request without a method, or one the client has no handler for."""
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        raise McpError(INTERNAL_ERROR, f"{method}: input request {key!r} has no method")
    params = request.get("params")
    if not isinstance(params, dict):
        params = {}
    try:
        return answer(request["method"], params)
    except MethodNotFound:
        raise McpError(INTERNAL_ERROR, f"{method}: the server asked for {request['method']} "
                                       f"(input {key!r}), and this client has no handler for "
                                       f"it") from None


def _submit(pool: Executor, outer: Future, fn: Callable, *args: Any) -> None:
    def run() -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - the future carries it
            settle(outer, error=exc)
    try:
        pool.submit(run)
    except RuntimeError:
        settle(outer, error=McpError(INTERNAL_ERROR, "the client is stopping"))
