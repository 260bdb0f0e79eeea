"""``raider-sync login SERVER`` and ``raider-sync logout SERVER``.

login runs the server's OAuth flow now and keeps the token in the file store
(``$RAIDER_SYNC_OAUTH_DIR``), where every later run finds it; logout forgets the server's
registration and tokens. Exit codes: 0 done, 1 the flow failed, 2 bad usage or configuration.
"""
from __future__ import annotations

import sys
from typing import Callable

from ..auth.consent import Consent, browser_consent, device_consent, paste_consent, redirect_consent
from ..auth.oauth import OAuth
from ..errors import AuthError, ConfigError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
CONSENTS: dict[str, Callable[..., Consent]] = {
    "browser": browser_consent, "paste": paste_consent, "device": device_consent,
    "redirect": redirect_consent}


def register(sub) -> None:
    for name, run, text in (("login", run_login, "authorize access to an OAuth-protected server"),
                            ("logout", run_logout, "forget a server's OAuth tokens")):
        parser = sub.add_parser(name, help=text, description=text)
        parser.add_argument("server", help="the server's name in the config")
        parser.add_argument("--config", metavar="FILE",
                            help="an .mcp.json (default ./.mcp.json)")
        parser.set_defaults(run=run)
        if name == "login":
            parser.add_argument(
                "--consent", choices=sorted(CONSENTS), default="browser",
                help="browser: open the system browser, with a loopback listener (default); "
                     "paste: print the URL and paste back where you land (SSH); device: a code "
                     "to enter on any device, when the server offers it; redirect: for servers "
                     "that approve at once")
            parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                                help="seconds the whole flow may take (default 300)")


def _auth(args, **options) -> OAuth:
    from .common import load_config
    spec = load_config(args.config).server(args.server)
    if spec.transport not in ("http", "sse"):
        raise ConfigError(f"{spec.name!r} is a {spec.transport} server; only http and sse "
                          f"servers use OAuth")
    return OAuth.for_spec(spec, automatic=False, **options)


def run_login(args) -> int:
    try:
        auth = _auth(args, consent=CONSENTS[args.consent](timeout=args.timeout))
    except ConfigError as exc:
        print(f"raider-sync: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        auth.login(timeout=args.timeout)
    except AuthError as exc:
        print(f"raider-sync: login to {args.server} failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        auth.close()
    where = getattr(auth.store, "directory", None)
    print(f"Authorized {args.server}" + (f"; the token is kept in {where}" if where else ""))
    return EXIT_OK


def run_logout(args) -> int:
    try:
        _auth(args).logout()
    except ConfigError as exc:
        print(f"raider-sync: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"Logged out of {args.server}")
    return EXIT_OK
