//! `serve.oauth.issuers[i].signIn`: the gateway's OpenID client at an
//! issuer, which signs a person's browser in at the gateway's callback
//! before it goes on to a server's authorization page.

use super::Reader;
use crate::config::model::GatewayClient;
use crate::config::validate::kind;
use serde_json::Value;

const FIELDS: &[&str] = &["clientId", "clientSecret", "clientSecretEnv"];

impl Reader<'_> {
    /// `signIn`, or `None` with its problems reported.
    pub(super) fn sign_in(&mut self, value: &Value, at: &str) -> Option<GatewayClient> {
        let Some(obj) = value.as_object() else {
            self.error(at, format!("expected an object, found {}", kind(value)));
            return None;
        };
        self.unknown(obj, FIELDS, at);
        self.client(obj, at)
    }
}
