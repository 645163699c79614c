//! A user's sign-in without a browser: the authorization code flow with
//! PKCE, following the provider's redirects by hand, keeping its cookies,
//! and posting its development login and consent forms as their pages ask.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Client, Response, Url};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Redirects and pages a sign-in may pass through before it is given up
/// (the provider's takes five: login, resume, consent, resume, back).
const MOST_STEPS: usize = 12;

/// One user's sign-in through a public client.
pub struct Login<'a> {
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    /// The account's `sub`, typed into the login form (any password passes).
    pub login: &'a str,
    pub resource: &'a str,
    pub scope: &'a str,
}

/// The provider's cookies by name. Every cookie goes with every request:
/// the flow is one sign-in at a time, so a path never picks between two
/// cookies of one name.
#[derive(Default)]
struct Jar(BTreeMap<String, String>);

impl Jar {
    fn keep(&mut self, response: &Response) {
        for header in response.headers().get_all(SET_COOKIE) {
            let Some((name, value)) = header
                .to_str()
                .ok()
                .and_then(|h| h.split(';').next())
                .and_then(|pair| pair.split_once('='))
            else {
                continue;
            };
            if value.is_empty() {
                self.0.remove(name.trim());
            } else {
                self.0.insert(name.trim().to_string(), value.to_string());
            }
        }
    }

    fn header(&self) -> String {
        let pairs: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        pairs.join("; ")
    }
}

/// A PKCE verifier unique to this process's sign-ins, and its S256 challenge.
fn pkce() -> (String, String) {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let seed = format!(
        "{}:{}:{}",
        std::process::id(),
        now.as_nanos(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    let verifier = URL_SAFE_NO_PAD.encode(Sha256::digest(seed.as_bytes()));
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The next request of the flow.
enum Step {
    Get(Url),
    Post(Url, Vec<(&'static str, String)>),
}

/// What the provider sent back to the redirect URI, and the PKCE verifier
/// the token endpoint asks for with it.
pub(super) struct Code {
    pub(super) code: String,
    pub(super) verifier: String,
}

impl Login<'_> {
    /// Signs in at `authorization_endpoint` through `http` (which follows no
    /// redirect): the code, or `Err` saying where the flow stopped.
    pub(super) async fn code(
        &self,
        http: &Client,
        authorization_endpoint: &str,
    ) -> Result<Code, String> {
        let (verifier, challenge) = pkce();
        let state = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))[..16].to_string();
        let mut start = Url::parse(authorization_endpoint).unwrap();
        start
            .query_pairs_mut()
            .append_pair("client_id", self.client_id)
            .append_pair("response_type", "code")
            .append_pair("redirect_uri", self.redirect_uri)
            .append_pair("scope", self.scope)
            .append_pair("resource", self.resource)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state);
        let back = self.follow(http, Step::Get(start)).await?;
        let query: BTreeMap<String, String> = back.query_pairs().into_owned().collect();
        if let Some(error) = query.get("error") {
            return Err(format!("the provider refused: {error}: {back}"));
        }
        if query.get("state") != Some(&state) {
            return Err(format!("back with another state: {back}"));
        }
        let code = query.get("code").ok_or(format!("no code in {back}"))?;
        Ok(Code {
            code: code.clone(),
            verifier,
        })
    }

    /// Follows the flow from `step` until the provider sends the browser
    /// back to the redirect URI; that address, with its query.
    async fn follow(&self, http: &Client, step: Step) -> Result<Url, String> {
        match walk(http, self.login, step, Some(self.redirect_uri)).await? {
            Ended::Redirected(to) => Ok(to),
            Ended::Page(status, page, url) => Err(format!(
                "HTTP {status} at {url}, a page with no form to answer:\n{page}"
            )),
        }
    }
}

/// Where a browser's walk ended: sent to the address it stops at, or at a
/// page with no form of the provider's to answer.
enum Ended {
    Redirected(Url),
    Page(u16, String, Url),
}

/// A browser, `login` at the provider: from `step`, it follows every
/// redirect (to any host, its cookies kept) and answers the provider's
/// login and consent forms, until it is sent to an address beginning with
/// `stop_at`, or reaches a page it has no answer for.
async fn walk(
    http: &Client,
    login: &str,
    mut step: Step,
    stop_at: Option<&str>,
) -> Result<Ended, String> {
    let mut jar = Jar::default();
    let mut signed_in = false;
    for _ in 0..MOST_STEPS {
        let (url, request) = match step {
            Step::Get(url) => (url.clone(), http.get(url)),
            Step::Post(url, form) => (url.clone(), http.post(url).form(&form)),
        };
        let response = request
            .header(COOKIE, jar.header())
            .send()
            .await
            .map_err(failed)?;
        jar.keep(&response);
        if response.status().is_redirection() {
            let to = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or("a redirect without a location")?;
            let to = url.join(to).map_err(|e| e.to_string())?;
            if stop_at.is_some_and(|at| to.as_str().starts_with(at)) {
                return Ok(Ended::Redirected(to));
            }
            step = Step::Get(to);
            continue;
        }
        let status = response.status().as_u16();
        let page = response.text().await.map_err(failed)?;
        let Some(answer) = answer(&page, login) else {
            return Ok(Ended::Page(status, page, url));
        };
        if answer[0].1 == "login" {
            if signed_in {
                return Err(format!("{login} was refused: asked to sign in again"));
            }
            signed_in = true;
        }
        step = Step::Post(url.clone(), answer);
    }
    Err(format!("still walking after {MOST_STEPS} steps"))
}

/// A fresh browser opens `link` and signs in as `login` wherever the
/// provider asks, following every redirect: the status, text and address
/// of the page it ends at.
pub async fn browse(link: &str, login: &str) -> Result<(u16, String, String), String> {
    let (http, start) = fresh(link)?;
    match walk(&http, login, Step::Get(start), None).await? {
        Ended::Page(status, page, url) => Ok((status, page, url.to_string())),
        Ended::Redirected(to) => Err(format!("stopped at {to}")),
    }
}

/// As [`browse`], until the browser is sent to an address beginning with
/// `stop_at`: that address, which it does not open.
pub async fn browse_until(link: &str, login: &str, stop_at: &str) -> Result<String, String> {
    let (http, start) = fresh(link)?;
    match walk(&http, login, Step::Get(start), Some(stop_at)).await? {
        Ended::Redirected(to) => Ok(to.to_string()),
        Ended::Page(status, page, url) => Err(format!("HTTP {status} at {url}:\n{page}")),
    }
}

/// A fresh browser (no cookies, following no redirect by itself), and
/// `link` parsed.
fn fresh(link: &str) -> Result<(Client, Url), String> {
    let http = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(failed)?;
    let start = Url::parse(link).map_err(|e| format!("{link}: {e}"))?;
    Ok((http, start))
}

/// The form that answers the provider's page: its login or its consent.
fn answer(page: &str, login: &str) -> Option<Vec<(&'static str, String)>> {
    let asks = |prompt: &str| page.contains(&format!(r#"name="prompt" value="{prompt}""#));
    if asks("login") {
        Some(vec![
            ("prompt", "login".into()),
            ("login", login.into()),
            ("password", "any".into()),
        ])
    } else if asks("consent") {
        Some(vec![("prompt", "consent".into())])
    } else {
        None
    }
}

/// A request's error with its causes: reqwest's own says only that sending failed.
pub(super) fn failed(e: reqwest::Error) -> String {
    let mut said = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        said.push_str(&format!(": {c}"));
        cause = c.source();
    }
    said
}
