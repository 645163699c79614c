//! Whose a person's own login is: a server's URL and a principal's key,
//! and what a listing of logins shows (never a secret).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// One person's login to one server, as a listing shows it (never a secret).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PersonLogin {
    /// The server's URL.
    pub url: String,
    /// The principal's key (`token:<name>`, `oauth:<issuer>#sub:<sub>`, …).
    pub owner: String,
    /// What the person is called, when the login was given a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl PersonLogin {
    /// The listing entry of `record`, kept for `person`.
    pub(super) fn of(person: &Person, record: &Value) -> PersonLogin {
        PersonLogin {
            url: person.url.clone(),
            owner: person.owner.clone(),
            name: record["name"].as_str().map(str::to_string),
        }
    }
}

/// Whose record: a server's URL and a principal's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// The server's URL.
    pub url: String,
    /// The principal's key.
    pub owner: String,
}

impl Person {
    /// `owner`'s record for the server at `url`.
    pub fn new(url: &str, owner: &str) -> Person {
        Person {
            url: url.to_string(),
            owner: owner.to_string(),
        }
    }

    /// The pair as bytes, each part after its length, so that no two pairs
    /// give the same bytes (`("a#b", "c")` is not `("a", "#bc")`).
    pub(super) fn tuple(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(8 + self.url.len() + self.owner.len());
        for part in [&self.url, &self.owner] {
            bytes.extend((part.len() as u32).to_be_bytes());
            bytes.extend(part.as_bytes());
        }
        bytes
    }

    /// A name for the record that does not say whose it is (a keyring
    /// entry, a refresh lock): the hex SHA-256 of [`Person::tuple`].
    pub fn digest(&self) -> String {
        hex(&Sha256::digest(self.tuple()))
    }

    /// `record` with `url` and `owner` in it, as every backend keeps it.
    pub(super) fn stamped(&self, record: &Value) -> Value {
        let mut record = match record {
            Value::Object(_) => record.clone(),
            _ => serde_json::json!({}),
        };
        record["url"] = self.url.clone().into();
        record["owner"] = self.owner.clone().into();
        record
    }
}

/// Lower-case hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tuple_keeps_its_parts_apart() {
        let a = Person::new("https://s/mcp#x", "token:ci");
        let b = Person::new("https://s/mcp", "#xtoken:ci");
        assert_ne!(a.tuple(), b.tuple());
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
        assert!(!a.digest().contains("ci"));
    }
}
