// An MCP server with everything the official conformance suite's server
// scenarios (@modelcontextprotocol/conformance 0.1.16) ask for, over Streamable
// HTTP on http://localhost:<port>/mcp. The tests run the suite against it
// directly, then through `mcpw serve --http` in front of it.
//   PORT=<port> node conformance-upstream.mjs
// With $SUBSCRIPTIONS_FILE set, each resources/subscribe is appended to it (its URI).
import http from "node:http";
import { appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { completable } from "@modelcontextprotocol/sdk/server/completable.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const port = Number(process.env.PORT ?? 0);
// A 1×1 PNG and a 44-byte silent WAV.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const WAV = Buffer.concat([
  Buffer.from("RIFF"), Buffer.from([36, 0, 0, 0]), Buffer.from("WAVEfmt "),
  Buffer.from([16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0]),
  Buffer.from("data"), Buffer.from([0, 0, 0, 0]),
]).toString("base64");
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });

function elicitTool(server, name, description, message, requestedSchema) {
  server.registerTool(name, { description, inputSchema: {} }, async (_args, extra) => {
    const r = await extra.sendRequest(
      { method: "elicitation/create", params: { message, requestedSchema } },
      ElicitResultSchema,
    );
    return text(`Elicitation result: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  });
}

function build() {
  const server = new McpServer(
    { name: "conformance-upstream", version: "1.0.0" },
    { capabilities: { logging: {}, completions: {}, resources: { subscribe: true, listChanged: true } } },
  );
  server.registerTool("test_simple_text", { description: "Returns one text item" }, async () =>
    text("This is a simple text response for testing."));
  server.registerTool("test_image_content", { description: "Returns one PNG image" }, async () => ({
    content: [{ type: "image", data: PNG, mimeType: "image/png" }],
  }));
  server.registerTool("test_audio_content", { description: "Returns one WAV clip" }, async () => ({
    content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }],
  }));
  const embedded = { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." };
  server.registerTool("test_embedded_resource", { description: "Returns an embedded resource" }, async () => ({
    content: [{ type: "resource", resource: embedded }],
  }));
  server.registerTool("test_multiple_content_types", { description: "Returns text, an image and a resource" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data","value":123}' } },
    ],
  }));
  server.registerTool("test_tool_with_logging", { description: "Logs three messages while it runs", inputSchema: {} }, async (_args, extra) => {
    for (const data of ["Tool execution started", "Tool processing data", "Tool execution completed"]) {
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", logger: "conformance", data } });
      await pause(50);
    }
    return text("Logging test completed");
  });
  server.registerTool("test_error_handling", { description: "Always fails as a tool error" }, async () => ({
    isError: true,
    content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
  }));
  server.registerTool("test_tool_with_progress", { description: "Reports progress three times", inputSchema: {} }, async (_args, extra) => {
    const token = extra._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (token !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
      }
      await pause(50);
    }
    return text(`Progress test completed (token ${JSON.stringify(token)})`);
  });
  server.registerTool(
    "test_sampling",
    { description: "Asks the client's model", inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const r = await extra.sendRequest(
        { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 } },
        CreateMessageResultSchema,
      );
      return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
    },
  );
  server.registerTool(
    "test_elicitation",
    { description: "Asks the user for a name and an email", inputSchema: { message: z.string() } },
    async ({ message }, extra) => {
      const requestedSchema = {
        type: "object",
        properties: { username: { type: "string", description: "User name" }, email: { type: "string", description: "Email address" } },
        required: ["username", "email"],
      };
      const r = await extra.sendRequest({ method: "elicitation/create", params: { message, requestedSchema } }, ElicitResultSchema);
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    },
  );
  elicitTool(server, "test_elicitation_sep1034_defaults", "Asks for fields that have defaults", "Please review the defaults", {
    type: "object",
    properties: {
      name: { type: "string", default: "John Doe" },
      age: { type: "integer", default: 30 },
      score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
      verified: { type: "boolean", default: true },
    },
    required: [],
  });
  const choices = (prefix, word) => [1, 2, 3].map((i) => ({ const: `${prefix}${i}`, title: `${word[i - 1]}` }));
  elicitTool(server, "test_elicitation_sep1330_enums", "Asks for every kind of enumerated field", "Please pick options", {
    type: "object",
    properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: { type: "string", oneOf: choices("value", ["First Option", "Second Option", "Third Option"]) },
      legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
      untitledMulti: { type: "array", minItems: 1, maxItems: 3, items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: { type: "array", minItems: 1, maxItems: 3, items: { anyOf: choices("value", ["First Choice", "Second Choice", "Third Choice"]) } },
    },
    required: [],
  });

  server.registerResource("static-text", "test://static-text", { description: "A text resource", mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: "This is the content of the static text resource." }],
  }));
  server.registerResource("static-binary", "test://static-binary", { description: "A PNG resource", mimeType: "image/png" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG }],
  }));
  server.registerResource("watched-resource", "test://watched-resource", { description: "A resource to subscribe to", mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: "Watched resource content" }],
  }));
  server.registerResource(
    "template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { description: "Data for an id", mimeType: "application/json" },
    async (uri, { id }) => ({
      contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
    }),
  );
  server.registerTool("update_watched_resource", { description: "Says that test://watched-resource changed", inputSchema: {} }, async (_args, extra) => {
    await extra.sendNotification({ method: "notifications/resources/updated", params: { uri: "test://watched-resource" } });
    return text("updated");
  });
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    if (process.env.SUBSCRIPTIONS_FILE) appendFileSync(process.env.SUBSCRIPTIONS_FILE, `${request.params.uri}\n`);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));

  server.registerPrompt("test_simple_prompt", { description: "A prompt without arguments" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
  }));
  server.registerPrompt(
    "test_prompt_with_arguments",
    {
      description: "A prompt with two arguments",
      argsSchema: {
        arg1: completable(z.string().describe("First argument"), (v) => ["test1", "test2", "testValue"].filter((s) => s.startsWith(v))),
        arg2: z.string().describe("Second argument"),
      },
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
    }),
  );
  server.registerPrompt(
    "test_prompt_with_embedded_resource",
    { description: "A prompt that embeds a resource", argsSchema: { resourceUri: z.string().describe("The resource's URI") } },
    async ({ resourceUri }) => ({
      messages: [
        { role: "user", content: { type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
      ],
    }),
  );
  // A prompt and a resource that log while they are answered (no scenario
  // asks for them: the era tests read their messages through mcpw).
  const logWhile = (extra, data) =>
    extra.sendNotification({ method: "notifications/message", params: { level: "info", logger: "conformance", data } });
  server.registerPrompt("test_prompt_with_logging", { description: "Logs a message while it is got" }, async (extra) => {
    await logWhile(extra, "Prompt being got");
    return { messages: [{ role: "user", content: { type: "text", text: "A prompt that logged." } }] };
  });
  server.registerResource("logged-resource", "test://logged-resource", { description: "Logs a message while it is read", mimeType: "text/plain" }, async (uri, extra) => {
    await logWhile(extra, "Resource being read");
    return { contents: [{ uri: uri.href, mimeType: "text/plain", text: "A resource that logged." }] };
  });
  server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image" }, async () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please describe the image above." } },
    ],
  }));
  return server;
}

// Events kept per stream, so that a client can resume a stream it lost.
class Events {
  constructor() { this.events = new Map(); }
  async storeEvent(streamId, message) {
    const id = `${streamId}_${randomUUID()}`;
    this.events.set(id, { streamId, message });
    return id;
  }
  async getStreamIdForEventId(eventId) { return this.events.get(eventId)?.streamId; }
  async replayEventsAfter(lastEventId, { send }) {
    const from = this.events.get(lastEventId);
    if (!from) return "";
    let after = false;
    for (const [id, e] of this.events) {
      if (after && e.streamId === from.streamId) await send(id, e.message);
      if (id === lastEventId) after = true;
    }
    return from.streamId;
  }
}

const sessions = new Map();
const httpServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://localhost");
  if (url.pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  let body;
  if (req.method === "POST") {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
      return;
    }
  }
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid || req.method !== "POST" || !isInitializeRequest(body)) {
      res.writeHead(sid ? 404 : 400, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: sid ? "Unknown session" : "No session" } }));
      return;
    }
    const port = httpServer.address().port;
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new Events(),
      enableDnsRebindingProtection: true,
      allowedHosts: [`localhost:${port}`, `127.0.0.1:${port}`],
      allowedOrigins: [`http://localhost:${port}`, `http://127.0.0.1:${port}`],
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await build().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
httpServer.listen(port, "127.0.0.1", () => {
  console.error(`conformance upstream on http://localhost:${httpServer.address().port}/mcp`);
});
