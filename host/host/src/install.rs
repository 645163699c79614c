//! Adding a server: what it will run, from where, at which version, with
//! which secrets ([`Plan`]), resolved from a registry entry's `server.json`
//! ([`from_registry`]), a package (`npm:pkg@1.2.3`, `pypi:pkg==1.2.3`) or a
//! URL; and the config file's change, written atomically and undone byte
//! for byte ([`edit`]).
//!
//! A plan is exact: a remote, else a package pinned to one version
//! (`latest` and ranges are refused), so what was approved is what runs.
//! Secrets never go into a config file: the entry refers to the vault
//! (`${vault:NAME}`), and the value is asked for and kept there.

pub mod apply;
pub mod edit;
pub mod find;
pub mod flow;
mod from_registry;
pub mod pypi;

pub use from_registry::from_registry;

use serde::Serialize;
use serde_json::{Value, json};

/// Why a source cannot be added.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InstallError {
    /// A package version that is not one exact version.
    #[error(
        "{what}: the version must be exact (as `1.2.3`), not {version:?}: what is approved is what runs"
    )]
    NotExact {
        /// The package.
        what: String,
        /// The version given.
        version: String,
    },
    /// An entry mcpw cannot run.
    #[error("{0}")]
    Unsupported(String),
    /// A source that is not one of the forms.
    #[error(
        "{0:?}: expected a registry name or search, npm:PACKAGE@VERSION, pypi:PACKAGE==VERSION, oci:IMAGE@sha256:DIGEST, or an https:// URL"
    )]
    BadSource(String),
}

/// A value the entry needs from the user.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Input {
    /// `env.API_KEY`, `headers.Authorization`, `args[1]`, `url.host`.
    pub field: String,
    /// What the server says of it.
    pub description: String,
    /// Kept in the vault, asked for without echo.
    pub secret: bool,
    /// A value to offer.
    pub default: Option<String>,
}

impl Input {
    /// The name the vault keeps this secret of `server` under, as the
    /// entry's `${vault:NAME}` refers to it: `server/API_KEY`.
    pub fn vault_name(&self, server: &str) -> String {
        let field = self.field.split_once('.').map_or(&*self.field, |(_, k)| k);
        format!("{server}/{field}")
    }

    /// The placeholder the entry holds until the value is given.
    fn placeholder(&self) -> String {
        format!("${{input:{}}}", self.field)
    }
}

/// A value the registry's entry gives for one field, written as it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Given {
    /// `env.REGION`, `headers.X-Api-Version`, `args[0]`.
    pub field: String,
    /// The value.
    pub value: String,
}

impl Given {
    fn registry(field: &str, value: &str) -> Given {
        Given {
            field: field.into(),
            value: value.into(),
        }
    }
}

/// What adding a server will do, shown before it is done.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// The server's name in the config.
    pub name: String,
    /// Its config entry (secrets as `${vault:…}`, inputs as `${input:…}`
    /// until given).
    pub entry: Value,
    /// What will run: a command line, or the URL reached.
    pub runs: String,
    /// Where it comes from: `registry`, `npm`, `pypi`, `url`, `oci`.
    pub source: String,
    /// The exact version, for a package.
    pub version: Option<String>,
    /// The registry's name of the server (its namespace verified by the
    /// registry at publication), if it came from one.
    pub registry_name: Option<String>,
    /// Its source repository, when the entry names one.
    pub repository: Option<String>,
    /// The values it needs from the user.
    pub inputs: Vec<Input>,
    /// The values the registry gives, as they are written.
    pub values: Vec<Given>,
    /// The registry's options to the package runner (`npx`), before the
    /// package: shown, and never added unasked.
    pub runtime_arguments: Vec<String>,
    /// Why it is shown but not run (an OCI image), if so.
    pub not_run: Option<String>,
    /// A PyPI package to install before it runs: `(package, version)`; the
    /// entry's `command` is its script, once installed ([`pypi`]).
    pub pip: Option<(String, String)>,
}

impl Plan {
    /// A plan of `source` to run `runs` with `entry`, of no version or
    /// registry entry, that needs and is given nothing: where it comes
    /// from fills in the rest.
    fn new(name: String, source: &str, runs: String, entry: Value) -> Plan {
        Plan {
            name,
            entry,
            runs,
            source: source.into(),
            version: None,
            registry_name: None,
            repository: None,
            inputs: Vec::new(),
            values: Vec::new(),
            runtime_arguments: Vec::new(),
            not_run: None,
            pip: None,
        }
    }

