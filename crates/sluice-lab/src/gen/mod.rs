//! `sluice gen`: a packet generator on an af_packet, af_xdp or memif port (or XDP live
//! frames, or DPDK's testpmd), with an optional receive side on a second port that checks
//! every frame it gets (loss, duplicates, reordering, corruption, latency). Prints a pkt-gen
//! style line once a second and a summary, or JSON.
//!
//! Layout: `args` declares the command line (clap) and checks it, `engine` runs the
//! af_packet, af_xdp and memif ports (`port`) with a sender thread per direction and the
//! receiver of `check`, `xdp` is the XDP live-frames engine, `testpmd` drives DPDK's testpmd,
//! `frame` builds and verifies the frames, and `report` prints the once-a-second lines and
//! the summary.

mod args;
mod check;
mod engine;
pub mod frame;
#[cfg(test)]
mod ipv4_pin_tests;
pub mod port;
mod reply;
mod report;
pub mod testpmd;
mod xdp;
pub mod xdp_live;
mod xdp_live6;

pub use args::{
    engine_arg, family_arg, flows_arg, io_arg, l4_arg, lab_io_arg, qinq_arg, size_arg, Engine,
    GenArgs, Options,
};
pub use report::Report;
pub use xdp::xdp_frames;

use frame::Profile;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn main(args: GenArgs) -> i32 {
    let opts = match args.options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sluice gen: {e} (see sluice gen --help)");
            return 2;
        }
    };
    match run(&opts) {
        Ok(report) => {
            if opts.json {
                println!("{}", report.to_json(&opts));
            } else {
                eprint!("{}", report.text(&opts));
            }
            0
        }
        Err(e) => {
            eprintln!("sluice gen: {e}");
            1
        }
    }
}

/// Run the engine the options ask for.
fn run(opts: &Options) -> Result<Report, String> {
    match opts.engine {
        Engine::Xdp => xdp::run_xdp(opts),
        Engine::Testpmd => testpmd::run_testpmd(opts),
        Engine::Ports => engine::run_ports(opts),
    }
}

/// How the frames were sent, for reports: the io, or the engine that sends by itself.
pub fn io_label(opts: &Options) -> String {
    match opts.engine {
        Engine::Xdp => "xdp-live-frames".into(),
        Engine::Testpmd => format!("testpmd-{}", opts.io.name()),
        Engine::Ports => opts.io.name().into(),
    }
}

/// One direction: a sender on one port and, optionally, a receiver on the other.
struct Lane {
    tx: String,
    rx: Option<String>,
    profile: Profile,
    label: &'static str,
}

fn lanes(opts: &Options) -> Vec<Lane> {
    let mut v = vec![Lane {
        tx: opts.tx.clone(),
        rx: opts.rx.clone(),
        profile: opts.profile.clone(),
        label: "",
    }];
    if let (true, Some(rx)) = (opts.bi, &opts.rx) {
        v.push(Lane {
            tx: rx.clone(),
            rx: Some(opts.tx.clone()),
            profile: reverse_profile(opts),
            label: "reverse ",
        });
    }
    v
}

/// The reverse direction mirrors addresses, so a bridge learns and a router routes.
fn reverse_profile(opts: &Options) -> Profile {
    let mut p = opts.profile.clone();
    p.src_mac = opts.src_mac_reverse.unwrap_or(opts.profile.dst_mac);
    p.dst_mac = opts.dst_mac_reverse.unwrap_or(opts.profile.src_mac);
    p.src_net = opts.profile.dst_net;
    p.dst_net = opts.profile.src_net;
    p.src_net6 = opts.profile.dst_net6;
    p.dst_net6 = opts.profile.src_net6;
    p
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
