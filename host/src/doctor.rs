//! `mcpw doctor`: why a client does not see a server. Read-only: it starts
//! no OAuth flow (a token that needs refreshing is reported, not
//! refreshed), and never starts a project server that waits for approval.
//!
//! - `files`: the seven clients' files, as each client reads them:
//!   where a server is defined, which definition wins, what is silently
//!   ignored ([`clients`] is the table of what each client reads).
//! - mcpw's own config: its problems, what it serves, what waits for trust.
//! - [`live`]: each server connected under a deadline.
//! - [`gateway`]: shared state, the embedding model, the trace exporter.
//!
//! Blocking findings (exit status 1): a server a client silently ignores
//! (defined where it does not read servers, in a file it cannot parse, or
//! behind one bad entry of an approval list), a definition that cannot
//! start (hidden characters in its name or command, an unset variable, a
//! command not found), an error in mcpw's config, a server that does not
//! connect or needs a login, and a gateway service that is configured but
//! unreachable or missing.

mod approval;
pub mod clients;
mod definitions;
mod files;
pub mod finding;
pub mod gateway;
mod lists;
pub mod live;
mod mcpw;
mod schema;

pub use finding::{Finding, Section, Severity, Summary};

use crate::config::Config;
use crate::paths::Environment;
use serde::Serialize;
use std::path::Path;

/// The findings read from files alone: the seven clients' files for the
/// project at `project`, and mcpw's own loaded config `cfg`.
pub fn file_findings(cfg: &Config, env: &Environment, project: &Path) -> Vec<Finding> {
    let mut out = files::check(env, project);
    out.extend(mcpw::check(cfg));
    out
}

/// What `mcpw doctor` found.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Every finding, by section.
    pub findings: Vec<Finding>,
    /// How many of each severity.
    pub summary: Summary,
}

impl Report {
    /// The report of `findings`, ordered by section (stable within one).
    pub fn new(mut findings: Vec<Finding>) -> Report {
        findings.sort_by_key(|f| f.section);
        let summary = Summary::of(&findings);
        Report { findings, summary }
    }

    /// Is any finding blocking?
    pub fn blocking(&self) -> bool {
        self.summary.blocking > 0
    }

    /// The report for a person: a heading per section, a mark per finding,
    /// its remedy beneath.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        let mut section = None;
        for f in &self.findings {
            if section != Some(f.section) {
                section = Some(f.section);
                text.push_str(&format!("\n{}\n", f.section.title()));
            }
            let mut about: Vec<String> = Vec::new();
            if let Some(s) = &f.server {
                about.push(format!("\"{s}\""));
            }
            if let Some(c) = &f.client {
                about.push(c.clone());
            }
            if let Some(file) = &f.file {
                about.push(file.display().to_string());
            }
            let about = if about.is_empty() {
                String::new()
            } else {
                format!("{}: ", about.join(", "))
            };
            text.push_str(&format!(
                "  {} [{}] {about}{}\n",
                f.severity.mark(),
                f.check,
                f.message
            ));
            if !f.remedy.is_empty() {
                text.push_str(&format!("      → {}\n", f.remedy));
            }
        }
        if self.findings.is_empty() {
            text.push_str("No server is defined in any client's file, nor in mcpw's config.\n");
        }
        let s = self.summary;
        text.push_str(&format!(
            "\n{} blocking, {} warning(s), {} fine\n",
            s.blocking, s.warning, s.info
        ));
        text.trim_start().to_string()
    }
}
