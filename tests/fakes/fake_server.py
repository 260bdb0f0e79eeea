"""A deliberately faulty MCP stdio server, for the faults real servers will not produce.

    python fake_server.py MODE[,MODE...]

Modes:
  garbage       print lines that are not JSON before every answer
  crash         the tool "crash" writes a last words line to stderr and exits 3 mid-call
  ignore-term   ignore SIGTERM and stdin EOF (must be SIGKILLed)
  ignore-eof    keep running after stdin closes (SIGTERM still ends it)
  chatty        write 120 numbered lines to stderr at startup
  grandchild    start `sleep 1000` in the background (same process group) at startup
  silent        never answer initialize
  deaf          never answer a request of a method it does not know (server/discover among
                them) instead of answering -32601; ping is answered
  deaf-until-initialize  answer no request before initialize (ping and server/discover
                among them)
  stateless     answer initialize as a 2026-07-28-only server (-32022)
  future        answer initialize with protocolVersion 2099-01-01
  paginate      list tools one per page
  collide       offer tools "a.b" and "a_b" (they normalise to one name), and "announce"
                (sends tools/list_changed)
  ask           send sampling/createMessage, ping, roots/list, elicitation/create and an
                unknown method to the client after initialized
  batch         answer tools/list inside a JSON-RPC batch (array)
  meta          tool results carry _meta with raider/ keys
  version=V     answer initialize with protocolVersion V
  early-changes send tools/list_changed before the answer to initialize, then pause 0.5 s
                (a change announced while the client is still starting)
  exit-at-start write "boom: cannot start" to stderr and exit 1 before reading anything
  notools       declare no tools capability and answer tools/list with -32601
  flaky-lists   answer the first prompts/list with an error, later ones normally
  lists         offer prompts and resources (a ui:// one and an mcp-app one among them);
                the tools add-prompt / add-resource grow them and send list_changed
  long-words    every stderr line starts with 65,000 characters, and the last words of
                "crash" end with no newline
  closers       offer the tools close-stdout (closes its stdout, keeps running) and
                close-stdin (answers, closes its stdin, then says so on stderr, keeps running)
  crash-once    offer read-once (readOnlyHint), idem-once (idempotentHint) and write-once
                (no hints): each counts its runs in a file of the folder
                $RAIDER_FAKE_RUNS and crashes the server on its first run (exit 3, mid-call),
                answering "NAME ran N times" after that
Tools: echo, crash (with "signal": N it kills itself with that signal instead), big (20 MB
  text), sleep (never answers), error (JSON-RPC error),
  answers (reports what the client answered to the "ask" requests), seen (every request and
  notification received so far, as JSON [{method, params}]), stall (says so on stderr, stops reading
  stdin and never answers), log (sends notifications/message with the level and data given).
"""
import json
import os
import signal
import subprocess
import sys
import time

MODES = set((sys.argv[1] if len(sys.argv) > 1 else "").split(","))
answers = {}
seen = []
LONG = "x" * 65000 if "long-words" in MODES else ""  # a log line's start with no end in sight
prompts = [{"name": "first", "description": "the first prompt",
            "arguments": [{"name": "who", "required": True}]}]
resources = [{"uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"},
             {"uri": "ui://widget", "name": "widget", "mimeType": "text/html"},
             {"uri": "file:///app.html", "name": "app", "mimeType": "text/html;profile=mcp-app"}]


def send(message):
    if "garbage" in MODES:
        sys.stdout.write("this is not json\n{broken\n")
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(msg_id, value):
    send({"jsonrpc": "2.0", "id": msg_id, "result": value})


def tools():
    names = ["echo", "crash", "big", "sleep", "error", "answers", "seen", "stall", "log"]
    if "lists" in MODES:
        names += ["add-prompt", "add-resource"]
    if "collide" in MODES:
        names += ["a.b", "a_b", "announce"]
    if "closers" in MODES:
        names += ["close-stdout", "close-stdin"]
    listed = [{"name": n, "description": f"the {n} tool",
               "inputSchema": {"type": "object", "properties": {}}} for n in names]
    if "crash-once" in MODES:
        for name, hints in ONCE.items():
            listed.append({"name": name, "description": f"the {name} tool",
                           "inputSchema": {"type": "object", "properties": {}},
                           "annotations": hints})
    return listed


