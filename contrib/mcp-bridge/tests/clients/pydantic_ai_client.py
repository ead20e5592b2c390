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


async def agent_run() -> None:
    """An agent run with a scripted local model (pydantic-ai's FunctionModel, no network): it
    calls each of ``calls`` in turn — the same call again when it is told to retry — then says
    what the last tool result was. ``behavior`` is the toolset's ``tool_error_behavior``."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    calls = list(config["calls"])

    def model(messages, info):
        if calls:
            name, args = calls.pop(0)
            return ModelResponse(parts=[ToolCallPart(name, args)])
        last = messages[-1].parts[-1]
        return ModelResponse(parts=[TextPart(f"{type(last).__name__}: {last.content}")])

    transport = StdioTransport(config["server"][0], config["server"][1:], env=config.get("env"))
    toolset = MCPToolset(Client(transport), tool_error_behavior=config["behavior"])
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    try:
        result = await agent.run("go")
        seen = {"output": result.output}
    except Exception as exc:  # what aborts the run, for the test to read
        seen = {"aborted": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(seen, default=str), flush=True)


async def main() -> None:
    if "behavior" in config:
        return await agent_run()
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
