"""How a person approves access: each strategy turns an authorization URL into the URL the
authorization server redirected back to (which carries ``code``, ``state`` and ``iss``).

- :class:`LoopbackConsent` (``browser_consent()``): a loopback listener (``wsgiref``) on
  ``callbackPort`` or a free port serves ``/callback``; the system browser opens the URL, which
  is also printed (a link in a notebook).
- :class:`PasteConsent` (``paste_consent()``): prints the URL and reads the landing URL the
  person pastes back (SSH sessions, remote notebooks).
- :class:`RedirectConsent` (``redirect_consent()``): GETs the URL without following redirects
  and reads ``Location`` (identity providers that approve at once, tests).
- :class:`DeviceConsent` (``device_consent()``): the device authorization grant (RFC 8628) when
  the authorization server offers it: the person sees a code and a URL, nothing to paste.

A plain callable ``fn(authorization_url) -> redirected_url`` works too. Each blocks until the
redirect came, at most ``timeout`` seconds, and raises AuthError(step="consent") otherwise.
"""
from __future__ import annotations

import html
import sys
import threading
import webbrowser
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable
from urllib.parse import urljoin
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import requests

from ..errors import AuthError

STEP = "consent"
#: seconds a person has to approve
CONSENT_TIMEOUT = 300.0


