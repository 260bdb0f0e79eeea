"""The command line's call --save and --max-tokens, and templates, against real servers."""
import base64
import json
import os

import pytest

from cli.test_cli_commands import cli


@pytest.fixture
def everything_dir(tmp_path, everything_js):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "everything": {"command": "node", "args": [everything_js, "stdio"]}}}))
    return str(tmp_path)


def test_call_saves_image_and_resource_blocks(everything_dir, tmp_path):
    out = tmp_path / "out"
    done = cli("call", "mcp__everything__get-tiny-image", "--save", str(out), cwd=everything_dir)
    assert done.returncode == 0, done.stderr
    [image] = [name for name in os.listdir(out) if name.endswith(".png")]
    assert (out / image).read_bytes().startswith(b"\x89PNG")
    assert f"[image block saved to {out / image}]" in done.stdout
    assert f"saved {out / image}" in done.stderr
    done = cli("call", "mcp__everything__get-resource-reference", "--json",
               "--args", '{"resourceType": "Text", "resourceId": 3}', "--save", str(out),
               cwd=everything_dir)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    [block] = [b for b in result["content"] if b["type"] == "resource"]
    [saved] = [name for name in os.listdir(out) if name != image]
    assert (out / saved).read_text() == block["resource"]["text"]
    assert saved.startswith(f"{result['content'].index(block)}-")


def test_save_names_stay_inside_the_folder(tmp_path):
    from raider_sync.cli.tool_results import save_blocks
    blob = base64.b64encode(b"secret").decode()
    saved = save_blocks({"content": [
        {"type": "text", "text": "x"},
        {"type": "resource", "resource": {"uri": "file:///etc/../../passwd", "blob": blob}},
        {"type": "resource", "resource": {"uri": "demo://x/..", "text": "t",
                                          "mimeType": "text/plain"}},
        {"type": "audio", "data": blob, "mimeType": "audio/mpeg"}]}, str(tmp_path / "o"))
    assert sorted(os.path.basename(p) for p in saved.values()) == \
        ["1-passwd.bin", "2-resource.txt", "3-audio.mp3"]
    assert all(os.path.dirname(p) == str(tmp_path / "o") for p in saved.values())


def test_a_bad_base64_block_is_a_clear_error(tmp_path):
    from raider_sync import ConfigError
    from raider_sync.cli.tool_results import save_blocks
    with pytest.raises(ConfigError, match="--save: a block's base64 data is invalid"):
        save_blocks({"content": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]},
                    str(tmp_path))


def test_max_tokens_limits_the_text_passed_on(tmp_path):
    done = cli("call", "mcp__demo__echo", "--args", json.dumps({"message": "y" * 400}),
               "--max-tokens", "10", cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("y" * 40 + "\n") and "y" * 41 not in done.stdout
    assert "[Output truncated" in done.stdout
    done = cli("call", "mcp__demo__echo", "--max-tokens", "0", cwd=str(tmp_path))
    assert done.returncode == 2 and "--max-tokens: must be positive" in done.stderr


def test_templates_of_a_server(everything_dir, tmp_path):
    done = cli("templates", "everything", cwd=everything_dir)
    assert done.returncode == 0, done.stderr
    assert "demo://resource/dynamic/text/{resourceId}" in done.stdout
    assert done.stdout.startswith("URI TEMPLATE")
    done = cli("templates", "everything", "--json", cwd=everything_dir)
    assert {t["name"] for t in json.loads(done.stdout)} == {"Dynamic Text Resource",
                                                            "Dynamic Blob Resource"}
    elsewhere = tmp_path / "no-config"
    elsewhere.mkdir()
    done = cli("templates", "demo", cwd=str(elsewhere))
    assert done.returncode == 0 and "demo has no resource templates" in done.stdout
    done = cli("templates", "nope", cwd=str(elsewhere))
    assert done.returncode == 2 and "no MCP server named 'nope'" in done.stderr
