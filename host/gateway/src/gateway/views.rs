//! The views of MCP Apps opened for calls of clients that cannot render
//! them, kept for the page that shows them (see `app_host`).

use super::scope::ClientScope;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many views stay open; the oldest closes first.
const KEPT: usize = 64;
/// How long a view stays open.
const OPEN_FOR: Duration = Duration::from_secs(3600);

/// The views opened for calls, and where the page that shows them is.
pub(crate) struct Views {
    /// The page's address, `http://host:port`.
    base: String,
    /// A token to give in the view's address (a page of `serve` on stdio,
    /// whose token nobody typed).
    token: Option<String>,
    open: Mutex<VecDeque<Arc<View>>>,
}

/// One view opened for a tool call.
#[derive(Debug)]
pub(super) struct View {
    pub(super) id: String,
    /// The client whose call opened it.
    pub(super) client: ClientScope,
    pub(super) server: String,
    /// The tool's name on its server.
    pub(super) tool: String,
    /// The tool's name as the client called it.
    pub(super) name: String,
    /// The view's URI on its server.
    pub(super) uri: String,
    pub(super) arguments: Value,
    /// The server's result, as the server gave it.
    pub(super) result: Value,
    pub(super) opened: Instant,
}

impl Views {
    /// Views shown by the page at `base`, whose address carries `token`.
    pub(crate) fn new(base: String, token: Option<String>) -> Views {
        Views {
            base,
            token,
            open: Mutex::default(),
        }
    }

    /// Keeps a view and returns its address.
    pub(super) fn open(&self, mut view: View) -> String {
        view.id = random_id();
        let url = self.url(&view.id);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|v| v.opened.elapsed() < OPEN_FOR);
        while open.len() >= KEPT {
            open.pop_front();
        }
        open.push_back(Arc::new(view));
        url
    }

    fn url(&self, id: &str) -> String {
        match &self.token {
            Some(token) => format!("{}/view#view={id}&token={token}", self.base),
            None => format!("{}/view#view={id}", self.base),
        }
    }

    /// The open view `id`.
    pub(super) fn get(&self, id: &str) -> Option<Arc<View>> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.iter()
            .find(|v| v.id == id && v.opened.elapsed() < OPEN_FOR)
            .cloned()
    }
}

/// 128 random bits, in hex: a view's id cannot be guessed.
pub(super) fn random_id() -> String {
    use chacha20poly1305::aead::rand_core::RngCore;
    let mut bytes = [0u8; 16];
    chacha20poly1305::aead::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(n: usize) -> View {
        View {
            id: String::new(),
            client: ClientScope::everyone(),
            server: "clock".into(),
            tool: format!("t{n}"),
            name: format!("clock__t{n}"),
            uri: "ui://clock/app.html".into(),
            arguments: json!({}),
            result: json!({"content": []}),
            opened: Instant::now(),
        }
    }

    #[test]
    fn a_view_is_found_by_its_unguessable_id_until_newer_ones_push_it_out() {
        let views = Views::new("http://127.0.0.1:9".into(), Some("tok".into()));
        let url = views.open(view(0));
        let id = url
            .strip_prefix("http://127.0.0.1:9/view#view=")
            .and_then(|rest| rest.strip_suffix("&token=tok"))
            .expect(&url);
        assert_eq!(id.len(), 32);
        assert_eq!(views.get(id).map(|v| v.tool.clone()), Some("t0".into()));
        assert!(views.get("0".repeat(32).as_str()).is_none());
        for n in 1..=KEPT {
            views.open(view(n));
        }
        assert!(views.get(id).is_none(), "the oldest view closed");
        let without = Views::new("http://h:1".into(), None);
        assert!(without.open(view(0)).starts_with("http://h:1/view#view="));
    }
}
