"""FastMCP's client with the Skills extension, against `mcpw serve` on stdio:
`python skills_client.py PLAN_JSON`, the plan being
`{"command", "args", "env", "cwd", "read": [uri…], "append": {"path", "text"},
"resources": bool, "directories": [uri…]}`.
It lists the skills, gets each by its URI, then (after appending `text` to
the file at `path`, if asked) reads each URI of `read`, and prints one JSON
report: `{"skills": […], "got": […], "reads": [{"uri", "text"} or {"uri", "error", "code"}]}`.
With `resources`, the report adds the URIs of `resources/list` and
`resources/templates/list` (`"resources"`, `"templates"`); with
`directories`, each URI's `resources/directory/read` (a raw request: the
client has no method for it), as `{"uri", "resources"}` or `{"uri", "error", "code"}`.
"""

import asyncio
import json
import sys
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills.client import SkillsClientExtension
from mcp_types import Request, RequestParams
from pydantic import TypeAdapter


class DirectoryParams(RequestParams):
    """`resources/directory/read`'s parameters."""

    uri: str


def failed(uri, e):
    """A refused request, with its JSON-RPC code when it has one."""
    return {"uri": uri, "error": str(e), "code": getattr(e, "code", None)}


async def directory(client, uri):
    request = Request(method="resources/directory/read", params=DirectoryParams(uri=uri))
    try:
        read = await client.session.send_request(request, TypeAdapter(dict[str, Any]))
        return {"uri": uri, "resources": read["resources"]}
    except Exception as e:  # the refusal is what some tests look for
        return failed(uri, e)


async def main() -> None:
    plan = json.loads(sys.argv[1])
    transport = StdioTransport(
        command=plan["command"], args=plan["args"], env=plan["env"], cwd=plan.get("cwd")
    )
    report = {"skills": [], "got": [], "reads": []}
    async with Client(transport, extensions=[SkillsClientExtension()]) as client:
        for skill in await client.list_skills():
            report["skills"].append(skill.model_dump(mode="json", by_alias=True))
            got = await client.get_skill(skill.uri)
            report["got"].append(got.model_dump(mode="json", by_alias=True))
        if "append" in plan:
            with open(plan["append"]["path"], "a", encoding="utf-8") as f:
                f.write(plan["append"]["text"])
        for uri in plan.get("read", []):
            try:
                contents = await client.read_resource(uri)
                report["reads"].append({"uri": uri, "text": contents[0].text})
            except Exception as e:  # the refusal is what some tests look for
                report["reads"].append(failed(uri, e))
        if plan.get("resources"):
            report["resources"] = [str(r.uri) for r in await client.list_resources()]
            templates = await client.list_resource_templates()
            report["templates"] = [t.uri_template for t in templates]
        report["directories"] = [await directory(client, u) for u in plan.get("directories", [])]
    print(json.dumps(report))


asyncio.run(main())
