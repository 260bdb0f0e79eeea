"""Every exception raider_sync raises, in one tree::

    RaiderError
     +-- ConfigError (also ValueError)        bad .mcp.json / gateway config, names the field
 +-- InvalidArgument (also ValueError)    a call's argument that cannot be used, named
     +-- McpError                             a JSON-RPC error answer: code, message, data
     |    +-- UnsupportedProtocol             no revision in common, or not the one pinned
     |    +-- TaskError                       a tool call's task did not give a result: .handle
     |         +-- TaskFailed                 ... it ended failed: its error's code/message/data
     |         +-- TaskCancelled              ... it ended cancelled, not by this caller
     |         +-- TaskExpired                ... its time to live passed, or the server forgot it
     |         +-- TaskNotResumable           ... its handle cannot be followed here (says why)
     |         +-- TaskDetached               ... the caller (or a stop) let go of it
     +-- NotConnected                         the server is not (or no longer) connected
     +-- UnknownTool (also LookupError)       no tool of that name
     +-- UnknownServer (also LookupError)     no configured server of that name
     +-- ConnectionClosed                     the transport ended; carries the stderr tail
     +-- TransportError                       an HTTP answer that is not MCP: status, body excerpt
     |    +-- LostInFlight                    ... the connection broke after the request went out
     |    +-- SessionExpired                  ... the server no longer knows the session
     |    +-- AnswerInBody                    ... an error status whose body may be the answer
     +-- ToolError                            a tool reported an error (raise_on_error): the result
     +-- StructuredContentError (also ValueError)  structuredContent missing or not as declared
     +-- SchemaRefused (also ValueError)      a tool's schema past the size or depth bound
     +-- AuthError                            an OAuth step failed: step, error, error_description
     |    +-- ConsentRequired                 ... a person must approve, and nobody can here
     +-- RequestTimeout (also TimeoutError)   a request ran out of time (and was cancelled)
     |    +-- ToolTimeout                     ... a tools/call in particular
     +-- SubscriptionEnded                    a server.listen() stream ended; says how
     +-- SkillRejected                        a skill failed verification; nothing of it used
     +-- WebhookRejected                      a webhook delivery failed its signature check

Foreign errors (OSError, requests, JSON) are mapped to these where they cross into
raider_sync, with ``raise ... from exc``.
"""
from __future__ import annotations

from typing import Any, Sequence


class RaiderError(Exception):
    """Root of every error raider_sync raises."""


class ConfigError(RaiderError, ValueError):
    """A configuration that cannot be used. The message names the server and the field."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class InvalidArgument(RaiderError, ValueError):
    """An argument given to a call that cannot be used (tool arguments that are not an
    object, a timeout that is not positive). The message names the argument."""


class McpError(RaiderError):
    """The peer answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class UnsupportedProtocol(McpError):
    """The server speaks no protocol revision that raider_sync accepts, or not the one
    ``protocol`` pins. The message names the revisions raider_sync asked for
    (:attr:`requested`), those the server offers when it said (:attr:`supported`) and the
    setting that fixes it. ``code`` is -32022, the protocol's code for this refusal, whether
    or not the server sent it, so ``str()`` is the message alone."""

    def __str__(self) -> str:
        return self.message

    @property
    def requested(self) -> list[str]:
        """The revisions raider_sync asked for (empty when not known)."""
        asked = self.data.get("requested") if isinstance(self.data, dict) else None
        return [asked] if isinstance(asked, str) else list(asked or [])

    @property
    def supported(self) -> list[str] | None:
        """The revisions the server named as its own, or None when it named none."""
        offered = self.data.get("supported") if isinstance(self.data, dict) else None
        return list(offered) if isinstance(offered, list) else None


class TaskError(McpError):
    """A tool call became a task, and the task gave no result. ``handle`` is the task's
    :class:`~raider_sync.client.tasks.TaskHandle` (None when the task never began), enough to
    look at it again with ``resume_task``."""

    def __init__(self, code: int, message: str, data: Any = None, *, handle: Any = None):
        super().__init__(code, message, data)
        self.handle = handle


class TaskFailed(TaskError):
    """The task ended ``failed``: ``code``, ``message`` and ``data`` are its error's."""


class TaskCancelled(TaskError):
    """The task ended ``cancelled`` without this caller cancelling it (the server, or another
    client holding its id)."""


class TaskExpired(TaskError):
    """The task's time to live passed (``createdAt + ttlMs``), or the server no longer knows
    its id (-32602 on ``tasks/get``)."""


class TaskNotResumable(TaskError):
    """A handle that cannot be followed by this server: a stdio server's task outside the
    server process that ran it, another server's task, a wire this client cannot speak. The
    message says which."""


class TaskDetached(TaskError):
    """The future stopped following its task (``detach()``, or the server's ``stop()``); the
    task runs on, and ``handle`` resumes it."""


class NotConnected(RaiderError):
    """The server is not connected (never started, failed, or stopped)."""


class UnknownTool(RaiderError, LookupError):
    """No tool of that name is offered."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownServer(RaiderError, LookupError):
    """No configured server of that name; the message lists the available ones."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class ConnectionClosed(RaiderError):
    """The connection to the server ended; ``stderr_tail`` holds its last stderr lines.
    The request it fails may have reached the server (a write can break half way)."""

    def __init__(self, message: str, stderr_tail: list[str] | None = None):
        super().__init__(message)
        self.stderr_tail = list(stderr_tail or [])


