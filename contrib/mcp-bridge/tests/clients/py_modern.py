"""A 2026-07-28 client: the `mcp` 2.x Python SDK's Client (run in its own environment).

    python py_modern.py CONFIG_JSON

Same CONFIG and output as py_legacy.py. Questions arrive as `input_required` results that the
SDK answers through the elicitation callback and a retry of the call.
"""

import json
import sys
import time

import anyio
import mcp_types as t
from mcp import Client, StdioServerParameters

config = json.loads(sys.argv[1])
seen: dict = {"elicitations": [], "progress": []}
answers = list(config.get("answers", []))


async def elicit(ctx, params):
    seen["elicitations"].append({"message": params.message, "schema": params.requested_schema})
    answer = answers.pop(0) if answers else {"action": "cancel"}
    return t.ElicitResult(**answer)


def result_json(res) -> dict:
    return res.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    server = StdioServerParameters(
        command=config["server"][0], args=config["server"][1:], env=config.get("env")
    )
    kwargs = {"elicitation_callback": elicit} if config.get("elicitation", True) else {}
    async with Client(server, cache=None, **kwargs) as c:
        seen["protocol"] = c.session.protocol_version
        scenario = config["scenario"]
        if scenario == "tools":
            tools = await c.list_tools()
            seen["tools"] = [
                tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in tools.tools
            ]
        elif scenario == "calls":
            seen["results"] = []
            for name, args in config["calls"]:
                t0 = time.monotonic()
                try:
                    res = result_json(await c.call_tool(name, args))
                except Exception as exc:  # an MCP error reply
                    res = {"mcp_error": str(exc)}
                res["elapsed_s"] = time.monotonic() - t0
                seen["results"].append(res)
        elif scenario == "cancel":
            await c.call_tool("eval", {"code": "x = 41", "description": "set x to forty one here"})
            first = anyio.Event()

            async def progress(value, total, message):
                seen["progress"].append([value, total, message])
                first.set()

            t0 = time.monotonic()
            async with anyio.create_task_group() as tg:

                async def long_call() -> None:
                    await c.call_tool(
                        "eval",
                        {
                            "code": "import time\ntime.sleep(60)",
                            "description": "sleep for a whole minute now",
                        },
                        progress_callback=progress,
                    )
                    seen["long_call_returned"] = True

                tg.start_soon(long_call)
                with anyio.fail_after(30):
                    await first.wait()
                # cancelling the caller sends notifications/cancelled (the SDK's courtesy cancel)
                tg.cancel_scope.cancel()
            after = await c.call_tool(
                "eval", {"code": "x + 1", "description": "read x back after the cancel"}
            )
            seen["after"] = result_json(after)
            seen["elapsed_s"] = time.monotonic() - t0
        elif scenario == "hold":
            await c.call_tool(*config["calls"][0])
            print(json.dumps({"ready": True}), flush=True)
            await anyio.sleep(600)
    print(json.dumps(seen), flush=True)


anyio.run(main)
