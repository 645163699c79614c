// The official TypeScript SDK's client signing in with its own OAuth machinery
// (an `OAuthClientProvider` given to `StreamableHTTPClientTransport`), for
// mcpw's tests.
//   node oauth-client.mjs '<plan JSON>'
// plan = {"url": the MCP endpoint, "login": the account to sign in as,
//         "redirect": the redirect URI (nothing need listen there: the
//         provider's redirect to it is read, not followed),
//         "clientId": a pre-registered public client (without it the SDK
//         registers one dynamically), "calls": [[TOOL, ARGS], ...]}
// The SDK meets the gateway's 401, discovers its protected resource metadata
// and the provider's, registers (or not) and hands over the authorization
// URL; this script then does what a browser would at the provider's own
// login and consent pages, gives the code back (`finishAuth`), connects
// again, lists the tools and calls each of `calls`.
// Prints one JSON object on stdout: "signIn" (the authorization URL's
// resource, scope and client_id, and the client registered), "tools" (their
// names, sorted) and "calls" ({isError, text} or {error}); or {"error"}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);

/** What a client keeps between runs, here in memory: the SDK asks for it and saves it. */
class MemoryProvider {
  constructor() {
    this.saved = {};
    this.authorizationUrl = undefined;
    if (plan.clientId) this.saved.client = { client_id: plan.clientId };
  }
  get redirectUrl() {
    return plan.redirect;
  }
  get clientMetadata() {
    return {
      client_name: "mcpw-test-oauth-client",
      redirect_uris: [plan.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
}

/** The provider's cookies, every one sent with every request: one sign-in at a time. */
class Jar {
  constructor() {
    this.cookies = new Map();
  }
  keep(response) {
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(";");
      const at = pair.indexOf("=");
      const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1)];
      if (value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([n, v]) => `${n}=${v}`).join("; ");
  }
}

/** The form answering the provider's page: its development login, or its consent. */
function answer(page) {
  const asks = (prompt) => page.includes(`name="prompt" value="${prompt}"`);
  if (asks("login")) return { prompt: "login", login: plan.login, password: "any" };
  if (asks("consent")) return { prompt: "consent" };
  return undefined;
}

/**
 * Goes through the provider's pages from `start` as a browser would, until it
 * sends the browser back to the redirect URI: that URL, with the code.
 */
async function signIn(start) {
  const jar = new Jar();
  let request = { url: start, init: { method: "GET" } };
  let loggedIn = false;
  for (let step = 0; step < 12; step++) {
    const response = await fetch(request.url, {
      ...request.init,
      redirect: "manual",
      headers: { ...request.init.headers, cookie: jar.header() },
    });
    jar.keep(response);
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      const to = new URL(location, request.url);
      if (to.href.startsWith(plan.redirect)) return to;
      request = { url: to.href, init: { method: "GET" } };
      continue;
    }
    const page = await response.text();
    const form = answer(page);
    if (!form) throw new Error(`HTTP ${response.status} at ${request.url}, no form to answer: ${page.slice(0, 500)}`);
    if (form.prompt === "login") {
      if (loggedIn) throw new Error(`${plan.login} was refused: asked to sign in again`);
      loggedIn = true;
    }
    const body = new URLSearchParams(form).toString();
    request = {
      url: request.url,
      init: { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded" } },
    };
  }
  throw new Error(`not back at ${plan.redirect} after 12 steps`);
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function main() {
  const provider = new MemoryProvider();
  const url = new URL(plan.url);
  const first = new Client({ name: "mcpw-test-oauth-client", version: "1.0.0" });
  try {
    await first.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    throw new Error("connected without signing in: the gateway did not challenge");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const authorization = provider.authorizationUrl;
  if (!authorization) throw new Error("the SDK asked for no authorization");
  const back = await signIn(authorization.href);
  const error = back.searchParams.get("error");
  if (error) throw new Error(`the provider refused: ${error}: ${back.searchParams.get("error_description")}`);
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await transport.finishAuth(back.searchParams.get("code"));

  const client = new Client({ name: "mcpw-test-oauth-client", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  const listed = await client.listTools();
  const calls = [];
  for (const [name, args] of plan.calls ?? []) {
    try {
      const result = await client.callTool({ name, arguments: args });
      calls.push({ isError: Boolean(result.isError), text: text(result) });
    } catch (e) {
      calls.push({ error: String(e?.message ?? e) });
    }
  }
  await client.close();
  const asked = authorization.searchParams;
  return {
    signIn: {
      resource: asked.get("resource"),
      scope: asked.get("scope"),
      clientId: asked.get("client_id"),
      registered: provider.saved.client?.client_id !== plan.clientId,
    },
    tools: listed.tools.map((t) => t.name).sort(),
    calls,
  };
}

try {
  process.stdout.write(`${JSON.stringify(await main())}\n`);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ error: String(e?.stack ?? e) })}\n`);
}
process.exit(0);