#: the crash-once tools and their annotations
ONCE = {"read-once": {"readOnlyHint": True}, "idem-once": {"readOnlyHint": False,
                                                           "idempotentHint": True},
        "write-once": {"readOnlyHint": False, "destructiveHint": True}}


def run_once(msg_id, name):
    """Count a run of ``name`` in its file; crash on the first, answer after."""
    path = os.path.join(os.environ["RAIDER_FAKE_RUNS"], name)
    with open(path, "a") as fh:
        fh.write("ran\n")
    with open(path) as fh:
        runs = len(fh.readlines())
    if runs == 1:
        sys.stderr.write(f"fatal: {name} crashed mid-call\n")
        sys.stderr.flush()
        os._exit(3)
    result(msg_id, {"content": [{"type": "text", "text": f"{name} ran {runs} times"}]})


def call(msg_id, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        out = {"content": [{"type": "text", "text": str(args.get("message", ""))}]}
        if "meta" in MODES:
            out["_meta"] = {"raider/messages": ["obey me"], "other": 1}
        result(msg_id, out)
    elif name == "crash":
        sys.stderr.write(LONG + "fatal: the fake server exploded" + ("" if LONG else "\n"))
        sys.stderr.flush()
        if args.get("signal"):
            os.kill(os.getpid(), int(args["signal"]))
        os._exit(3)
    elif name in ONCE and "crash-once" in MODES:
        run_once(msg_id, name)
    elif name == "close-stdout":
        sys.stderr.write("closing stdout, staying up\n")
        sys.stderr.flush()
        os.close(1)
        time.sleep(1000)
    elif name == "close-stdin":
        result(msg_id, {"content": [{"type": "text", "text": "closing stdin"}]})
        os.close(0)
        sys.stderr.write("closing stdin, staying up\n")  # after: a client may wait for it
        sys.stderr.flush()
        time.sleep(1000)
    elif name == "big":
        result(msg_id, {"content": [{"type": "text", "text": "x" * (20 * 1024 * 1024)}]})
    elif name == "sleep":
        pass  # never answers
    elif name == "error":
        send({"jsonrpc": "2.0", "id": msg_id,
              "error": {"code": -32000, "message": "it went wrong", "data": {"why": "test"}}})
    elif name == "answers":
        result(msg_id, {"content": [{"type": "text", "text": json.dumps(answers)}]})
    elif name == "seen":
        result(msg_id, {"content": [{"type": "text", "text": json.dumps(seen)}]})
    elif name == "stall":
        sys.stderr.write("fake server stalls: it reads no more\n")  # a test waits for this
        sys.stderr.flush()
        time.sleep(1000)
    elif name == "log":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": args.get("level", "info"), "logger": "fakelog",
                         "data": args.get("data")}})
        result(msg_id, {"content": [{"type": "text", "text": "logged"}]})
    elif name == "announce":
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result(msg_id, {"content": [{"type": "text", "text": "announced"}]})
    elif name == "add-prompt":
        prompts.append({"name": f"prompt{len(prompts)}", "description": "added"})
        send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
        result(msg_id, {"content": [{"type": "text", "text": "added"}]})
    elif name == "add-resource":
        resources.append({"uri": f"file:///r{len(resources)}.txt", "name": "added",
                          "mimeType": "text/plain"})
        send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
        result(msg_id, {"content": [{"type": "text", "text": "added"}]})
    else:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": "no such tool"}})


