"""A 2025-11-25 client: the `mcp<2` Python SDK's ClientSession (run in its own environment).

    python py_legacy.py CONFIG_JSON

CONFIG: {"server": [argv], "env": {...}, "scenario": NAME, "answers": [ELICIT_RESULT...],
"elicitation": bool, "gate": a file to create once initialize is answered}. Prints one JSON object of observations on stdout.
"""

import json
import sys
import time

import anyio
import mcp.types as t
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

config = json.loads(sys.argv[1])
seen: dict = {"elicitations": [], "progress": [], "logs": []}
answers = list(config.get("answers", []))


async def elicit(ctx, params):
    seen["elicitations"].append({"message": params.message, "schema": params.requestedSchema})
    answer = answers.pop(0) if answers else {"action": "cancel"}
    return t.ElicitResult(**answer)


async def log(params):
    seen["logs"].append(str(params.data))


def result_json(res) -> dict:
    return res.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    server = StdioServerParameters(
        command=config["server"][0], args=config["server"][1:], env=config.get("env")
    )
    kwargs = {"elicitation_callback": elicit} if config.get("elicitation", True) else {}
    if "roots" in config:

        async def roots(ctx):
            return t.ListRootsResult(roots=[t.Root(uri=uri) for uri in config["roots"]])

        kwargs["list_roots_callback"] = roots
    async with stdio_client(server) as (r, w):
        async with ClientSession(r, w, logging_callback=log, **kwargs) as s:
            init = await s.initialize()
            seen["protocol"] = init.protocolVersion
            seen["server"] = init.serverInfo.name
            if "gate" in config:  # tells the server's test plugin that initialize was answered
                await anyio.Path(config["gate"]).touch()
            scenario = config["scenario"]
            if scenario == "tools":
                try:
                    tools = await s.list_tools()
                except Exception as exc:  # an MCP error reply
                    seen["mcp_error"] = str(exc)
                else:
                    seen["tools"] = [
                        tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                        for tool in tools.tools
                    ]
            elif scenario == "calls":
                seen["results"] = []
                for name, args in config["calls"]:
                    t0 = time.monotonic()
                    try:
                        res = result_json(await s.call_tool(name, args))
                    except Exception as exc:  # an MCP error reply
                        res = {"mcp_error": str(exc)}
                    res["elapsed_s"] = time.monotonic() - t0
                    seen["results"].append(res)
            elif scenario == "cancel":
                await s.call_tool(
                    "eval", {"code": "x = 41", "description": "set x to forty one here"}
                )
                first = anyio.Event()

                async def progress(value, total, message):
                    seen["progress"].append([value, total, message])
                    first.set()

                request_id = s._request_id  # the id the next request gets
                t0 = time.monotonic()
                async with anyio.create_task_group() as tg:

                    async def long_call() -> None:
                        await s.call_tool(
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
                    await s.send_notification(
                        t.ClientNotification(
                            t.CancelledNotification(
                                params=t.CancelledNotificationParams(
                                    requestId=request_id, reason="the test cancels it"
                                )
                            )
                        )
                    )
                    # a cancelled request gets no reply (spec): stop waiting for it
                    tg.cancel_scope.cancel()
                after = await s.call_tool(
                    "eval", {"code": "x + 1", "description": "read x back after the cancel"}
                )
                seen["after"] = result_json(after)
                seen["elapsed_s"] = time.monotonic() - t0
                await anyio.sleep(0.2)  # the log notification about the cancellation
            elif scenario == "hold":
                await s.call_tool(*config["calls"][0])
                print(json.dumps({"ready": True}), flush=True)
                await anyio.sleep(600)
    print(json.dumps(seen), flush=True)


anyio.run(main)
