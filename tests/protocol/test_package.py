"""raider_sync.protocol holds the wire rules with no I/O and no threads, names every error
code once, and still exports what the single module ``raider_sync.protocol`` did."""
from __future__ import annotations

import ast
from pathlib import Path

import raider_sync.protocol as protocol
from raider_sync.protocol import codes

PACKAGE = Path(__file__).resolve().parents[2] / "raider_sync"

#: the names raider_sync.protocol had as one module
NAMES = ["CLIENT_PROTOCOL_VERSION", "KNOWN_PROTOCOL_VERSIONS", "MAX_PAGES", "REPEATABLE_METHODS",
         "STATELESS_PROTOCOL_VERSION", "STATELESS_REASON", "UNSUPPORTED_PROTOCOL_VERSION",
         "check_initialize_result", "fetch_all_pages", "initialize_params",
         "translate_initialize_error"]

#: what a module of the wire rules may import: no sockets, processes, threads or clocks of
#: its own (pages.py reads the monotonic clock for the caller's one deadline)
ALLOWED = {"__future__", "base64", "binascii", "dataclasses", "datetime", "enum", "hashlib",
           "hmac", "json", "re", "time", "typing"}


def test_every_name_of_the_old_module_is_still_exported():
    assert sorted(protocol.__all__) == NAMES
    for name in NAMES:
        assert getattr(protocol, name) is not None
    assert protocol.UNSUPPORTED_PROTOCOL_VERSION == codes.UNSUPPORTED_VERSION == -32022


def test_the_wire_rules_do_no_io_and_start_no_threads():
    for path in (PACKAGE / "protocol").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.ImportFrom):  # within the package: errors, or here
                assert node.level == 1 or node.module == "errors", (path.name, node.module)
                continue
            else:
                continue
            for name in names:
                assert name.split(".")[0] in ALLOWED, f"{path.name} imports {name}"


def _code_literals(path: Path) -> list[int]:
    """The negative integers of JSON-RPC's reserved range written in ``path``'s code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                and isinstance(node.operand, ast.Constant)
                and isinstance(node.operand.value, int)
                and 32000 <= node.operand.value <= 32768):
            found.append(-node.operand.value)
    return found


def test_every_error_code_is_written_out_once_in_protocol_codes():
    written = {str(path.relative_to(PACKAGE)): _code_literals(path)
               for path in PACKAGE.rglob("*.py")}
    outside = {path: found for path, found in written.items()
               if found and path != "protocol/codes.py"}
    assert outside == {}
    in_codes = written["protocol/codes.py"]
    assert len(in_codes) == len(set(in_codes))  # each code named once (aliases name a name)
