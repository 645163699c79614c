//! Reading the sources in order and merging them.

use super::imports::{self, ImportKind};
use super::model::{Origin, Provenance, Server, SourceKind};
use super::trust::{self, Gate, ProjectServers, Verdict};
use super::{Config, ConfigSources, Diagnostic, Severity, SourceFile, parse_json, validate};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One file's content.
struct FileContent {
    servers: Vec<(String, Value)>,
    settings: Map<String, Value>,
    imports: Vec<ImportKind>,
    /// `serve`, as written.
    serve: Option<Value>,
}

/// Loads and merges every source.
pub fn load(sources: &ConfigSources) -> Config {
    let mut cfg = Config::default();
    let env = &sources.env;
    let project = sources
        .project_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let mut settings = Map::new();

    // 1. The user file.
    let (user_path, required) = user_path(sources);
    let mut requested = user_file(sources, &user_path, required, &mut cfg, &mut settings);
    // Whether a project's servers load is the user's to say, and only theirs.
    let mode = settings
        .get("projectServers")
        .and_then(Value::as_str)
        .and_then(ProjectServers::parse)
        .unwrap_or_default();
    let mut gate = Gate::new(
        mode,
        sources.project_dir.as_deref(),
        env.state_dir().join(trust::FILE_NAME),
        approve_command(sources),
    );

    // 2. The project files are read now (their `imports` count too) and merged last.
    let project_contents = read_project_files(sources, &mut cfg);
    let from_env = env_imports(env, &mut cfg);
    let users_own: Vec<ImportKind> = requested.iter().chain(&from_env).copied().collect();
    for content in project_contents.iter().filter_map(|(_, c)| c.as_ref()) {
        requested.extend(content.imports.iter().copied());
    }
    requested.extend(from_env);
    first_of_each(&mut requested);

    // 3. Imports fill in names not defined yet. What only a project asked
    // for, or a client's file inside the project, waits for approval.
    for kind in &requested {
        let asked_by_project = !users_own.contains(kind);
        add_import(&mut cfg, *kind, env, &project, asked_by_project, &mut gate);
    }
    cfg.imports = requested;

    // 4. Project files override.
    for (path, content) in project_contents {
        if let Some(content) = content {
            let project_file = ProjectFile {
                path: &path,
                user_path: &user_path,
            };
            add_project_file(
                &mut cfg,
                project_file,
                content,
                env,
                &mut settings,
                &mut gate,
            );
        }
    }

    cfg.trust = gate.trust;
    cfg.settings = super::settings::interpret(settings, &super::settings::context(env));
    unknown_token_servers(&mut cfg, &user_path);
    // List sources in merge order (project files were read early for their imports).
    cfg.sources.sort_by_key(|s| match s.kind {
        SourceKind::User => 0,
        SourceKind::Import => 1,
        SourceKind::Project => 2,
    });
    cfg
}

/// `mcpw trust` with the options that make the same config.
fn approve_command(sources: &ConfigSources) -> String {
    let mut command = String::from("mcpw");
    if let Some(file) = &sources.user_file {
        command.push_str(&format!(" --config {}", file.display()));
    }
    if let Some(imports) = sources.env.get("MCPW_IMPORT").filter(|v| !v.is_empty()) {
        command.push_str(&format!(" --import {imports}"));
    }
    command.push_str(" trust");
    command
}

/// Where the user file is, and whether it must exist: `--config` or
/// `MCPW_CONFIG` name a file that must be there; the default one may be absent.
fn user_path(sources: &ConfigSources) -> (PathBuf, bool) {
    match (
        &sources.user_file,
        sources.env.get("MCPW_CONFIG").filter(|v| !v.is_empty()),
    ) {
        (Some(p), _) => (p.clone(), true),
        (None, _) if sources.user_value.is_some() => {
            let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            (here.join("<inline config>"), false)
        }
        (None, Some(p)) => (PathBuf::from(p), true),
        (None, None) => (sources.env.default_config_file(), false),
    }
}

