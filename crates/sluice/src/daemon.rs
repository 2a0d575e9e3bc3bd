//! `sluice run -c FILE.toml`: the dataplane daemon. Workers forward; the main thread serves
//! the control socket until SIGINT or SIGTERM (SIGHUP applies the config file again, as
//! `sluice ctl apply` does: `reload`), then stops the metrics thread (when `[metrics]`
//! has one) and the workers and restores the interfaces it changed. Its options are the clap
//! declarations of `RunArgs`. Under systemd (`Type=notify`) it sends `READY=1`, `WATCHDOG=1`
//! while every worker passes its loop, and `STOPPING=1` (`sd_notify`); the watchdog
//! (`dataplane::watchdog`) reports stalled workers and, with `exit-on-stall`, stops it.

use crate::config::Config;
use crate::control::exec::Control;
use crate::control::metrics::{MetricsListener, MetricsSource};
use crate::control::server::ControlSocket;
use crate::dataplane::watchdog::Watchdog;
use crate::dataplane::Dataplane;
use crate::sd_notify::Notifier;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// `sluice run`: start the dataplane daemon.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The configuration file
    #[arg(
        short = 'c',
        long = "config",
        value_name = "FILE.toml",
        required_unless_present = "print_config_reference"
    )]
    config: Option<PathBuf>,
    /// Check the configuration, print `FILE: ok` and exit
    #[arg(long)]
    check: bool,
    /// Print the configuration reference (every section and key, as Markdown: docs/config.md)
    /// and exit
    #[arg(long, conflicts_with_all = ["config", "check"])]
    print_config_reference: bool,
}

pub fn main(args: RunArgs) -> i32 {
    let RunArgs {
        config: file,
        check: check_only,
        print_config_reference,
    } = args;
    let Some(file) = file.filter(|_| !print_config_reference) else {
        print!("{}", crate::config::reference::markdown());
        return 0;
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
    match run(&cfg, &file) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice: error: {e}");
            1
        }
    }
}

fn run(cfg: &Config, file: &std::path::Path) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    // Bind first: a second daemon on the same socket must fail before touching interfaces.
    let socket = ControlSocket::bind(&cfg.control)?;
    let metrics = cfg.metrics.listen.map(MetricsListener::bind).transpose()?;
    let notify = Notifier::from_env()?;
    let dp = Dataplane::start(cfg)?;
    let metrics = match metrics {
        Some(l) => {
            let addr = l.local_addr().map_err(|e| format!("metrics socket: {e}"))?;
            let source = MetricsSource::new(&dp).with_clients(socket.stats());
            let server = l.serve(source)?;
            eprintln!("sluice: metrics on http://{addr}/metrics");
            Some(server)
        }
        None => None,
    };
    let workers: Vec<String> = dp
        .workers
        .iter()
        .map(|w| match w.cpu {
            Some(c) => format!("{} on CPU {c}", w.name),
            None => format!("{} unpinned", w.name),
        })
        .collect();
    let read_only = socket
        .read_only_path()
        .map(|p| format!(", read-only {}", p.display()))
        .unwrap_or_default();
    eprintln!(
        "sluice: ready, {} interfaces, {}; control socket {}{read_only}",
        dp.interfaces.list.len(),
        workers.join(", "),
        socket.path().display()
    );
    let beats = dp
        .workers
        .iter()
        .map(|w| (w.name.clone(), w.beat.clone()))
        .collect();
    let watchdog_notify = Notifier::from_env()?;
    let watchdog = Watchdog::spawn(
        beats,
        cfg.watchdog,
        watchdog_notify,
        stop.clone(),
        dp.events.clone(),
    )?;
    if let Some(n) = &notify {
        n.send("READY=1");
    }
    let mut control = Control::new(dp);
    control.started = cfg.written.clone();
    let reload = Reload::spawn(file, socket.path())?;
    let control = socket.serve(control, &stop);
    eprintln!("sluice: stopping");
    reload.stop();
    if let Some(n) = &notify {
        n.send("STOPPING=1");
    }
    let tripped = watchdog.tripped.clone();
    watchdog.join();
    if let Some(m) = metrics {
        m.stop();
    }
    let stopped = control.dp.finish();
    if tripped.load(std::sync::atomic::Ordering::Relaxed) {
        return Err("the watchdog stopped the daemon: a worker stalled (exit-on-stall)".into());
    }
    stopped
}

/// SIGHUP: `apply` of the start-up file through the control socket (so it waits its turn
/// behind other clients' commands, under the same lock), the result logged.
struct Reload {
    handle: signal_hook::iterator::Handle,
    thread: std::thread::JoinHandle<()>,
}

impl Reload {
    fn spawn(file: &std::path::Path, socket: &std::path::Path) -> Result<Reload, String> {
        let file = std::path::absolute(file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .display()
            .to_string();
        let socket = socket.to_path_buf();
        let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGHUP])
            .map_err(|e| format!("cannot handle SIGHUP: {e}"))?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("sluice-reload".into())
            .spawn(move || {
                for _ in signals.forever() {
                    eprintln!("sluice: SIGHUP: applying {file}");
                    let line = format!("apply {file}");
                    match crate::control::client::run_command(&socket, &line) {
                        Ok(_) => eprintln!("sluice: SIGHUP: {file} applied"),
                        Err(e) => eprintln!("sluice: SIGHUP: {file} not applied: {e}"),
                    }
                }
            })
            .map_err(|e| format!("cannot start the SIGHUP thread: {e}"))?;
        Ok(Reload { handle, thread })
    }

    fn stop(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}
