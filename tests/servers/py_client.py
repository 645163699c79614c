"""The official Python SDK's `Client` (PyPI `mcp`), scripted for the tests.

    py_client.py MODE TARGET TOOL ARGS_JSON

MODE is the SDK's connect mode (`auto`: `server/discover`, then 2026-07-28
where the server offers it; `legacy`: the `initialize` handshake). TARGET is a
Streamable HTTP URL, or a JSON list naming a command to run over stdio.

Lists and calls TOOL with ARGS_JSON, reads the first resource listed and gets
the first prompt that needs no arguments, then prints one JSON object: the
revision negotiated and, per step, what came back or the error the SDK raised
(its validation of each result against the negotiated revision among them).
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


def target(text):
    if text.startswith("["):
        command, *args = json.loads(text)
        return StdioServerParameters(command=command, args=args)
    return text


async def step(report, name, action):
    try:
        report[name] = await action()
    except Exception as e:  # the test reads which step failed, and why
        report[name] = {"error": f"{type(e).__name__}: {e}"}


async def main(mode, server, tool, args):
    report = {}
    async with Client(target(server), mode=mode, raise_exceptions=True) as client:
        report["protocolVersion"] = client.protocol_version

        async def tools():
            listed = await client.list_tools()
            return sorted(t.name for t in listed.tools)

        async def call():
            result = await client.call_tool(tool, args)
            texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
            return {"isError": bool(result.is_error), "text": "\n".join(texts)}

        async def resource():
            listed = await client.list_resources()
            if not listed.resources:
                return {"uri": None}
            uri = str(listed.resources[0].uri)
            read = await client.read_resource(uri)
            return {"uri": uri, "contents": len(read.contents)}

        async def prompt():
            listed = await client.list_prompts()
            free = [p for p in listed.prompts if not any(a.required for a in p.arguments or [])]
            if not free:
                return {"name": None}
            got = await client.get_prompt(free[0].name)
            return {"name": free[0].name, "messages": len(got.messages)}

        await step(report, "tools", tools)
        await step(report, "call", call)
        await step(report, "resource", resource)
        await step(report, "prompt", prompt)
    print(json.dumps(report))


if __name__ == "__main__":
    mode, server, tool, args = sys.argv[1:5]
    asyncio.run(main(mode, server, tool, json.loads(args)))
