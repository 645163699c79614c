// An MCP App server for the tests, on the official TypeScript SDK, over
// stdio: `show-board` has a view the model and the app may call; `move-piece`
// is for the app only (`_meta.ui.visibility: ["app"]`).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const VIEW = "ui://board/app.html";
const server = new McpServer({ name: "board", version: "1.0.0" });
const text = (t) => ({ content: [{ type: "text", text: t }] });

server.registerTool("show-board", {
  description: "Shows the chess board",
  inputSchema: {},
  _meta: { ui: { resourceUri: VIEW, visibility: ["model", "app"] } },
}, async () => ({
  // A big result, with the view on it too.
  content: [{ type: "text", text: "the board " + "♜♞♝♛♚♝♞♜ ".repeat(40000) }],
  structuredContent: { pieces: 32 },
  _meta: { ui: { resourceUri: VIEW }, "board/moves": 0 },
}));
server.registerTool("move-piece", {
  description: "Moves a piece on the board",
  inputSchema: { from: z.string(), to: z.string() },
  _meta: { ui: { resourceUri: VIEW, visibility: ["app"] } },
}, async ({ from, to }) => text(`moved ${from}-${to}`));
server.registerResource("board", VIEW, { mimeType: "text/html;profile=mcp-app" }, async (uri) => ({
  contents: [{ uri: uri.href, mimeType: "text/html;profile=mcp-app", text: "<html><body>board</body></html>" }],
}));

await server.connect(new StdioServerTransport());
