// A real OpenID provider for mcpw's sign-in tests: oidc-provider (a certified
// implementation) on loopback, configured only through its own API.
//   node oidc-provider.mjs '<json>'      (Node 22: oidc-provider 9 wants it)
// The JSON (every key optional):
//   port        the port on 127.0.0.1 (0, the default: any free one)
//   resource    the resource URI whose access tokens are JWTs (aud = it)
//   scopes      the scopes that resource allows (default ["mcp"])
//   opaque_resource  a second resource whose access tokens are opaque (for
//               introspection and revocation), with the same scopes
//   ttl         access tokens' lifetime in seconds (default 3600)
//   not_before  seconds after issue when a JWT access token becomes valid
//               (its `nbf`; default 0)
//   clients     oidc-provider client metadata, plus `claims`: claims put in
//               that client's client-credentials tokens (e.g. `groups`)
//   accounts    [{sub, email, groups, ...}]: the users devInteractions signs
//               in (by `sub` as the login, any password); every key but
//               `sub` lands in their access tokens. A login with no account
//               is shown the login page again.
//   registration  true: clients may register themselves (RFC 7591, open
//               registration at the discovery document's
//               `registration_endpoint`), naming the resource's scopes
// When ready it prints one line of JSON on stdout, and nothing more there:
// the discovery document's issuer and endpoints, `rotate_uri` and `kid`
// (the signing key's id). Its notices and errors go to stderr.
// `POST <rotate_uri>` (body optional: {"keep_old": false}) signs from then on
// with a new key; the JWKS lists it first, and the old keys too unless
// `keep_old` is false. The answer: {"kid": new, "kids": [the JWKS's]}.
// Rotation builds a new Provider over the same storage, clients and cookie
// keys: the provider has no API to change its keys while it serves.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import Provider, { errors, interactionPolicy } from "oidc-provider";

// stdout carries the ready line alone: the provider's notices go to stderr.
console.log = console.info = console.error;

const config = JSON.parse(process.argv[2] ?? "{}");
const scopes = config.scopes ?? ["mcp"];
const ttl = config.ttl ?? 3600;
const accounts = new Map((config.accounts ?? []).map((a) => [a.sub, a]));
const clientClaims = new Map();
const clients = (config.clients ?? []).map(({ claims, ...metadata }) => {
  clientClaims.set(metadata.client_id, claims ?? {});
  const grants = metadata.grant_types ?? ["authorization_code"];
  // A machine client has no authorization endpoint use: no response types.
  const responses = grants.includes("authorization_code") ? ["code"] : [];
  return { response_types: responses, ...metadata };
});
const cookieKeys = [randomUUID()];

function newKey() {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), alg: "RS256", use: "sig" };
}

function resourceServer(indicator) {
  const common = { scope: scopes.join(" "), audience: indicator, accessTokenTTL: ttl };
  if (indicator === config.resource) {
    // The current key by name: with several RSA keys the choice is ours.
    return { ...common, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256", kid: keys[0].kid } } };
  }
  if (indicator === config.opaque_resource) return { ...common, accessTokenFormat: "opaque" };
  throw new errors.InvalidTarget(`unknown resource ${indicator}`);
}

async function findAccount(_ctx, sub) {
  const account = accounts.get(sub);
  if (!account) return undefined;
  return {
    accountId: sub,
    async claims() {
      return { ...account, email_verified: account.email !== undefined };
    },
  };
}

// The development login takes any name; one with no account is asked to
// sign in again (the provider would fail on it further on).
function policy() {
  const prompts = interactionPolicy.base();
  const { Check } = interactionPolicy;
  const stranger = (ctx) => Boolean(ctx.oidc.session.accountId && !ctx.oidc.account);
  prompts.get("login").checks.add(new Check("no_account", "no account by that login", stranger));
  return prompts;
}

function tokenClaims(_ctx, token) {
  if (token.kind === "ClientCredentials") return clientClaims.get(token.clientId);
  const { sub: _, ...claims } = accounts.get(token.accountId) ?? {};
  return claims;
}

function build(issuer) {
  return new Provider(issuer, {
    clients,
    findAccount,
    jwks: { keys },
    cookies: { keys: cookieKeys },
    claims: { openid: ["sub"], email: ["email", "email_verified"], groups: ["groups"] },
    // A registering client names the scopes it will ask for (the MCP SDKs
    // name the resource's): the provider refuses scopes it does not list.
    scopes: ["openid", "offline_access", "email", "groups", ...(config.registration ? scopes : [])],
    extraTokenClaims: tokenClaims,
    interactions: { policy: policy() },
    formats: {
      customizers: {
        async jwt(_ctx, _token, { payload }) {
          payload.nbf = payload.iat + (config.not_before ?? 0);
        },
      },
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: config.registration === true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => resourceServer(indicator),
      },
    },
    ttl: {
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? ttl,
      ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? ttl,
    },
  });
}

let keys = [newKey()];
let issuer;
let handle;

function serve() {
  const provider = build(issuer);
  provider.on("server_error", (_ctx, e) => console.error("oidc-provider:", e));
  handle = provider.callback();
}

function rotate(keepOld) {
  keys = keepOld ? [newKey(), ...keys] : [newKey()];
  serve();
  return { kid: keys[0].kid, kids: keys.map((k) => k.kid) };
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

const server = createServer(async (req, res) => {
  if (req.url === "/__rotate" && req.method === "POST") {
    try {
      const body = (await readBody(req)).trim();
      const keepOld = body === "" ? true : JSON.parse(body).keep_old !== false;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(rotate(keepOld)));
    } catch (e) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: String(e) }));
    }
    return;
  }
  handle(req, res);
});

server.listen(config.port ?? 0, "127.0.0.1", async () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  serve();
  const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
  const ready = {
    issuer: discovery.issuer,
    jwks_uri: discovery.jwks_uri,
    authorization_endpoint: discovery.authorization_endpoint,
    token_endpoint: discovery.token_endpoint,
    introspection_endpoint: discovery.introspection_endpoint,
    revocation_endpoint: discovery.revocation_endpoint,
    userinfo_endpoint: discovery.userinfo_endpoint,
    registration_endpoint: discovery.registration_endpoint,
    rotate_uri: `${issuer}/__rotate`,
    kid: keys[0].kid,
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
});
