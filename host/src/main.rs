//! The `mcpw` command.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
