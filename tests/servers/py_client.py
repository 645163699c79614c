"""The official Python SDK's `Client` (PyPI `mcp`), scripted for the tests.

    py_client.py MODE TARGET PLAN_JSON

MODE is the SDK's connect mode (`auto`: `server/discover`, then 2026-07-28
where the server offers it; `legacy`: the `initialize` handshake). TARGET is a
Streamable HTTP URL, or a JSON list naming a command to run over stdio.

PLAN says what to do, in this order:
  "calls":  [[TOOL, ARGS], ...]  tools to call, one after the other;
  "read":   true                 read the first resource listed;
  "prompt": true                 get the first prompt that needs no arguments;
  "prompts": [[NAME, ARGS], ...] get each prompt: the text of its first message;
  "watch":  [{"uri": URI, "trigger": [TOOL, ARGS]}, ...]
                                 for each, watch URI (`resources/subscribe` in
                                 the handshake era, `subscriptions/listen` in
                                 2026-07-28), call the trigger, and wait (10 s
                                 at most) for the update.
  "logs":   {"level": LEVEL, "calls": [[TOOL, ARGS], ...],
             "prompts": [[NAME, ARGS], ...], "reads": [[SERVER, URI], ...]}
                                 ask for log messages of LEVEL and above
                                 (`logging/setLevel` in the handshake era, in
                                 each request's `_meta` in 2026-07-28), call
                                 each tool, get each prompt, read each
                                 resource, and after each wait (5 s at most)
                                 for a message of its server (a tool's or
                                 prompt's name before `__`; logger
                                 `<server>...`).
  "skills": true                 raw `skills/list` and `skills/get` (the Skills
                                 extension; the SDK has no methods for it) of
                                 every skill, and a read of each one's SKILL.md.
  "bench":  {"tool": TOOL, "args": ARGS, "n": N}
                                 one call, then N sequential ones, timed
                                 (their p50 and p99 in ms), before the rest.
The client answers sampling ("sampled: <the prompt's text>"), elicitation
(accepts, each field its default, else a value of its type) and roots (one,
file:///py-client-root).

Prints one JSON object: the revision negotiated, the tools listed and, per
step, what came back or the error the SDK raised (its validation of each
result against the negotiated revision among them), with how many questions
the client was asked.
"""

import asyncio
import json
import sys
import time
import warnings

import anyio
from typing import Any

from mcp import Client, StdioServerParameters, types
from pydantic import TypeAdapter

ROOT = "file:///py-client-root"


def target(text):
    if text.startswith("["):
        command, *args = json.loads(text)
        return StdioServerParameters(command=command, args=args)
    return text


async def step(report, name, action):
    try:
        report[name] = await action()
    except BaseException as e:  # the test reads which step failed, and why
        report[name] = {"error": f"{type(e).__name__}: {e}"}


def field_value(schema):
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    if "oneOf" in schema:
        return schema["oneOf"][0].get("const")
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items", {})
        options = items.get("enum") or [o.get("const") for o in items.get("anyOf", [])]
        return options[:1]
    return {"boolean": True, "number": 1, "integer": 1}.get(kind, "elicited")


class Answers:
    def __init__(self):
        self.asked = {"sampling": 0, "elicitation": 0, "roots": 0}

    async def sampling(self, context, params):
        self.asked["sampling"] += 1
        content = params.messages[0].content
        text = getattr(content, "text", "") if not isinstance(content, list) else ""
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"sampled: {text}"),
            model="py-client-model",
        )

    async def elicitation(self, context, params):
        self.asked["elicitation"] += 1
        schema = getattr(params, "requested_schema", None) or {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        fields = schema.get("properties", {})
        content = {name: field_value(s) for name, s in fields.items()}
        return types.ElicitResult(action="accept", content=content)

    async def roots(self, context):
        self.asked["roots"] += 1
        return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="py-client")])


class Logs:
    def __init__(self):
        self.loggers = []
        self.came = anyio.Event()

    async def callback(self, params):
        self.loggers.append(params.logger or "")
        self.came.set()

    async def from_server(self, server):
        with anyio.fail_after(5):
            while not any(l.startswith(server) for l in self.loggers):
                self.came = anyio.Event()
                await self.came.wait()


