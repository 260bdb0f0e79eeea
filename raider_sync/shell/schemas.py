"""The input schemas and descriptions of the shell tools, shaped after Claude Code's Bash,
BashOutput, KillShell and Monitor. Times follow the seed: ``timeout`` of bash and
bash_output in seconds, ``timeout_ms`` of monitor in milliseconds."""
from __future__ import annotations

BASH = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command to execute (with bash -c)."},
        "timeout": {"type": "number", "description": (
            "Optional timeout in SECONDS (not milliseconds), default 120, max 600. A command "
            "still running then is not killed: it moves to the background.")},
        "description": {"type": "string", "description": (
            "A clear, concise description of what this command does, in 5-10 words.")},
        "run_in_background": {"type": "boolean", "description": (
            "Set to true to run this command in the background; read its output later with "
            "bash_output.")},
    },
    "required": ["command"],
    "additionalProperties": False,
}

BASH_OUTPUT = {
    "type": "object",
    "properties": {
        "bash_id": {"type": "string", "description": (
            "The ID of the background shell (or other background task) to read.")},
        "filter": {"type": "string", "description": (
            "Optional regular expression: only output lines that match are returned; the "
            "others are consumed and no longer available.")},
        "block": {"type": "boolean", "description": (
            "Wait for the task to end (up to timeout) before answering. Default false.")},
        "timeout": {"type": "number", "description": (
            "Seconds block waits at most (default 30, max 600).")},
    },
    "required": ["bash_id"],
    "additionalProperties": False,
}

KILL_SHELL = {
    "type": "object",
    "properties": {
        "shell_id": {"type": "string", "description": "The ID of the background shell (or task) to stop."},
    },
    "required": ["shell_id"],
    "additionalProperties": False,
}

MONITOR = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": (
            "What is watched, shown in every event (for example: errors in the log).")},
        "command": {"type": "string", "description": (
            "The command whose standard output lines become events, for example "
            "tail -f app.log | grep --line-buffered ERROR.")},
        "timeout_ms": {"type": "number", "description": (
            "How long to watch, in MILLISECONDS (default 300000; at least 1000, at most "
            "1800000, or 600000 when nobody is at the keyboard).")},
    },
    "required": ["description", "command"],
    "additionalProperties": False,
}

BASH_DESCRIPTION = (
    "Runs a command with bash -c in the working directory and returns its combined standard "
    "output and standard error, in the order written. A non-zero exit status is an error "
    "result that starts with 'Exit code N'. Output over 30000 characters keeps its start and "
    "end. A command still running at its timeout moves to the background (its ID is in the "
    "answer); run_in_background starts it there at once. Use bash_output to read a background "
    "shell and kill_shell to stop it.")

BASH_OUTPUT_DESCRIPTION = (
    "Reads the new output of a background shell since the last read, with its status "
    "(running, completed, failed, killed) and exit code once it has ended. Also answers the "
    "status and report of other background tasks by ID or name.")

KILL_SHELL_DESCRIPTION = (
    "Stops a running background shell (SIGTERM to its process group, then SIGKILL) or asks "
    "another background task to stop.")

MONITOR_DESCRIPTION = (
    "Starts a command in the background and delivers each line of its standard output as an "
    "event notification (lines close together arrive as one event). The watch ends when the "
    "command exits, when it times out, or when it is stopped with kill_shell; a command that "
    "floods is stopped. Answers at once.")
