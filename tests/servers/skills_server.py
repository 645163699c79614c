"""A FastMCP server that serves the skill folders under ROOT through the MCP
Skills extension (SEP-2640), and two tools: `python skills_server.py NAME ROOT`."""

import sys

from fastmcp import FastMCP
from fastmcp.server.providers.skills import SkillsDirectoryProvider
from fastmcp.skills.extension import SkillsExtension

mcp = FastMCP(f"skills-{sys.argv[1]}")
skills = SkillsDirectoryProvider(roots=sys.argv[2], experimental_skills=True)
mcp.add_provider(skills)
mcp.add_extension(SkillsExtension(providers=[skills]))


@mcp.tool
def ping() -> str:
    """Answers pong."""
    return "pong"


@mcp.tool
def repeat(text: str, times: int) -> str:
    """Answers text, times over."""
    return text * times


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="ERROR")
