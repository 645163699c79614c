//! Sealing with the team's secret: each server's shared credentials under
//! a key derived from it (bound to the name they are filed under), and each
//! person's own logins, named and sealed with keys HKDF derives from it for
//! each (server URL, owner) (see `people`).

use crate::auth::store::person::{Person, PersonLogin, hex};
use base64::Engine;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Fewer characters than this is too easy to guess for a key that guards
/// every login of a team.
const MIN_SECRET: usize = 16;
/// What a sealed shared login starts with: the scheme, for a later change.
const SCHEME: &str = "v1.";
/// The HKDF salt of the people's keys: their scheme, so that a later one
/// derives other keys.
const SALT: &[u8] = b"mcpw people v1";
/// What a sealed person's login starts with: its scheme.
const PEOPLE_SCHEME: &str = "p1.";

/// Seals and opens credentials with the team's secret; holds the key of the
/// requests the replicas hold for clients, derived from the same secret.
pub(in crate::auth::store) struct Sealer {
    shared: XChaCha20Poly1305,
    held: [u8; 32],
    /// For each person's own logins.
    people: PeopleKeys,
}

impl Sealer {
    /// From the secret as given; refuses one too short to be a key.
    pub(in crate::auth::store) fn new(secret: &str) -> Result<Sealer, String> {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET {
            return Err(format!(
                "the shared state key has fewer than {MIN_SECRET} characters; use a random one, such as the output of `openssl rand -base64 32`"
            ));
        }
        let mut h = Sha256::new();
        h.update(b"mcpw shared credentials v1\0");
        h.update(secret.as_bytes());
        let key = h.finalize();
        let mut held = Sha256::new();
        held.update(b"mcpw held requests v1\0");
        held.update(secret.as_bytes());
        Ok(Sealer {
            shared: XChaCha20Poly1305::new(&key),
            held: held.finalize().into(),
            people: PeopleKeys::new(secret),
        })
    }

    /// The keys of each person's own logins.
    pub(super) fn people(&self) -> &PeopleKeys {
        &self.people
    }

    /// The key a held request's state is sealed with, the same at every
    /// replica (see `gateway::held`).
    pub(in crate::auth::store) fn held_requests_key(&self) -> [u8; 32] {
        self.held
    }

    /// `value` sealed, bound to `name` (a value moved under another name does
    /// not open).
    pub(super) fn seal(&self, name: &str, value: &Value) -> String {
        let plain = value.to_string();
        format!(
            "{SCHEME}{}",
            seal_bytes(&self.shared, name.as_bytes(), plain.as_bytes())
        )
    }

    /// The value sealed under `name`, if this key sealed it.
    pub(super) fn open(&self, name: &str, sealed: &str) -> Result<Value, String> {
        sealed
            .strip_prefix(SCHEME)
            .and_then(|b| open_bytes(&self.shared, name.as_bytes(), b))
            .and_then(|plain| serde_json::from_slice(&plain).ok())
            .ok_or_else(not_ours)
    }
}

/// Why a sealed value does not open.
pub(super) fn not_ours() -> String {
    "they do not open with this key (another key sealed them, or they were altered)".to_string()
}

/// `msg` sealed with `cipher`, bound to `aad`: a fresh nonce and the
/// ciphertext, in base64.
fn seal_bytes(cipher: &XChaCha20Poly1305, aad: &[u8], msg: &[u8]) -> String {
    let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let sealed = cipher
        .encrypt(&nonce, Payload { msg, aad })
        .expect("sealing in memory cannot fail");
    let mut bytes = nonce.to_vec();
    bytes.extend(sealed);
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes)
}

/// What [`seal_bytes`] sealed with `cipher` and `aad`, if it did.
fn open_bytes(cipher: &XChaCha20Poly1305, aad: &[u8], sealed: &str) -> Option<Vec<u8>> {
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(sealed)
        .ok()
        .filter(|b| b.len() > 24)?;
    let (nonce, msg) = bytes.split_at(24);
    cipher
        .decrypt(XNonce::from_slice(nonce), Payload { msg, aad })
        .ok()
}

