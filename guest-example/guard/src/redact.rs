//! Credentials found in text, and the text with each one replaced by
//! `[REDACTED:<kind>]`.

use regex_lite::Regex;
use serde_json::Value;
use std::sync::OnceLock;

/// Token formats with a fixed shape, by kind.
const PATTERNS: &[(&str, &str)] = &[
    (
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    (
        "github-token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b",
    ),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("slack-token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    ("api-key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("stripe-key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}\b"),
    ("google-api-key", r"\bAIza[A-Za-z0-9_-]{35}"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
];

/// A word that names a secret, then a value within a few characters: the
/// value is redacted when it looks random.
const NEAR_WORD: &str = r#"(?i)(?:api[_-]?key|secret|token|password|passwd|credential|auth)[A-Za-z_-]*["']?\s*[:=]\s*["']?([A-Za-z0-9+/=_.-]{16,})"#;

fn patterns() -> &'static [(&'static str, Regex)] {
    static COMPILED: OnceLock<Vec<(&str, Regex)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|(kind, p)| (*kind, Regex::new(p).expect("a valid pattern")))
            .collect()
    })
}

fn near_word() -> &'static Regex {
    static COMPILED: OnceLock<Regex> = OnceLock::new();
    COMPILED.get_or_init(|| Regex::new(NEAR_WORD).expect("a valid pattern"))
}

/// Shannon entropy of `s`, in bits per character.
pub fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `s` looks random enough to be a secret: high entropy, and
/// letters mixed with digits (not a word, a path or a number).
fn looks_random(s: &str) -> bool {
    let digits = s.bytes().any(|b| b.is_ascii_digit());
    let letters = s.bytes().any(|b| b.is_ascii_alphabetic());
    digits && letters && entropy(s) >= 3.5
}

/// `text` with every credential replaced; `None` when it has none.
pub fn redact_text(text: &str) -> Option<String> {
    let mut out = text.to_string();
    for (kind, re) in patterns() {
        if re.is_match(&out) {
            out = re
                .replace_all(&out, format!("[REDACTED:{kind}]"))
                .into_owned();
        }
    }
    let mut cut: Vec<(usize, usize)> = near_word()
        .captures_iter(&out)
        .filter_map(|c| c.get(1))
        .filter(|m| !m.as_str().starts_with("[REDACTED") && looks_random(m.as_str()))
        .map(|m| (m.start(), m.end()))
        .collect();
    cut.reverse();
    for (start, end) in cut {
        out.replace_range(start..end, "[REDACTED:secret]");
    }
    (out != text).then_some(out)
}

/// Redacts every string of `value` in place; whether anything changed.
pub fn redact_value(value: &mut Value) -> bool {
    match value {
        Value::String(s) => match redact_text(s) {
            Some(r) => {
                *s = r;
                true
            }
            None => false,
        },
        // Every item is redacted: no stopping at the first change.
        Value::Array(items) => items.iter_mut().map(redact_value).filter(|&c| c).count() > 0,
        Value::Object(map) => map.values_mut().map(redact_value).filter(|&c| c).count() > 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_formats_are_redacted_by_kind() {
        let cases = [
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ012345 here",
                "github-token",
            ),
            ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
            ("xoxb-1234567890-abcdefghij", "slack-token"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "api-key"),
            ("AIzaSyA-0123456789abcdefghijklmnopqrstuv", "google-api-key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt",
            ),
        ];
        for (text, kind) in cases {
            let out = redact_text(text).unwrap_or_else(|| panic!("{text}"));
            assert!(
                out.contains(&format!("[REDACTED:{kind}]")),
                "{text} → {out}"
            );
        }
    }

    #[test]
    fn a_private_key_block_goes_whole() {
        let text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(
            redact_text(text).unwrap(),
            "key:\n[REDACTED:private-key]\nafter"
        );
    }

    #[test]
    fn random_values_next_to_secret_words_are_redacted_and_others_are_not() {
        let out = redact_text(r#"DB_PASSWORD="x9Fq2LmZ7pRt4KsW8vNc""#).unwrap();
        assert_eq!(out, r#"DB_PASSWORD="[REDACTED:secret]""#);
        let out = redact_text("api_key: 4f9c2a7e1b8d3f6a0c5e9b2d").unwrap();
        assert!(out.ends_with("[REDACTED:secret]"), "{out}");
        for plain in [
            "token: not-a-secret-at-all",
            "the password reset page is /account/password-reset",
            "commit 1234567890",
            "no secrets here",
        ] {
            assert_eq!(redact_text(plain), None, "{plain}");
        }
    }

    #[test]
    fn every_string_of_a_result_is_redacted() {
        let mut v = json!({"content": [{"type": "text", "text": "AKIAIOSFODNN7EXAMPLE"}],
                           "structuredContent": {"env": {"K": "ghp_0123456789abcdefghijABCDEFGHIJ012345"}, "n": 1}});
        assert!(redact_value(&mut v));
        assert_eq!(v["content"][0]["text"], "[REDACTED:aws-access-key]");
        assert_eq!(
            v["structuredContent"]["env"]["K"],
            "[REDACTED:github-token]"
        );
        assert!(!redact_value(&mut json!({"a": ["plain", 1, null]})));
    }
}
