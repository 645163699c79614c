//! The loopback redirect of a login: a small HTTP listener on 127.0.0.1 that
//! takes the authorization server's redirect, shows a short page, and hands
//! the redirect URL over.

use axum::extract::State;
use axum::response::Html;
use tokio::sync::mpsc;

/// A bound listener, waiting to be used.
pub(crate) struct Callback {
    listener: tokio::net::TcpListener,
    port: u16,
}

impl Callback {
    /// Listens on 127.0.0.1: on `port`, or one the OS picks.
    pub(crate) async fn bind(port: Option<u16>) -> std::io::Result<Callback> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).await?;
        let port = listener.local_addr()?.port();
        Ok(Callback { listener, port })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Serves until the first redirect arrives; returns its full URL.
    pub(crate) async fn wait(self, server: &str) -> std::io::Result<String> {
        let (tx, mut rx) = mpsc::channel::<String>(1);
        let base = format!("http://127.0.0.1:{}", self.port);
        let state = (tx, base, server.to_string());
        let router = axum::Router::new()
            .route("/callback", axum::routing::get(redirected))
            .with_state(state);
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            axum::serve(crate::net::listener(self.listener), router)
                .with_graceful_shutdown(async {
                    let _ = done_rx.await;
                })
                .await
        });
        let url = rx.recv().await;
        let _ = done_tx.send(());
        // The page has been answered; the listener closes with this.
        let _ = serving.await;
        url.ok_or_else(|| std::io::Error::other("the callback listener stopped"))
    }
}

type CallbackState = (mpsc::Sender<String>, String, String);

async fn redirected(
    State((tx, base, server)): State<CallbackState>,
    uri: axum::http::Uri,
) -> Html<String> {
    let query: Vec<(String, String)> = uri
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let said = match (get("code"), get("error")) {
        (_, Some(error)) => {
            let detail = get("error_description").unwrap_or(error);
            format!("the login to {server} failed: {detail}. You can close this tab.")
        }
        (Some(_), None) => format!("logged in to {server}. You can close this tab."),
        (None, None) => "this is not an authorization redirect.".to_string(),
    };
    let _ = tx.try_send(format!("{base}{uri}"));
    Html(redirect_page(&said))
}

/// The page a browser sent back from a login is shown (here, or at the
/// gateway's own callback): `said`, escaped, from mcpw.
pub fn redirect_page(said: &str) -> String {
    format!(
        "<!doctype html><meta charset=\"utf-8\"><title>mcpw</title><p>mcpw: {}</p>",
        escape(said)
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
