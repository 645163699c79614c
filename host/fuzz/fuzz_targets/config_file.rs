//! One config file's bytes, as `mcpw` reads them: JSON with comments stripped
//! in place, parsed, then every server and setting validated and merged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpw::config::{self, ConfigSources};
use mcpw::paths::Environment;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    // A config file is read as UTF-8 text; other bytes never get this far.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    // Comments are blanked in place: same characters, same line breaks.
    let stripped = config::jsonc::strip(text);
    assert_eq!(stripped.chars().count(), text.chars().count());
    assert!(
        text.chars()
            .zip(stripped.chars())
            .all(|(a, b)| a == b || (b == ' ' && a != '\n'))
    );

    let value = match config::parse_json(text, Path::new("mcp.json")) {
        Ok(value) => value,
        Err(d) => {
            assert!(d.line.is_some_and(|l| l >= 1) && d.column.is_some_and(|c| c >= 1));
            return;
        }
    };

    // The whole file as the user config: no project files; imports look in a
    // home that does not exist.
    let env = Environment::from_pairs([
        ("HOME", "/nonexistent/mcpw-fuzz"),
        ("XDG_CONFIG_HOME", "/nonexistent/mcpw-fuzz/config"),
        ("APPDATA", "/nonexistent/mcpw-fuzz/appdata"),
        ("TOKEN", "s3cret"),
        ("EMPTY", ""),
    ]);
    let cfg = config::load(&ConfigSources {
        user_file: None,
        user_value: Some(value),
        project_dir: None,
        env,
    });
    for server in &cfg.servers {
        assert!(config::validate::valid_server_name(&server.name));
    }
    for d in &cfg.diagnostics {
        // Every diagnostic renders.
        let _ = d.to_string();
    }
});
