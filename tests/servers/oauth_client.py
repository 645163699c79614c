"""The official Python SDK's client (PyPI `mcp`) signing in with its own OAuth
machinery (`mcp.client.auth.OAuthClientProvider`, an httpx2 auth), for the tests.

    oauth_client.py PLAN_JSON

PLAN: {"url": the MCP endpoint, "login": the account to sign in as,
       "redirect": the redirect URI (nothing need listen there: the provider's
       redirect to it is read, not followed), "clientId": a pre-registered
       public client (without it the SDK registers one dynamically),
       "calls": [[TOOL, ARGS], ...]}

The SDK meets the gateway's 401, discovers its protected resource metadata and
the provider's, registers (or not) and hands the authorization URL to the
redirect handler, which does what a browser would at the provider's own login
and consent pages; the callback handler gives back the code and state the
provider sent to the redirect URI. The client then lists the tools and calls
each of `calls`.

Prints one JSON object: "signIn" (the authorization URL's resource, scope and
client_id, and whether the SDK registered the client; null if it never asked),
"tools" (their names, sorted) and "calls" ({isError, text} or {error}); or
{"error"}.
"""

import asyncio
import json
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

MOST_STEPS = 12


class Memory:
    """What a client keeps between runs (`TokenStorage`), here in memory."""

    def __init__(self, client: OAuthClientInformationFull | None):
        self.client = client
        self.tokens: OAuthToken | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def answer(page: str, login: str):
    """The form answering the provider's page: its development login, or its consent."""
    if 'name="prompt" value="login"' in page:
        return {"prompt": "login", "login": login, "password": "any"}
    if 'name="prompt" value="consent"' in page:
        return {"prompt": "consent"}
    return None


async def sign_in(start: str, login: str, redirect: str) -> str:
    """Goes through the provider's pages from `start` as a browser would, until it
    sends the browser back to `redirect`: that URL, with the code."""
    async with httpx2.AsyncClient(follow_redirects=False) as http:
        url, form, logged_in = start, None, False
        for _ in range(MOST_STEPS):
            if form is None:
                response = await http.get(url)
            else:
                response = await http.post(url, data=form)
            location = response.headers.get("location")
            if response.is_redirect and location:
                to = urljoin(url, location)
                if to.startswith(redirect):
                    return to
                url, form = to, None
                continue
            form = answer(response.text, login)
            if form is None:
                raise RuntimeError(f"HTTP {response.status_code} at {url}, no form to answer: {response.text[:500]}")
            if form["prompt"] == "login":
                if logged_in:
                    raise RuntimeError(f"{login} was refused: asked to sign in again")
                logged_in = True
    raise RuntimeError(f"not back at {redirect} after {MOST_STEPS} steps")


async def main(plan):
    report = {"signIn": None}
    back = {}
    redirect = plan["redirect"]
    pre_registered = None
    if "clientId" in plan:
        pre_registered = OAuthClientInformationFull(
            client_id=plan["clientId"],
            redirect_uris=[redirect],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
            response_types=["code"],
        )
    storage = Memory(pre_registered)

    async def redirect_handler(authorization_url: str):
        asked = {k: v[0] for k, v in parse_qs(urlparse(authorization_url).query).items()}
        report["signIn"] = {
            "resource": asked.get("resource"),
            "scope": asked.get("scope"),
            "clientId": asked.get("client_id"),
            # Asked after registration: a client id other than the one given.
            "registered": storage.client is not None and storage.client.client_id != plan.get("clientId"),
        }
        to = await sign_in(authorization_url, plan["login"], redirect)
        back.update({k: v[0] for k, v in parse_qs(urlparse(to).query).items()})

    async def callback_handler():
        if "error" in back:
            raise RuntimeError(f"the provider refused: {back['error']}: {back.get('error_description')}")
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))

    auth = OAuthClientProvider(
        server_url=plan["url"],
        client_metadata=OAuthClientMetadata(
            client_name="mcpw-test-oauth-client",
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(plan["url"], http_client=http)
        async with Client(transport, raise_exceptions=True) as client:
            listed = await client.list_tools()
            report["tools"] = sorted(t.name for t in listed.tools)
            report["calls"] = []
            for tool, args in plan.get("calls", []):
                try:
                    result = await client.call_tool(tool, args)
                    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                    report["calls"].append({"isError": bool(result.is_error), "text": text})
                except Exception as e:  # the test reads which call failed, and why
                    report["calls"].append({"error": f"{type(e).__name__}: {e}"})
    return report


if __name__ == "__main__":
    try:
        out = asyncio.run(main(json.loads(sys.argv[1])))
    except BaseException as e:  # the test reads where it stopped
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))
