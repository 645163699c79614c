//! The pi package (`integrations/pi`) in real pi sessions driven by pi's scripted
//! `faux` model, on both pi lines: 0.73 on Node 20 and 1.5 on Node 22. The
//! scenarios are `integrations/pi/test/run.mjs`; this runs them against the
//! mcpw under test.

use crate::servers::{PiLine, servers};
use std::process::Command;

fn run_scenarios(line: &PiLine) {
    let pi = servers().pi();
    let out = mcpw_test_support::bounded(&line.node)
        .arg(pi.tests.join("run.mjs"))
        .env("PI_DIR", &line.dir)
        .env("EXTENSION", &pi.package)
        .env("MCPW_BIN", env!("CARGO_BIN_EXE_mcpw"))
        .env("HF_ENDPOINT", mcpw_test_support::OFFLINE_HUB)
        .env("MISBEHAVE", servers().misbehave())
        .env("EVERYTHING", servers().everything())
        .env("PYTHON", servers().python_bin("python"))
        .env(
            "SKILLS_SERVER",
            crate::common::workspace().join("tests/servers/skills_server.py"),
        )
        .env("SKILLS_ROOT", crate::common::fixture("skills").join("two"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run the pi {} scenarios: {e}", line.name));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("pi {}:\n{stdout}", line.name);
    assert!(
        out.status.success(),
        "pi {} scenarios failed:\n{stdout}\n{}",
        line.name,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("PASS") && !stdout.contains("FAIL"),
        "every scenario ran and passed:\n{stdout}"
    );
    assert!(
        !stdout.lines().any(|l| l.starts_with("SKIP")),
        "a scenario was skipped:\n{stdout}"
    );
}

#[test]
fn the_package_in_pi_0_73_on_node_20() {
    run_scenarios(&servers().pi().lines[0]);
}

#[test]
fn the_package_in_pi_1_5_on_node_22() {
    run_scenarios(&servers().pi().lines[1]);
}

/// The package type-checks (`tsc --noEmit`, strict) against pi 0.73's types,
/// the line whose package name it imports.
#[test]
fn the_package_type_checks() {
    let pi = servers().pi();
    let pi073 = &pi.lines[0].dir;
    let types = pi073.join("node_modules/@mariozechner/pi-coding-agent/dist/index.d.ts");
    let config = serde_json::json!({
        "extends": "./tsconfig.json",
        "compilerOptions": {"paths": {"@mariozechner/pi-coding-agent": [types]}},
    });
    let e2e_config = pi.package.join("tsconfig.e2e.json");
    std::fs::write(&e2e_config, config.to_string()).unwrap();
    let out = Command::new("node")
        .arg(pi.package.join("node_modules/typescript/bin/tsc"))
        .arg("-p")
        .arg(&e2e_config)
        .current_dir(&pi.package)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tsc:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
