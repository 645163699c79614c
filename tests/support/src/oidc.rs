//! A real OpenID provider for the sign-in tests: `oidc-provider` 9 (a
//! certified implementation) run by `tests/servers/oidc-provider.mjs` on
//! loopback under Node 22, stopped on drop. Its JSON config (the resource
//! whose tokens are JWTs, clients, accounts, lifetimes) is described at the
//! top of that script. Tokens are got the way clients get them: client
//! credentials at the token endpoint, and a user's through the authorization
//! code flow with PKCE, the provider's own login and consent forms posted as
//! a browser would ([`Login`]).

mod login;

use crate::bounded;
use crate::servers::Servers;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use login::failed;
pub use login::{Login, browse, browse_until};

/// The provider's process and the endpoints it printed when ready.
pub struct OidcProvider {
    child: Child,
    ready: Value,
    http: reqwest::Client,
    stderr: Arc<Mutex<String>>,
}

impl OidcProvider {
    /// Starts the provider with `config` and waits for its line of
    /// endpoints; fails the test with what it printed if it stops first.
    /// It runs under [`bounded`], as the test clients do: for at most
    /// [`CLIENT_LIMIT`](crate::CLIENT_LIMIT).
    pub fn start(servers: &Servers, config: Value) -> OidcProvider {
        let mut child = bounded(servers.node22())
            .arg(servers.oidc_provider())
            .arg(config.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start oidc-provider.mjs");
        let stderr = Arc::new(Mutex::new(String::new()));
        drain(child.stderr.take().unwrap(), stderr.clone());
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        // Kept open: node ends on a write to a closed pipe.
        drain(stdout, stderr.clone());
        let Ok(ready) = serde_json::from_str::<Value>(&line) else {
            let status = child.wait();
            panic!(
                "oidc-provider.mjs did not start ({status:?}): {line}\n{}",
                stderr.lock().unwrap()
            );
        };
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        OidcProvider {
            child,
            ready,
            http,
            stderr,
        }
    }

    fn endpoint(&self, name: &str) -> &str {
        self.ready[name]
            .as_str()
            .unwrap_or_else(|| panic!("no {name} in {}", self.ready))
    }

    /// `http://127.0.0.1:<port>`, the `iss` of its tokens.
    pub fn issuer(&self) -> &str {
        self.endpoint("issuer")
    }

    pub fn jwks_uri(&self) -> &str {
        self.endpoint("jwks_uri")
    }

    pub fn authorization_endpoint(&self) -> &str {
        self.endpoint("authorization_endpoint")
    }

    pub fn token_endpoint(&self) -> &str {
        self.endpoint("token_endpoint")
    }

    pub fn introspection_endpoint(&self) -> &str {
        self.endpoint("introspection_endpoint")
    }

    pub fn revocation_endpoint(&self) -> &str {
        self.endpoint("revocation_endpoint")
    }

    /// The discovery document's address, from which a relying party finds the rest.
    pub fn discovery_uri(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer())
    }

    /// What the provider has written to stderr so far (its warnings and errors).
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Fails the test with `what` and what the provider said.
    fn fail(&self, what: &str) -> ! {
        panic!("{what}\noidc-provider.mjs said:\n{}", self.stderr())
    }

