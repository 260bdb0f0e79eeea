"""The server the conformance harness's server scenarios judge: a ToolServer offering what the
harness's reference "everything" server offers, by the same names, written on the public
ToolServer API only.

A handler that logs, asks the client (elicitation, sampling, roots) or looks at the client's
capabilities takes a ``ctx`` (:class:`raider_sync.Context`); the same handler serves the
handshake era (a request to the client) and the stateless one (input_required rounds). What
the API cannot yet express is left out, and the scenarios that need it fail for that reason
(see ``test_server_scenarios.py``'s table).
"""
from __future__ import annotations

import base64
import json

from raider_sync import Context, McpError, ToolServer
from raider_sync.protocol.codes import MISSING_CAPABILITY
from raider_sync.serve.context import elicitation, roots, sampling

from serve.task_tools import add_task_tools

#: a 1x1 red PNG pixel, and a minimal WAV file (the reference server's test data)
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#: a raw JSON Schema 2020-12 input schema whose keywords a server must pass on untouched
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"},
                                         "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


#: the form of SEP-1034's defaults, and SEP-1330's five kinds of enum
DEFAULTS_FORM = {"type": "object", "required": [], "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status",
               "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": True}}}
ENUMS_FORM = {"type": "object", "required": [], "properties": {
    "untitledSingle": {"type": "string", "description": "Select one option",
                       "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "description": "Select one option with titles",
                     "oneOf": [{"const": "value1", "title": "First Option"},
                               {"const": "value2", "title": "Second Option"},
                               {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                   "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "description": "Select multiple options",
                      "minItems": 1, "maxItems": 3,
                      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                    "minItems": 1, "maxItems": 3,
                    "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                        {"const": "value2", "title": "Second Choice"},
                                        {"const": "value3", "title": "Third Choice"}]}}}}


#: the skill served for the skills extension's scenarios
SKILL_MD = """---
name: test-skill
description: A skill served for the conformance scenarios.
---
# Test skill

Read reference/notes.md, then run scripts/check.sh.
"""


def _image() -> dict:
    return {"type": "image", "data": IMAGE, "mimeType": "image/png"}


def _form(**fields: str) -> dict:
    return {"type": "object", "properties": {name: {"type": kind} for name, kind in fields.items()},
            "required": list(fields)}


def _text(answer: dict, field: str) -> str:
    """What an accepted elicitation put in ``field``."""
    return str((answer.get("content") or {}).get(field, ""))


