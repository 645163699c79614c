//! A Streamable HTTP client at the wire, for tests that must choose which
//! replica each request of one session reaches.

use serde_json::{Value, json};

/// One session, as a session id and the protocol version it agreed on.
pub(crate) struct Wire {
    http: reqwest::Client,
    /// The bearer token sent, if any.
    token: Option<String>,
    pub session: String,
    next: std::sync::atomic::AtomicU64,
}

/// The JSON-RPC message of a response: plain JSON, or the last `data:` of an
/// event stream that carries a response.
pub(crate) fn message(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return v;
    }
    body.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC response in: {body}"))
}

const VERSION: &str = "2025-11-25";

impl Wire {
    /// `initialize` (and `notifications/initialized`) at `url`.
    pub(crate) async fn initialize(url: &str) -> Wire {
        Self::initialize_as(url, None).await
    }

    /// As [`Wire::initialize`], sending `token` with every request.
    pub(crate) async fn initialize_as(url: &str, token: Option<&str>) -> Wire {
        let http = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "wire", "version": "1"}}});
        let mut post = http.post(url);
        if let Some(t) = token {
            post = post.bearer_auth(t);
        }
        let response = post
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "initialize at {url}");
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let _ = response.text().await;
        let wire = Wire {
            http,
            token: token.map(str::to_string),
            session,
            next: 1.into(),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let status = wire.send(url, &initialized).await.0;
        assert_eq!(status, 202, "notifications/initialized at {url}");
        wire
    }

    async fn send(&self, url: &str, body: &Value) -> (u16, String) {
        let mut post = self.http.post(url);
        if let Some(t) = &self.token {
            post = post.bearer_auth(t);
        }
        let response = post
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", VERSION)
            .json(body)
            .send()
            .await;
        match response {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.text().await.unwrap_or_default())
            }
            Err(e) => (0, e.to_string()),
        }
    }

    /// A request at `url` in this session: its result, or the error (an HTTP
    /// status that is not 200, or a JSON-RPC error) as text.
    pub(crate) async fn request(
        &self,
        url: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, text) = self.send(url, &body).await;
        if status != 200 {
            return Err(format!("HTTP {status}: {text}"));
        }
        let m = message(&text);
        match m.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(m["error"].to_string()),
        }
    }

    /// `tools/call` of `name`: the result (`isError` included).
    pub(crate) async fn call(&self, url: &str, name: &str, args: Value) -> Result<Value, String> {
        self.request(url, "tools/call", json!({"name": name, "arguments": args}))
            .await
    }

    /// The names `tools/list` gives at `url`.
    pub(crate) async fn tool_names(&self, url: &str) -> Vec<String> {
        self.tool_names_result(url).await.unwrap()
    }

    /// The names `tools/list` gives at `url`, or why it failed.
    pub(crate) async fn tool_names_result(&self, url: &str) -> Result<Vec<String>, String> {
        let list = self.request(url, "tools/list", json!({})).await?;
        Ok(list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect())
    }

    /// The same client with another session id.
    pub(crate) fn with_session(&self, session: &str) -> Wire {
        Wire {
            http: self.http.clone(),
            token: self.token.clone(),
            session: session.to_string(),
            next: 1.into(),
        }
    }

    /// Another client (`token`) naming this session.
    pub(crate) fn as_client(&self, token: &str) -> Wire {
        Wire {
            token: Some(token.to_string()),
            ..self.with_session(&self.session)
        }
    }

    /// Ends the session (DELETE) at `url`.
    pub(crate) async fn delete(&self, url: &str) {
        let mut delete = self.http.delete(url);
        if let Some(t) = &self.token {
            delete = delete.bearer_auth(t);
        }
        let response = delete
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", VERSION)
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "DELETE: {}",
            response.status()
        );
    }
}
