//! `settings.search`: search by meaning. `model` names the embedding model:
//! a folder holding `config.json`, `tokenizer.json` and `model.safetensors`
//! (absolute, `~/…`, or `./…` / `../…` from the config file), or a model id
//! (`owner/name`, or `owner/name@<commit>` for one commit of it) fetched
//! from its hub into mcpw's cache on first use, at a commit and with each
//! file's sha256 recorded there, so that a later fetch gets the same bytes.
//! Without the setting, search uses [`DEFAULT_MODEL`] at mcpw's own pin of
//! it; `"none"` ranks by words alone.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Where the embedding model comes from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ModelSetting {
    /// A folder on this machine (`~` not yet expanded).
    Folder(PathBuf),
    /// A model id on the hub, `owner/name`, at `commit` when one is given
    /// (else the commit its `main` names at the first fetch).
    Hub {
        /// `owner/name`.
        id: String,
        /// A full commit id (40 hex digits).
        commit: Option<String>,
    },
}

/// The model searched with when the user's file names none: small (90 MB),
/// quick on a CPU, and good at matching a task to a tool's description.
pub const DEFAULT_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The `model` value that turns search by meaning off.
const NO_MODEL: &str = "none";

/// What `settings.search.model` asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ModelChoice {
    /// Nothing set: [`DEFAULT_MODEL`].
    #[default]
    Default,
    /// `"none"`: words alone.
    Off,
    /// A model the user named.
    Set(ModelSetting),
}

impl ModelChoice {
    /// The model to search with, if any.
    pub fn setting(&self) -> Option<ModelSetting> {
        match self {
            ModelChoice::Default => Some(ModelSetting::Hub {
                id: DEFAULT_MODEL.to_string(),
                commit: None,
            }),
            ModelChoice::Off => None,
            ModelChoice::Set(s) => Some(s.clone()),
        }
    }
}

/// `settings.search`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SearchSettings {
    /// `model`.
    pub model: ModelChoice,
}

/// Is `s` a full commit id: 40 hex digits?
pub fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// Is `s` a hub id: `owner/name`, each of letters, digits, `.`, `_`, `-`?
fn is_model_id(s: &str) -> bool {
    let mut parts = s.split('/');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && !p.starts_with('.')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// Reads `model`: a folder or a hub id.
pub fn model(s: &str) -> Result<ModelSetting, String> {
    let path = Path::new(s);
    if path.is_absolute()
        || s == "~"
        || s.starts_with("~/")
        || s.starts_with("./")
        || s.starts_with("../")
    {
        Ok(ModelSetting::Folder(path.to_path_buf()))
    } else if let Some((id, commit)) = s.split_once('@')
        && is_model_id(id)
    {
        if !is_commit(commit) {
            return Err(format!(
                "expected a full commit id (40 hex digits) after {id}@, found {commit:?}"
            ));
        }
        Ok(ModelSetting::Hub {
            id: id.to_string(),
            commit: Some(commit.to_ascii_lowercase()),
        })
    } else if is_model_id(s) {
        Ok(ModelSetting::Hub {
            id: s.to_string(),
            commit: None,
        })
    } else {
        Err(format!(
            "expected a model folder (absolute, ~/…, ./… or ../…), a model id owner/name[@commit], or \"none\", found {s:?}"
        ))
    }
}

/// Checks `settings.search` from `file`; returns it with a relative model
/// folder made absolute, or the field and what is wrong.
pub fn check(value: &Value, file: &Path) -> Result<Value, (String, String)> {
    let Some(object) = value.as_object() else {
        return Err((
            "search".into(),
            format!("expected an object, found {value}"),
        ));
    };
    let mut out = Map::new();
    for (key, v) in object {
        match key.as_str() {
            "model" => {
                let field = || "search.model".to_string();
                let Some(s) = v.as_str() else {
                    return Err((field(), format!("expected a string, found {v}")));
                };
                if s == NO_MODEL {
                    out.insert(key.clone(), v.clone());
                    continue;
                }
                let kept = match model(s).map_err(|m| (field(), m))? {
                    ModelSetting::Folder(p) if p.is_relative() && !s.starts_with('~') => {
                        let dir = file.parent().unwrap_or(Path::new("."));
                        dir.join(p).display().to_string()
                    }
                    _ => s.to_string(),
                };
                out.insert(key.clone(), Value::String(kept));
            }
            other => {
                return Err((
                    format!("search.{other}"),
                    "unknown key: the key is model".into(),
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

impl SearchSettings {
    /// Reads checked settings.
    pub fn read(search: &Value) -> SearchSettings {
        let model = match search.get("model").and_then(Value::as_str) {
            None => ModelChoice::Default,
            Some(NO_MODEL) => ModelChoice::Off,
            Some(s) => model(s).map_or(ModelChoice::Default, ModelChoice::Set),
        };
        SearchSettings { model }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_model_is_a_folder_or_an_id() {
        let file = Path::new("/home/u/.config/mcpw/mcp.json");
        let checked = |v: Value| check(&json!({"model": v}), file);
        assert_eq!(
            checked(json!("./models/minilm")).unwrap()["model"],
            "/home/u/.config/mcpw/./models/minilm"
        );
        assert_eq!(checked(json!("~/m")).unwrap()["model"], "~/m");
        assert_eq!(
            checked(json!("sentence-transformers/all-MiniLM-L6-v2")).unwrap()["model"],
            "sentence-transformers/all-MiniLM-L6-v2"
        );
        let (field, message) = checked(json!("minilm")).unwrap_err();
        assert_eq!(field, "search.model");
        assert!(message.contains("owner/name"), "{message}");
        assert_eq!(checked(json!(3)).unwrap_err().0, "search.model");
        assert_eq!(
            check(&json!({"modle": "a/b"}), file).unwrap_err().0,
            "search.modle"
        );
        let raw = json!({"search": {"model": "a/b"}});
        assert_eq!(
            SearchSettings::read(&raw["search"]).model,
            ModelChoice::Set(ModelSetting::Hub {
                id: "a/b".into(),
                commit: None
            })
        );
        assert_eq!(checked(json!("none")).unwrap()["model"], "none");
        assert_eq!(
            SearchSettings::read(&json!({"model": "none"})).model,
            ModelChoice::Off
        );
        let default = SearchSettings::read(&json!({})).model;
        assert_eq!(default, ModelChoice::Default);
        assert_eq!(
            default.setting(),
            Some(ModelSetting::Hub {
                id: DEFAULT_MODEL.into(),
                commit: None
            })
        );
        let commit = "C9745ED1D9F207416BE6D2E6F8DE32D1F16199BF";
        assert_eq!(
            model(&format!("a/b@{commit}")),
            Ok(ModelSetting::Hub {
                id: "a/b".into(),
                commit: Some(commit.to_ascii_lowercase())
            })
        );
        let (field, message) = checked(json!("a/b@main")).unwrap_err();
        assert_eq!(field, "search.model");
        assert!(message.contains("40 hex digits"), "{message}");
    }
}
