"""A server of one dynamic skill (the MCP Skills extension, SEP-2640): `live`,
whose files are not listed ahead (`"resources": "dynamic"`) and are read from
the folder ROOT at each read, so a test may change them between reads:
`python dynamic_skill_server.py ROOT`. FastMCP's own skills provider lists
every file with its digest, so the extension's two methods are served here."""

import sys
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.server.extensions import MethodBinding, ServerExtension
from fastmcp.skills.models import (
    GetSkillParams,
    GetSkillResult,
    ListSkillsParams,
    ListSkillsResult,
    Skill,
    SkillFrontmatter,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

ROOT = Path(sys.argv[1])
URI = "skill://live/SKILL.md"
LIVE = Skill(
    uri=URI,
    frontmatter=SkillFrontmatter(
        name="live", description="Answers from files its server writes as it goes."
    ),
    resources="dynamic",
)


class DynamicSkill(ServerExtension):
    identifier = "io.modelcontextprotocol/skills"

    def methods(self):
        return (
            MethodBinding("skills/list", ListSkillsParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    async def _list(self, _context, _params):
        return ListSkillsResult(skills=[LIVE])

    async def _get(self, _context, params):
        if params.uri != URI:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown skill URI: {params.uri}")
        return GetSkillResult(skill=LIVE)


mcp = FastMCP("live")
mcp.add_extension(DynamicSkill())


@mcp.resource("skill://live/{path*}", mime_type="text/markdown")
def read(path: str) -> str:
    """A file of the skill, as it is now."""
    return (ROOT / path).read_text(encoding="utf-8")


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="ERROR")
