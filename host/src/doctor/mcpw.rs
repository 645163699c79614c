//! mcpw's own merged config: what it serves and from where, its problems
//! (those `mcpw config validate` reports), and a project's servers waiting
//! for approval.

use super::finding::{Finding, Section, Severity};
use crate::config::{Config, Severity as ConfigSeverity, SourceKind};

/// The findings of the loaded config.
pub(crate) fn check(cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    diagnostics(cfg, &mut out);
    servers(cfg, &mut out);
    trust(cfg, &mut out);
    out
}

/// What `mcpw config validate` reports.
fn diagnostics(cfg: &Config, out: &mut Vec<Finding>) {
    for d in &cfg.diagnostics {
        let (severity, remedy) = match d.severity {
            ConfigSeverity::Error => (
                Severity::Blocking,
                "fix it: `mcpw config validate` lists every problem with its file and field",
            ),
            ConfigSeverity::Warning => (Severity::Warning, "see `mcpw config validate`"),
        };
        let mut f = Finding::new(Section::Files, severity, "mcpw-config", d.detail(), remedy)
            .client("mcpw")
            .file(&d.file);
        f.server = d.server.clone();
        out.push(f);
    }
}

/// Each server mcpw serves, and where its definition comes from.
fn servers(cfg: &Config, out: &mut Vec<Finding>) {
    for s in &cfg.servers {
        let from = match (&s.origin.kind, &s.origin.import) {
            (SourceKind::Import, Some(client)) => format!("imported from {client}'s"),
            (kind, _) => format!("from the {kind}"),
        };
        let state = if s.config.enabled {
            "serves"
        } else {
            "knows but does not serve (disabled)"
        };
        let remedy = if s.config.enabled {
            ""
        } else {
            "set \"enabled\": true to serve it"
        };
        let severity = if s.config.enabled {
            Severity::Info
        } else {
            Severity::Warning
        };
        out.push(
            Finding::new(
                Section::Files,
                severity,
                "mcpw-server",
                format!("mcpw {state} it, {from} file"),
                remedy,
            )
            .server(&s.name)
            .client("mcpw")
            .file(&s.origin.path),
        );
    }
}

/// A project's servers left out until approved, or ignored.
fn trust(cfg: &Config, out: &mut Vec<Finding>) {
    for w in &cfg.trust.waiting {
        let changed = if w.changed {
            ", changed since you approved it"
        } else {
            ""
        };
        out.push(
            Finding::new(
                Section::Files,
                Severity::Warning,
                "waiting-for-trust",
                format!("a project server waiting for your approval{changed}: not started, its tools not listed (it runs {})", w.runs),
                format!("read it, then `{} {}`", cfg.trust.approve_with, w.name),
            )
            .server(&w.name)
            .client("mcpw")
            .file(&w.file),
        );
    }
    for name in &cfg.trust.ignored {
        out.push(
            Finding::new(
                Section::Files,
                Severity::Info,
                "project-ignored",
                "a project server left out: settings.projectServers is \"ignore\"",
                "",
            )
            .server(name)
            .client("mcpw"),
        );
    }
}
