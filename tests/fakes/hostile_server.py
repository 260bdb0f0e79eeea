"""A minimal MCP stdio server that writes what a real server will not write on demand.

    python hostile_server.py MODE[,MODE...]

Modes:
  noise         write two lines of plain text to stdout at startup, and never answer
  silent        never answer anything (after writing MARK_FILE, if that variable is set)
Tools:
  echo          answers {"text": message}
  deep          writes a line nested DEPTH (argument, default 100000) levels deep, then answers
  huge          writes a JSON line of SIZE bytes (argument) in 1 MiB pieces, then answers;
                a reader that gave up on it closes the pipe, which ends the server
"""
import json
import os
import sys

MODES = set((sys.argv[1] if len(sys.argv) > 1 else "").split(","))
out = sys.stdout.buffer


def send(message) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def text(msg_id, value: str) -> None:
    send({"jsonrpc": "2.0", "id": msg_id,
          "result": {"content": [{"type": "text", "text": value}]}})


def huge_line(size: int) -> None:
    piece = b"x" * (1 << 20)
    out.write(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "')
    left = size
    while left > 0:
        out.write(piece[:left])
        left -= len(piece)
    out.write(b'"}}\n')
    out.flush()


def call(msg_id, params) -> None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        text(msg_id, str(args.get("message", "")))
    elif name == "deep":
        depth = int(args.get("depth", 100000))
        out.write(b"[" * depth + b"]" * depth + b"\n")
        out.write(b'{"a":' * depth + b"1" + b"}" * depth + b"\n")
        text(msg_id, "after the deep lines")
    elif name == "huge":
        huge_line(int(args["size"]))
        text(msg_id, "after the huge line")
    else:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": "no tool"}})


def main() -> None:
    if os.environ.get("MARK_FILE"):
        with open(os.environ["MARK_FILE"], "w") as mark:
            mark.write("started")
    if "noise" in MODES:
        out.write(b"Starting the server v1.2 ...\nlistening on stdio\n")
        out.flush()
    for line in sys.stdin.buffer:
        if "noise" in MODES or "silent" in MODES:
            continue
        message = json.loads(line)
        method, msg_id = message.get("method"), message.get("id")
        if msg_id is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": [
                {"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "deep", "huge")]}})
        elif method == "tools/call":
            call(msg_id, message.get("params") or {})
        else:
            send({"jsonrpc": "2.0", "id": msg_id, "result": {}})


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        os._exit(0)
