"""The command line on a terminal, driven with pexpect: what a person sees."""
import json
import sys

import pexpect
import pytest

EXPECT_TIMEOUT = 30


@pytest.fixture
def spawn(tmp_path):
    children = []

    def start(*args: str) -> pexpect.spawn:
        child = pexpect.spawn(sys.executable, ["-m", "raider_sync", *args], cwd=str(tmp_path),
                              encoding="utf-8", timeout=EXPECT_TIMEOUT, dimensions=(24, 200))
        children.append(child)
        return child

    yield start
    for child in children:
        child.close(force=True)


def test_servers_shows_a_live_status_line_then_the_table(spawn, tmp_path):
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]},
        "broken": {"command": "/nonexistent/raider-demo"}}}))
    child = spawn("servers")
    child.expect("starting: demo . broken .")       # the line appears while they start
    child.expect("broken ✗")                         # a failure shows as it happens
    child.expect(r"NAME\s+TRANSPORT\s+STATUS")       # then the table, after the line is erased
    child.expect(r"demo\s+stdio\s+connected\s+4")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1                     # one server failed


def test_json_output_has_no_status_line(spawn):
    child = spawn("servers", "--json")
    child.expect(pexpect.EOF)
    output = child.before
    assert "starting:" not in output
    assert json.loads(output)[0]["status"] == "connected"


def test_serve_answers_a_client_typing_json(spawn):
    child = spawn("serve")
    child.setecho(False)
    child.sendline(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "person", "version": "1"}}}))
    child.expect(r'\{"jsonrpc":"2.0","id":1,"result":\{"protocolVersion":"2025-06-18"')
    child.sendline(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}))
    child.expect(r'"id":2,"result":\{"content":\[\{"type":"text","text":"3"\}\]')
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_call_shows_progress_on_a_terminal(spawn):
    child = spawn("call", "mcp__demo__wait", "--args", '{"seconds": 0.3, "steps": 3}')
    child.expect(r"mcp__demo__wait \[#+\.*\] 1/3 step 1 of 3")
    child.expect(r"\[#{30}\] 3/3 step 3 of 3")
    child.expect(r"waited \d+\.\d\d s")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