/// Reads the user file (or the config given as a value) and adds its servers,
/// settings and `serve`; returns the imports it asks for.
fn user_file(
    sources: &ConfigSources,
    user_path: &Path,
    required: bool,
    cfg: &mut Config,
    settings: &mut Map<String, Value>,
) -> Vec<ImportKind> {
    let env = &sources.env;
    let content = match &sources.user_value {
        Some(value) => {
            let source = SourceFile {
                kind: SourceKind::User,
                import: None,
                path: user_path.to_path_buf(),
                found: true,
                servers: 0,
            };
            content_of(value, source, cfg)
        }
        None => read_file(user_path, required, SourceKind::User, cfg),
    };
    let Some(content) = content else {
        return Vec::new();
    };
    let from = Definitions {
        path: user_path,
        kind: SourceKind::User,
        provenance: Provenance::User,
        import: None,
        merge: Merge::Define,
        gate: None,
    };
    add_servers(cfg, content.servers, from, env);
    merge_settings(settings, content.settings);
    if let Some(serve) = &content.serve {
        cfg.serve = validate::serve(serve, user_path, env, &mut cfg.diagnostics);
    }
    content.imports
}

/// Reads the project's `.mcp.json` and `.mcpw/mcp.json`. No project directory:
/// no project files (an embedded or explicit-only config).
fn read_project_files(
    sources: &ConfigSources,
    cfg: &mut Config,
) -> Vec<(PathBuf, Option<FileContent>)> {
    let project_files: Vec<PathBuf> = match &sources.project_dir {
        Some(dir) => vec![dir.join(".mcp.json"), dir.join(".mcpw").join("mcp.json")],
        None => Vec::new(),
    };
    project_files
        .into_iter()
        .map(|p| {
            let content = read_file(&p, false, SourceKind::Project, cfg);
            (p, content)
        })
        .collect()
}

/// `--import` / MCPW_IMPORT: a client's own config without writing one for mcpw.
fn env_imports(env: &crate::paths::Environment, cfg: &mut Config) -> Vec<ImportKind> {
    let mut requested = Vec::new();
    for name in env.get("MCPW_IMPORT").unwrap_or_default().split(',') {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        match ImportKind::parse(name) {
            Some(k) => requested.push(k),
            None => cfg.diagnostics.push(Diagnostic::file(
                Severity::Error,
                Path::new("--import / MCPW_IMPORT"),
                format!("unknown import {name:?}: use one of {}", import_names()),
            )),
        }
    }
    requested
}

/// Keeps the first request for each client: a client asked for twice is read once.
fn first_of_each(requested: &mut Vec<ImportKind>) {
    requested.dedup();
    let mut seen = Vec::new();
    requested.retain(|k| {
        !seen.contains(k) && {
            seen.push(*k);
            true
        }
    });
}

/// Reads one client's config files and adds the servers not defined yet. A
/// client with no file is listed at each place it was looked for.
fn add_import(
    cfg: &mut Config,
    kind: ImportKind,
    env: &crate::paths::Environment,
    project: &Path,
    asked_by_project: bool,
    gate: &mut Gate,
) {
    let files = imports::read(kind, env, project, &mut cfg.diagnostics);
    if files.is_empty() {
        for path in kind.locations(env, project) {
            cfg.sources.push(SourceFile {
                kind: SourceKind::Import,
                import: Some(kind.name().into()),
                path,
                found: false,
                servers: 0,
            });
        }
    }
    for file in files {
        cfg.sources.push(SourceFile {
            kind: SourceKind::Import,
            import: Some(kind.name().into()),
            path: file.path.clone(),
            found: true,
            servers: file.servers.len(),
        });
        let projects = asked_by_project || kind.project_file(project) == Some(file.path.clone());
        let from = Definitions {
            path: &file.path,
            kind: SourceKind::Import,
            provenance: match projects {
                true => Provenance::ProjectClient,
                false => Provenance::UserClient,
            },
            import: Some(kind.name()),
            merge: Merge::FillIn,
            gate: projects.then_some(&mut *gate),
        };
        add_servers(cfg, file.servers, from, env);
    }
}

/// A project file, and the user file it cannot override in some things.
struct ProjectFile<'a> {
    path: &'a Path,
    user_path: &'a Path,
}

