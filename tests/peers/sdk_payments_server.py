"""A real MCP server built with the official Python SDK (``mcp`` package) whose tools take
unions of objects with optional properties, the shape strict mode turns into nullable ones.

    python sdk_payments_server.py stdio

``pay`` takes a ``method`` that is a card or an IBAN (a tagged union: ``oneOf`` with ``$ref``s
into ``$defs``), where ``bic`` is optional and not nullable, and a list of such methods. The
SDK checks every call against the tool's pydantic model, so a ``"bic": null`` is refused.
The result shows which keys each method arrived with.
"""
import json
import sys
from typing import Annotated, Literal, Union

from mcp.server.mcpserver import MCPServer
from pydantic import Field
from typing_extensions import NotRequired, TypedDict

mcp = MCPServer("raider-test-payments", instructions="Payments: tools with unions of objects.")


class Card(TypedDict):
    kind: Literal["card"]
    number: str
    cvc: NotRequired[str]


class Iban(TypedDict):
    kind: Literal["iban"]
    iban: str
    bic: NotRequired[str]


Method = Annotated[Union[Card, Iban], Field(discriminator="kind")]


@mcp.tool()
def pay(amount: int, method: Method, splits: list[Method] | None = None) -> str:
    """Pay an amount by card or bank transfer, optionally split over more methods."""
    return json.dumps({"amount": amount, "method": sorted(method),
                       "splits": [sorted(m) for m in splits] if splits is not None else None})


if __name__ == "__main__":
    if sys.argv[1:] != ["stdio"]:
        sys.exit("usage: sdk_payments_server.py stdio")
    mcp.run("stdio")
