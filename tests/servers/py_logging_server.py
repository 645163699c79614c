"""An MCP server on the official Python SDK (PyPI `mcp` 2.3.0) whose tool,
prompt and resource each log a message while they answer, over stdio.

The SDK serves 2026-07-28 to a client that discovers it, and in that revision
it sends a request's log messages only when the request names a level in
`_meta` (`io.modelcontextprotocol/logLevel`): a message that reaches a client
through mcpw shows that mcpw asked for the level in that very request.
"""

import warnings

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("logs")


@app.tool()
async def logged_tool(ctx: Context) -> str:
    """Logs a message while it runs."""
    await ctx.info("tool running")
    return "tool done"


@app.prompt()
async def logged_prompt(ctx: Context) -> str:
    """Logs a message while it is got."""
    await ctx.info("prompt being got")
    return "A prompt that logged."


# The SDK gives a resource the request's context only when its URI is a template.
@app.resource("logs://logged/{name}")
async def logged_resource(name: str, ctx: Context) -> str:
    """Logs a message while it is read."""
    await ctx.info(f"resource {name} being read")
    return "A resource that logged."


if __name__ == "__main__":
    # Logging is deprecated in 2026-07-28, yet still served per request.
    warnings.simplefilter("ignore")
    app.run()
