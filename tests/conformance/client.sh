#!/bin/sh
# mcpw as the client of the conformance suite's client scenarios. The suite runs
# `client.sh <URL>` with MCP_CONFORMANCE_SCENARIO set; MCPW_BIN is the binary.
url="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '{"mcpServers": {"s": {"url": "%s"}}, "settings": {"toolPrefix": "none"}}' "$url" > "$dir/mcp.json"
export HOME="$dir" XDG_CACHE_HOME="$dir/cache" XDG_STATE_HOME="$dir/state" XDG_CONFIG_HOME="$dir/config"
mcpw() { "$MCPW_BIN" --config "$dir/mcp.json" "$@"; }
case "$MCP_CONFORMANCE_SCENARIO" in
  tools_call) mcpw call add_numbers '{"a": 2, "b": 3}' ;;
  sse-retry) mcpw call test_reconnection '{}' ;;
  # Five fields with defaults, then "Send this?": empty lines take them all.
  elicitation-sep1034-client-defaults)
    printf '\n\n\n\n\n\n' | mcpw call --answers-from-stdin test_client_elicitation_defaults '{}' ;;
  *) mcpw tools ;;
esac
