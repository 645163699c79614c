//! One finding of `mcpw doctor`: what is wrong (or fine), where, and what to do.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// How much a finding matters. `mcpw doctor` exits 1 when any is blocking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A server is not loaded, not started or cannot work as written.
    Blocking,
    /// Likely a mistake, but nothing stops working because of it.
    Warning,
    /// What was found, for the reader to know.
    Info,
}

impl Severity {
    /// The mark a person sees.
    pub fn mark(self) -> &'static str {
        match self {
            Severity::Blocking => "✗",
            Severity::Warning => "!",
            Severity::Info => "✓",
        }
    }
}

/// Which part of the report a finding belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    /// The clients' config files and mcpw's own, read without starting anything.
    Files,
    /// Servers connected under a deadline.
    Live,
    /// The gateway's own services: shared state, model, guests, traces.
    Gateway,
}

impl Section {
    /// The section's heading.
    pub fn title(self) -> &'static str {
        match self {
            Section::Files => "Config files",
            Section::Live => "Servers, live",
            Section::Gateway => "Gateway",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Its part of the report.
    pub section: Section,
    /// How much it matters.
    pub severity: Severity,
    /// The check's id (`not-read`, `unresolved-var`, ...).
    pub check: &'static str,
    /// The server it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The client whose file it is about (`claude-code`, ..., or `mcpw`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The file it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// What was found.
    pub message: String,
    /// What to do about it; empty when nothing is to be done.
    pub remedy: String,
}

impl Finding {
    /// A finding of `check` in `section`, with no server, client nor file yet.
    pub fn new(
        section: Section,
        severity: Severity,
        check: &'static str,
        message: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Finding {
        Finding {
            section,
            severity,
            check,
            server: None,
            client: None,
            file: None,
            message: message.into(),
            remedy: remedy.into(),
        }
    }

    /// About `server`.
    pub fn server(mut self, server: &str) -> Finding {
        self.server = Some(server.to_string());
        self
    }

    /// About a file of `client`.
    pub fn client(mut self, client: &str) -> Finding {
        self.client = Some(client.to_string());
        self
    }

    /// About `file`.
    pub fn file(mut self, file: &Path) -> Finding {
        self.file = Some(file.to_path_buf());
        self
    }
}

/// How many findings of each severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Blocking findings.
    pub blocking: usize,
    /// Warnings.
    pub warning: usize,
    /// Information.
    pub info: usize,
}

impl Summary {
    /// The counts of `findings`.
    pub fn of(findings: &[Finding]) -> Summary {
        let count = |s| findings.iter().filter(|f| f.severity == s).count();
        Summary {
            blocking: count(Severity::Blocking),
            warning: count(Severity::Warning),
            info: count(Severity::Info),
        }
    }
}
