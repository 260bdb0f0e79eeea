"""The import paths modules had before the package was grouped by layer, and what keeps them
working for a deprecation period (they go in a later minor release; docs/architecture.md).

``import raider_sync.server`` still works: it warns once per process (a DeprecationWarning
naming ``raider_sync.client.server``) and gives the very module object of the new path, so
``mock.patch("raider_sync.server.X")`` patches what the package uses and isinstance checks
hold. ``python -m raider_sync.demo`` runs the module of its new path. A module under an old
package path (``raider_sync.eras.NAME``) is looked for under the package's new path.

:func:`install` puts :class:`OldPaths` first on ``sys.meta_path``; ``raider_sync/__init__.py``
calls it before anything else is imported.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings

#: old dotted path -> new dotted path, for every module that moved
MOVED: dict[str, str] = {
    "raider_sync.auth.cli": "raider_sync.cli.login_cli",
    "raider_sync.futures": "raider_sync.threads.futures",
    "raider_sync.timer": "raider_sync.threads.timer",
    "raider_sync.workers": "raider_sync.threads.workers",
    "raider_sync.interrupts": "raider_sync.threads.interrupts",
    "raider_sync.server": "raider_sync.client.server",
    "raider_sync.lifecycle": "raider_sync.client.lifecycle",
    "raider_sync.listings": "raider_sync.client.catalog",
    "raider_sync.surface": "raider_sync.client.surface",
    "raider_sync.capabilities": "raider_sync.client.capabilities",
    "raider_sync.telemetry": "raider_sync.client.telemetry",
    "raider_sync.calls": "raider_sync.client.calls",
    "raider_sync.content": "raider_sync.client.content",
    "raider_sync.results": "raider_sync.client.results",
    "raider_sync.notebook": "raider_sync.client.notebook",
    "raider_sync.launch": "raider_sync.client.launch",
    "raider_sync.budget": "raider_sync.client.budget",
    "raider_sync.filters": "raider_sync.client.filters",
    "raider_sync.skills": "raider_sync.client.skills",
    "raider_sync.hub": "raider_sync.client.hub",
    "raider_sync.eras": "raider_sync.client.eras",
    "raider_sync.eras.cache": "raider_sync.client.eras.cache",
    "raider_sync.eras.era_seam": "raider_sync.client.eras.era_seam",
    "raider_sync.eras.listen": "raider_sync.client.eras.listen",
    "raider_sync.eras.liveness": "raider_sync.client.eras.liveness",
    "raider_sync.eras.modern": "raider_sync.client.eras.modern",
    "raider_sync.eras.negotiate": "raider_sync.client.eras.negotiate",
    "raider_sync.eras.rounds": "raider_sync.client.eras.rounds",
    "raider_sync.eras.verdicts": "raider_sync.client.eras.verdicts",
    "raider_sync.eras.served": "raider_sync.serve.served",
    "raider_sync.toolserver": "raider_sync.serve.toolserver",
    "raider_sync.serving": "raider_sync.serve.serving",
    "raider_sync.serving_http": "raider_sync.serve.serving_http",
    "raider_sync.serving_streams": "raider_sync.serve.serving_streams",
    "raider_sync.inprocess": "raider_sync.serve.inprocess",
    "raider_sync.resources": "raider_sync.serve.resources",
    "raider_sync.client_cli": "raider_sync.cli.client_cli",
    "raider_sync.serve_cli": "raider_sync.cli.serve_cli",
    "raider_sync.demo_run": "raider_sync.cli.demo_run",
    "raider_sync.demo": "raider_sync.cli.demo",
    "raider_sync.transports.http_headers": "raider_sync.protocol.http_headers",
    "raider_sync.transports.sse_events": "raider_sync.protocol.sse_events",
}

#: old package -> new package, for modules under it that MOVED does not name
MOVED_PACKAGES: dict[str, str] = {"raider_sync.eras": "raider_sync.client.eras"}

#: (module, name) -> the module that defines it now, for names that moved out of a module that
#: stays; they are handed on without a warning, as they were before the package was grouped
MOVED_NAMES: dict[tuple[str, str], str] = {
    ("raider_sync.client.notebook", "ToolResult"): "raider_sync.client.results",
    **{("raider_sync.transports.base", name): "raider_sync.protocol.messages" for name in (
        "DEFAULT_MAX_MESSAGE_SIZE", "encode_message", "looks_like_jsonrpc", "answers")},
    **{("raider_sync.jsonrpc", name): "raider_sync.protocol.codes" for name in (
        "INVALID_PARAMS", "REQUEST_CANCELLED", "INVALID_REQUEST")},
    # imported by the JSON-RPC session before its parts moved to raider_sync.session
    **{("raider_sync.jsonrpc", name): "raider_sync.protocol.messages" for name in (
        "error_reply", "is_response", "request_problem", "valid_id")},
    **{("raider_sync.jsonrpc", name): "raider_sync.errors" for name in (
        "McpError", "TransportError")},
    **{("raider_sync.jsonrpc", name): "raider_sync.transports.base" for name in (
        "RequestFailed", "StreamHealth")},
    **{("raider_sync.jsonrpc", name): "raider_sync.threads.workers" for name in (
        "Lane", "Workers")},
    ("raider_sync.jsonrpc", "Renewal"): "raider_sync.threads.renewal",
    ("raider_sync.jsonrpc", "timer"): "raider_sync.threads",
    **{("raider_sync.client.eras.modern", name): "raider_sync.protocol.codes" for name in (
        "HEADER_MISMATCH", "MISSING_CAPABILITY")},
}

#: old top-level names, reachable as attributes of the package (``raider_sync.server``)
TOP_LEVEL = {old.rsplit(".", 1)[1]: old for old in MOVED if old.count(".") == 1}


def new_name(old: str) -> str | None:
    """The new dotted path of the old one ``old``, or None when it did not move."""
    if old in MOVED:
        return MOVED[old]
    package, _, name = old.rpartition(".")
    if package in MOVED_PACKAGES:
        return f"{MOVED_PACKAGES[package]}.{name}"
    return None


class OldPaths(importlib.abc.MetaPathFinder):
    """Finds an old path and hands out the module of its new one (see the module docstring).
    Raises nothing of its own: a new path that cannot be imported fails as it would."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        if real is None:
            return None
        _warn(fullname, new)
        return importlib.machinery.ModuleSpec(
            fullname, _Alias(new), origin=real.origin,
            is_package=real.submodule_search_locations is not None)


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module object of ``new``."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # module_from_spec gave the module the old path's spec; it keeps its own
        module.__spec__ = self.spec

    def get_code(self, fullname):
        """What ``python -m OLD.PATH`` runs: the new path's module as ``__main__``, so its
        relative imports resolve from where it lives now."""
        return compile(f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', "
                       f"alter_sys=True)\n", f"<{fullname}, moved to {self.new}>", "exec")


def _warn(old: str, new: str) -> None:
    # stacklevel 3 is the line that imports: warnings skips the import machinery's own frames
    # between it and OldPaths.find_spec
    warnings.warn(f"{old} has moved to {new}; import it from there (the old path goes in a "
                  f"later minor release)", DeprecationWarning, stacklevel=3)


def install() -> None:
    """Put the old-path finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, OldPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, OldPaths())


def moved_name(module: str, name: str):
    """``module.name`` for a name that moved out of ``module`` (a module's ``__getattr__``).
    Raises AttributeError for any other name."""
    if (module, name) not in MOVED_NAMES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return getattr(importlib.import_module(MOVED_NAMES[module, name]), name)


def attribute(name: str):
    """``raider_sync.NAME`` for an old top-level module name (the package's ``__getattr__``):
    the module, imported through its old path so that it warns. Raises AttributeError for any
    other name."""
    if name not in TOP_LEVEL:
        raise AttributeError(f"module 'raider_sync' has no attribute {name!r}")
    return importlib.import_module(TOP_LEVEL[name])
