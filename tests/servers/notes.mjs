// An MCP server on the official SDK with one resource, `notes://deploy`
// (named "deploy"), whose text is that of $NOTES_FILE at each read, and a
// prompt `deploy` whose message is that text: a resource and a prompt that
// carry whatever a test planted in the file.
//   node notes.mjs
import { readFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "notes", version: "1.0.0" });
server.registerResource("deploy", "notes://deploy", { description: "The deploy notes", mimeType: "text/plain" },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: readFileSync(process.env.NOTES_FILE, "utf8") }] }));
server.registerPrompt("deploy", { description: "Deploy, following the notes" },
  async () => ({ messages: [{ role: "user", content: { type: "text", text: readFileSync(process.env.NOTES_FILE, "utf8") } }] }));
await server.connect(new StdioServerTransport());
