#!/bin/sh
# mcpw as the client of the conformance suite's client auth scenarios. The suite
# runs `auth-client.sh <URL>` with MCP_CONFORMANCE_SCENARIO set, and
# MCP_CONFORMANCE_CONTEXT (JSON) holding client_id/client_secret for
# pre-registered clients, and for cross-app access the identity provider's
# issuer, token endpoint, mcpw's client there and the person's ID token;
# MCPW_BIN is the binary. The "browser" follows the authorization redirects to
# mcpw's loopback callback.
url="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
export HOME="$dir" XDG_CACHE_HOME="$dir/cache" XDG_STATE_HOME="$dir/state" XDG_CONFIG_HOME="$dir/config"
export BROWSER="$here/browser.sh"
# The suite runs on Node: build the config with it.
node -e '
const [url, file] = process.argv.slice(1);
const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const oauth = { clientMetadataUrl: "https://conformance-test.local/client-metadata.json" };
if (ctx.client_id) oauth.clientId = ctx.client_id;
if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
if (ctx.private_key_pem) oauth.privateKey = ctx.private_key_pem;
if (ctx.signing_algorithm) oauth.signingAlgorithm = ctx.signing_algorithm;
if (/client-credentials/.test(process.env.MCP_CONFORMANCE_SCENARIO || "")) oauth.grantType = "client_credentials";
if (ctx.idp_id_token) {
  oauth.grantType = "id-jag";
  oauth.identityProvider = {
    issuer: ctx.idp_issuer,
    tokenEndpoint: ctx.idp_token_endpoint,
    clientId: ctx.idp_client_id,
    idToken: ctx.idp_id_token,
  };
}
const config = { mcpServers: { s: { url, oauth } }, settings: { toolPrefix: "server", credentialStore: "file" } };
require("fs").writeFileSync(file, JSON.stringify(config));
' "$url" "$dir/mcp.json"
mcpw() { "$MCPW_BIN" --config "$dir/mcp.json" "$@"; }
case "$MCP_CONFORMANCE_SCENARIO" in
  # A client with credentials of its own, or the person's ID token, logs
  # itself in when it connects.
  *client-credentials*|*cross-app-access*) mcpw call s__test-tool '{}' ;;
  *) mcpw auth login s && mcpw call s__test-tool '{}' ;;
esac
