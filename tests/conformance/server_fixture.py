"""The server the conformance harness's server scenarios judge: a ToolServer offering what the
harness's reference "everything" server offers, by the same names, written on the public
ToolServer API only.

What that API cannot yet express is left out, and the scenarios that need it fail for that
reason (see ``test_server_scenarios.py``'s table): a handler context that logs, elicits or
samples or sees the client's capabilities (test_tool_with_logging, test_sampling,
test_elicitation, test_missing_capability, the input_required tools), resource templates,
subscriptions, completions, skills and tasks.
"""
from __future__ import annotations

import base64
import json

from raider_sync import ToolServer

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


def _image() -> dict:
    return {"type": "image", "data": IMAGE, "mimeType": "image/png"}


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

    @server.tool(description="Diagnostic logging validator tool")
    def test_logging_tool() -> str:
        return "Logging evaluated"

    @server.tool(description="Diagnostic tool validating response progress streams")
    def test_streaming_elicitation() -> str:
        return "Streaming complete"

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

    return server
