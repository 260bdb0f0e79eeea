"""The floor of a stdio call: the same server process, started the same way, driven by hand.

No client library: the handshake written by hand, then one ``tools/call`` line written per
call and its answer read with ``readline()`` on the buffered stdout (one read per line, not
one per byte), parsed with ``json.loads`` and matched by id. Whatever a client adds on top of
this is its own cost.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

from .common import stop_process

VERSION = "2025-11-25"


class RawPipe:
    """One server process and its two pipes. Blocks in :meth:`request` until the answer with
    the request's id arrives (lines without it, e.g. notifications, are skipped); raises
    ConnectionError if the server closes its stdout first."""

    name = "floor"

    def __init__(self, command: list[str]):
        # a copy of the caller's environment, as the clients give it; stderr is not read
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(os.environ))
        self.next_id = 0
        try:
            self.request("initialize", {"protocolVersion": VERSION, "capabilities": {},
                                        "clientInfo": {"name": "floor", "version": "1"}})
            self._write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            self.request("tools/list", {})
        except BaseException:
            self.close()
            raise

    def _write(self, data: bytes) -> None:
        self.proc.stdin.write(data)  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def _send(self, method: str, params: dict) -> int:
        self.next_id += 1
        self._write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                "params": params}).encode() + b"\n")
        return self.next_id

    def _answer(self) -> dict:
        """The next line that is an answer (has an id and no method), parsed."""
        while True:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise ConnectionError("the server closed its stdout")
            message = json.loads(line)
            if "id" in message and "method" not in message:
                return message

    def request(self, method: str, params: dict) -> dict:
        wanted = self._send(method, params)
        while True:
            answer = self._answer()
            if answer["id"] == wanted:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def call(self, tool: str, args: dict) -> str:
        """The text of a tool's result."""
        return self.request("tools/call", {"name": tool, "arguments": args})["content"][0]["text"]

    def times(self, count: int, tool: str, args: dict) -> list[float]:
        """Seconds each of ``count`` sequential calls took."""
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            self.call(tool, args)
            samples.append(time.perf_counter() - started)
        return samples

    def pipelined(self, in_flight: int, total: int, tool: str, args: dict) -> float:
        """Calls per second with ``in_flight`` requests outstanding at any time, from one
        thread: a new request is written as each answer arrives. What the server itself
        can carry at that concurrency."""
        params = {"name": tool, "arguments": args}
        sent = done = 0
        started = time.perf_counter()
        while sent < min(in_flight, total):
            self._send("tools/call", params)
            sent += 1
        while done < total:
            answer = self._answer()
            if "error" in answer:
                raise RuntimeError(f"tools/call: {answer['error']}")
            done += 1
            if sent < total:
                self._send("tools/call", params)
                sent += 1
        return total / (time.perf_counter() - started)

    def close(self) -> None:
        """Close stdin (the server's cue to exit), then SIGTERM/SIGKILL if it does not."""
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            stop_process(self.proc)
        self.proc.stdout.close()  # type: ignore[union-attr]
