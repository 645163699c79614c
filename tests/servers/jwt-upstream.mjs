// An MCP server that takes JWT access tokens from an OpenID provider, for
// mcpw's token-exchange tests: stateless Streamable HTTP on
// http://127.0.0.1:$PORT/mcp, its resource, with that resource's protected
// resource metadata (RFC 9728) naming $ISSUER as its authorization server.
//   PORT=<port> ISSUER=<issuer url> node jwt-upstream.mjs
// A request needs `Authorization: Bearer <JWT>` signed by a key of the
// issuer's JWKS (found through its discovery document), with `iss` = $ISSUER
// and `aud` = the resource; anything else is answered 401 with a
// WWW-Authenticate naming the metadata. Tool `whoami` answers the token's
// JSON {sub, aud, act (or null), client_id, token: the hex SHA-256 of the
// bearer string}, so a test tells which token reached the server without
// the server showing it.
import { createHash } from "node:crypto";
import express from "express";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const port = Number(process.env.PORT ?? 0);
const issuer = process.env.ISSUER;
if (!issuer) throw new Error("ISSUER is required");

// Found at the first request: the provider may start after this server.
let jwks;
function issuerKeys() {
  jwks ??= (async () => {
    const discovery = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const response = await fetch(discovery);
    if (!response.ok) throw new Error(`${discovery}: HTTP ${response.status}`);
    const { jwks_uri } = await response.json();
    // Read at every request: a key the issuer rotates in or drops counts at once.
    return createRemoteJWKSet(new URL(jwks_uri), { cacheMaxAge: 0 });
  })().catch((e) => {
    jwks = undefined;
    throw e;
  });
  return jwks;
}

const app = express();
app.use(express.json());
const listener = app.listen(port, "127.0.0.1", () => {
  console.error(`jwt upstream on http://127.0.0.1:${listener.address().port}/mcp`);
});
const resource = () => `http://127.0.0.1:${listener.address().port}/mcp`;
const metadataUrl = () => `http://127.0.0.1:${listener.address().port}/.well-known/oauth-protected-resource/mcp`;

function metadata(_req, res) {
  res.json({
    resource: resource(),
    authorization_servers: [issuer],
    bearer_methods_supported: ["header"],
    scopes_supported: ["mcp"],
  });
}
app.get("/.well-known/oauth-protected-resource/mcp", metadata);
app.get("/.well-known/oauth-protected-resource", metadata);

async function requireJwt(req, res, next) {
  const challenge = (error) =>
    res
      .status(401)
      .set("WWW-Authenticate", `Bearer resource_metadata="${metadataUrl()}"${error ? `, error="invalid_token", error_description="${error}"` : ""}`)
      .json({ error: "invalid_token", error_description: error ?? "a Bearer token is required" });
  const [scheme, token, ...rest] = (req.get("authorization") ?? "").split(" ");
  if (scheme?.toLowerCase() !== "bearer" || !token || rest.length > 0) return challenge();
  let claims;
  try {
    ({ payload: claims } = await jwtVerify(token, await issuerKeys(), { issuer, audience: resource() }));
  } catch (e) {
    console.error("jwt upstream: token refused:", e.message);
    return challenge(e.message.replaceAll('"', "'"));
  }
  req.auth = {
    token,
    clientId: claims.client_id,
    scopes: claims.scope?.split(" ") ?? [],
    expiresAt: claims.exp,
    extra: { claims },
  };
  next();
}

app.post("/mcp", requireJwt, async (req, res) => {
  const server = new McpServer({ name: "jwt-upstream", version: "1.0.0" });
  server.registerTool("whoami", { description: "Tells whose token called, and which token" }, async (extra) => {
    const { token, extra: { claims } } = extra.authInfo;
    const who = {
      sub: claims.sub,
      aud: claims.aud,
      act: claims.act ?? null,
      client_id: claims.client_id,
      token: createHash("sha256").update(token).digest("hex"),
    };
    return { content: [{ type: "text", text: JSON.stringify(who) }] };
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => transport.close());
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
