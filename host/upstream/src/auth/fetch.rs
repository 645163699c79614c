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