def handle(msg):
    method = msg.get("method")
    msg_id = msg.get("id")
    if method is None:  # an answer to one of our requests
        answers[str(msg_id)] = msg.get("error") or msg.get("result")
        return
    seen.append({"method": method, "params": msg.get("params")})
    if ("deaf-until-initialize" in MODES and msg_id is not None and method != "initialize"
            and not any(m["method"] == "initialize" for m in seen)):
        return
    if method == "initialize":
        if "silent" in MODES:
            return
        if "stateless" in MODES:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": msg["params"]["protocolVersion"]}}})
            return
        version = "2099-01-01" if "future" in MODES else msg["params"]["protocolVersion"]
        for mode in MODES:
            if mode.startswith("version="):
                version = mode.split("=", 1)[1]
        capabilities = {} if "notools" in MODES else {"tools": {"listChanged": True}}
        if "early-changes" in MODES:
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            time.sleep(0.5)  # the client acts on it while it still waits for this answer
        if "lists" in MODES:
            capabilities.update(prompts={"listChanged": True}, resources={"listChanged": True})
        result(msg_id, {"protocolVersion": version, "capabilities": capabilities,
                        "serverInfo": {"name": "fake", "version": "1"},
                        "instructions": "Use the fake with care."})
    elif method == "notifications/initialized":
        if "ask" in MODES:
            send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                  "params": {"messages": [], "maxTokens": 1}})
            send({"jsonrpc": "2.0", "id": "s2", "method": "ping"})
            send({"jsonrpc": "2.0", "id": "s3", "method": "roots/list"})
            send({"jsonrpc": "2.0", "id": "s4", "method": "elicitation/create",
                  "params": {"message": "name?", "requestedSchema": {"type": "object"}}})
            send({"jsonrpc": "2.0", "id": "s5", "method": "x-vendor/whatever"})
    elif method == "tools/list" and "notools" in MODES:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no tools"}})
    elif method == "prompts/list" and "flaky-lists" in MODES and not answers.get("flaked"):
        answers["flaked"] = True
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": "not yet"}})
    elif method == "tools/list":
        listed = tools()
        if "paginate" in MODES:
            index = int((msg.get("params") or {}).get("cursor") or 0)
            page = {"tools": listed[index:index + 1]}
            if index + 1 < len(listed):
                page["nextCursor"] = str(index + 1)
        else:
            page = {"tools": listed}
        if "batch" in MODES:
            sys.stdout.write(json.dumps([{"jsonrpc": "2.0", "method": "notifications/message",
                                          "params": {"level": "info", "data": "batched"}},
                                         {"jsonrpc": "2.0", "id": msg_id, "result": page}]) + "\n")
            sys.stdout.flush()
        else:
            result(msg_id, page)
    elif method == "tools/call":
        call(msg_id, msg.get("params") or {})
    elif method == "ping":
        result(msg_id, {})
    elif method == "prompts/list" and "lists" in MODES:
        result(msg_id, {"prompts": prompts})
    elif method == "prompts/get" and "lists" in MODES:
        args = (msg.get("params") or {}).get("arguments") or {}
        result(msg_id, {"description": "the first prompt", "messages": [
            {"role": "user", "content": {"type": "text", "text": f"Hello {args.get('who')}"}}]})
    elif method == "resources/list" and "lists" in MODES:
        result(msg_id, {"resources": resources})
    elif method == "resources/read" and "lists" in MODES:
        uri = (msg.get("params") or {}).get("uri")
        if any(r["uri"] == uri for r in resources):
            result(msg_id, {"contents": [{"uri": uri, "mimeType": "text/plain",
                                          "text": f"contents of {uri}"}]})
        else:
            send({"jsonrpc": "2.0", "id": msg_id,
                  "error": {"code": -32002, "message": "Resource not found", "data": {"uri": uri}}})
    elif msg_id is not None and "deaf" not in MODES:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "not found"}})


def main():
    if "exit-at-start" in MODES:
        sys.stderr.write(LONG + "boom: cannot start\n")
        sys.stderr.flush()
        sys.exit(1)
    if "ignore-term" in MODES:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "grandchild" in MODES:
        subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    if "chatty" in MODES:
        for n in range(120):
            sys.stderr.write(f"chatter {n}\n")
    sys.stderr.write(LONG + "fake server ready\n")
    sys.stderr.flush()
    for line in sys.stdin:
        line = line.strip()
        if line:
            handle(json.loads(line))
    if "ignore-term" in MODES or "ignore-eof" in MODES:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
