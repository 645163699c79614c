// A real OpenID provider for mcpw's sign-in tests: oidc-provider (a certified
// implementation) on loopback, configured only through its own API.
//   node oidc-provider.mjs '<json>'      (Node 22: oidc-provider 9 wants it)
// The JSON (every key optional):
//   port        the port on 127.0.0.1 (0, the default: any free one)
//   resource    the resource URI whose access tokens are JWTs (aud = it)
//   resources   more resource URIs whose access tokens are JWTs, as `resource`
//   scopes      the scopes those resources allow (default ["mcp"])
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
//   exchange    true: the token endpoint takes token exchange (RFC 8693,
//               grant `urn:ietf:params:oauth:grant-type:token-exchange`)
//               from a confidential client listing it in `grant_types`. The
//               subject_token must be an access token this provider signed
//               (else invalid_grant); `resource` (or `audience`) names
//               `resource` or one of `resources` (else invalid_target); the
//               scope is at most the subject token's (else invalid_scope).
//               The answer is a new JWT access token for that resource:
//               the subject's `sub` and account claims, the exchanging
//               client's `client_id`, and `act: {sub: <that client>}`
//               (around the subject token's own `act`, if it has one).
//   id_jag      {"<authorization server issuer>": "<client id there>"}: the
//               token exchange also issues identity assertions (ID-JAG,
//               cross-app access): subject_token_type id_token, an ID token
//               this provider issued to the exchanging client (else
//               invalid_grant), requested_token_type id-jag, `audience` an
//               issuer listed here (else invalid_target). The assertion is a
//               JWT of type `oauth-id-jag+jwt` signed with the current key:
//               iss, the ID token's sub, aud = that issuer, client_id = the
//               client listed for it, resource, jti, iat, exp (5 minutes),
//               and the asked `scope`, if any.
//   jwt_bearer  {issuer, jwks_uri}: the token endpoint takes the JWT bearer
//               grant (RFC 7523) with an identity assertion from that
//               issuer: of type `oauth-id-jag+jwt`, signed by its keys, aud
//               = this provider, client_id = the authenticated client (else
//               invalid_grant), for `resource` (or a resource of `resources`
//               it names). The answer is this provider's JWT access token for
//               that resource and the assertion's sub.
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
import { SignJWT, createLocalJWKSet, createRemoteJWKSet, importJWK, jwtVerify } from "jose";
import Provider, { errors, interactionPolicy } from "oidc-provider";

// stdout carries the ready line alone: the provider's notices go to stderr.
console.log = console.info = console.error;

const config = JSON.parse(process.argv[2] ?? "{}");
const scopes = config.scopes ?? ["mcp"];
const ttl = config.ttl ?? 3600;
const jwtResources = [config.resource, ...(config.resources ?? [])].filter((r) => r !== undefined);
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
  if (jwtResources.includes(indicator)) {
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

// The `act` claim of each token a token exchange issues, by token.
const actors = new WeakMap();

function tokenClaims(_ctx, token) {
  if (token.kind === "ClientCredentials") return clientClaims.get(token.clientId);
  const { sub: _, ...claims } = accounts.get(token.accountId) ?? {};
  const act = actors.get(token);
  return act ? { ...claims, act } : claims;
}

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

// A JWT access token this provider signed with one of its keys (the JWKS's),
// unexpired: its claims, or invalid_grant.
async function subjectClaims(token) {
  try {
    // `at+jwt`: an ID token is signed by the same keys.
    const { payload } = await jwtVerify(token, publicKeys(), { issuer, typ: "at+jwt", requiredClaims: ["sub", "exp"] });
    return payload;
  } catch (e) {
    throw new errors.CustomOIDCProviderError("invalid_grant", `subject_token refused: ${e.message}`);
  }
}

const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

const publicKeys = () => createLocalJWKSet({ keys: keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub) });

