"""How raider_sync's objects look in Jupyter: HTML for servers, hubs and tool results, and a
progress bar driven by ``on_progress``. The result type itself is in :mod:`raider_sync.client.results`.

Nothing here imports IPython unless a progress bar is drawn in a notebook; outside one the bar
is a line of text on stderr.
"""
from __future__ import annotations

import html
import sys
import threading
from typing import Any, Iterable, Optional

from .. import _moved

_STATUS_COLOURS = {"connected": "#1a7f37", "failed": "#cf222e", "error": "#cf222e",
                   "starting": "#9a6700", "stopped": "#57606a", "configured": "#57606a"}
_MAX_TEXT = 20000


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _badge(status: str) -> str:
    colour = _STATUS_COLOURS.get(status, "#57606a")
    return (f'<span style="background:{colour};color:#fff;border-radius:4px;padding:1px 6px;'
            f'font-size:85%">{_esc(status)}</span>')


def _tools_table(tools: Iterable[dict]) -> str:
    rows = "".join(
        f"<tr><td><code>{_esc(t.get('name'))}</code></td>"
        f"<td>{_esc((t.get('description') or '').strip().splitlines()[0] if t.get('description') else '')}"
        f"</td></tr>" for t in tools)
    if not rows:
        return "<p><em>no tools</em></p>"
    return ('<table><thead><tr><th style="text-align:left">tool</th>'
            f'<th style="text-align:left">description</th></tr></thead><tbody>{rows}</tbody></table>')


def server_html(server) -> str:
    """A server (McpServer or ToolServer): name, transport, status, reason, its tools."""
    head = (f"<div><strong>{_esc(server.name)}</strong> ({_esc(server.transport)}) "
            f"{_badge(server.status)}")
    if getattr(server, "protocol_version", None):
        head += f" <small>MCP {_esc(server.protocol_version)}</small>"
    if server.reason:
        head += f"<br><small>{_esc(server.reason)}</small>"
    head += "</div>"
    tools = server.list_tools() if server.status == "connected" else []
    return head + _tools_table(tools)


def hub_html(hub) -> str:
    """A hub: one row per server with its status, tool count and reason."""
    rows = "".join(
        f"<tr><td>{_esc(s.name)}</td><td>{_esc(s.transport)}</td><td>{_badge(s.status)}</td>"
        f"<td>{len(s.tool_names)}</td><td><small>{_esc(s.reason or '')}</small></td></tr>"
        for s in hub.clients)
    return ('<table><thead><tr><th style="text-align:left">server</th><th>transport</th>'
            '<th>status</th><th>tools</th><th style="text-align:left">reason</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>')


def result_html(result: dict) -> str:
    """A tool result: its text blocks as preformatted text, images inline, other blocks named."""
    parts = []
    if result.get("isError"):
        parts.append(f"<div>{_badge('error')}</div>")
    for block in result.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text = block.get("text", "")
            shown = text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + f"\n… ({len(text)} characters)"
            parts.append(f'<pre style="white-space:pre-wrap">{_esc(shown)}</pre>')
        elif kind == "image" and block.get("data"):
            parts.append(f'<img src="data:{_esc(block.get("mimeType", "image/png"))};base64,'
                         f'{_esc(block["data"])}" style="max-width:100%">')
        elif kind in ("resource", "resource_link"):
            resource = block.get("resource") or block
            parts.append(f"<div>resource <code>{_esc(resource.get('uri', ''))}</code></div>")
        else:
            parts.append(f"<div><em>{_esc(kind)} block</em></div>")
    return "".join(parts) or "<em>empty result</em>"


class ProgressBar:
    """A callable for ``on_progress``: draws the progress of a call; its :meth:`on_status`
    draws the status of a call that became a task.

        bar = ProgressBar("research")
        server.call_tool(name, args, on_progress=bar, on_status=bar.on_status)
        bar.close()

    In a notebook it updates one HTML bar in place; elsewhere it rewrites one line on stderr.
    Thread-safe: progress and statuses arrive on raider_sync worker threads.
    """

    def __init__(self, label: str = "", width: int = 30, stream=None):
        self.label = label
        self.width = width
        self.stream = stream if stream is not None else sys.stderr
        self.updates = 0
        self.last: Optional[tuple[float, Optional[float], Optional[str]]] = None
        self._drawn = 0  # characters of the line on stderr, blanked by a shorter one
        self._lock = threading.Lock()
        self._handle = _display_handle()

    def __call__(self, progress: float, total: Optional[float] = None,
                 message: Optional[str] = None) -> None:
        with self._lock:
            self.updates += 1
            self.last = (progress, total, message)
            fraction = min(1.0, progress / total) if total else None
            if self._handle is not None:
                self._handle.update(_HTML(self._html(progress, total, fraction, message)))
            else:
                self._write(self._line(progress, total, fraction, message))

    def on_status(self, status: Any) -> None:
        """A callable for ``on_status``: draws a task's status and status message (a
        :class:`~raider_sync.TaskStatus`) in place of the bar."""
        text = status.status + (f": {status.status_message}" if status.status_message else "")
        with self._lock:
            self.updates += 1
            if self._handle is not None:
                self._handle.update(_HTML(f"<div>{_esc(self.label)} <em>{_esc(text)}</em></div>"))
            else:
                self._write(f"{self.label} {text}".strip())

    def _write(self, line: str) -> None:
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)

    def close(self) -> None:
        if self._handle is None and self.updates:
            self.stream.write("\n")
            self.stream.flush()

    def _line(self, progress, total, fraction, message) -> str:
        if fraction is None:
            bar = f"{progress:g}"
        else:
            filled = int(round(fraction * self.width))
            bar = "[" + "#" * filled + "." * (self.width - filled) + f"] {progress:g}/{total:g}"
        return f"{self.label} {bar} {message or ''}".strip()

    def _html(self, progress, total, fraction, message) -> str:
        value = f' value="{fraction:.3f}" max="1"' if fraction is not None else ""
        return (f"<div>{_esc(self.label)} <progress{value}></progress> "
                f"{_esc(progress)}{'/' + _esc(total) if total else ''} {_esc(message or '')}</div>")


class _HTML:
    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return self.text


def _display_handle():
    """An IPython display handle when running inside a notebook kernel, else None."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return None
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    ip = get_ipython()
    if ip is None or type(ip).__name__ != "ZMQInteractiveShell":
        return None
    return display(_HTML(""), display_id=True)


def __getattr__(name: str):
    # ToolResult lived here once; results.py is its home now, and it imports this module
    return _moved.moved_name(__name__, name)