/// The keys of the people's logins, derived from the team's secret.
pub(super) struct PeopleKeys {
    /// Names a login's field.
    field: Hmac<Sha256>,
    /// Seals the headers a listing opens.
    header: XChaCha20Poly1305,
    /// Derives each login's own key.
    records: Hkdf<Sha256>,
}

impl PeopleKeys {
    fn new(secret: &str) -> PeopleKeys {
        let records = Hkdf::<Sha256>::new(Some(SALT), secret.as_bytes());
        PeopleKeys {
            field: <Hmac<Sha256> as Mac>::new_from_slice(&derive(&records, b"field"))
                .expect("HMAC takes a key of any length"),
            header: XChaCha20Poly1305::new(&derive(&records, b"header").into()),
            records,
        }
    }

    /// The field `person`'s login is kept under.
    pub(super) fn field(&self, person: &Person) -> String {
        let mut mac = self.field.clone();
        mac.update(&person.tuple());
        hex(&mac.finalize().into_bytes())
    }

    /// The key of `person`'s login alone.
    fn record_key(&self, person: &Person) -> [u8; 32] {
        let mut info = b"record\0".to_vec();
        info.extend(person.tuple());
        derive(&self.records, &info)
    }

    fn record(&self, person: &Person) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.record_key(person).into())
    }

    /// `record` sealed as `person`'s: its field and its value.
    pub(super) fn seal(&self, person: &Person, record: &Value) -> (String, String) {
        let field = self.field(person);
        let header = serde_json::to_vec(&PersonLogin::of(person, record))
            .expect("a login's header always serializes");
        let value = format!(
            "{PEOPLE_SCHEME}{}.{}",
            seal_bytes(&self.header, field.as_bytes(), &header),
            seal_bytes(
                &self.record(person),
                &person.tuple(),
                record.to_string().as_bytes()
            ),
        );
        (field, value)
    }

    /// Whose login the value under `field` is, if this key sealed it there.
    pub(super) fn open_header(&self, field: &str, value: &str) -> Option<PersonLogin> {
        let (header, _) = value.strip_prefix(PEOPLE_SCHEME)?.split_once('.')?;
        let plain = open_bytes(&self.header, field.as_bytes(), header)?;
        let header: Value = serde_json::from_slice(&plain).ok()?;
        let person = Person::new(header["url"].as_str()?, header["owner"].as_str()?);
        (self.field(&person) == field).then(|| PersonLogin::of(&person, &header))
    }

    /// `person`'s record from `value`, if it was sealed as theirs.
    pub(super) fn open(&self, person: &Person, value: &str) -> Result<Value, String> {
        let (_, sealed) = value
            .strip_prefix(PEOPLE_SCHEME)
            .and_then(|v| v.split_once('.'))
            .ok_or_else(not_ours)?;
        let plain =
            open_bytes(&self.record(person), &person.tuple(), sealed).ok_or_else(not_ours)?;
        serde_json::from_slice(&plain).map_err(|_| not_ours())
    }
}