    /// Gives the entry `input`'s value (not a secret's: that goes to the
    /// vault, and the entry keeps referring to it).
    pub fn fill(&mut self, input: &Input, value: &str) {
        fn replace(v: &mut Value, from: &str, to: &str) {
            match v {
                Value::String(s) => *s = s.replace(from, to),
                Value::Array(a) => a.iter_mut().for_each(|v| replace(v, from, to)),
                Value::Object(o) => o.values_mut().for_each(|v| replace(v, from, to)),
                _ => {}
            }
        }
        replace(&mut self.entry, &input.placeholder(), value);
    }

    /// The lines shown to whoever approves it.
    pub fn describe(&self) -> Vec<String> {
        let runs = crate::visible::shown(&self.runs);
        let mut lines = vec![format!("add \"{}\": runs {runs}", self.name)];
        let mut from = format!("from {}", self.source);
        if let Some(n) = &self.registry_name {
            from.push_str(&format!(" {n}"));
        }
        if let Some(v) = &self.version {
            from.push_str(&format!(", version {v}"));
        }
        lines.push(from);
        if let Some(r) = &self.repository {
            lines.push(format!("repository {r}"));
        }
        if !self.runtime_arguments.is_empty() {
            let options = crate::visible::shown(&self.runtime_arguments.join(" "));
            lines.push(format!("options to npx from the registry: {options}"));
        }
        for g in &self.values {
            let value = crate::visible::shown(&format!("{:?}", g.value));
            lines.push(format!("sets {} = {value} (from the registry)", g.field));
        }
        for i in &self.inputs {
            let (kind, kept) = match i.secret {
                true => (
                    "secret",
                    format!("kept in the vault as {}", i.vault_name(&self.name)),
                ),
                false => ("value", "given by you".to_string()),
            };
            let about = crate::visible::shown(&i.description);
            lines.push(format!("needs {kind} {}: {about} ({kept})", i.field));
        }
        if let Some(why) = &self.not_run {
            lines.push(format!("not run: {why}"));
        }
        lines
    }
}

/// The plan for a source given on the command line: `npm:…`, `pypi:…` or a
/// URL. Anything else is a registry name or search (`None`).
pub fn from_source(source: &str, name: Option<&str>) -> Result<Option<Plan>, InstallError> {
    if let Some(spec) = source.strip_prefix("npm:") {
        let (package, version) = split_npm(spec)?;
        package_name("npm", package)?;
        return Ok(Some(npm_plan(
            package,
            version,
            name,
            Vec::new(),
            Vec::new(),
        )));
    }
    if let Some(spec) = source.strip_prefix("pypi:") {
        let (package, version) = spec.split_once("==").ok_or_else(|| not_exact(spec, ""))?;
        package_name("pypi", package)?;
        exact(package, version)?;
        return Ok(Some(pypi_plan(package, version, name, Vec::new())));
    }
    if let Some(image) = source.strip_prefix("oci:") {
        let image = image.trim_start_matches("//");
        let Some((_, digest)) = image.split_once("@sha256:") else {
            return Err(not_exact(image, "a tag"));
        };
        if digest.len() != 64 || !digest.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(not_exact(image, digest));
        }
        let repository = image.split('@').next().unwrap_or(image);
        let name = name.map_or_else(|| server_name(repository), str::to_string);
        return Ok(Some(from_registry::oci_plan(image, "", &name)));
    }
    if source.starts_with("https://") || source.starts_with("http://") {
        let url =
            reqwest::Url::parse(source).map_err(|_| InstallError::BadSource(source.into()))?;
        let base = url.host_str().unwrap_or("remote").to_string();
        return Ok(Some(Plan::new(
            name.map_or_else(|| server_name(&base), str::to_string),
            "url",
            format!("nothing on this machine: it connects to {source}"),
            json!({"url": source}),
        )));
    }
    Ok(None)
}

/// `@scope/pkg@1.2.3` as package and version.
fn split_npm(spec: &str) -> Result<(&str, &str), InstallError> {
    let at = spec
        .char_indices()
        .skip(1)
        .find(|(_, c)| *c == '@')
        .map(|(i, _)| i);
    let (package, version) = match at {
        Some(i) => (&spec[..i], &spec[i + 1..]),
        None => (spec, ""),
    };
    exact(package, version)?;
    Ok((package, version))
}

