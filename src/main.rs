//! The `sluice` command: one binary for the daemon, its CLI, the generator and the lab.

const USAGE: &str = "\
usage: sluice COMMAND [ARGS]

commands:
  run -c FILE.toml        start the dataplane daemon
  ctl [-s SOCKET] CMD...  send a command to a running daemon (try: sluice ctl help)
  gen ...                 packet generator on an af_packet port (sluice gen --help)
  lab up|down|run ...     the namespace lab (sluice lab --help)
  bench ...               RFC 2544 NDR/PDR search of a DUT in the lab (sluice bench --help)
  bench compare A B ...   ministat-style comparison of benchmark results
  fib synth|lookup|bench  route tables: synthetic full views, lookups, FIB benchmark
  version                 print the version
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = if args.is_empty() { &[][..] } else { &args[1..] };
    let code = match args.first().map(String::as_str) {
        Some("run") => sluice::daemon::main(rest),
        Some("ctl") => sluice::control::client::main(rest),
        Some("gen") => sluice::gen::main(rest),
        Some("lab") => sluice::lab::main(rest),
        Some("bench") => match rest.first().map(String::as_str) {
            Some("compare") => sluice::bench::compare::main(&rest[1..]),
            _ => sluice::lab::rfc2544::main(rest),
        },
        Some("fib") => sluice::fib::cli::main(rest),
        Some("version" | "--version" | "-V") => {
            println!("sluice {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            0
        }
        Some(other) => {
            eprintln!("sluice: unknown command '{other}'\n\n{USAGE}");
            2
        }
        None => {
            eprint!("{USAGE}");
            2
        }
    };
    std::process::exit(code);
}
