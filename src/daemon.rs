//! `sluice run -c FILE.toml`: the dataplane daemon. Workers forward; the main thread serves
//! the control socket until SIGINT or SIGTERM, then stops the workers and restores the
//! interfaces it changed.

use crate::config::Config;
use crate::control::exec::Control;
use crate::control::server::ControlSocket;
use crate::dataplane::Dataplane;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const USAGE: &str = "usage: sluice run -c FILE.toml [--check]";

pub fn main(args: &[String]) -> i32 {
    let mut file: Option<PathBuf> = None;
    let mut check_only = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-c" | "--config" => match it.next() {
                Some(f) => file = Some(f.into()),
                None => {
                    eprintln!("sluice run: -c needs a file\n{USAGE}");
                    return 2;
                }
            },
            "--check" => check_only = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            other => {
                eprintln!("sluice run: unknown argument '{other}'\n{USAGE}");
                return 2;
            }
        }
    }
    let Some(file) = file else {
        eprintln!("sluice run: no config file\n{USAGE}");
        return 2;
    };
    let cfg = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sluice: config error: {e}");
            return 1;
        }
    };
    if check_only {
        println!("{}: ok", file.display());
        return 0;
    }
    match run(&cfg) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice: error: {e}");
            1
        }
    }
}

fn run(cfg: &Config) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    // Bind first: a second daemon on the same socket must fail before touching interfaces.
    let socket = ControlSocket::bind(&cfg.control.socket)?;
    let dp = Dataplane::start(cfg)?;
    let workers: Vec<String> = dp
        .workers
        .iter()
        .map(|w| match w.cpu {
            Some(c) => format!("{} on CPU {c}", w.name),
            None => format!("{} unpinned", w.name),
        })
        .collect();
    eprintln!(
        "sluice: ready, {} interfaces, {}; control socket {}",
        dp.interfaces.list.len(),
        workers.join(", "),
        socket.path().display()
    );
    let mut control = Control::new(dp);
    socket.serve(&mut control, &stop);
    eprintln!("sluice: stopping");
    control.dp.stop();
    Ok(())
}
