"""Tool search: a scripted model finds, loads and calls one tool among 500 without being
given their definitions, on a real hub (server-everything and a served ToolServer)."""
from __future__ import annotations

import json

import pytest

from raider_sync import McpHub, McpServer, ToolServer
from raider_sync.client.budget import budget_of
from raider_sync.llm import ToolCaller
from raider_sync.llm.search import LOAD_TOOL, SEARCH_TOOL, ToolIndex, words

from conftest import config_of

SUBJECTS = ["invoice", "weather", "ticket", "calendar", "repository", "customer", "shipment",
            "playlist", "sensor", "contract"]
VERBS = ["create", "list", "delete", "archive", "export", "import", "rename", "summarize",
         "validate", "merge"]
PLACES = ["draft", "archive", "cloud", "local", "team"]


def crowded_server() -> ToolServer:
    """500 tools named after what they do, among them one that converts currencies."""
    tools = ToolServer("crowd")
    for subject in SUBJECTS:
        for verb in VERBS:
            for place in PLACES:
                name = f"{verb}_{subject}_{place}"
                tools.add_tool(name, lambda note="", _n=name: f"{_n} done {note}",
                               description=f"{verb.title()} a {subject} in the {place} store.",
                               input_schema={"type": "object",
                                             "properties": {"note": {"type": "string"}}})
    tools.remove_tool("merge_contract_team")  # 499 of those, and the one the model needs

    def convert_currency(amount: float, source: str, target: str) -> str:
        return f"{amount:g} {source} is {amount * 2:g} {target}"
    tools.add_tool("convertCurrency", convert_currency,
                   description="Convert an amount of money from one currency to another.")
    return tools


def test_words_split_names_the_ways_tools_are_named():
    assert words("getWeatherForecast") == ["get", "weather", "forecast"]
    assert words("get_weather-forecast.v2") == ["get", "weather", "forecast", "v", "2"]
    assert words("HTTPServer list") == ["http", "server", "list"]


def test_a_scripted_model_finds_loads_and_calls_one_tool_among_500():
    served = crowded_server()
    with McpServer.in_process(served) as server:
        assert len(server.list_tools()) == 500
        caller = ToolCaller(server, disclosure="search")
        shown = caller.to_openai()
        assert [d["function"]["name"] for d in shown] == [SEARCH_TOOL, LOAD_TOOL]
        every = ToolCaller(server).to_openai()
        assert len(json.dumps(shown)) * 50 < len(json.dumps(every))  # what search spares

        # turn 1: the model searches by what it wants done
        found = caller.call(SEARCH_TOOL, json.dumps({"query": "exchange money to another "
                                                              "currency", "limit": 3}))
        assert not found.get("isError"), found.text
        names = [row["name"] for row in found["structuredContent"]["tools"]]
        wanted = caller.names.model_name("mcp__crowd__convertCurrency")
        assert names[0] == wanted, names
        # turn 2: it loads what it found; the definition is given from now on
        loaded = caller.call(LOAD_TOOL, {"names": [wanted]})
        [definition] = json.loads(loaded.text)
        assert definition["input_schema"]["required"] == ["amount", "source", "target"]
        assert [d["name"] for d in caller.to_anthropic()] == [SEARCH_TOOL, LOAD_TOOL, wanted]
        # turn 3: it calls the tool as it calls any other
        result = caller.call(wanted, {"amount": 5, "source": "EUR", "target": "USD"})
        assert result.text == "5 EUR is 10 USD"


def test_search_on_a_hub_of_real_servers(everything_js):
    config = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]}})
    with McpHub(config) as hub:
        caller = ToolCaller(hub, disclosure="search")
        found = caller.call(SEARCH_TOOL, {"query": "echo a message back"})
        first = found["structuredContent"]["tools"][0]["name"]
        assert caller.names.original(first) == "mcp__everything__echo"
        caller.call(LOAD_TOOL, {"names": [first]})
        assert caller.call(first, {"message": "hi"}).text == "Echo: hi"


def test_the_model_s_mistakes_with_the_search_tools_are_results_it_can_read():
    tools = ToolServer("few")
    tools.add_tool("alpha", lambda: "a", description="First letter.")
    caller = ToolCaller(tools, disclosure="search")
    assert caller.call(SEARCH_TOOL, {}).get("isError")
    assert "needs a 'query'" in caller.call(SEARCH_TOOL, "{}").text
    nothing = caller.call(SEARCH_TOOL, {"query": "zebra"})
    assert not nothing.get("isError") and "no tool matches" in nothing.text
    unknown = caller.call(LOAD_TOOL, {"names": ["beta"]})
    assert unknown.get("isError") and "no tool named 'beta'" in unknown.text
    assert caller.call(LOAD_TOOL, {"names": [7]}).get("isError")
    assert not caller.call(LOAD_TOOL, {"name": "alpha"}).get("isError")  # one name will do
    assert [d["name"] for d in caller.to_anthropic()][-1] == "alpha"


def test_a_tool_named_as_a_search_tool_is_refused_and_a_bad_disclosure_named():
    tools = ToolServer("clash")
    tools.add_tool(SEARCH_TOOL, lambda: "mine")
    with pytest.raises(ValueError, match="named 'search_tools', as the search tool is"):
        ToolCaller(tools, disclosure="search")
    assert ToolCaller(tools).call(SEARCH_TOOL).text == "mine"  # every tool: no clash
    with pytest.raises(ValueError, match="disclosure must be one of all, search, auto"):
        ToolCaller(tools, disclosure="some")


def test_auto_searches_only_when_the_definitions_take_a_tenth_of_the_context():
    served = crowded_server()
    tools = served.list_tools()
    cost = budget_of(tools).total
    assert budget_of(tools).search_pays(cost * 5) and not budget_of(tools).search_pays(cost * 20)
    assert ToolCaller(served, disclosure="auto", context_tokens=cost * 5).disclosure == "search"
    assert ToolCaller(served, disclosure="auto", context_tokens=cost * 20).disclosure == "all"


def test_names_weigh_more_than_descriptions_and_rare_words_more_than_common_ones():
    index = ToolIndex([
        {"name": "send_mail", "description": "Deliver a message."},
        {"name": "read_file", "description": "Read a file; may mail its path."},
        {"name": "list_files", "description": "List files."},
    ])
    assert [name for name, _ in index.search("mail")] == ["send_mail", "read_file"]
    assert [name for name, _ in index.search("files", 1)] == ["list_files"]