/// The key HKDF expands for `info`.
fn derive(hkdf: &Hkdf<Sha256>, info: &[u8]) -> [u8; 32] {
    let mut key = [0u8; 32];
    hkdf.expand(info, &mut key)
        .expect("32 bytes is a length HKDF-SHA256 gives");
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sealed_values_open_with_their_key_and_name_only() {
        let a = Sealer::new("a team secret of some length").unwrap();
        let b = Sealer::new("another team secret, as long").unwrap();
        let v = json!({"access_token": "tok-123"});
        let sealed = a.seal("https://s/mcp", &v);
        assert!(!sealed.contains("tok-123"));
        assert_ne!(
            sealed,
            a.seal("https://s/mcp", &v),
            "a fresh nonce each time"
        );
        assert_eq!(a.open("https://s/mcp", &sealed).unwrap(), v);
        assert!(b.open("https://s/mcp", &sealed).is_err(), "another key");
        assert!(a.open("https://t/mcp", &sealed).is_err(), "another name");
        let mut tampered = sealed.clone();
        tampered.replace_range(10..11, if &sealed[10..11] == "A" { "B" } else { "A" });
        assert!(a.open("https://s/mcp", &tampered).is_err(), "altered");
        let short = Sealer::new("short").err().unwrap();
        assert!(short.contains("openssl rand"), "{short}");
    }

    const SECRET: &str = "a team secret of some length";

    /// A sealed login opens only as its own (server, person), under its own
    /// field, with the team's key; its field and value name no one.
    #[test]
    fn a_login_opens_only_as_its_own() {
        let keys = PeopleKeys::new(SECRET);
        let alice = Person::new("https://s/mcp", "oauth:https://idp#sub:alice");
        let bob = Person::new("https://s/mcp", "token:bob");
        let elsewhere = Person::new("https://t/mcp", "oauth:https://idp#sub:alice");
        let record = json!({"url": alice.url, "owner": alice.owner, "name": "Alice",
                            "credentials": {"access_token": "tok-123"}});
        let (field, value) = keys.seal(&alice, &record);
        for secret in ["alice", "Alice", "tok-123", "idp", "https://s"] {
            assert!(
                !field.contains(secret) && !value.contains(secret),
                "{secret}"
            );
        }
        assert_eq!(field.len(), 64);
        assert_eq!(keys.open(&alice, &value).unwrap(), record);
        let header = keys.open_header(&field, &value).unwrap();
        assert_eq!(
            (header.owner.as_str(), header.name.as_deref()),
            (alice.owner.as_str(), Some("Alice"))
        );
        assert!(!serde_json::to_string(&header).unwrap().contains("tok-123"));

        // Another person, another server, another field, another key.
        assert_ne!(keys.record_key(&alice), keys.record_key(&bob));
        assert_ne!(keys.record_key(&alice), keys.record_key(&elsewhere));
        assert!(keys.open(&bob, &value).is_err(), "another person");
        assert!(keys.open(&elsewhere, &value).is_err(), "another server");
        let (bobs_field, _) = keys.seal(&bob, &json!({}));
        assert_ne!(bobs_field, field);
        assert!(keys.open_header(&bobs_field, &value).is_none(), "moved");
        let other = PeopleKeys::new("another team secret, as long");
        assert!(other.open(&alice, &value).is_err() && other.open_header(&field, &value).is_none());
        // Altered anywhere: nothing opens.
        let mut altered = value.clone();
        let at = value.len() - 5;
        altered.replace_range(
            at..at + 1,
            if &value[at..at + 1] == "A" { "B" } else { "A" },
        );
        assert!(keys.open(&alice, &altered).is_err());
        // The header of one login with the record of another does not open either.
        let (_, bobs) = keys.seal(&bob, &json!({"credentials": "B"}));
        let spliced = format!(
            "{}.{}",
            value.rsplit_once('.').unwrap().0,
            bobs.rsplit_once('.').unwrap().1
        );
        assert!(keys.open(&alice, &spliced).is_err());
    }

    /// The derivation is fixed: every replica, and every later version,
    /// finds a login under the field and key an earlier one used. The
    /// values were computed apart, with Python's `hmac` and `hashlib`
    /// (HKDF-SHA256 as RFC 5869 gives it).
    #[test]
    fn the_derived_keys_do_not_change() {
        let keys = PeopleKeys::new(SECRET);
        let ci = Person::new("https://s/mcp", "token:ci");
        assert_eq!(
            keys.field(&ci),
            "5ad50654911f069ba9079c502d816510034764cad28b90d381d30f4610f1826b"
        );
        assert_eq!(
            hex(&keys.record_key(&ci)),
            "ee2a8d16071afdf201812f1fb9356a0b58e4eb805212d1a9aa999fa789e4315b"
        );
        let header = derive(&Hkdf::new(Some(SALT), SECRET.as_bytes()), b"header");
        assert_eq!(
            hex(&header),
            "e5e37341a6a3e438010434f85dcb4e4b599f3222625dc1a467508e64e975d5bb"
        );
    }
}