// An identity assertion for the person of an ID token this provider issued
// to the exchanging client, bound to the authorization server it names.
async function issueIdJag(ctx) {
  const { client, params } = ctx.oidc;
  if (params.subject_token_type !== ID_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`an identity assertion is for an ID token (${ID_TOKEN_TYPE})`);
  }
  let person;
  try {
    ({ payload: person } = await jwtVerify(params.subject_token ?? "", publicKeys(), {
      issuer, audience: client.clientId, requiredClaims: ["sub", "exp"],
    }));
  } catch (e) {
    throw new errors.CustomOIDCProviderError("invalid_grant", `subject_token refused: ${e.message}`);
  }
  const clientThere = config.id_jag[params.audience];
  if (clientThere === undefined) throw new errors.InvalidTarget(`unknown audience ${params.audience}`);
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    sub: person.sub, client_id: clientThere, resource: params.resource, jti: randomUUID(),
    ...(params.scope ? { scope: params.scope } : {}),
  };
  const key = await importJWK(keys[0], "RS256");
  const assertion = await new SignJWT(claims)
    .setProtectedHeader({ alg: "RS256", kid: keys[0].kid, typ: "oauth-id-jag+jwt" })
    .setIssuer(issuer).setAudience(params.audience).setIssuedAt(now).setExpirationTime(now + 300)
    .sign(key);
  ctx.body = {
    access_token: assertion, issued_token_type: ID_JAG_TYPE, token_type: "N_A", expires_in: 300,
    ...(params.scope ? { scope: params.scope } : {}),
  };
}

// An access token for the person an identity assertion of the trusted
// issuer names, when it was made for this provider and this client.
async function jwtBearer(ctx) {
  const { client, params, provider } = ctx.oidc;
  const trusted = config.jwt_bearer;
  let claims;
  try {
    ({ payload: claims } = await jwtVerify(params.assertion ?? "", createRemoteJWKSet(new URL(trusted.jwks_uri)), {
      issuer: trusted.issuer, audience: issuer, typ: "oauth-id-jag+jwt", requiredClaims: ["sub", "client_id", "jti", "exp"],
    }));
  } catch (e) {
    throw new errors.CustomOIDCProviderError("invalid_grant", `assertion refused: ${e.message}`);
  }
  if (claims.client_id !== client.clientId) {
    throw new errors.CustomOIDCProviderError("invalid_grant", "the assertion is for another client");
  }
  const target = claims.resource ?? params.resource;
  if (!jwtResources.includes(target)) throw new errors.InvalidTarget(`unknown resource ${target}`);
  const token = new provider.AccessToken({ accountId: claims.sub, client, scope: claims.scope, gty: JWT_BEARER });
  token.resourceServer = new provider.ResourceServer(target, resourceServer(target));
  ctx.oidc.entity("AccessToken", token);
  const value = await token.save();
  ctx.body = {
    access_token: value, token_type: "Bearer", expires_in: token.expiration,
    ...(claims.scope ? { scope: claims.scope } : {}),
  };
}

async function exchangeToken(ctx) {
  const { client, params, provider } = ctx.oidc;
  if (client.clientAuthMethod === "none") {
    throw new errors.UnauthorizedClient("token exchange is for confidential clients");
  }
  if (config.id_jag && params.requested_token_type === ID_JAG_TYPE) return issueIdJag(ctx);
  if (!params.subject_token) throw new errors.InvalidRequest("missing required parameter 'subject_token'");
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  const target = params.resource ?? params.audience;
  if (params.resource !== undefined && params.audience !== undefined && params.resource !== params.audience) {
    throw new errors.InvalidTarget("resource and audience name different targets");
  }
  if (target === undefined) throw new errors.InvalidTarget("resource is required");
  if (!jwtResources.includes(target)) throw new errors.InvalidTarget(`unknown resource ${target}`);
  const subject = await subjectClaims(params.subject_token);

  const audience = new provider.ResourceServer(target, resourceServer(target));
  const held = new Set(subject.scope?.split(" ") ?? []);
  const granted = [...audience.scopes].filter((s) => held.has(s));
  const asked = params.scope?.split(" ").filter(Boolean);
  const wider = asked?.filter((s) => !granted.includes(s)) ?? [];
  if (wider.length > 0) throw new errors.InvalidScope("scope wider than the subject token's", wider.join(" "));
  const scope = (asked ?? granted).join(" ") || undefined;

  const token = new provider.AccessToken({ accountId: subject.sub, client, scope, gty: TOKEN_EXCHANGE });
  token.resourceServer = audience;
  actors.set(token, subject.act ? { sub: client.clientId, act: subject.act } : { sub: client.clientId });
  ctx.oidc.entity("AccessToken", token);
  const value = await token.save();
  ctx.body = {
    access_token: value,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: token.tokenType,
    expires_in: token.expiration,
    scope,
  };
}

function build(issuer) {
  const provider = new Provider(issuer, {
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
  if (config.exchange || config.id_jag) {
    const parameters = ["subject_token", "subject_token_type", "requested_token_type", "resource", "audience", "scope"];
    provider.registerGrantType(TOKEN_EXCHANGE, exchangeToken, parameters);
  }
  if (config.jwt_bearer) provider.registerGrantType(JWT_BEARER, jwtBearer, ["assertion", "resource", "scope"]);
  return provider;
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
