//! Loading guests: clear errors for files that are not usable guests, and the
//! on-disk compile cache.

use crate::common::{adversarial_path, options, services, write, write_wat};
use mcpw::plugin::{
    CompileCache, Compiled, DEFAULT_GUEST, Grants, GuestModule, Limits, LoadOptions, PluginError,
    Policy, PolicyConfig, Role,
};
use std::sync::Arc;

fn load_err(bytes: &[u8]) -> String {
    match GuestModule::load("g", bytes, options(Limits::default(), Grants::none())) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    }
}

/// The roles of the default (policy) guest: every role but `script`.
const POLICY_ROLES: [Role; 3] = [Role::Naming, Role::DirectTools, Role::Ranking];

#[test]
fn not_wasm_and_core_modules_are_refused_clearly() {
    assert!(load_err(b"hello world").contains("not a WebAssembly file"));
    let core = wat::parse_str("(module)").unwrap();
    assert!(load_err(&core).contains("core WebAssembly module, not a component"));
}

#[test]
fn unknown_imports_are_refused_clearly() {
    let bytes = wat::parse_str(
        r#"(component (import "acme:thing/api@1.0.0" (instance (export "f" (func)))))"#,
    )
    .unwrap();
    let msg = load_err(&bytes);
    assert!(
        msg.contains("does not provide") && msg.contains("acme:thing/api"),
        "{msg}"
    );
}

#[test]
fn a_component_without_the_role_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write_wat(dir.path(), "empty.wasm", "(component)");
    let config = PolicyConfig {
        guests: [(Role::Ranking, empty)].into(),
        ..Default::default()
    };
    let err = Policy::load(&config, Arc::new(services()))
        .err()
        .expect("rejected");
    assert!(matches!(
        err,
        PluginError::MissingRole {
            role: Role::Ranking,
            ..
        }
    ));
    let msg = err.to_string();
    assert!(
        msg.contains("does not implement the ranking role")
            && msg.contains("mcpw:plugin/ranking@0.2.0")
            && msg.contains("mcpw:plugin/ranking@0.1.1"),
        "{msg}"
    );
}

#[test]
fn a_missing_guest_file_is_an_error_naming_it() {
    let config = PolicyConfig {
        guests: [(Role::Naming, "/nonexistent/g.wasm".into())].into(),
        ..Default::default()
    };
    let err = Policy::load(&config, Arc::new(services()))
        .err()
        .expect("rejected");
    assert!(err.to_string().contains("/nonexistent/g.wasm"), "{err}");
}

#[test]
fn guests_report_their_roles() {
    let module = GuestModule::load(
        "default",
        DEFAULT_GUEST,
        options(Limits::default(), Grants::none()),
    )
    .unwrap();
    assert_eq!(module.roles(), POLICY_ROLES.to_vec());
    let adv = std::fs::read(adversarial_path()).unwrap();
    let module =
        GuestModule::load("adv", &adv, options(Limits::default(), Grants::none())).unwrap();
    let report = mcpw::plugin::inspect::GuestReport::of(&module);
    assert!(
        report
            .imports
            .iter()
            .any(|i| i == "mcpw:plugin/catalog@0.1.0"),
        "{:?}",
        report.imports
    );
    assert!(
        report
            .imports
            .iter()
            .any(|i| i == "mcpw:plugin/calls@0.1.0")
    );
}

fn cached_options(dir: &std::path::Path) -> LoadOptions {
    LoadOptions {
        cache: CompileCache::new(Some(dir.to_path_buf())),
        ..options(Limits::default(), Grants::none())
    }
}

#[test]
fn a_warm_start_never_recompiles() {
    let dir = tempfile::tempdir().unwrap();
    let first = GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    assert_eq!(first.compiled(), Compiled::Fresh);
    let second = GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    assert_eq!(second.compiled(), Compiled::FromCache);
    assert_eq!(
        second.roles(),
        POLICY_ROLES.to_vec(),
        "the cached artifact works"
    );
}

#[test]
fn a_tampered_cache_file_is_never_deserialized() {
    let dir = tempfile::tempdir().unwrap();
    GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let again = GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    assert_eq!(
        again.compiled(),
        Compiled::Fresh,
        "the digest check failed, so it was recompiled"
    );
    let third = GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    assert_eq!(
        third.compiled(),
        Compiled::FromCache,
        "and the cache was repaired"
    );
}

#[test]
fn a_cache_file_writable_by_others_is_ignored() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let again = GuestModule::load("default", DEFAULT_GUEST, cached_options(dir.path())).unwrap();
    assert_eq!(again.compiled(), Compiled::Fresh);
}

