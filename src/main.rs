//! The `sluice` command: one binary for the daemon and its CLI (the product, crates/sluice) and
//! the generator, the lab and the benchmarks (the tester, crates/sluice-lab). Built without the
//! default `lab` feature it carries the product alone. The command line is declared for clap;
//! each command's options live with its module. Argument
//! errors are one line on stderr and exit code 2; failed runs exit 1.

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};

/// A userspace vector packet processor and router benchmark lab.
#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    version,
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the dataplane daemon
    Run(sluice::daemon::RunArgs),
    /// Send a command to a running daemon (try: sluice ctl help)
    Ctl(sluice::control::client::CtlArgs),
    /// Packet generator on af_packet, AF_XDP or memif ports
    #[cfg(feature = "lab")]
    Gen(sluice_lab::gen::GenArgs),
    /// Capture an interface's receive queues in parallel, one pcap file per queue
    Capture(sluice::capture::CaptureArgs),
    /// The namespace lab: up, down, run, bench
    #[cfg(feature = "lab")]
    Lab {
        #[command(subcommand)]
        command: sluice_lab::lab::args::LabCommand,
    },
    /// RFC 2544 NDR/PDR search of a DUT in the lab; `bench compare` compares results
    #[cfg(feature = "lab")]
    Bench(sluice_lab::lab::rfc2544::BenchCommand),
    /// Route tables: synthetic full views, lookups, FIB benchmark
    #[cfg(feature = "lab")]
    Fib {
        #[command(subcommand)]
        command: sluice_lab::fib::cli::FibCommand,
    },
    /// Print the version
    Version,
    /// Print a shell completion script
    Completions {
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

fn main() {
    let code = match Cli::try_parse() {
        Ok(cli) => run(cli.command),
        Err(e) => argument_error(&e),
    };
    std::process::exit(code);
}

fn run(command: Command) -> i32 {
    match command {
        Command::Run(a) => sluice::daemon::main(a),
        Command::Ctl(a) => sluice::control::client::main(a),
        #[cfg(feature = "lab")]
        Command::Gen(a) => sluice_lab::gen::main(a),
        Command::Capture(a) => sluice::capture::main(a),
        #[cfg(feature = "lab")]
        Command::Lab { command } => sluice_lab::lab::main(command),
        #[cfg(feature = "lab")]
        Command::Bench(a) => sluice_lab::lab::rfc2544::main(a),
        #[cfg(feature = "lab")]
        Command::Fib { command } => sluice_lab::fib::cli::main(command),
        Command::Version => {
            println!("sluice {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics on a failed write (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "sluice", &mut script);
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Ok(()) => 0,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
                Err(e) => {
                    eprintln!("sluice completions: {e}");
                    1
                }
            }
        }
    }
}

/// Help and version go out as clap wrote them; a missing command shows the help on stderr;
/// any other error is one line: `sluice lab run: MESSAGE (try: sluice lab run --help)`.
fn argument_error(e: &clap::Error) -> i32 {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            e.exit_code()
        }
        _ => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            eprintln!(
                "{}",
                one_line(&command_path(&args), &e.render().to_string())
            );
            2
        }
    }
}

/// The (sub)command the arguments name, e.g. `sluice lab run`: the leading words that are
/// subcommands of the one before, options skipped.
fn command_path(args: &[String]) -> String {
    let mut cmd = Cli::command();
    let mut path = vec!["sluice".to_string()];
    for a in args {
        if a.starts_with('-') {
            continue;
        }
        let Some(sub) = cmd.find_subcommand(a).cloned() else {
            break;
        };
        path.push(sub.get_name().to_string());
        cmd = sub;
    }
    path.join(" ")
}

/// clap's error text (message, indented details, tips, usage) folded into one line.
fn one_line(command: &str, text: &str) -> String {
    let mut paragraphs = text.split("\n\n").map(str::trim);
    let message: Vec<&str> = paragraphs
        .next()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let tips: String = paragraphs
        .filter(|p| p.starts_with("tip:"))
        .map(|t| format!("; {t}"))
        .collect();
    format!("{command}: {message}{tips} (try: {command} --help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn errors_fold_into_one_line() {
        let args = ["lab", "run", "--frob"].map(String::from);
        let words = std::iter::once("sluice").chain(args.iter().map(String::as_str));
        let e = Cli::try_parse_from(words).unwrap_err();
        let line = one_line(&command_path(&args), &e.render().to_string());
        assert!(
            line.starts_with("sluice lab run: unexpected argument '--frob'"),
            "{line}"
        );
        assert!(line.ends_with("(try: sluice lab run --help)"), "{line}");
        assert!(!line.contains('\n'), "{line}");
        let e = Cli::try_parse_from(["sluice", "fib", "lookup"]).unwrap_err();
        let line = one_line("sluice fib lookup", &e.render().to_string());
        assert!(
            line.contains("--routes <FILE>") && !line.contains('\n'),
            "{line}"
        );
        let path = command_path(&["gen", "--tx", "lab", "run"].map(String::from));
        assert_eq!(path, "sluice gen");
        let path = command_path(&["lab", "run", "--dut", "vpp9"].map(String::from));
        assert_eq!(path, "sluice lab run");
    }
}
