"""FastMCP's client with the Skills extension, against `mcpw serve` on stdio:
`python skills_client.py PLAN_JSON`, the plan being
`{"command", "args", "env", "cwd", "read": [uri…], "append": {"path", "text"}}`.
It lists the skills, gets each by its URI, then (after appending `text` to
the file at `path`, if asked) reads each URI of `read`, and prints one JSON
report: `{"skills": […], "got": […], "reads": [{"uri", "text"} or {"uri", "error"}]}`.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills.client import SkillsClientExtension


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
                report["reads"].append({"uri": uri, "error": str(e)})
    print(json.dumps(report))


asyncio.run(main())