async def logged(client, logs, plan, version):
    if version < "2026-07-28":
        await client.set_logging_level(plan["level"])
    asks = [(t.split("__")[0], t, lambda t=t, a=a: client.call_tool(t, a)) for t, a in plan["calls"]]
    for name, args in plan.get("prompts", []):
        asks.append((name.split("__")[0], name, lambda n=name, a=args: client.get_prompt(n, a)))
    for server, uri in plan.get("reads", []):
        asks.append((server, uri, lambda u=uri: client.read_resource(u)))
    seen = []
    for server, what, ask in asks:
        logs.loggers.clear()
        await ask()
        try:
            await logs.from_server(server)
        except TimeoutError:
            raise TimeoutError(f"no message of {server} for {what}; heard {logs.loggers}")
        seen.append(server)
    return seen


async def timed(client, plan):
    await client.call_tool(plan["tool"], plan["args"])
    took = []
    for _ in range(plan["n"]):
        start = time.perf_counter()
        await client.call_tool(plan["tool"], plan["args"])
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return {"p50": took[len(took) // 2], "p99": took[min(len(took) - 1, len(took) * 99 // 100)]}


def texts(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def watch(client, plan, version):
    uri, (tool, args) = plan["uri"], plan["trigger"]
    if version >= "2026-07-28":
        async with client.listen(resource_subscriptions=[uri]) as sub:
            await client.call_tool(tool, args)
            with anyio.fail_after(10):
                async for event in sub:
                    if getattr(event, "uri", None) == uri:
                        return {"updated": uri}
        return {"updated": None}
    updated = anyio.Event()

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            if str(root.params.uri) == uri:
                updated.set()

    client.session._message_handler = on_message  # the SDK's hook for notifications
    await client.subscribe_resource(uri)
    await client.call_tool(tool, args)
    with anyio.fail_after(10):
        await updated.wait()
    return {"updated": uri}


class GetSkill(types.RequestParams):
    """`skills/get`'s parameters: the URI of a skill's SKILL.md."""

    uri: str


async def skills(client):
    """Every skill listed, got by its URI and its SKILL.md read, raw."""
    as_json = TypeAdapter(dict[str, Any])
    listed = await client.session.send_request(types.Request(method="skills/list", params={}), as_json)
    out = []
    for skill in listed["skills"]:
        request = types.Request(method="skills/get", params=GetSkill(uri=skill["uri"]))
        got = await client.session.send_request(request, as_json)
        read = await client.read_resource(skill["uri"])
        out.append({"listed": skill, "got": got, "text": read.contents[0].text})
    return {"resultType": listed.get("resultType"), "skills": out}


async def main(mode, server, plan):
    report = {}
    answers = Answers()
    logs = Logs()
    level = plan.get("logs", {}).get("level")
    async with Client(
        target(server),
        mode=mode,
        raise_exceptions=True,
        logging_callback=logs.callback,
        log_level=level,
        sampling_callback=answers.sampling,
        elicitation_callback=answers.elicitation,
        list_roots_callback=answers.roots,
    ) as client:
        version = client.protocol_version
        report["protocolVersion"] = version

        async def tools():
            listed = await client.list_tools()
            return sorted(t.name for t in listed.tools)

        async def call(tool, args):
            result = await client.call_tool(tool, args)
            return {"isError": bool(result.is_error), "text": texts(result)}

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

        if "bench" in plan:
            await step(report, "bench", lambda: timed(client, plan["bench"]))
        await step(report, "tools", tools)
        report["calls"] = []
        for tool, args in plan.get("calls", []):
            done = {}
            await step(done, "result", lambda: call(tool, args))
            report["calls"].append(done["result"])
        if plan.get("read"):
            await step(report, "resource", resource)
        if plan.get("prompt"):
            await step(report, "prompt", prompt)

        async def got(name, args):
            message = (await client.get_prompt(name, args)).messages[0]
            return getattr(message.content, "text", None)

        report["prompts"] = []
        for name, args in plan.get("prompts", []):
            done = {}
            await step(done, "result", lambda: got(name, args))
            report["prompts"].append(done["result"])
        report["watch"] = []
        for watched in plan.get("watch", []):
            done = {}
            await step(done, "result", lambda: watch(client, watched, version))
            report["watch"].append(done["result"])
        if "logs" in plan:
            await step(report, "logged", lambda: logged(client, logs, plan["logs"], version))
        if plan.get("skills"):
            await step(report, "skills", lambda: skills(client))
    report["asked"] = answers.asked
    print(json.dumps(report))


if __name__ == "__main__":
    # `resources/subscribe` is deprecated in the SDK: the handshake era has it.
    warnings.simplefilter("ignore")
    mode, server, plan = sys.argv[1:4]
    asyncio.run(main(mode, server, json.loads(plan)))
