//! Who a request comes from: the client whose bearer token it carries
//! (`--token` / `MCPW_TOKEN`, and `serve.tokens`), compared with every token
//! in constant time so that timing tells neither whether nor which one
//! matched; and the session it may use, only one its own token opened.

use super::ServeError;
use super::bearer::Refusal;
use super::sessions::CappedSessions;
use crate::config::Serve;
use crate::gateway::ClientScope;
use crate::host::pipeline::CallRule;
use crate::paths::Environment;
use crate::team_state::sessions::SharedSessions;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The client name of `--token` / `MCPW_TOKEN` (no config name can be it).
const CLI_TOKEN: &str = "(--token)";

/// The header that names a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// A bearer token and the client it admits.
#[derive(Clone)]
pub struct ClientToken {
    /// The client: its name and the servers it sees.
    pub scope: ClientScope,
    /// The value clients send as `Authorization: Bearer <secret>`.
    pub secret: String,
}

// Written by hand so that the value never reaches a log.
impl std::fmt::Debug for ClientToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientToken")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The tokens to admit: `cli` (`--token` or `MCPW_TOKEN`, every server) and
/// the config's `serve.tokens`, their `!command`s run and `tokenEnv`s read.
pub async fn client_tokens(
    cli: Option<String>,
    serve: &Serve,
    env: &Environment,
) -> Result<Vec<ClientToken>, ServeError> {
    if serve.broken {
        return Err(ServeError::TokensInvalid);
    }
    let mut out = Vec::with_capacity(serve.tokens.len() + 1);
    if let Some(secret) = cli {
        out.push(ClientToken {
            scope: ClientScope::token(CLI_TOKEN, Vec::new()),
            secret,
        });
    }
    for token in &serve.tokens {
        let failed = |why: String| ServeError::TokenValue {
            name: token.name.clone(),
            index: token.index,
            why,
        };
        let secret = crate::secrets::resolve_source(&token.source, env)
            .await
            .map_err(failed)?;
        let scope = token_scope(token);
        out.push(ClientToken { scope, secret });
    }
    Ok(out)
}

/// What `serve.tokens[i]` sees, and what it says of its calls.
fn token_scope(token: &crate::config::ServeToken) -> ClientScope {
    let rule = CallRule {
        at: format!("serve.tokens[{}]", token.index),
        servers: token.servers.clone(),
        tools: token.tools.clone(),
        approve: token.approve.clone(),
        rate_limit: token.rate_limit,
    };
    ClientScope::token(&token.name, vec![rule])
}

/// Every token, as a digest: compared at a fixed length, whatever was sent;
/// and the access tokens of `serve.oauth`, checked by their issuers' keys.
pub(super) struct Clients {
    tokens: Vec<([u8; 32], ClientScope)>,
    verifier: Option<super::bearer::Verifier>,
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Clients {
    /// The clients of `tokens` (two with the same value could not be told
    /// apart), and those `oauth`'s issuers sign for.
    pub(super) fn new(
        tokens: Vec<ClientToken>,
        oauth: Option<crate::config::ServeOAuth>,
        secrets: super::IntrospectionSecrets,
    ) -> Result<Clients, ServeError> {
        let mut out: Vec<([u8; 32], ClientScope)> = Vec::with_capacity(tokens.len());
        for t in tokens {
            let d = digest(t.secret.as_bytes());
            if let Some((_, same)) = out.iter().find(|(other, _)| *other == d) {
                return Err(ServeError::SameToken(
                    same.name().to_string(),
                    t.scope.name().to_string(),
                ));
            }
            out.push((d, t.scope));
        }
        Ok(Clients {
            tokens: out,
            verifier: oauth.map(|o| super::bearer::Verifier::new(o, secrets)),
        })
    }

    /// The client whose token `presented` is. Every token is compared, and
    /// the match is picked without a branch on it.
    fn identify(&self, presented: &[u8]) -> Option<&ClientScope> {
        let presented = digest(presented);
        let mut found = usize::MAX;
        for (i, (d, _)) in self.tokens.iter().enumerate() {
            let mask = (constant_time_eq(d, &presented) as usize).wrapping_neg();
            found = (i & mask) | (found & !mask);
        }
        self.tokens.get(found).map(|(_, scope)| scope)
    }
}

/// The middleware: a request with a known token goes on with its client's
/// [`ClientScope`] among its extensions; any other gets 401.
pub(super) async fn require_token(
    clients: Arc<Clients>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::as_bytes);
    if let Some(client) = presented.and_then(|p| clients.identify(p)) {
        let client = client.clone();
        request.extensions_mut().insert(client);
        return next.run(request).await;
    }
    let verifier = clients.verifier.as_ref();
    let jwt = presented.and_then(|p| std::str::from_utf8(p).ok());
    let refused = match (jwt, verifier) {
        (Some(token), Some(verifier)) => match verifier.verify(token).await {
            Ok(client) => {
                request.extensions_mut().insert(client);
                return next.run(request).await;
            }
            Err(Refusal::Invalid(why)) => Some(("invalid_token", why)),
            Err(Refusal::Insufficient(why)) => Some(("insufficient_scope", why)),
        },
        _ => None,
    };
    let refused = refused.as_ref().map(|(e, why)| (*e, why.as_str()));
    super::resource::challenge(verifier.map(|v| v.oauth()), refused)
}