    /// Posts `form` to `endpoint`, as `client` (HTTP Basic) when given;
    /// the JSON answer, or `Err` with the status and body when refused.
    async fn post_form(
        &self,
        endpoint: &str,
        client: Option<(&str, &str)>,
        form: &[(&str, &str)],
    ) -> Result<Value, String> {
        let mut request = self.http.post(endpoint).form(form);
        if let Some((id, secret)) = client {
            request = request.basic_auth(id, Some(secret));
        }
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        let body = response.text().await.map_err(failed)?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {body}"));
        }
        serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))
    }

    /// The token endpoint's whole answer to a client-credentials grant;
    /// `scope` may be empty (then none is asked for).
    pub async fn client_credentials_response(
        &self,
        client: (&str, &str),
        resource: &str,
        scope: &str,
    ) -> Result<Value, String> {
        let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        self.post_form(self.token_endpoint(), Some(client), &form)
            .await
    }

    /// An access token for `resource` by the client-credentials grant.
    pub async fn client_credentials(
        &self,
        client_id: &str,
        secret: &str,
        resource: &str,
        scope: &str,
    ) -> String {
        let answer = self
            .client_credentials_response((client_id, secret), resource, scope)
            .await
            .unwrap_or_else(|e| self.fail(&format!("client credentials for {client_id}: {e}")));
        access_token(&answer)
    }

    /// The token endpoint's whole answer to `login`'s sign-in: the code
    /// flow with PKCE through the provider's own pages, then the code traded
    /// for tokens; or `Err` saying where it stopped.
    pub async fn sign_in(&self, login: &Login<'_>) -> Result<Value, String> {
        let code = login
            .code(&self.http, self.authorization_endpoint())
            .await?;
        let form = [
            ("grant_type", "authorization_code"),
            ("client_id", login.client_id),
            ("code", &code.code),
            ("code_verifier", &code.verifier),
            ("redirect_uri", login.redirect_uri),
            ("resource", login.resource),
        ];
        self.post_form(self.token_endpoint(), None, &form).await
    }

    /// A user's access token for `resource`, got by public client
    /// `client_id` through the authorization code flow with PKCE, `login`
    /// signing in and consenting at the provider's own pages.
    pub async fn user_token(
        &self,
        client_id: &str,
        redirect_uri: &str,
        login: &str,
        resource: &str,
        scope: &str,
    ) -> String {
        let answer = self
            .sign_in(&Login {
                client_id,
                redirect_uri,
                login,
                resource,
                scope,
            })
            .await
            .unwrap_or_else(|e| self.fail(&format!("{login} signing in through {client_id}: {e}")));
        access_token(&answer)
    }

    /// The provider's JWKS, as its `jwks_uri` serves it now.
    pub async fn jwks(&self) -> Value {
        let response = self.http.get(self.jwks_uri()).send().await.unwrap();
        response.json().await.unwrap()
    }

    /// The key ids the JWKS lists, in its order.
    pub async fn kids(&self) -> Vec<String> {
        let jwks = self.jwks().await;
        let keys = jwks["keys"].as_array().cloned().unwrap_or_default();
        keys.iter()
            .filter_map(|k| Some(k["kid"].as_str()?.to_string()))
            .collect()
    }

    /// Signs with a new key from now on; the JWKS lists it first and keeps
    /// the old keys, so tokens signed before still verify. The new key's id.
    pub async fn rotate(&self) -> String {
        self.rotate_keeping(true).await
    }

    /// Signs with a new key from now on and drops the old ones from the
    /// JWKS: tokens signed before no longer verify. The new key's id.
    pub async fn rotate_dropping_old(&self) -> String {
        self.rotate_keeping(false).await
    }

    async fn rotate_keeping(&self, keep_old: bool) -> String {
        let response = self
            .http
            .post(self.endpoint("rotate_uri"))
            .json(&serde_json::json!({"keep_old": keep_old}))
            .send()
            .await
            .unwrap();
        let answer: Value = response.json().await.unwrap();
        answer["kid"]
            .as_str()
            .unwrap_or_else(|| panic!("rotation: {answer}"))
            .to_string()
    }

    /// The provider's introspection of `token`, asked by `client` (a
    /// confidential one): `active` and the token's claims.
    pub async fn introspect(&self, client: (&str, &str), token: &str) -> Value {
        self.post_form(
            self.introspection_endpoint(),
            Some(client),
            &[("token", token)],
        )
        .await
        .unwrap_or_else(|e| self.fail(&format!("introspection: {e}")))
    }

    /// Revokes `token`, as `client` (the one it was issued to).
    pub async fn revoke(&self, client: (&str, &str), token: &str) {
        let response = self
            .http
            .post(self.revocation_endpoint())
            .basic_auth(client.0, Some(client.1))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "revocation: {response:?}");
    }
}

/// Reads `pipe` to its end into `sink`, as it comes: the provider's
/// warnings never fill the pipe, and stay at hand for a failing test.
fn drain(mut pipe: impl Read + Send + 'static, sink: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            let text = String::from_utf8_lossy(&buf[..n]);
            sink.lock().unwrap().push_str(&text);
        }
    });
}

fn access_token(answer: &Value) -> String {
    answer["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access_token in {answer}"))
        .to_string()
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        // SIGTERM, which `timeout` passes on to node; SIGKILL would stop
        // `timeout` alone and leave node serving.
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}
