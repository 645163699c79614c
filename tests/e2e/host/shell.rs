//! `mcpw completions` and `mcpw man`: the scripts load in their shells and
//! complete, the man page is roff that names every command.

use super::cli::mcpw;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The subcommands `mcpw --help` lists (`help` left out).
fn subcommands(home: &Path) -> Vec<String> {
    let help = ok(&mcpw(home, &["--help"]));
    let names: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(String::from)
        .collect();
    for expected in ["serve", "doctor", "completions", "man"] {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }
    names
}

/// Runs `script` in a non-interactive bash and returns its stdout.
fn bash(script: &str) -> String {
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(&out)
}

#[test]
fn bash_completion_parses_and_completes_subcommands() {
    let home = tempfile::tempdir().unwrap();
    let script = ok(&mcpw(home.path(), &["completions", "bash"]));
    let file = home.path().join("mcpw.bash");
    std::fs::write(&file, &script).unwrap();
    bash(&format!("bash -n '{}'", file.display()));
    // What bash does on TAB after `mcpw ser`: the function `complete`
    // registered for mcpw, called with the words typed so far.
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        bash(&format!(
            "source '{file}'
             f=$(complete -p mcpw | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')
             COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT={point}
             \"$f\" mcpw '{cur}' '{prev}'
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file = file.display(),
            words = words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(" "),
            cword = words.len() - 1,
            point = line.len(),
            cur = words[words.len() - 1],
            prev = words[words.len() - 2],
        ))
    };
    assert_eq!(complete("mcpw ser").trim(), "serve");
    let all = complete("mcpw ");
    for name in subcommands(home.path()) {
        assert!(all.lines().any(|l| l == name), "{name} not offered: {all}");
    }
    assert!(complete("mcpw serve --ht").lines().any(|l| l == "--http"));
}

#[test]
fn zsh_fish_elvish_and_powershell_scripts_name_every_subcommand() {
    let home = tempfile::tempdir().unwrap();
    let names = subcommands(home.path());
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = ok(&mcpw(home.path(), &["completions", shell]));
        assert!(script.contains("mcpw"), "{shell}: {script}");
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell} lacks {name}");
        }
    }
    let unknown = mcpw(home.path(), &["completions", "tcsh"]);
    assert!(!unknown.status.success());
}

#[test]
fn man_page_is_roff_naming_every_subcommand() {
    let home = tempfile::tempdir().unwrap();
    let page = ok(&mcpw(home.path(), &["man"]));
    assert!(page.contains("\n.TH mcpw 1 "), "{page}");
    assert!(page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"));
    // roff writes a hyphen as `\-`.
    let text = page.replace("\\-", "-");
    let names = subcommands(home.path());
    for name in &names {
        assert!(text.contains(&format!("mcpw-{name}(1)")), "{name}: {page}");
    }
    // Rendered by groff, where the machine has it, without a warning.
    if Command::new("groff").arg("--version").output().is_ok() {
        let rendered = render(home.path(), &page);
        assert!(rendered.contains("SYNOPSIS"), "{rendered}");
        assert!(rendered.contains("mcpw-serve(1)"), "{rendered}");
    }

    let dir = home.path().join("man1");
    ok(&mcpw(home.path(), &["man", "--dir", dir.to_str().unwrap()]));
    for name in std::iter::once("mcpw".to_string()).chain(names.iter().map(|n| format!("mcpw-{n}")))
    {
        let file = dir.join(format!("{name}.1"));
        let page = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(page.contains(&format!("\n.TH {name} 1 ")), "{page}");
    }
    // Nested commands get theirs too.
    assert!(dir.join("mcpw-config-show.1").exists());
}

/// `page` as text by groff's man macros; any warning fails.
fn render(dir: &Path, page: &str) -> String {
    let file = dir.join("mcpw.1");
    std::fs::write(&file, page).unwrap();
    let out = Command::new("groff")
        // Plain text: no overstriking for bold and underline.
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
