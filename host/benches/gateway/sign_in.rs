//! Row 17: what signing in costs a call. The same TypeScript SDK client
//! makes sequential `echo` calls through `mcpw serve --http` (direct, in
//! front of server-everything over stdio) with a static token, with a JWT
//! access token of a real OpenID provider (`oidc-provider`; its signature
//! checked on every request against keys held), with an opaque token whose
//! introspection answer is reused (`cacheSeconds` 30), and, through a second
//! mcpw, with an opaque token introspected on every request (`cacheSeconds`
//! 0), in alternating rounds.

use crate::shared::{
    Proc, ROUNDS, SdkPath, SdkStats, free_port, home_with, mcpw_command, median, sdk_rounds,
    servers,
};
use mcpw_test_support::oidc::OidcProvider;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Calls per path and round.
const CALLS: usize = 300;
const STATIC: &str = "bench-static-token-0123456789";
const MACHINE: (&str, &str) = ("bench", "bench-secret");
const GATEWAY: (&str, &str) = ("gateway", "gateway-secret");

pub(crate) fn row17_sign_in(everything: &str, root: &Path) -> String {
    println!(
        "## 17. Signing in: sequential `echo` over Streamable HTTP, {CALLS} calls × {ROUNDS} rounds"
    );
    let (port, port0) = (free_port(), free_port());
    let resource = |p: u16| format!("http://127.0.0.1:{p}/mcp");
    // One provider signs JWTs for the gateway, another issues it opaque
    // tokens (a provider's tokens for one resource are of one kind).
    let provider = |resource: &str, opaque: Option<&str>| {
        let mut config = json!({"resource": resource, "scopes": ["mcp"], "ttl": 3600,
            "clients": [{"client_id": MACHINE.0, "client_secret": MACHINE.1,
                         "grant_types": ["client_credentials"], "claims": {"groups": ["bench"]}},
                        {"client_id": GATEWAY.0, "client_secret": GATEWAY.1,
                         "grant_types": ["client_credentials"]}]});
        if let Some(opaque) = opaque {
            config["opaque_resource"] = json!(opaque);
        }
        OidcProvider::start(servers(), config)
    };
    let jwts = provider(&resource(port), None);
    let opaques = provider("https://jwt.bench/mcp", Some(&resource(port)));
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let token = |idp: &OidcProvider| {
        rt.block_on(idp.client_credentials(MACHINE.0, MACHINE.1, &resource(port), "mcp"))
    };
    let (jwt, opaque) = (token(&jwts), token(&opaques));
    let home = root.join("sign-in");
    // Both gateways name the first's URI as their resource: the provider
    // knows one audience for opaque tokens.
    let (cached_home, mcpw) = serve(
        &home.join("cached"),
        everything,
        (&jwts, &opaques),
        (port, port),
        30,
    );
    let (_, mcpw0) = serve(
        &home.join("uncached"),
        everything,
        (&jwts, &opaques),
        (port0, port),
        0,
    );
    let echo = json!({"message": "ping"});
    let path = |name: &'static str, port: u16, token: &str| SdkPath {
        name,
        connect: json!({"url": resource(port), "token": token}),
        tool: "e__echo",
        args: echo.clone(),
        warm_args: echo.clone(),
    };
    let paths = [
        path("static token", port, STATIC),
        path("JWT", port, &jwt),
        path("opaque, answer reused", port, &opaque),
        path("opaque, introspected each time", port0, &opaque),
    ];
    let stats = sdk_rounds(&paths, CALLS, ROUNDS, &cached_home);
    drop((mcpw, mcpw0));
    report(&paths, &stats)
}

/// `mcpw serve --http` on `port`, the resource URI of `named`, trusting
/// the JWTs of `jwts` and the opaque tokens of `opaques`, introspected with
/// `cache` seconds of reuse, beside the static token.
fn serve(
    dir: &Path,
    everything: &str,
    (jwts, opaques): (&OidcProvider, &OidcProvider),
    (port, named): (u16, u16),
    cache: u64,
) -> (PathBuf, Proc) {
    let home = home_with(dir, json!({}));
    let introspection =
        json!({"clientId": GATEWAY.0, "clientSecret": GATEWAY.1, "cacheSeconds": cache});
    let issuers: Value = json!([{"issuer": jwts.issuer()},
                                {"issuer": opaques.issuer(), "introspection": introspection}]);
    let config = json!({
        "mcpServers": {"e": {"command": "node", "args": [everything, "stdio"]}},
        "serve": {"tokens": [{"name": "static", "token": STATIC}],
                  "oauth": {"resource": format!("http://127.0.0.1:{named}/mcp"),
                            "issuers": issuers, "scopes": ["mcp"]}},
    });
    std::fs::write(home.join(".config/mcpw/mcp.json"), config.to_string()).expect("the config");
    let addr = format!("127.0.0.1:{port}");
    let mut mcpw = Proc::spawn(
        mcpw_command(&home, &["serve", "--http", &addr, "--exposure", "direct"]),
        "mcpw serve --http (sign-in)",
        Some(home.join("mcpw.stderr")),
    );
    mcpw.wait_for_port(port);
    (home, mcpw)
}

/// Prints each path and what it adds over the static token; returns the
/// row of the summary table.
fn report(paths: &[SdkPath], stats: &[Vec<SdkStats>]) -> String {
    let p50 = |i: usize| median(&stats[i].iter().map(|s| s.p50).collect::<Vec<_>>());
    let added = |i: usize| {
        median(
            &(0..ROUNDS)
                .map(|r| stats[i][r].p50 - stats[0][r].p50)
                .collect::<Vec<_>>(),
        )
    };
    for (i, p) in paths.iter().enumerate() {
        println!(
            "{:<32} p50 {:>7.3} ms  added {:+.3} ms",
            p.name,
            p50(i),
            added(i)
        );
    }
    println!();
    format!(
        "| 17 | Signing in: `echo` over Streamable HTTP through `mcpw serve --http`, TS SDK client ({CALLS} calls × {ROUNDS} rounds) \
         | JWT p50 {:.3} ms ({:+.3}); opaque, answer reused {:.3} ms ({:+.3}); opaque, introspected each call {:.3} ms ({:+.3}) \
         | static token p50 {:.3} ms | the signature check and a reused answer cost next to nothing; an introspection per request costs a round trip to the provider |",
        p50(1),
        added(1),
        p50(2),
        added(2),
        p50(3),
        added(3),
        p50(0)
    )
}