/// Adds one project file over what came before. Its `serve` and
/// `settings.projectServers` are refused: a project cannot grant access to
/// `mcpw serve`, nor trust itself. Its servers pass the trust gate.
fn add_project_file(
    cfg: &mut Config,
    file: ProjectFile<'_>,
    mut content: FileContent,
    env: &crate::paths::Environment,
    settings: &mut Map<String, Value>,
    gate: &mut Gate,
) {
    let (path, user_path) = (file.path, file.user_path);
    if content.serve.is_some() {
        cfg.diagnostics.push(Diagnostic::field(
            Severity::Error,
            path,
            "serve".into(),
            format!(
                "ignored: only the user file ({}) says who may connect to `mcpw serve`, so that a project cannot grant access",
                user_path.display()
            ),
        ));
    }
    // A project's own guests wait for the user's approval, each by itself.
    let plugins = content.settings.remove("plugins");
    let refused: Vec<(String, &str)> = content
        .settings
        .iter()
        .filter_map(|(k, v)| super::settings::refused_in_project(k, v).map(|why| (k.clone(), why)))
        .collect();
    for (key, why) in refused {
        content.settings.remove(&key);
        cfg.diagnostics.push(Diagnostic::field(
            Severity::Warning,
            path,
            format!("settings.{key}"),
            format!(
                "ignored: a project file may not set this ({why}); only the user file ({}) does",
                user_path.display()
            ),
        ));
    }
    if let Some(raw) = plugins
        && let Some(approved) = super::project_guests::admit(&raw, path, gate, &mut cfg.diagnostics)
    {
        content.settings.insert("plugins".into(), approved);
    }
    let from = Definitions {
        path,
        kind: SourceKind::Project,
        provenance: Provenance::Project,
        import: None,
        merge: Merge::Override,
        gate: Some(gate),
    };
    add_servers(cfg, content.servers, from, env);
    merge_settings(settings, content.settings);
}

/// Reads one mcpw-format file. Missing optional files are recorded as not found.
fn read_file(
    path: &Path,
    required: bool,
    kind: SourceKind,
    cfg: &mut Config,
) -> Option<FileContent> {
    let mut source = SourceFile {
        kind,
        import: None,
        path: path.to_path_buf(),
        found: false,
        servers: 0,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            if required || e.kind() != std::io::ErrorKind::NotFound {
                cfg.diagnostics.push(Diagnostic::file(
                    Severity::Error,
                    path,
                    format!("cannot read: {e}"),
                ));
            }
            cfg.sources.push(source);
            return None;
        }
    };
    source.found = true;
    let root = match parse_json(&text, path) {
        Ok(v) => v,
        Err(d) => {
            cfg.diagnostics.push(d);
            cfg.sources.push(source);
            return None;
        }
    };
    content_of(&root, source, cfg)
}

/// The servers, settings and imports of one parsed file.
fn content_of(root: &Value, mut source: SourceFile, cfg: &mut Config) -> Option<FileContent> {
    let path = source.path.clone();
    let path = path.as_path();
    let Some(obj) = root.as_object() else {
        cfg.diagnostics.push(Diagnostic::file(
            Severity::Error,
            path,
            format!("expected a JSON object, found {}", validate::kind(root)),
        ));
        cfg.sources.push(source);
        return None;
    };
    let servers = servers_of(obj, path, cfg);
    let settings = match obj.get("settings") {
        None | Some(Value::Null) => Map::new(),
        Some(v) => validate::settings(v, path, &mut cfg.diagnostics),
    };
    let import_kinds = imports_of(obj, path, cfg);
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "mcpServers" | "mcp-servers" | "settings" | "imports" | "serve" | "$schema"
        ) {
            cfg.diagnostics.push(Diagnostic::field(
                Severity::Warning,
                path,
                key.clone(),
                "unknown top-level key, ignored".into(),
            ));
        }
    }
    source.servers = servers.len();
    cfg.sources.push(source);
    Some(FileContent {
        servers,
        settings,
        imports: import_kinds,
        serve: obj.get("serve").filter(|v| !v.is_null()).cloned(),
    })
}

/// The server definitions under `mcpServers` and `mcp-servers`, unchecked; for
/// a name under both, the `mcpServers` one.
fn servers_of(obj: &Map<String, Value>, path: &Path, cfg: &mut Config) -> Vec<(String, Value)> {
    let mut servers: Vec<(String, Value)> = Vec::new();
    for key in ["mcpServers", "mcp-servers"] {
        match obj.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (name, def) in map {
                    if servers.iter().any(|(n, _)| n == name) {
                        cfg.diagnostics.push(Diagnostic::server(
                            Severity::Warning,
                            path,
                            name,
                            None,
                            "defined under both `mcpServers` and `mcp-servers`; the `mcpServers` one is used".to_string(),
                        ));
                    } else {
                        servers.push((name.clone(), def.clone()));
                    }
                }
            }
            Some(other) => cfg.diagnostics.push(Diagnostic::field(
                Severity::Error,
                path,
                key.into(),
                format!(
                    "expected an object of servers, found {}",
                    validate::kind(other)
                ),
            )),
        }
    }
    servers
}

