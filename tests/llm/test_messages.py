"""Tool results as the providers' tool-result messages, from what a real server returns."""
import json

import pytest

from raider_sync import McpHub, ToolResult
from raider_sync.llm import anthropic_result, openai_images, openai_result

from conftest import config_of


@pytest.fixture(scope="module")
def results(everything_js):
    """Real results of server-everything: an image, embedded resources, links, an error."""
    config = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]}})
    calls = {"image": ("get-tiny-image", {}),
             "text_resource": ("get-resource-reference", {}),
             "text_blob": ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
             "gzip": ("gzip-file-as-resource", {"name": "x.gz", "outputType": "resource",
                                                "data": "data:text/plain;base64,aGVsbG8="}),
             "links": ("get-resource-links", {"count": 2}),
             "error": ("get-structured-content", {"location": "Paris"}),
             "structured": ("get-structured-content", {"location": "Chicago"})}
    with McpHub(config) as hub:
        return {key: hub.call_tool(f"mcp__everything__{tool}", args, timeout=30)
                for key, (tool, args) in calls.items()}


def test_text_and_an_image_for_each_api(results):
    image = results["image"]
    chat = openai_result("call_1", image)
    assert chat["role"] == "tool" and chat["tool_call_id"] == "call_1"
    assert chat["content"].startswith("Here's the image") and "[image image/png," in chat["content"]
    shown = openai_images([results["text_resource"], image])
    assert shown["role"] == "user"
    assert [part["type"] for part in shown["content"]] == ["text", "image_url"]
    assert shown["content"][1]["image_url"]["url"] == (
        f"data:image/png;base64,{image.images[0]['data']}")
    assert openai_images([results["text_resource"]]) is None
    responses = openai_result("call_1", image, api="responses")
    assert responses["type"] == "function_call_output" and responses["call_id"] == "call_1"
    assert [p["type"] for p in responses["output"]][:2] == ["input_text", "input_image"]
    assert responses["output"][1]["image_url"].startswith("data:image/png;base64,iVBOR")
    block = anthropic_result("toolu_1", image)
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert "is_error" not in block
    assert block["content"][1] == {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": image.images[0]["data"]}}


def test_embedded_resources_links_and_binary_blobs(results):
    text = anthropic_result("t", results["text_resource"])["content"]
    assert text[1]["text"].startswith("[resource demo://resource/dynamic/text/1]\nResource 1:")
    blob = openai_result("c", results["text_blob"])["content"]
    assert "[resource demo://resource/dynamic/blob/2]\nResource 2: This is a base64 blob" in blob
    gzip = openai_result("c", results["gzip"], api="responses")["output"]
    assert gzip.startswith("[resource demo://resource/session/x.gz: application/gzip,")
    assert gzip.endswith("not shown]")
    links = anthropic_result("t", results["links"])["content"]
    assert links[1]["text"].startswith("[resource link demo://resource/dynamic/blob/1: Blob Resource 1")


def test_errors_are_marked_for_each_api(results):
    error = results["error"]
    assert anthropic_result("t", error)["is_error"] is True
    assert openai_result("c", error)["content"].startswith("Error: MCP error -32602")
    assert openai_result("c", error, api="responses")["output"].startswith("Error: ")


def test_structured_only_empty_pdf_and_other_images():
    structured = ToolResult({"content": [], "structuredContent": {"n": 1}})
    assert openai_result("c", structured)["content"] == json.dumps({"n": 1})
    empty = ToolResult({"content": []})
    assert anthropic_result("t", empty)["content"] == [
        {"type": "text", "text": "(the tool returned no content)"}]
    pdf = {"content": [{"type": "resource", "resource": {
        "uri": "file:///r/report.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="}}]}
    assert anthropic_result("t", pdf)["content"][1] == {"type": "document", "source": {
        "type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
    assert openai_result("c", pdf, api="responses")["output"][1] == {
        "type": "input_file", "filename": "report.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}
    bmp = {"isError": True, "content": [{"type": "image", "mimeType": "image/bmp", "data": "Qk0="}]}
    anthropic = anthropic_result("t", bmp)
    assert anthropic["content"] == [{"type": "text", "text": "[image image/bmp, 3 bytes]"}]
    assert openai_result("c", bmp)["content"].startswith("Error:\n[image image/bmp")
    audio = {"content": [{"type": "audio", "mimeType": "audio/wav", "data": "UklG"}]}
    assert openai_result("c", audio)["content"] == "[audio audio/wav, 3 bytes not shown]"
    with pytest.raises(ValueError, match="api"):
        openai_result("c", empty, api="other")
    with pytest.raises(TypeError, match="dict"):
        anthropic_result("t", "text")
