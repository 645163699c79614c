//! Whom a person's own login can be for: the keys the gateway gives its
//! callers, `token:<name>` for a client of `serve.tokens`, and
//! `oauth:<issuer>#sub:<subject>` or `oauth:<issuer>#client:<id>` for a
//! person or a machine signed in through `serve.oauth`.

/// A principal's key, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner<'a> {
    /// A client of `serve.tokens`, by its name.
    Token(&'a str),
    /// A person or machine of `serve.oauth`, by the issuer that vouches for it.
    OAuth {
        /// The issuer.
        issuer: &'a str,
    },
}

/// Text that is no principal's key.
#[derive(Debug, thiserror::Error)]
#[error(
    "\"{0}\" is not a principal: give token:<name> (a client of serve.tokens), oauth:<issuer>#sub:<subject> (a person signed in through serve.oauth) or oauth:<issuer>#client:<client id> (a machine signed in through serve.oauth)"
)]
pub struct BadOwner(String);

impl<'a> Owner<'a> {
    /// `key` read, if it is one of the forms a principal's key takes.
    pub fn parse(key: &'a str) -> Result<Owner<'a>, BadOwner> {
        let bad = || BadOwner(key.to_string());
        let filled = |s: &str| !s.is_empty() && s.trim() == s;
        if let Some(name) = key.strip_prefix("token:") {
            return filled(name).then_some(Owner::Token(name)).ok_or_else(bad);
        }
        // An issuer identifier has no fragment (RFC 8414): the first `#`
        // ends it.
        let (issuer, who) = key
            .strip_prefix("oauth:")
            .and_then(|rest| rest.split_once('#'))
            .ok_or_else(bad)?;
        let id = who
            .strip_prefix("sub:")
            .or_else(|| who.strip_prefix("client:"))
            .ok_or_else(bad)?;
        match filled(issuer) && filled(id) {
            true => Ok(Owner::OAuth { issuer }),
            false => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_keys_the_gateway_gives_are_principals() {
        assert_eq!(Owner::parse("token:ci").unwrap(), Owner::Token("ci"));
        let person = Owner::parse("oauth:https://idp.example#sub:alice#1").unwrap();
        assert_eq!(
            person,
            Owner::OAuth {
                issuer: "https://idp.example"
            }
        );
        assert!(Owner::parse("oauth:https://idp#client:robot").is_ok());
        for bad in [
            "alice",
            "token:",
            "token: ci",
            "oauth:https://idp",
            "oauth:https://idp#alice",
            "oauth:#sub:alice",
            "oauth:https://idp#sub:",
            "sub:alice",
        ] {
            let err = Owner::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("token:<name>") && err.contains("#sub:"),
                "{bad}: {err}"
            );
        }
    }
}