/// The clients named in `imports`; an unknown name is reported and skipped.
fn imports_of(obj: &Map<String, Value>, path: &Path, cfg: &mut Config) -> Vec<ImportKind> {
    let mut import_kinds = Vec::new();
    match obj.get("imports") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str().and_then(ImportKind::parse) {
                    Some(k) => import_kinds.push(k),
                    None => cfg.diagnostics.push(Diagnostic::field(
                        Severity::Error,
                        path,
                        format!("imports[{i}]"),
                        format!("unknown import {item}: use one of {}", import_names()),
                    )),
                }
            }
        }
        Some(other) => cfg.diagnostics.push(Diagnostic::field(
            Severity::Error,
            path,
            "imports".into(),
            format!(
                "expected a list of client names, found {}",
                validate::kind(other)
            ),
        )),
    }
    import_kinds
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// The first source: define.
    Define,
    /// Imports: only names not defined yet.
    FillIn,
    /// Project files: replace.
    Override,
}

/// Where definitions come from, and how they merge.
struct Definitions<'a> {
    path: &'a Path,
    kind: SourceKind,
    /// Who wrote them: what they may do.
    provenance: Provenance,
    import: Option<&'a str>,
    merge: Merge,
    /// For a project's definitions: the trust gate they pass.
    gate: Option<&'a mut Gate>,
}

fn add_servers(
    cfg: &mut Config,
    servers: Vec<(String, Value)>,
    mut from: Definitions<'_>,
    env: &crate::paths::Environment,
) {
    let (path, kind, import, merge) = (from.path, from.kind, from.import, from.merge);
    let provenance = from.provenance;
    for (name, raw) in servers {
        let existing = cfg.servers.iter().position(|s| s.name == name);
        if merge == Merge::FillIn && existing.is_some() {
            continue;
        }
        let before = cfg.diagnostics.len();
        let Some(config) =
            validate::server(&name, &raw, path, env, provenance, &mut cfg.diagnostics)
        else {
            if let Some(i) = existing {
                let kept = cfg.servers[i].origin.path.display().to_string();
                if let Some(d) = cfg.diagnostics[before..]
                    .iter_mut()
                    .rev()
                    .find(|d| d.severity == Severity::Error)
                {
                    d.message
                        .push_str(&format!(" (the definition from {kept} stays in effect)"));
                }
            }
            continue;
        };
        if let Some(gate) = from.gate.as_deref_mut()
            && let Verdict::Leave = gate.check(&name, &raw, path)
        {
            continue; // what came before stays in effect
        }
        let server = Server {
            name: name.clone(),
            config,
            origin: Origin {
                kind,
                import: import.map(str::to_string),
                path: path.to_path_buf(),
                provenance,
            },
            raw,
        };
        match existing {
            Some(i) => cfg.servers[i] = server,
            None => cfg.servers.push(server),
        }
    }
}

/// Warns of the servers a token names that no source defines. A warning,
/// not an error: a misspelt name only takes access away, and the servers
/// defined change with the project directory, the imports and edits that
/// `mcpw serve` applies as it runs, while the token keeps its other servers.
fn unknown_token_servers(cfg: &mut Config, user_path: &Path) {
    for token in &cfg.serve.tokens {
        let unknown: Vec<String> = token
            .servers
            .iter()
            .flatten()
            .filter(|s| cfg.server(s).is_none())
            .map(|s| format!("\"{s}\""))
            .collect();
        if unknown.is_empty() {
            continue;
        }
        let defined: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
        cfg.diagnostics.push(Diagnostic::field(
            Severity::Warning,
            user_path,
            format!("serve.tokens[{}].servers", token.index),
            format!(
                "token \"{}\": no server is named {} (servers: {}); this client sees no server by that name",
                token.name,
                unknown.join(", "),
                if defined.is_empty() { "none".to_string() } else { defined.join(", ") }
            ),
        ));
    }
}

/// Later settings win key by key; inside `plugins`, role by role and grant by grant.
fn merge_settings(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (key, value) in over {
        match (key.as_str(), base.get_mut(&key), value) {
            ("plugins", Some(Value::Object(b)), Value::Object(o)) => {
                for (k, v) in o {
                    match (k.as_str(), b.get_mut(&k), v) {
                        ("grants" | "limits", Some(Value::Object(bb)), Value::Object(oo)) => {
                            bb.extend(oo)
                        }
                        (_, _, v) => {
                            b.insert(k, v);
                        }
                    }
                }
            }
            (_, _, value) => {
                base.insert(key, value);
            }
        }
    }
}

fn import_names() -> String {
    let names: Vec<_> = ImportKind::ALL.iter().map(|k| k.name()).collect();
    names.join(", ")
}
