"""The import paths modules had before the package was grouped by layer still work for the
deprecation period: each imports, warns that it moved (naming the new path), and is the very
module object of its new path, so patches and isinstance checks reach what the package uses."""
import importlib
import sys
import warnings
from unittest import mock

import pytest

import raider_sync
from raider_sync import _moved
from raider_sync.client import server as server_module
from raider_sync.client.server import McpServer


def _fresh_import(old: str):
    """Import ``old`` as if for the first time in this process; returns (module, warnings).
    What was in sys.modules under the old path is put back afterwards."""
    parent = old.rpartition(".")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module(parent)  # an old parent package warns about itself, not here
    saved = sys.modules.pop(old, None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
    finally:
        if saved is not None:
            sys.modules[old] = saved
        else:
            sys.modules.pop(old, None)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_path_imports_warns_and_is_the_new_module(old):
    new = _moved.MOVED[old]
    module, caught = _fresh_import(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new
    assert [str(w.message).split(";")[0] for w in caught] == [f"{old} has moved to {new}"]
    assert caught[0].filename == __file__ or caught[0].filename.endswith("__init__.py")


def test_a_module_under_an_old_package_path_is_found_at_its_new_place():
    assert _moved.new_name("raider_sync.eras.anything") == "raider_sync.client.eras.anything"
    assert _moved.new_name("raider_sync.config") is None


def test_a_patch_through_an_old_path_reaches_the_new_module():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with mock.patch("raider_sync.server.open_transport") as open_transport:
            assert server_module.open_transport is open_transport
        from raider_sync.server import McpServer as old
    assert old is McpServer and isinstance(McpServer.__new__(McpServer), old)


def test_an_old_module_name_is_an_attribute_of_the_package():
    sys.modules.pop("raider_sync.hub", None)
    vars(raider_sync).pop("hub", None)  # set by an earlier import of the old path
    with pytest.warns(DeprecationWarning, match="raider_sync.hub has moved to raider_sync.client.hub"):
        assert raider_sync.hub is importlib.import_module("raider_sync.client.hub")
    with pytest.raises(AttributeError, match="no_such_thing"):
        raider_sync.no_such_thing  # noqa: B018


def test_python_dash_m_on_an_old_path_runs_the_module(tmp_path):
    """``python -m raider_sync.demo`` (the path in many .mcp.json files) still serves."""
    from raider_sync import McpConfig
    config = McpConfig.from_dict({"mcpServers": {"demo": {
        "command": sys.executable, "args": ["-m", "raider_sync.demo"], "cwd": str(tmp_path)}}})
    with McpServer(config.server("demo")) as server:
        assert "mcp__demo__add" in [tool["name"] for tool in server.list_tools(timeout=60)]


@pytest.mark.parametrize("module, name", sorted(_moved.MOVED_NAMES))
def test_a_name_that_moved_out_of_a_module_is_handed_on_without_a_warning(module, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = getattr(importlib.import_module(module), name)
    assert old is getattr(importlib.import_module(_moved.MOVED_NAMES[module, name]), name)
    with pytest.raises(AttributeError, match="no_such_name"):
        importlib.import_module(module).no_such_name  # noqa: B018