/// The middleware that keeps each session to the client that opened it: a
/// request naming another client's session is answered as rmcp answers one
/// for a session that does not exist (404), so one client can neither read
/// another's notifications, nor act in its name, nor close its session.
///
/// With shared state the owner is recorded there too: a session another
/// replica began is checked against it before this replica takes it up.
pub(super) async fn own_sessions(
    sessions: Arc<CappedSessions<LocalSessionManager>>,
    shared: Option<Arc<SharedSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(client) = request.extensions().get::<ClientScope>().cloned() else {
        return next.run(request).await;
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let not_found = || (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    let mut claim_here = false;
    if let Some(id) = &session {
        match sessions.owner(id) {
            Some(owner) if *owner != *client.owner() => return not_found(),
            Some(_) => {}
            None => {
                if let Some(shared) = &shared
                    && let Ok(Some(owner)) = shared.owner(id).await
                    && owner != client.owner()
                {
                    return not_found();
                }
                claim_here = true;
            }
        }
    }
    let response = next.run(request).await;
    let opened = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|_| session.is_none());
    if let Some(id) = opened {
        sessions.claim(id, client.owner());
        if let Some(shared) = &shared
            && let Err(e) = shared.set_owner(id, client.owner()).await
        {
            tracing::debug!("session {id}: {e}");
        }
    } else if let Some(id) = session.as_deref().filter(|_| claim_here) {
        // Taken up here (or not known here until now): this replica holds it too.
        sessions.claim(id, client.owner());
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ServeToken, TokenSource};

    fn token(name: &str, secret: &str) -> ClientToken {
        ClientToken {
            scope: ClientScope::only(name, ["git".to_string()]),
            secret: secret.into(),
        }
    }

    #[test]
    fn each_token_identifies_its_client_and_no_other() {
        let clients = Clients::new(
            vec![
                ClientToken {
                    scope: ClientScope::every(CLI_TOKEN),
                    secret: "cli-secret".into(),
                },
                token("ci", "ci-secret"),
                token("alice", "alice-secret"),
            ],
            None,
            Default::default(),
        )
        .unwrap();
        let who = |p: &str| clients.identify(p.as_bytes()).map(|s| s.name().to_string());
        assert_eq!(who("cli-secret").as_deref(), Some(CLI_TOKEN));
        assert_eq!(who("ci-secret").as_deref(), Some("ci"));
        assert_eq!(who("alice-secret").as_deref(), Some("alice"));
        for wrong in ["", "ci-secre", "ci-secret ", "CI-SECRET", "alice-secretx"] {
            assert_eq!(who(wrong), None, "{wrong:?}");
        }
        assert!(clients.identify(b"ci-secret").unwrap().is_limited());
    }

    #[test]
    fn two_clients_cannot_share_a_token() {
        let err = Clients::new(
            vec![token("a", "s3cr3t"), token("b", "s3cr3t")],
            None,
            Default::default(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("\"a\"") && err.contains("\"b\""), "{err}");
        assert!(!err.contains("s3cr3t"), "the value is not shown: {err}");
    }

    #[tokio::test]
    async fn config_tokens_resolve_from_commands_and_variables() {
        let env = Environment::from_pairs([("CI_TOKEN", "from-env")]);
        let serve = Serve {
            tokens: vec![
                ServeToken {
                    name: "ci".into(),
                    index: 0,
                    source: TokenSource::Env("CI_TOKEN".into()),
                    servers: Some(vec!["git".into()]),
                    tools: None,
                    approve: None,
                    rate_limit: None,
                },
                ServeToken {
                    name: "alice".into(),
                    index: 1,
                    source: TokenSource::Value("!printf ' from-command\\n'".into()),
                    servers: None,
                    tools: None,
                    approve: None,
                    rate_limit: None,
                },
            ],
            ..Serve::default()
        };
        let tokens = client_tokens(Some("cli".into()), &serve, &env)
            .await
            .unwrap();
        let got: Vec<(&str, &str, bool)> = tokens
            .iter()
            .map(|t| (t.scope.name(), t.secret.as_str(), t.scope.is_limited()))
            .collect();
        assert_eq!(
            got,
            vec![
                (CLI_TOKEN, "cli", false),
                ("ci", "from-env", true),
                ("alice", "from-command", false)
            ]
        );
        assert!(!format!("{tokens:?}").contains("from-"));

        let failing = Serve {
            tokens: vec![ServeToken {
                name: "bob".into(),
                index: 3,
                source: TokenSource::Value("!echo leaked; exit 2".into()),
                servers: None,
                tools: None,
                approve: None,
                rate_limit: None,
            }],
            ..Serve::default()
        };
        let err = client_tokens(None, &failing, &env)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"bob\"") && err.contains("serve.tokens[3]"),
            "{err}"
        );
        assert!(!err.contains("leaked"), "{err}");
        let broken = Serve {
            broken: true,
            ..Serve::default()
        };
        assert!(matches!(
            client_tokens(None, &broken, &env).await,
            Err(ServeError::TokensInvalid)
        ));
    }
}