/// Refuses an identifier that is not a package name of its registry
/// (`npm`, `pypi`, `oci`): one that npx or pip would read as an option,
/// or that carries anything a name cannot.
pub fn package_name(registry: &str, identifier: &str) -> Result<(), InstallError> {
    let plain = |c: char, extra: &str| c.is_ascii_alphanumeric() || extra.contains(c);
    let ok = match registry {
        "npm" => {
            let name = match identifier.strip_prefix('@') {
                Some(scoped) => scoped.split_once('/').filter(|(s, _)| !s.is_empty()),
                None => Some(("x", identifier)),
            };
            name.is_some_and(|(scope, name)| {
                identifier.len() <= 214
                    && !name.is_empty()
                    && !name.starts_with(['.', '_', '-'])
                    && !scope.starts_with(['.', '_', '-'])
                    && scope.chars().chain(name.chars()).all(|c| plain(c, "-._~"))
            })
        }
        "pypi" => {
            !identifier.is_empty()
                && identifier.starts_with(|c: char| c.is_ascii_alphanumeric())
                && identifier.ends_with(|c: char| c.is_ascii_alphanumeric())
                && identifier.chars().all(|c| plain(c, "-._"))
        }
        _ => {
            !identifier.is_empty()
                && identifier.starts_with(|c: char| c.is_ascii_alphanumeric())
                && identifier.chars().all(|c| plain(c, "-._/:@"))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(InstallError::Unsupported(format!(
            "{identifier:?} is not a {registry} package name: refused, as the package runner could read it as an option"
        )))
    }
}

/// Refuses `latest`, ranges, tags and empty versions.
pub fn exact(what: &str, version: &str) -> Result<(), InstallError> {
    // A numeric dotted core (`1.2.3`, `2025.1.14`), then an optional
    // pre-release or build (`-beta.1`, `+local`).
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    let ok = parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    if ok {
        Ok(())
    } else {
        Err(not_exact(what, version))
    }
}

fn not_exact(what: &str, version: &str) -> InstallError {
    InstallError::NotExact {
        what: what.into(),
        version: version.into(),
    }
}

/// A config name from anything: the last path segment, lowercased, with
/// only the characters server names may have.
pub fn server_name(from: &str) -> String {
    let last = from.rsplit(['/', ':']).next().unwrap_or(from);
    let last = last
        .trim_start_matches("mcp-server-")
        .trim_start_matches("server-")
        .trim_end_matches("-mcp-server")
        .trim_end_matches("-mcp");
    let name: String = last
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-');
    if name.is_empty() {
        "server".into()
    } else {
        name.chars().take(60).collect()
    }
}

/// `npx -y package@version ARGS`, with `env`.
fn npm_plan(
    package: &str,
    version: &str,
    name: Option<&str>,
    args: Vec<String>,
    env: Vec<(String, String)>,
) -> Plan {
    let mut all = vec!["-y".to_string(), format!("{package}@{version}")];
    all.extend(args);
    let env: serde_json::Map<String, Value> = env
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let mut entry = json!({"command": "npx", "args": all});
    if !env.is_empty() {
        entry["env"] = Value::Object(env);
    }
    let name = name.map_or_else(|| server_name(package), str::to_string);
    Plan {
        version: Some(version.into()),
        ..Plan::new(name, "npm", format!("npx {}", all.join(" ")), entry)
    }
}

/// The package installed by pip into a virtual environment of its own
/// (see [`pypi`]); the entry's command is set once it is installed.
fn pypi_plan(package: &str, version: &str, name: Option<&str>, args: Vec<String>) -> Plan {
    let name = name.map_or_else(|| server_name(package), str::to_string);
    let runs =
        format!("{package}=={version}, installed by pip into a virtual environment of its own");
    Plan {
        version: Some(version.into()),
        pip: Some((package.into(), version.into())),
        ..Plan::new(name, "pypi", runs, json!({"args": args}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_versions_pass() {
        for good in ["1.2.3", "0.6.2", "2025.1.14", "1.0.0-beta.1"] {
            assert_eq!(exact("p", good), Ok(()), "{good}");
        }
        for bad in ["latest", "", "^1.2.3", "~1.2", "1.x", ">=1.0", "1", "next"] {
            assert!(exact("p", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sources_make_plans() {
        let npm = from_source("npm:@scope/pkg-mcp@1.2.3", None)
            .unwrap()
            .unwrap();
        assert_eq!(npm.entry["args"], json!(["-y", "@scope/pkg-mcp@1.2.3"]));
        assert_eq!(npm.name, "pkg");
        assert!(from_source("npm:@scope/pkg", None).is_err());
        assert!(from_source("npm:pkg@latest", None).is_err());
        let py = from_source("pypi:mcp-server-time==2025.9.25", None)
            .unwrap()
            .unwrap();
        assert_eq!(py.name, "time");
        assert!(from_source("pypi:mcp-server-time", None).is_err());
        let url = from_source("https://mcp.example.com/mcp", Some("ex"))
            .unwrap()
            .unwrap();
        assert_eq!(url.entry, json!({"url": "https://mcp.example.com/mcp"}));
        assert_eq!(from_source("weather", None), Ok(None));
        let digest = "a".repeat(64);
        let image = from_source(&format!("oci:ghcr.io/x/search-mcp@sha256:{digest}"), None)
            .unwrap()
            .unwrap();
        assert_eq!(image.name, "search");
        assert!(image.not_run.is_some());
        assert!(from_source("oci:ghcr.io/x/search-mcp:1.0", None).is_err());
    }
}
