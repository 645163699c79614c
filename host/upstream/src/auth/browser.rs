//! Opening the authorization URL for the person logging in.

use crate::paths::Environment;
use std::io::IsTerminal;
use std::process::{Command, Stdio};

/// Whether a browser can be opened here: `$BROWSER` is set, or someone sits
/// at a terminal (the platform's opener then shows a browser).
pub fn available(env: &Environment) -> bool {
    env.get("BROWSER").is_some_and(|b| !b.trim().is_empty()) || std::io::stdin().is_terminal()
}

/// Opens `url` with `$BROWSER` (its `%s` replaced by the URL, else the URL
/// appended as an argument) or the platform's opener. Returns whether a
/// program was started; it is not waited for, and its output goes nowhere
/// (stdout belongs to the MCP protocol under `serve`).
pub(crate) fn open(url: &str, env: &Environment) -> bool {
    let mut command = match env.get("BROWSER").filter(|b| !b.trim().is_empty()) {
        Some(browser) => {
            // `$BROWSER` may list several, separated by `:`; the first is tried.
            let first = browser.split(':').next().unwrap_or(browser);
            let mut words = first.split_whitespace().map(str::to_string);
            let Some(program) = words.next() else {
                return false;
            };
            let mut args: Vec<String> = words.collect();
            if args.iter().any(|a| a.contains("%s")) {
                for a in &mut args {
                    *a = a.replace("%s", url);
                }
            } else {
                args.push(url.to_string());
            }
            let mut c = Command::new(program);
            c.args(args);
            c
        }
        None => platform_opener(url),
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env.vars() {
        command.env(k, v);
    }
    command.spawn().is_ok()
}

fn platform_opener(url: &str) -> Command {
    let mut c = if cfg!(target_os = "macos") {
        Command::new("open")
    } else if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        Command::new("xdg-open")
    };
    c.arg(url);
    c
}