#: the most characters of a server's stderr line that a message (an error, a ``reason``)
#: quotes; a longer line is quoted by its end, after "…"
STDERR_QUOTE_CHARS = 500


def last_stderr_line(stderr_tail: Sequence[str]) -> str:
    """The last line of ``stderr_tail`` as every message quotes it: its last
    :data:`STDERR_QUOTE_CHARS` characters, marked "…" when cut (a log line may be 64 KiB);
    "" when there is none. The end is kept: that is where a crash says what went wrong."""
    if not stderr_tail:
        return ""
    line = stderr_tail[-1]
    return line if len(line) <= STDERR_QUOTE_CHARS else "…" + line[-STDERR_QUOTE_CHARS:]


class TransportError(RaiderError):
    """An HTTP exchange that did not carry MCP: a status code and a short body excerpt.
    ``sent`` is False when no connection was made, so the server has nothing of it."""

    sent = True

    def __init__(self, message: str, status_code: int | None = None, body: str = ""):
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class LostInFlight(TransportError):
    """The connection broke once the request had been written (in part or whole), before
    the answer: the server may have acted on it, so its outcome is unknown. A transport
    never sends such a request again; the session repeats one whose method is safe to
    repeat (see :data:`raider_sync.protocol.REPEATABLE_METHODS`), once, and no other."""


class SessionExpired(TransportError):
    """The server no longer knows the session the request was sent in (HTTP 404 to a request
    carrying ``Mcp-Session-Id``): it restarted, or dropped the session. Raised by a transport;
    the JSON-RPC session has a new session started (a fresh initialize) and sends the request
    once more, and fails it with a TransportError only when that cannot be done. ``session``
    is the session id that expired."""

    def __init__(self, message: str, session: str, status_code: int | None = 404,
                 body: str = ""):
        super().__init__(message, status_code, body)
        self.session = session


class AnswerInBody(TransportError):
    """A request of the stateless revision was refused with an HTTP error status, and that
    revision answers its refusals with the JSON-RPC error in the body (``body``). Raised by a
    transport; the JSON-RPC session fails the request with that error (an McpError) when the
    body holds one, else with this."""


class AuthError(RaiderError):
    """An OAuth step failed. ``step`` names it (discovery, registration, consent, token,
    refresh, authorization); ``error``/``error_description`` are the authorization server's,
    when it gave them. Never carries a token."""

    def __init__(self, message: str, *, step: str, error: str | None = None,
                 error_description: str | None = None, status_code: int | None = None):
        super().__init__(message)
        self.step = step
        self.error = error
        self.error_description = error_description
        self.status_code = status_code


class ConsentRequired(AuthError):
    """The server needs a person to approve access and no consent handler is set: the
    message says what to run (``raider-sync login NAME``)."""


class RequestTimeout(RaiderError, TimeoutError):
    """A request was not answered in time; it has been cancelled. ``kind`` is "total" when
    its deadline passed, "idle" when a request that reports progress fell silent for longer
    than its timeout (see ``reset_on_progress``)."""

    kind = "total"


class ToolTimeout(RequestTimeout):
    """A tools/call was not answered in time; it has been cancelled. ``handle`` is the
    task's :class:`~raider_sync.client.tasks.TaskHandle` when the call had become a task
    (``tasks/cancel`` was sent), else None."""

    handle: Any = None


class ToolError(RaiderError):
    """A tool answered with an error result (``isError``) and the caller asked for errors to
    be raised (``raise_on_error``). ``result`` is the whole result; the message names the
    tool and starts with the result's text."""

    def __init__(self, result: dict, message: str | None = None):
        super().__init__(message or _tool_error_message(result))
        self.result = result

    @property
    def tool(self) -> str | None:
        return getattr(self.result, "tool", None)


class StructuredContentError(RaiderError, ValueError):
    """A result's ``structuredContent`` is missing or does not match the tool's
    ``outputSchema`` (or the type asked for); the message names where."""


class SchemaRefused(RaiderError, ValueError):
    """A tool's JSON Schema is past the size or depth bound (or is not JSON); the tool is
    left out of a model's tool list. The message says which bound."""


def _tool_error_message(result: dict) -> str:
    blocks = result.get("content") if isinstance(result, dict) else None
    text = "\n".join(b.get("text", "") for b in blocks or []
                     if isinstance(b, dict) and b.get("type") == "text").strip() or "no details"
    if len(text) > 300:
        text = text[:300] + "…"
    tool = getattr(result, "tool", None)
    return f"tool {tool!r} reported an error: {text}" if tool else f"the tool reported an error: {text}"
class SubscriptionEnded(RaiderError):
    """The stream of a subscription (``McpServer.listen``) ended; the message says how.
    Nothing is replayed: listen again and fetch again."""


class WebhookRejected(RaiderError):
    """A webhook delivery that does not verify (``verify_webhook``): a missing header, a
    timestamp too far from now, no signature that matches, a body that is not a JSON
    object. The message says which; nothing of the delivery may be trusted."""


class SkillRejected(RaiderError):
    """A skill (``McpServer.get_skill``) is not listed or failed verification: a file's size or
    digest, or SKILL.md's frontmatter, differs from the skill's entry. Nothing of it is used."""
