"""A stateless-era (2026-07-28) stdio server with faults real servers will not produce.

    python modern_fake.py MODE

Modes:
  garbage      answer server/discover with a string; initialize works (a handshake server)
  lies         answer server/discover as a stateless server, then refuse every other request
               as a handshake server would (-32000 "Server not initialized")
  loop         tools/call "ask" answers input_required for ever
  listen-ends  each subscriptions/listen is acknowledged, then ended at once with an error
  mismatch     the first tools/call is refused with -32020, the later ones answered
  plain        a well-behaved stateless server; resources/read of any URI answers how many
               reads came so far, fresh for a minute (ttlMs)
Tools: echo. Every request is recorded; the tool "seen" returns them as JSON.
"""
import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
VERSION = "2026-07-28"
seen = []
calls = {"tools/call": 0}
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}},
         {"name": "ask", "inputSchema": {"type": "object"}},
         {"name": "seen", "inputSchema": {"type": "object"}}]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(msg_id, value):
    send({"jsonrpc": "2.0", "id": msg_id, "result": value})


def error(msg_id, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": msg_id, "error": err})


def handle(msg):
    method, msg_id = msg.get("method"), msg.get("id")
    params = msg.get("params") or {}
    seen.append({"method": method, "params": params})
    if msg_id is None:
        return
    if method == "server/discover":
        if MODE == "garbage":
            return result(msg_id, "hello, I am a server")
        return result(msg_id, {"supportedVersions": [VERSION], "capabilities": {
            "tools": {"listChanged": True}, "resources": {}}, "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-fake",
                                                            "version": "1"}}})
    if method == "initialize":
        if MODE == "garbage":
            return result(msg_id, {"protocolVersion": params.get("protocolVersion"),
                                   "capabilities": {"tools": {}},
                                   "serverInfo": {"name": "garbage-fake", "version": "1"}})
        return error(msg_id, -32022, "Unsupported protocol version",
                     {"supported": [VERSION], "requested": params.get("protocolVersion")})
    if MODE == "lies":
        return error(msg_id, -32000, "Server not initialized")
    if method == "tools/list":
        return result(msg_id, {"tools": TOOLS})
    if method == "resources/read":
        calls["reads"] = calls.get("reads", 0) + 1
        return result(msg_id, {"ttlMs": 60000, "cacheScope": "private", "contents": [
            {"uri": params.get("uri"), "text": f"read {calls['reads']}"}]})
    if method == "subscriptions/listen":
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"notifications": params.get("notifications") or {},
                         "_meta": {"io.modelcontextprotocol/subscriptionId": msg_id}}})
        if MODE == "listen-ends":
            return error(msg_id, -32603, "listen stream ended")
        return None
    if method == "tools/call":
        calls["tools/call"] += 1
        name = params.get("name")
        if MODE == "mismatch" and calls["tools/call"] == 1:
            return error(msg_id, -32020, "Header mismatch")
        if name == "ask" and MODE != "loop" and "inputResponses" in params:
            answer = {"responses": params["inputResponses"], "state": params.get("requestState")}
            return result(msg_id, {"content": [{"type": "text", "text": json.dumps(answer)}]})
        if name == "ask" or (MODE == "loop" and name != "seen"):
            return result(msg_id, {"resultType": "input_required", "requestState": "again",
                                   "inputRequests": {"r": {"method": "roots/list",
                                                           "params": {}}}})
        if name == "seen":
            return result(msg_id, {"content": [{"type": "text", "text": json.dumps(seen)}]})
        return result(msg_id, {"content": [{"type": "text", "text": "echo"}]})
    return error(msg_id, -32601, "Method not found")


def main():
    for line in sys.stdin:
        line = line.strip()
        if line:
            handle(json.loads(line))


if __name__ == "__main__":
    main()
