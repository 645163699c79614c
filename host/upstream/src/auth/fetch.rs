//! Reading the metadata documents rmcp's discovery does not hand back: one
//! GET each, with the 30 s limit of every OAuth request, and no redirect
//! (a document is trusted for where it was asked for, not where it moved);
//! the token requests mcpw makes itself go out the same way.

use std::time::Duration;

/// The client of these requests.
pub(super) fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

/// The JSON document at `url`; an error names the URL.
pub(super) async fn json<T: serde::de::DeserializeOwned>(url: &url::Url) -> Result<T, String> {
    client()?
        .get(url.clone())
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| format!("{url}: {e}"))?
        .json()
        .await
        .map_err(|e| format!("{url}: {e}"))
}

/// The `WWW-Authenticate` challenge a request without a token meets at
/// `url`, if it meets one (401).
pub(super) async fn challenge(url: &url::Url) -> Option<String> {
    let response = client().ok()?.get(url.clone()).send().await.ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    let header = response.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
    header.to_str().ok().map(str::to_string)
}

/// Posts `form` to the token endpoint `endpoint` as client `client_id`
/// with `secret` (HTTP Basic, RFC 6749's default, each part form-encoded
/// first as its §2.3.1 asks; without a secret, `client_id` goes in the
/// form): the answer, or why not (a refusal says its OAuth error and
/// description, never a token).
pub(super) async fn token<T: serde::de::DeserializeOwned>(
    endpoint: &str,
    (client_id, secret): (&str, Option<&str>),
    form: &[(&str, &str)],
) -> Result<T, TokenError> {
    let mut request = client().map_err(TokenError::failed)?.post(endpoint);
    if let Some(secret) = secret {
        request = request.basic_auth(form_encoded(client_id), Some(form_encoded(secret)));
    }
    let body = encoded(form, secret.is_none().then_some(client_id));
    let answer = request
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| TokenError::failed(e.without_url().to_string()))?;
    let status = answer.status();
    let body = answer
        .text()
        .await
        .map_err(|e| TokenError::failed(e.to_string()))?;
    if !status.is_success() {
        return Err(refusal(status.as_u16(), &body));
    }
    serde_json::from_str(&body).map_err(|e| TokenError::failed(format!("not a token answer: {e}")))
}

/// Why a token request got no token: the OAuth error code the endpoint
/// refused with, when it said one, and what to tell.
#[derive(Debug)]
pub(super) struct TokenError {
    /// The `error` of a refusal (`invalid_grant`, …).
    pub(super) code: Option<String>,
    said: String,
}

impl TokenError {
    fn failed(said: String) -> TokenError {
        TokenError { code: None, said }
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.said)
    }
}

/// `form` as a request's body, with `client_id` when given. (The
/// serializer is not `Send`: an async fn may not hold it.)
fn encoded(form: &[(&str, &str)], client_id: Option<&str>) -> String {
    let mut pairs = url::form_urlencoded::Serializer::new(String::new());
    pairs.extend_pairs(form);
    if let Some(id) = client_id {
        pairs.append_pair("client_id", id);
    }
    pairs.finish()
}

fn form_encoded(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// What a refused token request says: its OAuth error and description,
/// never a token.
pub(super) fn refusal(status: u16, body: &str) -> TokenError {
    let said: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let code = said["error"].as_str();
    let told = match (code, said["error_description"].as_str()) {
        (Some(e), Some(d)) => format!("refused ({status} {e}): {d}"),
        (Some(e), None) => format!("refused ({status} {e})"),
        _ => format!("refused (HTTP {status})"),
    };
    TokenError {
        code: code.map(str::to_string),
        said: told,
    }
}
