"""A server of two skills (the MCP Skills extension, SEP-2640) that FastMCP's
own skills provider would not serve, so the extension's two methods are
served here: `live`, whose files are not listed ahead (`"resources":
"dynamic"`) and are read from the folder ROOT at each read, so a test may
change them between reads; and `stale`, whose manifest lists a digest its
`SKILL.md` does not have. `python dynamic_skill_server.py ROOT`."""

import hashlib
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
    SkillResource,
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
STALE_URI = "skill://stale/SKILL.md"
STALE_MD = "---\nname: stale\ndescription: Listed with the digest of other bytes.\n---\n# Stale\n"
LISTED = b"the bytes the manifest was made from"
STALE = Skill(
    uri=STALE_URI,
    frontmatter=SkillFrontmatter(name="stale", description="Listed with the digest of other bytes."),
    resources=[
        SkillResource(
            uri=STALE_URI,
            digest=f"sha256:{hashlib.sha256(LISTED).hexdigest()}",
            size=len(LISTED),
        )
    ],
)
SKILLS = {URI: LIVE, STALE_URI: STALE}


class DynamicSkill(ServerExtension):
    identifier = "io.modelcontextprotocol/skills"

    def methods(self):
        return (
            MethodBinding("skills/list", ListSkillsParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    async def _list(self, _context, _params):
        return ListSkillsResult(skills=list(SKILLS.values()))

    async def _get(self, _context, params):
        if params.uri not in SKILLS:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown skill URI: {params.uri}")
        return GetSkillResult(skill=SKILLS[params.uri])


mcp = FastMCP("live")
mcp.add_extension(DynamicSkill())


@mcp.resource("skill://live/{path*}", mime_type="text/markdown")
def read(path: str) -> str:
    """A file of the skill, as it is now."""
    return (ROOT / path).read_text(encoding="utf-8")


@mcp.resource(STALE_URI, mime_type="text/markdown")
def stale() -> str:
    """The stale skill's SKILL.md, which is not what its manifest lists."""
    return STALE_MD


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="ERROR")
