//! A registry entry's `server.json` as a [`Plan`]: a remote first (nothing
//! runs on this machine), else a package mcpw can run (npm, PyPI; an OCI
//! image is planned and shown, not run), pinned to its exact version, with
//! its arguments and environment. Secret values become `${vault:…}`
//! references, values the user must give `${input:…}` until given.

use super::{Input, InstallError, Plan, exact, npm_plan, pypi_plan, server_name};
use serde_json::{Map, Value, json};

/// The plan for `server` (a `server.json`), named `name` or after it.
pub fn from_registry(server: &Value, name: Option<&str>) -> Result<Plan, InstallError> {
    let registry_name = server["name"].as_str().unwrap_or_default().to_string();
    let name = name.map_or_else(|| server_name(&registry_name), str::to_string);
    let remote = server["remotes"].as_array().and_then(|r| {
        r.iter()
            .find(|r| matches!(r["type"].as_str(), Some("streamable-http" | "sse")))
    });
    let mut plan = match remote {
        Some(r) => remote_plan(r, &name),
        None => package_plan(server, &name)?,
    };
    plan.registry_name = Some(registry_name);
    plan.repository = server["repository"]["url"].as_str().map(str::to_string);
    if plan.source != "oci" {
        plan.source = "registry".into();
    }
    Ok(plan)
}

/// A value of an argument, header or variable: given, defaulted, asked for
/// (kept in the vault when secret), or left out.
fn value_of(item: &Value, field: String, server: &str, inputs: &mut Vec<Input>) -> Option<String> {
    let description = item["description"].as_str().unwrap_or_default().to_string();
    let default = item["default"].as_str().map(str::to_string);
    if item["isSecret"].as_bool() == Some(true) {
        let input = Input {
            field,
            description,
            secret: true,
            default: None,
        };
        let reference = format!("${{vault:{}}}", input.vault_name(server));
        inputs.push(input);
        return Some(reference);
    }
    if let Some(v) = item["value"].as_str() {
        return Some(v.to_string());
    }
    if item["isRequired"].as_bool() != Some(true) {
        return default;
    }
    let input = Input {
        field,
        description,
        secret: false,
        default,
    };
    let placeholder = input.placeholder();
    inputs.push(input);
    Some(placeholder)
}

fn remote_plan(remote: &Value, name: &str) -> Plan {
    let mut inputs = Vec::new();
    let mut url = remote["url"].as_str().unwrap_or_default().to_string();
    if let Some(vars) = remote["variables"].as_object() {
        for (var, spec) in vars {
            let mut spec = spec.clone();
            spec["isRequired"] = json!(true);
            if let Some(v) = value_of(&spec, format!("url.{var}"), name, &mut inputs) {
                url = url.replace(&format!("{{{var}}}"), &v);
            }
        }
    }
    let mut headers = Map::new();
    for h in remote["headers"].as_array().into_iter().flatten() {
        let Some(header) = h["name"].as_str() else {
            continue;
        };
        if let Some(v) = value_of(h, format!("headers.{header}"), name, &mut inputs) {
            headers.insert(header.to_string(), Value::String(v));
        }
    }
    let mut entry = json!({"url": url});
    if !headers.is_empty() {
        entry["headers"] = Value::Object(headers);
    }
    if remote["type"] == "sse" {
        entry["type"] = json!("sse");
    }
    Plan {
        name: name.to_string(),
        runs: format!("nothing on this machine: it connects to {url}"),
        entry,
        source: "registry".into(),
        version: None,
        registry_name: None,
        repository: None,
        inputs,
        not_run: None,
        pip: None,
    }
}

fn package_plan(server: &Value, name: &str) -> Result<Plan, InstallError> {
    let packages = server["packages"].as_array().cloned().unwrap_or_default();
    let runnable = |kind: &str| packages.iter().find(|p| p["registryType"] == kind).cloned();
    let Some(package) = runnable("npm")
        .or_else(|| runnable("pypi"))
        .or_else(|| runnable("oci"))
    else {
        return Err(InstallError::Unsupported(format!(
            "{:?} offers neither a remote nor an npm, PyPI or OCI package",
            server["name"].as_str().unwrap_or_default()
        )));
    };
    let identifier = package["identifier"].as_str().unwrap_or_default();
    let version = package["version"].as_str().unwrap_or_default();
    let transport = package["transport"]["type"].as_str().unwrap_or("stdio");
    if transport != "stdio" {
        return Err(InstallError::Unsupported(format!(
            "{identifier}: a package serving {transport} needs a port of its own; add its URL once it runs"
        )));
    }
    let mut inputs = Vec::new();
    let runtime = arguments(&package["runtimeArguments"], name, &mut inputs);
    let args = arguments(&package["packageArguments"], name, &mut inputs);
    let mut env = Vec::new();
    for e in package["environmentVariables"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(var) = e["name"].as_str() else {
            continue;
        };
        if let Some(v) = value_of(e, format!("env.{var}"), name, &mut inputs) {
            env.push((var.to_string(), v));
        }
    }
    let mut plan = match package["registryType"].as_str() {
        Some("oci") => oci_plan(identifier, version, name),
        Some("pypi") => {
            exact(identifier, version)?;
            let mut p = pypi_plan(identifier, version, Some(name), args);
            set_env(&mut p.entry, env);
            p
        }
        _ => {
            exact(identifier, version)?;
            // npx's own arguments go before the package, the package's after.
            let mut plan = npm_plan(identifier, version, Some(name), args, env);
            if let Some(all) = plan.entry["args"].as_array_mut() {
                all.splice(1..1, runtime.into_iter().map(Value::String));
            }
            plan.runs = format!("npx {}", join(&plan.entry["args"]));
            plan
        }
    };
    plan.inputs = inputs;
    Ok(plan)
}