#[test]
fn an_unwritable_cache_only_costs_a_compile() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = write(dir.path(), "file", "not a directory");
    let opts = LoadOptions {
        cache: CompileCache::new(Some(blocker.join("sub"))),
        ..options(Limits::default(), Grants::none())
    };
    let module = GuestModule::load("default", DEFAULT_GUEST, opts).unwrap();
    assert_eq!(module.compiled(), Compiled::Fresh);
}

#[test]
fn a_guest_that_cannot_load_leaves_its_role_to_the_default_guest_and_is_reported() {
    let d = crate::common::ConfigDirs::new();
    let broken = crate::common::write(&d.home(), "x.wasm", "this is not WebAssembly");
    d.user(
        &serde_json::json!({
            "mcpServers": {"m": {"command": "node", "args": [crate::servers::servers().misbehave(), "ok"]}},
            "settings": {"plugins": {"ranking": broken}}
        })
        .to_string(),
    );
    let mcpw = |args: &[&str]| {
        crate::servers::mcpw_in(&d.home())
            .args(args)
            .output()
            .unwrap()
    };
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    // Serving agents goes on, with the default ranking.
    let call = mcpw(&["call", "m__echo", r#"{"message": "hi"}"#]);
    assert!(call.status.success(), "{}", text(&call));
    assert!(
        text(&call).contains("x.wasm"),
        "said on stderr: {}",
        text(&call)
    );
    let status = mcpw(&["status"]);
    assert!(status.status.success());
    assert!(
        text(&status).contains("the ranking guest")
            && text(&status).contains("default guest fills"),
        "{}",
        text(&status)
    );
    let json = mcpw(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["brokenGuests"][0]["role"], "ranking", "{v}");
    // Checking the config says it is an error.
    let validate = mcpw(&["config", "validate"]);
    assert!(!validate.status.success());
    assert!(
        text(&validate).contains("settings.plugins.ranking"),
        "{}",
        text(&validate)
    );
}

/// The one entry a warm load left in `dir`.
fn only_entry(dir: &std::path::Path) -> std::path::PathBuf {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries.into_iter().next().unwrap()
}

/// Every name in `dir` with its bytes: what a load must leave alone.
fn snapshot(dir: &std::path::Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_cache_file_replaced_by_a_symlink_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    GuestModule::load("default", DEFAULT_GUEST, cached_options(&cache)).unwrap();
    let file = only_entry(&cache);
    // A valid compiled guest, but outside the cache directory: if the link were
    // followed, the load would come from the cache.
    let outside = root.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    let planted = outside.join("planted.cwasm");
    std::fs::copy(&file, &planted).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&planted, &file).unwrap();
    let before = snapshot(&outside);

    let again = GuestModule::load("default", DEFAULT_GUEST, cached_options(&cache)).unwrap();
    assert_eq!(
        again.compiled(),
        Compiled::Fresh,
        "the symlink was not followed, so the guest was recompiled"
    );
    assert_eq!(again.roles(), POLICY_ROLES.to_vec());
    assert_eq!(snapshot(&outside), before, "nothing outside was written");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the link itself was replaced by a real entry, not written through"
    );
    let third = GuestModule::load("default", DEFAULT_GUEST, cached_options(&cache)).unwrap();
    assert_eq!(
        third.compiled(),
        Compiled::FromCache,
        "the cache was repaired"
    );
}

#[test]
fn a_cache_directory_that_is_a_symlink_is_refused() {
    let root = tempfile::tempdir().unwrap();
    // A private directory holding a valid cache entry for this very guest.
    let real = root.path().join("real");
    GuestModule::load("default", DEFAULT_GUEST, cached_options(&real)).unwrap();
    let entry = only_entry(&real);
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let before = snapshot(&real);

    let module = GuestModule::load("default", DEFAULT_GUEST, cached_options(&link)).unwrap();
    assert_eq!(
        module.compiled(),
        Compiled::Fresh,
        "nothing was read through the symlinked directory"
    );
    assert_eq!(module.roles(), POLICY_ROLES.to_vec());
    // Make the entry unusable: a write through the link would repair it.
    std::fs::write(&entry, b"not a compiled guest").unwrap();
    let before_broken = snapshot(&real);
    let again = GuestModule::load("default", DEFAULT_GUEST, cached_options(&link)).unwrap();
    assert_eq!(again.compiled(), Compiled::Fresh);
    assert_eq!(
        snapshot(&real),
        before_broken,
        "nothing was written through the symlinked directory"
    );
    assert_ne!(before, before_broken);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
