"""An agent framework's MCP client: pydantic-ai's MCPToolset (V2, on the FastMCP client), run
in its own environment. Lists the tools an agent would get and calls one directly; no model is
involved.

    python pydantic_ai_client.py CONFIG_JSON    (CONFIG: {"server", "env", "calls"})
"""

import json
import sys

import anyio
from fastmcp.client import Client
from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset

config = json.loads(sys.argv[1])


async def main() -> None:
    transport = StdioTransport(config["server"][0], config["server"][1:], env=config.get("env"))
    toolset = MCPToolset(Client(transport))
    seen: dict = {}
    async with toolset:
        tools = await toolset.list_tools()
        seen["tools"] = [tool.name for tool in tools]
        seen["results"] = []
        for name, args in config["calls"]:
            seen["results"].append(await toolset.direct_call_tool(name, args))
    print(json.dumps(seen, default=str), flush=True)


anyio.run(main)