def fixture_server() -> ToolServer:
    """A new ToolServer with the reference server's tools, resources and prompts."""
    server = ToolServer("mcp-conformance-test-server", version="1.0.0")

    @server.tool(description="Tests simple text content response")
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool(description="Tests image content response")
    def test_image_content() -> list:
        return [_image()]

    @server.tool(description="Tests audio content response")
    def test_audio_content() -> list:
        return [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]

    @server.tool(description="Tests embedded resource content response")
    def test_embedded_resource() -> list:
        return [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]

    @server.tool(description="Tests response with multiple content types (text, image, "
                             "resource)")
    def test_multiple_content_types() -> list:
        return [{"type": "text", "text": "Multiple content types test:"}, _image(),
                {"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource", "mimeType": "application/json",
                    "text": json.dumps({"test": "data", "value": 123})}}]

    @server.tool(description="Tests error response handling")
    def test_error_handling() -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    @server.tool(description="Tests tool that reports progress notifications")
    def test_tool_with_progress(progress) -> str:
        for step in (0, 50, 100):
            progress(step, 100, f"Completed step {step} of 100")
        return "progress reported"

    server.add_tool("json_schema_2020_12_tool",
                    lambda arguments: "JSON Schema 2020-12 tool called with: "
                                      + json.dumps(arguments),
                    description="Tool with JSON Schema 2020-12 features for conformance "
                                "testing (SEP-1613)",
                    input_schema=SCHEMA_2020_12)

    server.add_tool("test_header_param",
                    lambda arguments: f"region: {arguments['region']}",
                    description="Mirrors its region argument into the Mcp-Param-Region header",
                    input_schema={"type": "object", "required": ["region"], "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"}}})

    # the stateless revision's diagnostic tools: a change of the tool list, a call that
    # logs nothing (no log level was asked for), a call whose answer stream carries no
    # request of the server's
    @server.tool(description="Adds or removes a tool, changing the tool list")
    def test_trigger_tool_change() -> str:
        if "test_dynamic_tool" in server.tool_names:
            server.remove_tool("test_dynamic_tool")
        else:
            server.add_tool("test_dynamic_tool", lambda: "dynamic",
                            description="A tool added by test_trigger_tool_change")
        return "Mutation triggered"

    @server.tool(description="Diagnostic tool validating response progress streams")
    def test_streaming_elicitation() -> str:
        return "Streaming complete"

    add_context_tools(server)
    add_task_tools(server)  # the tasks extension's scenarios

    server.add_resource("test://template/{id}/data",
                        lambda id: json.dumps({"id": id, "templateTest": True,
                                               "data": f"Data for ID: {id}"}),
                        name="template-data", mime_type="application/json",
                        description="A resource template with parameter substitution")
    server.add_resource("test://static-text",
                        lambda: "This is the content of the static text resource.",
                        name="static-text", mime_type="text/plain",
                        description="A static text resource for testing")
    server.add_resource("test://static-binary", lambda: base64.b64decode(IMAGE),
                        name="static-binary", mime_type="image/png",
                        description="A static binary resource (image) for testing")
    server.add_resource("test://watched-resource", lambda: "Watched resource content",
                        name="watched-resource", mime_type="text/plain",
                        description="A resource that auto-updates every 3 seconds")

    @server.prompt(description="A simple prompt without arguments")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(description="A prompt with required arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(description="A prompt that includes an embedded resource")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list:  # noqa: N803 - the wire name
        return [{"role": "user", "content": {"type": "resource", "resource": {
                    "uri": resourceUri, "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": {
                    "type": "text", "text": "Please process the embedded resource above."}}]

    @server.prompt(description="A prompt that includes image content")
    def test_prompt_with_image() -> list:
        return [{"role": "user", "content": _image()},
                {"role": "user", "content": {"type": "text",
                                             "text": "Please analyze the image above."}}]

    server.add_skill_text("conformance/test-skill", SKILL_MD, {
        "reference/notes.md": "Notes the skill refers to.\n",
        "scripts/check.sh": "#!/bin/sh\necho ok\n"})

    @server.prompt(description="A prompt that asks the client for its context first")
    def test_input_required_result_prompt(ctx: Context) -> str:
        answer = ctx.elicit("What context should the prompt use?", _form(context="string"),
                            key="user_context")
        return f"Prompt with context: {_text(answer, 'context')}"

    return server


def add_context_tools(server: ToolServer) -> None:
    """The tools that log, ask the client or read its capabilities."""

    @server.tool(description="Tests SSE stream disconnection and client reconnection "
                             "(SEP-1699): the stream is closed mid-call, the result comes "
                             "after the client reconnects")
    def test_reconnection(ctx: Context) -> str:
        ctx.close_stream()
        return ("Reconnection test completed successfully. If you received this, the client "
                "properly reconnected after stream closure.")

    @server.tool(description="Tests tool that emits log messages during execution")
    def test_tool_with_logging(ctx: Context) -> str:
        for text in ("Tool execution started", "Tool processing data",
                     "Tool execution completed"):
            ctx.log("info", text)
        return "Tool with logging executed successfully"

    @server.tool(description="Tests server-initiated sampling (LLM completion request)")
    def test_sampling(prompt: str, ctx: Context) -> str:
        answer = ctx.sample(prompt, 100)
        return f"LLM response: {(answer.get('content') or {}).get('text', 'No response')}"

    @server.tool(description="Tests server-initiated elicitation (user input request)")
    def test_elicitation(message: str, ctx: Context) -> str:
        answer = ctx.elicit(message, {"type": "object", "required": ["response"], "properties": {
            "response": {"type": "string", "description": "User's response"}}})
        return (f"User response: action={answer.get('action')}, "
                f"content={json.dumps(answer.get('content') or {})}")

    @server.tool(description="Tests elicitation with default values per SEP-1034")
    def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        answer = ctx.elicit("Please review and update the form fields with defaults",
                            DEFAULTS_FORM)
        return (f"Elicitation completed: action={answer.get('action')}, "
                f"content={json.dumps(answer.get('content') or {})}")

    @server.tool(description="Tests elicitation with enum schema improvements per SEP-1330")
    def test_elicitation_sep1330_enums(ctx: Context) -> str:
        answer = ctx.elicit("Please select options from the enum fields", ENUMS_FORM)
        return (f"Elicitation completed: action={answer.get('action')}, "
                f"content={json.dumps(answer.get('content') or {})}")

    @server.tool(description="Needs the client's sampling capability")
    def test_missing_capability(ctx: Context) -> str:
        if "sampling" not in (ctx.client_capabilities or {}):
            raise McpError(MISSING_CAPABILITY, "MissingRequiredClientCapabilityError",
                           {"requiredCapabilities": {"sampling": {}}})
        return "Success"

    @server.tool(description="Diagnostic logging validator tool")
    def test_logging_tool(ctx: Context) -> str:
        ctx.log("info", "Diagnostic trace logging activated")
        return "Logging evaluated"

    @server.tool(description="Asks the user's name (input_required)")
    def test_input_required_result_elicitation(ctx: Context) -> str:
        answer = ctx.elicit("What is your name?", _form(name="string"), key="user_name")
        return f"Hello, {_text(answer, 'name')}!"

    @server.tool(description="Asks the client's model (input_required)")
    def test_input_required_result_sampling(ctx: Context) -> str:
        answer = ctx.sample("What is the capital of France?", 100, key="sample_request")
        return f"Sampling result: {(answer.get('content') or {}).get('text', 'no response')}"

    @server.tool(description="Asks for the client's roots (input_required)")
    def test_input_required_result_list_roots(ctx: Context) -> str:
        return f"Found {len(ctx.list_roots(key='roots_request'))} root(s)"

    @server.tool(description="A round trip of requestState (input_required)")
    def test_input_required_result_request_state(ctx: Context) -> str:
        ctx.elicit("Please confirm", _form(ok="boolean"), key="confirm")
        return "state-ok: requestState validated"

    @server.tool(description="Three questions in one round (input_required)")
    def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        answers = ctx.ask({"user_name": elicitation("What is your name?", _form(name="string")),
                           "greeting": sampling("Generate a greeting", 50),
                           "client_roots": roots()})
        greeting = (answers["greeting"].get("content") or {}).get("text", "Hello there!")
        return (f"Name: {_text(answers['user_name'], 'name')}; Greeting: {greeting}; "
                f"Roots: {len(answers['client_roots'].get('roots') or [])}")

    @server.tool(description="Two rounds of questions (input_required)")
    def test_input_required_result_multi_round(ctx: Context) -> str:
        name = _text(ctx.elicit("Step 1: What is your name?", _form(name="string"),
                                key="step1"), "name")
        color = _text(ctx.elicit("Step 2: What is your favorite color?",
                                 _form(color="string"), key="step2"), "color")
        return f"Multi-round complete for {name} who likes {color}"

    @server.tool(description="A signed requestState (input_required)")
    def test_input_required_result_tampered_state(ctx: Context) -> str:
        ctx.elicit("Please confirm", _form(ok="boolean"), key="confirm")
        return "integrity-ok: state verified"

    @server.tool(description="Asks only what the client declared it can answer")
    def test_input_required_result_capabilities(ctx: Context) -> str:
        capabilities = ctx.client_capabilities or {}
        questions = {}
        if "elicitation" in capabilities:
            questions["elicit_input"] = elicitation("Elicitation input", _form(value="string"))
        if "sampling" in capabilities:
            questions["sample_input"] = sampling("Sample request", 50)
        if not questions:
            return "No supported capabilities declared"
        return f"capabilities-ok: received {','.join(ctx.ask(questions))}"
