//! Values `mcpw add` asks for: at a terminal, on it (a secret without echo);
//! otherwise a line of standard input each, in the plan's order, so that a
//! script can pipe them in. Nothing asked is ever printed back.

use anyhow::{Context, Result, bail};
use mcpw::install::Input;
use std::io::{BufRead, IsTerminal, Write};

/// Whether a person answers (standard input is a terminal).
pub(crate) fn interactive() -> bool {
    std::io::stdin().is_terminal()
}

/// Asks whether to go on; only at a terminal.
pub(crate) fn confirm(question: &str) -> Result<bool> {
    let answer = line(&format!("{question} [y/N] "), false)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// The value of `input`: given with `--set`, else asked for.
pub(crate) fn value(input: &Input, given: &[(String, String)]) -> Result<String> {
    if let Some((_, v)) = given.iter().find(|(f, _)| *f == input.field) {
        return Ok(v.clone());
    }
    let default = input
        .default
        .as_deref()
        .map(|d| format!(" [{d}]"))
        .unwrap_or_default();
    let kind = if input.secret { "secret " } else { "" };
    let prompt = format!("{kind}{} ({}){default}: ", input.field, input.description);
    let answer = line(&prompt, input.secret)?;
    eprintln!();
    let answer = answer.trim_end_matches(['\r', '\n']).to_string();
    match (answer.is_empty(), &input.default) {
        (true, Some(d)) => Ok(d.clone()),
        (true, None) => bail!("{} needs a value", input.field),
        (false, _) => Ok(answer),
    }
}

/// One line of standard input, asked for with `prompt`; at a terminal with
/// `hidden`, without echo, turned off before the prompt shows, so that
/// nothing typed on seeing it is echoed.
fn line(prompt: &str, hidden: bool) -> Result<String> {
    let _quiet = (hidden && interactive()).then(Quiet::on);
    eprint!("{prompt}");
    std::io::stderr().flush().ok();
    let mut text = String::new();
    let read = std::io::stdin()
        .lock()
        .read_line(&mut text)
        .context("read standard input")?;
    if read == 0 {
        bail!("standard input ended before every value was given");
    }
    Ok(text)
}

/// The terminal's echo off until dropped.
struct Quiet(Option<libc::termios>);

impl Quiet {
    fn on() -> Quiet {
        // SAFETY: tcgetattr/tcsetattr on standard input with a termios of
        // our own; failure leaves the terminal as it was.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return Quiet(None);
            }
            let saved = t;
            t.c_lflag &= !libc::ECHO;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            Quiet(Some(saved))
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            // SAFETY: restores what `on` read.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
        }
    }
}
