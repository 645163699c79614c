#!/bin/sh
# A "browser" for unattended logins: fetches the authorization URL and follows
# its redirects, which end at mcpw's loopback callback.
exec node -e 'fetch(process.argv[1], { redirect: "follow", signal: AbortSignal.timeout(20000) }).then((r) => r.text()).catch((e) => { console.error(String(e)); process.exit(1); })' "$1"
