"""The OpenAI Agents SDK's MCP client (``agents.mcp.MCPServerStdio``) with its defaults — the 5 s
session timeout included — run in its own environment; no model is involved.

    python agents_sdk_client.py CONFIG_JSON    (CONFIG: {"server", "env", "calls"})

Prints one JSON line: {"tools": [names], "timeout_s": the session timeout used,
"results": [{"is_error", "text", "elapsed_s"} | {"error", "elapsed_s"}]}.
"""

import asyncio
import json
import sys
import time

from agents.mcp import MCPServerStdio

config = json.loads(sys.argv[1])


async def main() -> None:
    server = MCPServerStdio(
        params={"command": config["server"][0], "args": config["server"][1:], "env": config["env"]}
    )
    seen = {"timeout_s": server.client_session_timeout_seconds, "results": []}
    async with server:
        seen["tools"] = [tool.name for tool in await server.list_tools()]
        for name, args in config["calls"]:
            t0 = time.monotonic()
            try:
                result = await server.call_tool(name, args)
                text = "".join(getattr(block, "text", "") for block in result.content)
                seen["results"].append(
                    {
                        "is_error": bool(result.is_error),
                        "text": text,
                        "elapsed_s": time.monotonic() - t0,
                    }
                )
            except Exception as exc:  # the SDK's timeout, an MCP error
                seen["results"].append(
                    {"error": f"{type(exc).__name__}: {exc}", "elapsed_s": time.monotonic() - t0}
                )
    print(json.dumps(seen))


asyncio.run(main())
