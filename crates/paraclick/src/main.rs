//! The `paraclick` binary: the library's command line.

fn main() -> std::process::ExitCode {
    paraclick::main_cli()
}
