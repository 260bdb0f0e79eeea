"""One WSGI app mounted inside another at a path prefix, for an app that has no dispatcher of
its own (Django's WSGI handler, say), so that a ToolServer's MCP endpoint lives inside it:

    application = mount(get_wsgi_application(), "/mcp", wsgi_app(tools, path="/"))

A request whose path is the prefix, or lies below it (``/mcp``, ``/mcp/``, ``/mcp/x``, never
``/mcpx``), goes to the mounted app with the prefix moved from ``PATH_INFO`` to the end of
``SCRIPT_NAME``, as PEP 3333 has a dispatcher do (so the mounted app sees ``PATH_INFO`` ""
or "/" at the prefix itself: give :func:`~.serving_http.wsgi_app` ``path="/"``). Every other
request goes to the outer app untouched. The answer is the mounted app's own iterable, passed
on as it is, so an event stream is sent as it is produced and closed by the server as usual.

Flask apps have ``werkzeug.middleware.dispatcher.DispatcherMiddleware``, which does the same.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

WsgiApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]


def mount(app: WsgiApp, prefix: str, mounted: WsgiApp) -> "Mounted":
    """``app`` with ``mounted`` answering at ``prefix`` and below; see :class:`Mounted`.
    Raises ValueError for a ``prefix`` that does not begin with "/", ends with "/" (the root
    "/" included) or holds "?" or "#", and TypeError when an app is not callable."""
    return Mounted(app, prefix, mounted)


class Mounted:
    """The WSGI app of :func:`mount`. It adds no thread and no lock: each request is handed to
    one of the two apps in the calling thread, and blocks as that app does."""

    def __init__(self, app: WsgiApp, prefix: str, mounted: WsgiApp):
        if not isinstance(prefix, str) or not prefix.startswith("/") or prefix.endswith("/") \
                or "?" in prefix or "#" in prefix:
            raise ValueError(f"prefix must begin with '/' and not end with it, without '?' or "
                             f"'#' (a path such as '/mcp'), not {prefix!r}")
        for name, value in (("app", app), ("mounted", mounted)):
            if not callable(value):
                raise TypeError(f"{name} must be a WSGI app (a callable), not {value!r}")
        self.app = app
        self.prefix = prefix
        self.mounted = mounted
        # PEP 3333: PATH_INFO holds the path's bytes decoded as latin-1, and browsers and
        # clients send a path's other characters as UTF-8
        self._wire = prefix.encode("utf-8").decode("latin-1")

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or ""
        if path != self._wire and not path.startswith(self._wire + "/"):
            return self.app(environ, start_response)
        # a copy: the outer app's environ is not changed under any middleware that kept it
        inner = dict(environ)
        inner["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "").rstrip("/") + self._wire
        inner["PATH_INFO"] = path[len(self._wire):]
        return self.mounted(inner, start_response)

    def __repr__(self) -> str:
        return f"<Mounted {self.mounted!r} at {self.prefix!r} in {self.app!r}>"
