//! `mcpw completions` and `mcpw man`: what a shell and `man` need to know of
//! mcpw, made from the command line's own definition so they never fall behind.

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(Args)]
pub(crate) struct ManArgs {
    /// Write one page per command (mcpw.1, mcpw-serve.1, …) into this
    /// directory instead of printing mcpw.1 to stdout.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints the completion script of `args.shell` for `cmd` (mcpw's own).
pub(crate) fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> Result<ExitCode> {
    // Made whole before it is written: the generators panic on a write error,
    // and a closed pipe is not one.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "mcpw", &mut script);
    write_stdout(&script)
}

/// Prints mcpw's man page (roff), or writes every command's into `args.dir`.
pub(crate) fn man(args: ManArgs, cmd: clap::Command) -> Result<ExitCode> {
    // `help` has no page: `--help` is on every one.
    let mut cmd = cmd.disable_help_subcommand(true);
    // Built, so that each command's name is its page's: `mcpw-config-show`.
    cmd.build();
    let source = format!("mcpw {}", cmd.get_version().unwrap_or_default());
    let Some(dir) = args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .source(source)
            .render(&mut page)
            .context("render the man page")?;
        return write_stdout(&page);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    write_pages(&cmd, &source, &dir)
        .with_context(|| format!("write the man pages into {}", dir.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `cmd`, and of each command under it, into `dir`.
fn write_pages(cmd: &clap::Command, source: &str, dir: &Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, source, dir)?;
    }
    clap_mangen::Man::new(cmd.clone())
        .source(source)
        .generate_to(dir)?;
    Ok(())
}

fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
