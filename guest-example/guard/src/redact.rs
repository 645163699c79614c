//! Credentials found in text, and the text with each one replaced by
//! `[REDACTED:<kind>]`.

use regex_lite::Regex;
use serde_json::Value;
use std::sync::OnceLock;

/// Token formats with a fixed shape: kind, a literal every match starts
/// with, the pattern, and how long a match can be. Patterns run only where
/// their literal occurs, so that a long result without one costs a scan.
const PATTERNS: &[(&str, &str, &str, usize)] = &[
    (
        "private-key",
        "-----BEGIN ",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        16_384,
    ),
    (
        "github-token",
        "gh",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b",
        256,
    ),
    (
        "github-token",
        "github_pat_",
        r"\bgithub_pat_[A-Za-z0-9_]{22,}\b",
        256,
    ),
    ("aws-access-key", "AKIA", r"\bAKIA[A-Z0-9]{16}\b", 24),
    ("aws-access-key", "ASIA", r"\bASIA[A-Z0-9]{16}\b", 24),
    (
        "slack-token",
        "xox",
        r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b",
        256,
    ),
    (
        "api-key",
        "sk-",
        r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
        256,
    ),
    (
        "stripe-key",
        "_live_",
        r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}\b",
        256,
    ),
    ("google-api-key", "AIza", r"\bAIza[A-Za-z0-9_-]{35}", 48),
    (
        "jwt",
        "eyJ",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        8192,
    ),
];

/// Words (lower case) that name a secret; a value just after one is
/// redacted when it looks random.
const SECRET_WORDS: &[&str] = &[
    "api",
    "secret",
    "token",
    "password",
    "passwd",
    "credential",
    "auth",
];

/// A secret word, then its value within a few characters.
const NEAR_WORD: &str = r#"(?i)(?:api[_-]?key|secret|token|password|passwd|credential|auth)[A-Za-z_-]*["']?\s*[:=]\s*["']?([A-Za-z0-9+/=_.-]{16,})"#;

/// How far after a secret word its value may end.
const NEAR: usize = 200;

fn patterns() -> &'static [(&'static str, &'static str, Regex, usize)] {
    static COMPILED: OnceLock<Vec<(&str, &str, Regex, usize)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|(kind, lit, p, max)| (*kind, *lit, Regex::new(p).expect("a valid pattern"), *max))
            .collect()
    })
}

fn near_word() -> &'static Regex {
    static COMPILED: OnceLock<Regex> = OnceLock::new();
    COMPILED.get_or_init(|| Regex::new(NEAR_WORD).expect("a valid pattern"))
}

/// Shannon entropy of `s`, in bits per character.
fn entropy(s: &str) -> f64 {
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

/// The end of a window of `text` from `from`, at most `len` bytes, on a
/// character boundary.
fn window_end(text: &str, from: usize, len: usize) -> usize {
    let mut end = (from + len).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    end
}

/// Every credential in `text`: its byte range and kind, in order, none
/// overlapping.
fn found(text: &str) -> Vec<(usize, usize, &'static str)> {
    let mut hits: Vec<(usize, usize, &str)> = Vec::new();
    for (kind, literal, re, max) in patterns() {
        let mut next = 0;
        for (at, _) in text.match_indices(literal) {
            if at < next {
                continue;
            }
            let end = window_end(text, at, *max);
            if let Some(m) = re.find_at(&text[..end], at) {
                hits.push((m.start(), m.end(), kind));
                next = m.end();
            }
        }
    }
    let lower = text.to_ascii_lowercase();
    let mut next = 0;
    let mut starts: Vec<usize> = SECRET_WORDS
        .iter()
        .flat_map(|w| lower.match_indices(w).map(|(at, _)| at))
        .collect();
    starts.sort_unstable();
    for at in starts {
        if at < next {
            continue;
        }
        let end = window_end(text, at, NEAR);
        let Some(value) = near_word()
            .captures_at(&text[..end], at)
            .and_then(|c| c.get(1))
        else {
            continue;
        };
        if looks_random(value.as_str()) {
            hits.push((value.start(), value.end(), "secret"));
            next = value.end();
        }
    }
    hits.sort_unstable();
    let mut kept: Vec<(usize, usize, &str)> = Vec::with_capacity(hits.len());
    for h in hits {
        match kept.last() {
            Some(last) if h.0 < last.1 => {}
            _ => kept.push(h),
        }
    }
    kept
}

/// `text` with every credential replaced; `None` when it has none.
fn redact_text(text: &str) -> Option<String> {
    let hits = found(text);
    if hits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for (start, end, kind) in hits {
        out.push_str(&text[from..start]);
        out.push_str(&format!("[REDACTED:{kind}]"));
        from = end;
    }
    out.push_str(&text[from..]);
    Some(out)
}

/// The kind of the first credential of a fixed shape (a token format or a
/// private key, not a guess by entropy) in any string of `value`.
pub fn credential_in(value: &Value) -> Option<&'static str> {
    match value {
        Value::String(s) => patterns().iter().find_map(|(kind, literal, re, max)| {
            s.match_indices(literal)
                .any(|(at, _)| re.find_at(&s[..window_end(s, at, *max)], at).is_some())
                .then_some(*kind)
        }),
        Value::Array(items) => items.iter().find_map(credential_in),
        Value::Object(map) => map.values().find_map(credential_in),
        _ => None,
    }
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
    fn a_credential_of_a_fixed_shape_is_found_anywhere_in_a_value() {
        let args = json!({"to": "ops", "body": ["hi", {"note": "key AKIAIOSFODNN7EXAMPLE"}]});
        assert_eq!(credential_in(&args), Some("aws-access-key"));
        // A guess by entropy is not enough to refuse a call.
        let guessed = json!({"text": "DB_PASSWORD=x9Fq2LmZ7pRt4KsW8vNc"});
        assert_eq!(credential_in(&guessed), None);
        assert_eq!(credential_in(&json!({"n": 1, "s": "no secret here"})), None);
    }

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
    fn a_secret_deep_in_a_long_text_is_found_and_the_rest_left_alone() {
        let text = "x".repeat(1_000_000) + " token: short " + &"y".repeat(1_000_000);
        assert_eq!(redact_text(&text), None);
        let planted = "x".repeat(500_000) + " AKIAIOSFODNN7EXAMPLE " + &"x".repeat(500_000);
        assert!(
            redact_text(&planted)
                .unwrap()
                .contains(" [REDACTED:aws-access-key] ")
        );
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
