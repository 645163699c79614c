//! Claude Code's approval of a project's `.mcp.json` servers, as Claude Code
//! 2.1 decides it: a server named in any `disabledMcpjsonServers` is
//! rejected; else one that `enableAllProjectMcpServers: true` or an
//! `enabledMcpjsonServers` entry approves, in the local or user settings (the
//! project's own `.claude/settings.json` counts once the folder is trusted),
//! is loaded; any other waits for the user's approval, and an interactive
//! session does not load it. Names are compared after every character other
//! than a letter, a digit, `_` or `-` becomes `_`; a settings file with a
//! value of the wrong type is ignored whole.

use super::lists::{self, normalized};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Files = BTreeMap<PathBuf, Result<Value, String>>;

/// What Claude Code does with a project's server.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Approval {
    /// Loaded.
    Approved,
    /// Waits for the user's approval.
    Pending,
    /// Disabled by the list in this file.
    Rejected(PathBuf),
}

/// The approvals of one project's `.mcp.json` servers.
#[derive(Default)]
pub(crate) struct Approvals {
    disabled: Vec<(String, PathBuf)>,
    enabled: BTreeSet<String>,
    all: bool,
}

impl Approvals {
    /// Read from the settings files (and the older place in `~/.claude.json`).
    pub(crate) fn read(files: &Files, home: &Path, project: &Path) -> Approvals {
        let places = lists::places(home, project);
        let trusted = trusted(files, &places[3]);
        let mut out = Approvals::default();
        for (i, (file, at)) in places.iter().enumerate() {
            let Some(Ok(root)) = files.get(file) else {
                continue;
            };
            let Some(holder) = at.iter().try_fold(root, |v, k| v.get(k)) else {
                continue;
            };
            if !well_typed(holder) {
                continue;
            }
            let names = |list: &str| -> Vec<String> {
                let entries = holder.get(list).and_then(Value::as_array);
                let names = entries.into_iter().flatten().filter_map(Value::as_str);
                names.map(normalized).collect()
            };
            for name in names("disabledMcpjsonServers") {
                out.disabled.push((name, file.clone()));
            }
            // The project's own settings approve only in a trusted folder.
            if i == 1 && !trusted {
                continue;
            }
            out.enabled.extend(names("enabledMcpjsonServers"));
            out.all |= holder.get("enableAllProjectMcpServers") == Some(&Value::Bool(true));
        }
        out
    }

    /// What Claude Code does with the project's server `name`.
    pub(crate) fn of(&self, name: &str) -> Approval {
        let name = normalized(name);
        if let Some((_, file)) = self.disabled.iter().find(|(n, _)| *n == name) {
            return Approval::Rejected(file.clone());
        }
        if self.all || self.enabled.contains(&name) {
            return Approval::Approved;
        }
        Approval::Pending
    }
}

/// Whether the lists and the switch in `holder` have the types Claude
/// Code's settings check requires (else it ignores the whole file).
fn well_typed(holder: &Value) -> bool {
    let list = |key: &str| match holder.get(key) {
        None => true,
        Some(Value::Array(entries)) => entries.iter().all(Value::is_string),
        Some(_) => false,
    };
    let switch = match holder.get("enableAllProjectMcpServers") {
        None | Some(Value::Bool(_)) => true,
        Some(_) => false,
    };
    list("enabledMcpjsonServers") && list("disabledMcpjsonServers") && switch
}

/// Whether the user trusted the project folder (its entry in `~/.claude.json`).
fn trusted(files: &Files, (file, at): &(PathBuf, Vec<String>)) -> bool {
    let Some(Ok(root)) = files.get(file) else {
        return false;
    };
    let project = at.iter().try_fold(root, |v, k| v.get(k));
    project.and_then(|p| p.get("hasTrustDialogAccepted")) == Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files(entries: &[(&Path, Value)]) -> Files {
        entries
            .iter()
            .map(|(p, v)| (p.to_path_buf(), Ok(v.clone())))
            .collect()
    }

    #[test]
    fn disabled_beats_enabled_and_a_badly_typed_file_counts_for_nothing() {
        let (home, project) = (Path::new("/h"), Path::new("/p"));
        let local = project.join(".claude/settings.local.json");
        let user = home.join(".claude/settings.json");
        let f = files(&[
            (&local, json!({"enabledMcpjsonServers": ["a", "x.y", "c"]})),
            (&user, json!({"disabledMcpjsonServers": ["c"]})),
        ]);
        let approvals = Approvals::read(&f, home, project);
        assert_eq!(approvals.of("a"), Approval::Approved);
        assert_eq!(
            approvals.of("x_y"),
            Approval::Approved,
            "compared normalized"
        );
        assert_eq!(approvals.of("c"), Approval::Rejected(user.clone()));
        assert_eq!(approvals.of("b"), Approval::Pending);
        // One entry of the wrong type: the file is ignored whole.
        let f = files(&[(&local, json!({"enabledMcpjsonServers": ["a", 7]}))]);
        assert_eq!(
            Approvals::read(&f, home, project).of("a"),
            Approval::Pending
        );
        assert_eq!(normalized("a "), "a_");
        assert_eq!(normalized("x🙂"), "x__", "a UTF-16 unit each");
    }

    #[test]
    fn the_projects_own_settings_approve_only_in_a_trusted_folder() {
        let (home, project) = (Path::new("/h"), Path::new("/p"));
        let settings = project.join(".claude/settings.json");
        let all = json!({"enableAllProjectMcpServers": true});
        let f = files(&[(&settings, all.clone())]);
        assert_eq!(
            Approvals::read(&f, home, project).of("a"),
            Approval::Pending
        );
        let trust = json!({"projects": {"/p": {"hasTrustDialogAccepted": true}}});
        let f = files(&[(&settings, all), (&home.join(".claude.json"), trust)]);
        assert_eq!(
            Approvals::read(&f, home, project).of("a"),
            Approval::Approved
        );
    }
}
