"""From MCP tools to a model and back, for OpenAI (Chat Completions and Responses) and
Anthropic (Messages), with plain dicts: no model SDK is needed::

    from raider_sync.llm import ToolCaller, anthropic_result, to_anthropic

    caller = ToolCaller(hub)                       # the hub's tools, names mapped both ways
    reply = client.messages.create(..., tools=caller.to_anthropic(), messages=messages)
    for block in reply.content:
        if block.type == "tool_use":
            result = caller.call(block.name, block.input)
            answers.append(anthropic_result(block.id, result))

See the "Tools for models" page of the manual for the whole loop.
"""
from .convert import ToolCaller, to_anthropic, to_openai
from .messages import anthropic_result, openai_images, openai_result
from .names import ToolNames, is_model_name
from .nulls import drop_added_nulls
from .schema import StrictSchema, check_bounds, strict_schema

__all__ = [
    "StrictSchema",
    "ToolCaller",
    "ToolNames",
    "anthropic_result",
    "check_bounds",
    "drop_added_nulls",
    "is_model_name",
    "openai_images",
    "openai_result",
    "strict_schema",
    "to_anthropic",
    "to_openai",
]