def show_url(url: str, what: str = "Open this URL to authorize") -> None:
    """Print ``url`` to stderr, and as a link when running in a notebook."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
        if get_ipython() is not None and getattr(get_ipython(), "kernel", None) is not None:
            display(HTML(f'{html.escape(what)}: <a href="{html.escape(url)}" '
                         f'target="_blank">{html.escape(url)}</a>'))
            return
    except ImportError:
        pass
    print(f"{what}:\n  {url}", file=sys.stderr, flush=True)


class Consent:
    """A consent strategy. ``prepare(port)`` returns the redirect URI (and may start a
    listener); ``__call__(url, timeout)`` returns the redirected URL; ``close()`` ends what
    ``prepare`` started. ``person`` says whether a person takes part."""

    person = True

    def __init__(self, timeout: float = CONSENT_TIMEOUT):
        self.timeout = timeout

    def prepare(self, port: int | None) -> str:
        return f"http://localhost:{port}/callback" if port else "http://localhost/callback"

    def __call__(self, url: str, timeout: float | None = None) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass


class CallableConsent(Consent):
    """A plain ``fn(authorization_url) -> redirected_url`` as a strategy."""

    def __init__(self, fn: Callable[[str], str]):
        super().__init__()
        self.fn = fn

    def __call__(self, url: str, timeout: float | None = None) -> str:
        return self.fn(url)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _Server(WSGIServer):
    allow_reuse_address = False  # a busy callbackPort is an error, not shared


class LoopbackConsent(Consent):
    """A loopback listener on ``/callback`` plus the system browser (``open_browser(url)``,
    default :func:`webbrowser.open`)."""

    def __init__(self, timeout: float = CONSENT_TIMEOUT,
                 open_browser: Callable[[str], object] | None = None):
        super().__init__(timeout)
        self.open_browser = open_browser if open_browser is not None else webbrowser.open
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._landed: Future = Future()
        self.redirect_uri: str | None = None

    def prepare(self, port: int | None) -> str:
        self.close()
        self._landed = Future()
        try:
            self._server = make_server("127.0.0.1", port or 0, self._app, server_class=_Server,
                                       handler_class=_Quiet)
        except OSError as exc:
            raise AuthError(f"{STEP}: cannot listen on localhost:{port or 0} for the "
                            f"redirect: {exc.strerror or exc}", step=STEP) from exc
        bound = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.2,),
                                        name="raider-oauth-callback", daemon=True)
        self._thread.start()
        self.redirect_uri = f"http://localhost:{bound}/callback"
        return self.redirect_uri

    def _app(self, environ, start_response):
        if environ.get("PATH_INFO") != "/callback":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        query = environ.get("QUERY_STRING", "")
        if not self._landed.done():
            self._landed.set_result(f"{self.redirect_uri}?{query}")
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [b"<p>raider_sync: authorization received; you may close this tab.</p>"]

    def __call__(self, url: str, timeout: float | None = None) -> str:
        if self._server is None:
            raise AuthError(f"{STEP}: the loopback listener is not running", step=STEP)
        show_url(url)
        try:
            self.open_browser(url)
        except Exception:  # noqa: BLE001 - no browser: the printed URL still works
            pass
        bound = self.timeout if timeout is None else min(timeout, self.timeout)
        try:
            return self._landed.result(bound)
        except FutureTimeout:
            raise AuthError(f"{STEP}: nobody approved within {bound:g} s", step=STEP) from None

    def close(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)


class PasteConsent(Consent):
    """Print the URL; read the URL the browser landed on (``read(prompt)``, default input)."""

    def __init__(self, timeout: float = CONSENT_TIMEOUT,
                 read: Callable[[str], str] | None = None, port: int | None = None):
        super().__init__(timeout)
        self.read = read if read is not None else input
        self.port = port

    def prepare(self, port: int | None) -> str:
        return super().prepare(port or self.port)

    def __call__(self, url: str, timeout: float | None = None) -> str:
        show_url(url, "Open this URL, approve, then paste the address you land on")
        try:
            landed = self.read("Redirected URL: ").strip()
        except EOFError:
            raise AuthError(f"{STEP}: no redirected URL was pasted", step=STEP) from None
        if not landed:
            raise AuthError(f"{STEP}: no redirected URL was pasted", step=STEP)
        return landed


class RedirectConsent(Consent):
    """GET the authorization URL without following redirects and return ``Location`` once it
    leads to the redirect URI. Redirects elsewhere on the way (an approval step of the
    server's own) are followed, with their cookies, at most ``hops`` times; the redirect URI
    itself is never fetched."""

    person = False

    def __init__(self, timeout: float = 30.0, session: requests.Session | None = None,
                 hops: int = 10):
        super().__init__(timeout)
        self.session = session
        self.hops = hops
        self.redirect_uri: str | None = None

    def prepare(self, port: int | None) -> str:
        self.redirect_uri = super().prepare(port)
        return self.redirect_uri

    def __call__(self, url: str, timeout: float | None = None) -> str:
        bound = self.timeout if timeout is None else min(timeout, self.timeout)
        http = self.session or requests.Session()
        try:
            for _ in range(self.hops):
                try:
                    response = http.get(url, allow_redirects=False,
                                        timeout=(min(bound, 10), bound))
                    response.close()
                except requests.RequestException as exc:
                    raise AuthError(f"{STEP}: the authorization server could not be reached: "
                                    f"{type(exc).__name__}", step=STEP) from exc
                location = response.headers.get("location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise AuthError(f"{STEP}: the authorization server answered HTTP "
                                    f"{response.status_code} instead of redirecting (it wants a "
                                    f"person: use browser_consent or paste_consent)", step=STEP)
                url = urljoin(url, location)
                if self.redirect_uri is None or url.split("?")[0] == self.redirect_uri:
                    return url
            raise AuthError(f"{STEP}: more than {self.hops} redirects before the redirect "
                            f"URI", step=STEP)
        finally:
            if self.session is None:
                http.close()


class DeviceConsent(Consent):
    """The device authorization grant: ``show(verification_uri, user_code, complete_uri)``
    tells the person where to go (default: printed). Falls back to ``fallback`` (default
    paste-back) when the authorization server offers no device endpoint."""

    def __init__(self, timeout: float = CONSENT_TIMEOUT,
                 show: Callable[[str, str, str | None], object] | None = None,
                 fallback: Consent | None = None):
        super().__init__(timeout)
        self.show = show if show is not None else _show_code
        self.fallback = fallback if fallback is not None else PasteConsent(timeout)

    def prepare(self, port: int | None) -> str:
        return self.fallback.prepare(port)

    def __call__(self, url: str, timeout: float | None = None) -> str:
        return self.fallback(url, timeout)

    def close(self) -> None:
        self.fallback.close()


def _show_code(uri: str, code: str, complete: str | None) -> None:
    show_url(complete or uri, f"To authorize, enter the code {code} at")


def browser_consent(timeout: float = CONSENT_TIMEOUT,
                    open_browser: Callable[[str], object] | None = None) -> LoopbackConsent:
    """A loopback listener plus the system browser."""
    return LoopbackConsent(timeout, open_browser)


def paste_consent(timeout: float = CONSENT_TIMEOUT,
                  read: Callable[[str], str] | None = None) -> PasteConsent:
    """Print the URL, read back the redirected one."""
    return PasteConsent(timeout, read)


def redirect_consent(timeout: float = 30.0,
                     session: requests.Session | None = None) -> RedirectConsent:
    """Follow no redirect; read ``Location`` (auto-approving servers)."""
    return RedirectConsent(timeout, session)


def device_consent(timeout: float = CONSENT_TIMEOUT,
                   show: Callable[[str, str, str | None], object] | None = None) -> DeviceConsent:
    """The device authorization grant (RFC 8628), else paste-back."""
    return DeviceConsent(timeout, show)


def as_consent(value) -> Consent | None:
    if value is None or isinstance(value, Consent):
        return value
    if callable(value):
        return CallableConsent(value)
    raise TypeError(f"consent must be a Consent or a callable, not {type(value).__name__}")
