//! `${VAR}`, `${VAR:-default}` and `$env:VAR` interpolation of arbitrary text
//! in an arbitrary environment.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpw::config::interpolate::{has_reference, interpolate};
use mcpw::paths::Environment;

fuzz_target!(|input: (String, Vec<(String, String)>)| {
    let (text, vars) = input;
    let env = Environment::from_pairs(vars);
    let r = interpolate(&text, &env);
    // Only unset variables with well-formed names are reported.
    for name in &r.missing {
        assert!(env.get(name).is_none());
        assert!(name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
    // Text without a reference comes back as it was.
    if !has_reference(&text) {
        assert_eq!(r.value, text);
        assert!(r.missing.is_empty());
    }
});
