// An OAuth-protected MCP server for mcpw's end-to-end tests: one process on
// http://127.0.0.1:$PORT that is both the authorization server (the official
// SDK's auth router: metadata, dynamic registration, authorize, token) and the
// resource server (/mcp, stateless Streamable HTTP, a Bearer token required).
//   PORT=<port> [ACCESS_TTL_S=3600] [EVENTS_FILE=path] node oauth-server.mjs
// Authorization is granted at once (no login page), with a refresh token that
// rotates: a refresh token works once, and a second use is refused
// (invalid_grant) and written to $EVENTS_FILE as `refresh-reused`, as is every
// `refresh`. Tool `whoami` answers with the client id of the caller's token, as
// does prompt `whoami`.
import { appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidGrantError } from "@modelcontextprotocol/sdk/server/auth/errors.js";

const port = Number(process.env.PORT ?? 0);
const ttl = Number(process.env.ACCESS_TTL_S ?? 3600);
const event = (line) => process.env.EVENTS_FILE && appendFileSync(process.env.EVENTS_FILE, `${line}\n`);

const clients = new Map();
const codes = new Map();
const tokens = new Map();
const refreshTokens = new Map();
const used = new Set();

function issue(clientId, scopes, resource) {
  const access = randomUUID();
  const refresh = randomUUID();
  tokens.set(access, { clientId, scopes, resource, expiresAt: Math.floor(Date.now() / 1000) + ttl });
  refreshTokens.set(refresh, { clientId, scopes, resource });
  return { access_token: access, token_type: "bearer", expires_in: ttl, refresh_token: refresh, scope: scopes.join(" ") };
}

const provider = {
  clientsStore: {
    getClient: async (id) => clients.get(id),
    registerClient: async (client) => (clients.set(client.client_id, client), client),
  },
  async authorize(client, params, res) {
    const code = randomUUID();
    codes.set(code, { client, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state !== undefined) target.searchParams.set("state", params.state);
    res.redirect(target.toString());
  },
  challengeForAuthorizationCode: async (_client, code) => codes.get(code).params.codeChallenge,
  async exchangeAuthorizationCode(client, code) {
    const grant = codes.get(code);
    if (!grant || grant.client.client_id !== client.client_id) throw new InvalidGrantError("unknown code");
    codes.delete(code);
    event("login");
    return issue(client.client_id, grant.params.scopes ?? [], grant.params.resource?.href);
  },
  async exchangeRefreshToken(client, refresh) {
    if (used.has(refresh)) {
      event("refresh-reused");
      throw new InvalidGrantError("refresh token already used");
    }
    const grant = refreshTokens.get(refresh);
    if (!grant || grant.clientId !== client.client_id) throw new InvalidGrantError("unknown refresh token");
    used.add(refresh);
    refreshTokens.delete(refresh);
    event("refresh");
    return issue(client.client_id, grant.scopes, grant.resource);
  },
  async verifyAccessToken(token) {
    const t = tokens.get(token);
    if (!t) throw new Error("unknown token");
    return { token, clientId: t.clientId, scopes: t.scopes, expiresAt: t.expiresAt, resource: t.resource && new URL(t.resource) };
  },
};

const app = express();
app.use(express.json());
const listener = app.listen(port, "127.0.0.1", () => {
  console.error(`oauth server on http://127.0.0.1:${listener.address().port}/mcp`);
});
const base = () => new URL(`http://127.0.0.1:${listener.address().port}`);
app.use((req, res, next) => {
  // The router needs the issuer, known once listening.
  if (!app.locals.auth) {
    app.locals.auth = mcpAuthRouter({ provider, issuerUrl: base(), resourceServerUrl: new URL("/mcp", base()), scopesSupported: ["mcp:tools"] });
  }
  app.locals.auth(req, res, next);
});
app.post("/mcp", (req, res, next) =>
  requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL("/mcp", base())) })(req, res, next),
  async (req, res) => {
    const server = new McpServer({ name: "oauth-server", version: "1.0.0" });
    server.registerTool("whoami", { description: "Tells which OAuth client called" }, async (extra) => ({
      content: [{ type: "text", text: `client ${extra.authInfo?.clientId}` }],
    }));
    server.registerPrompt("whoami", { description: "Tells which OAuth client asked" }, async (extra) => ({
      messages: [{ role: "user", content: { type: "text", text: `client ${extra.authInfo?.clientId}` } }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