fn join(args: &Value) -> String {
    let words: Vec<&str> = args
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    words.join(" ")
}

fn set_env(entry: &mut Value, env: Vec<(String, String)>) {
    if !env.is_empty() {
        let map: Map<String, Value> = env
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        entry["env"] = Value::Object(map);
    }
}

/// `packageArguments`: positional values, and named ones as `--name value`.
fn arguments(list: &Value, server: &str, inputs: &mut Vec<Input>) -> Vec<String> {
    let mut args = Vec::new();
    for (i, a) in list.as_array().into_iter().flatten().enumerate() {
        let named = a["type"] == "named";
        let value = value_of(a, format!("args[{i}]"), server, inputs);
        if named {
            let Some(flag) = a["name"].as_str() else {
                continue;
            };
            args.push(flag.to_string());
        }
        args.extend(value);
    }
    args
}

/// An OCI image: shown, not run (mcpw runs no container engine).
pub(super) fn oci_plan(identifier: &str, version: &str, name: &str) -> Plan {
    let image = if identifier.contains('@') || identifier.contains(':') {
        identifier.to_string()
    } else {
        format!("{identifier}:{version}")
    };
    Plan {
        name: name.to_string(),
        runs: format!("docker run -i --rm {image}"),
        entry: json!({"command": "docker", "args": ["run", "-i", "--rm", image]}),
        source: "oci".into(),
        version: (!version.is_empty()).then(|| version.to_string()),
        registry_name: None,
        repository: None,
        inputs: Vec::new(),
        not_run: Some("an OCI image runs in a container engine, which mcpw does not drive; add it by hand once you trust the image".into()),
        pip: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_entry_is_pinned_with_its_arguments_and_secrets_in_the_vault() {
        let server = json!({
            "name": "io.github.user/local-weather", "version": "1.0.0",
            "packages": [{"registryType": "npm", "identifier": "@modelcontextprotocol/server-weather",
                "version": "1.0.0", "transport": {"type": "stdio"},
                "runtimeArguments": [{"type": "named", "name": "--prefer-offline"}],
                "packageArguments": [{"type": "positional", "valueHint": "config_path", "default": "/etc/w.json"},
                                     {"type": "named", "name": "--port", "value": "8080"}],
                "environmentVariables": [{"name": "API_KEY", "isSecret": true, "isRequired": true}]}]});
        let plan = from_registry(&server, None).unwrap();
        assert_eq!(plan.name, "local-weather");
        assert_eq!(
            plan.entry,
            json!({"command": "npx", "args": ["-y", "--prefer-offline", "@modelcontextprotocol/server-weather@1.0.0",
                   "/etc/w.json", "--port", "8080"],
                   "env": {"API_KEY": "${vault:local-weather/API_KEY}"}})
        );
        assert_eq!(plan.inputs.len(), 1);
        assert!(plan.inputs[0].secret);
        assert_eq!(
            plan.registry_name.as_deref(),
            Some("io.github.user/local-weather")
        );
    }

    #[test]
    fn a_remote_comes_first_and_its_variables_and_secret_headers_are_asked() {
        let server = json!({
            "name": "io.github.user/remote-weather", "version": "2.1.0",
            "remotes": [{"type": "streamable-http", "url": "https://{host}/mcp",
                "headers": [{"name": "Authorization", "isSecret": true, "isRequired": true}],
                "variables": {"host": {"description": "API host", "default": "api.example.com"}}}],
            "packages": [{"registryType": "npm", "identifier": "x", "version": "1.0.0"}]});
        let plan = from_registry(&server, Some("weather")).unwrap();
        assert_eq!(plan.entry["url"], "https://${input:url.host}/mcp");
        assert_eq!(
            plan.entry["headers"]["Authorization"],
            "${vault:weather/Authorization}"
        );
        assert_eq!(plan.inputs[0].default.as_deref(), Some("api.example.com"));
        assert!(plan.runs.starts_with("nothing on this machine"));
    }

    #[test]
    fn latest_is_refused_and_an_image_is_shown_not_run() {
        let latest = json!({"name": "a/b", "packages": [
            {"registryType": "npm", "identifier": "b", "version": "latest"}]});
        assert!(matches!(
            from_registry(&latest, None),
            Err(InstallError::NotExact { .. })
        ));
        let image = json!({"name": "a/c", "packages": [
            {"registryType": "oci", "identifier": "ghcr.io/a/c", "version": "1.0.0"}]});
        let plan = from_registry(&image, None).unwrap();
        assert!(plan.not_run.is_some());
        assert_eq!(plan.source, "oci");
    }
}
