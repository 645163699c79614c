//! The crates stack in layers, each building only on those beneath it:
//! the guest API, the floor (`mcpw-core`), the connections
//! (`mcpw-upstream`), the host, the gateway, the binary. The gateway
//! reaches the connections only through the host's API: `mcpw-upstream` is
//! not among its dependencies, so naming a connection's type there does not
//! compile. Read from `cargo metadata`, as Cargo resolves the manifests.

use std::collections::BTreeMap;

/// The layers, lowest first.
const LAYERS: &[&str] = &[
    "mcpw-guest",
    "mcpw-core",
    "mcpw-upstream",
    "mcpw-host",
    "mcpw-gateway",
    "mcpw",
];

/// Each layered package's dependencies on other layered packages, normal
/// and build (a test's dev-dependency may reach anywhere).
fn dependencies() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--no-deps",
        ])
        .arg("--manifest-path")
        .arg(crate::workspace_code::root().join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {out:?}");
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = BTreeMap::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if !LAYERS.contains(&name) {
            continue;
        }
        let deps = package["dependencies"].as_array().unwrap().iter();
        let layered = deps
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["name"].as_str())
            .filter(|d| LAYERS.contains(d))
            .map(str::to_string);
        found.insert(name.to_string(), layered.collect());
    }
    found
}

fn layer(package: &str) -> usize {
    LAYERS.iter().position(|l| *l == package).unwrap()
}

#[test]
fn each_crate_builds_only_on_the_layers_beneath_it() {
    let deps = dependencies();
    assert_eq!(
        deps.len(),
        LAYERS.len(),
        "every layer is a package: {deps:?}"
    );
    for (package, on) in &deps {
        for dep in on {
            assert!(
                layer(dep) < layer(package),
                "{package} depends on {dep}, which is not beneath it"
            );
        }
    }
}

#[test]
fn the_gateway_reaches_the_connections_only_through_the_host() {
    let deps = dependencies();
    let gateway = &deps["mcpw-gateway"];
    assert!(gateway.contains(&"mcpw-host".to_string()), "{gateway:?}");
    assert!(
        !gateway.contains(&"mcpw-upstream".to_string()),
        "mcpw-gateway depends on mcpw-upstream directly: {gateway:?}"
    );
}
