//! `sluice lab`: a tester | DUT lab of two network namespaces on one machine, and runs that
//! send traffic through a DUT and report what arrived, side by side for several DUTs.
//!
//! `netns` builds the namespaces, `dut/` holds the devices under test (one file each behind
//! the `Dut` trait), `plan` the routers' addressing, `table` their route tables, `report` and
//! `chart` the results, `calibrate` what the generator sends alone; `bench` (`sluice lab bench`) and `rfc2544` (`sluice bench`) run on it.
//! `args` declares the command lines for clap, `options` turns `lab run`'s into checked
//! settings, `run` runs the generator and the DUTs for them.

pub mod args;
pub mod bench;
pub mod calibrate;
pub mod chart;
pub mod dut;
pub mod netns;
mod options;
pub mod plan;
pub mod profile;
pub mod report;
pub mod rfc2544;
mod run;
pub mod table;

use crate::gen::port::Io;
use dut::DutKind;
use netns::{LabLock, TESTER};

pub use options::{
    check_io, check_profile, check_testpmd_engine, testpmd_rx_cpu, Placement, RunOptions,
};
pub(crate) use run::{generate, generate_with, one_run, warm_up};

pub fn main(command: args::LabCommand) -> i32 {
    let code = match command {
        args::LabCommand::Up => with_lock(|| {
            if netns::up()? {
                eprintln!("lab is up: {} (t0, t1) and {} (d0, d1)", TESTER, netns::DUT);
            } else {
                eprintln!("lab is already up");
            }
            Ok(())
        }),
        args::LabCommand::Down => with_lock(|| {
            if netns::down()? {
                eprintln!("lab is down");
            } else {
                eprintln!("lab is not up");
            }
            Ok(())
        }),
        args::LabCommand::Bench(a) => match a.options() {
            Ok(o) => with_lock(|| bench::main(&o)),
            Err(e) => {
                eprintln!("sluice lab bench: {e} (see sluice lab bench --help)");
                return 2;
            }
        },
        args::LabCommand::Flamediff(a) => {
            profile::flamediff(&a.before, &a.after, &a.out).map(|_| {
                eprintln!("wrote {}", a.out.display());
            })
        }
        args::LabCommand::Run(a) => match a.options() {
            Ok(o) => with_lock(|| run::run(&o)),
            Err(e) => {
                eprintln!("sluice lab run: {e} (see sluice lab run --help)");
                return 2;
            }
        },
    };
    match code {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice lab: {e}");
            1
        }
    }
}

/// MTU of the lab's veths for an io: AF_XDP frames fit one buffer, and native XDP on a veth
/// needs the peer's MTU within a page.
pub fn port_mtu(io: Io) -> u32 {
    match io {
        Io::AfXdp => 1500,
        Io::AfPacket | Io::Memif | Io::DpdkNull => netns::LAB_MTU,
    }
}

/// The veths' MTU for a run of `kind` over `io` with frames of `size` (as `--size` says):
/// sluice's default driver runs AF_XDP natively only below about 3500 bytes, so its runs
/// use AF_XDP's MTU when the frames fit it, and the lab's jumbo MTU (where `auto` takes
/// AF_PACKET) when they do not.
pub fn run_mtu(kind: DutKind, io: Io, size: &str) -> u32 {
    let fits_1500 =
        crate::gen::frame::parse_sizes(size).is_ok_and(|s| s.iter().all(|&f| f <= 1500 + 18));
    match kind {
        DutKind::SluiceAfXdp
        | DutKind::SluiceXdp
        | DutKind::SluiceBridgeXdp
        | DutKind::SluiceRouterXdp
        | DutKind::SluiceNatXdp => port_mtu(Io::AfXdp),
        DutKind::Sluice | DutKind::SluiceRouter | DutKind::SluiceBridge | DutKind::SluiceNat
            if io == Io::AfPacket && fits_1500 =>
        {
            port_mtu(Io::AfXdp)
        }
        _ => port_mtu(io),
    }
}

/// Where a DUT's memif port `k` listens (d0, d1) and the generator connects.
pub fn memif_socket(k: usize) -> std::path::PathBuf {
    format!("/run/sluice/lab-memif{k}.sock").into()
}

fn with_lock(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let _lock = LabLock::take()?;
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::frame::{Family, L4};
    use crate::gen::Engine;

    pub(crate) fn parse_run(s: &str) -> Result<RunOptions, String> {
        args::parse_words::<args::RunArgs>(s)?.options()
    }

    #[test]
    fn family_l4_and_reply_reach_the_run() {
        let o = parse_run("--dut sluice-router,linux-router --family ipv6 --flows var2").unwrap();
        assert_eq!(
            (o.family, o.size.as_str()),
            (Family::Ipv6, "78"),
            "the kind's smallest"
        );
        let o = parse_run("--dut linux-router --stateful --l4 tcp --reply").unwrap();
        assert_eq!((o.l4, o.reply, o.size.as_str()), (L4::Tcp, true, "70"));
        for bad in [
            "--family ipv6 --size 64",
            "--reply --bi",
            "--reply --engine xdp",
            "--l4 tcp --engine xdp",
            "--family ipv6 --dut vpp-router",
        ] {
            assert!(parse_run(bad).is_err(), "accepted: {bad}");
        }
    }

    /// A NAT DUT implies the answering generator, and so none of what excludes it.
    #[test]
    fn a_nat_dut_implies_reply() {
        let o = parse_run("--dut linux-nat --flows 10000").unwrap();
        assert!(o.reply, "implied");
        assert_eq!((o.family, o.l4), (Family::Ipv4, L4::Udp));
        assert!(parse_run("--dut linux-nat --l4 tcp --reply").unwrap().reply);
        for bad in [
            "--dut linux-nat --bi",
            "--dut linux-nat --engine xdp",
            "--dut linux-nat --family ipv6",
            "--dut linux-nat --stateful",
        ] {
            assert!(parse_run(bad).is_err(), "accepted: {bad}");
        }
    }

    /// `--io dpdk-null`: net_null makes frames of `--size` (less the FCS), one size, one
    /// segment; the run names no generator.
    #[test]
    fn dpdk_null_frames_are_the_size_asked_and_no_generator_is_named() {
        let o = parse_run("--dut sluice-dpdk,testpmd --io dpdk-null --size 128").unwrap();
        assert_eq!(run::null_size(&o.size), Ok(128));
        let cfg = dut::sluice::sluice_config(
            1,
            (o.io, "dpdk", Some(124)),
            dut::sluice::Forwarding::Xconnect(&[]),
            "/tmp/s.sock".as_ref(),
        );
        for k in 0..2 {
            let line = format!("devargs = \"net_null{k},size=124\"");
            assert!(cfg.contains(&line), "{cfg}");
        }
        let said = run::placement(&o);
        assert!(!said.contains("generator on"), "{said}");
        assert!(said.contains("CPU 1"), "{said}");
        let veths = parse_run("--dut testpmd").unwrap();
        assert!(run::placement(&veths).starts_with("generator on CPU 0"));
        for bad in ["64,128", "imix", "2053"] {
            let o = format!("--dut testpmd --io dpdk-null --size {bad}");
            assert!(parse_run(&o).is_err(), "accepted: {o}");
        }
        assert!(parse_run("--dut testpmd --io dpdk-null --size 2052").is_ok());
    }

    #[test]
    fn run_defaults_and_options() {
        let o = parse_run("").unwrap();
        assert_eq!(o.duts, vec![DutKind::Sluice]);
        assert_eq!(o.size, "64");
        assert_eq!(o.repeat, 1);
        assert!(o.napi_on_dut);
        assert_eq!((o.gen_cpu, o.dut_cpu), (0, 1));
        let o = parse_run(
            "--dut sluice,linux-bridge --size 1514 --flows 100 --count 1000 --repeat 5 --json",
        )
        .unwrap();
        assert_eq!(o.duts, vec![DutKind::Sluice, DutKind::LinuxBridge]);
        assert_eq!(o.count.as_deref(), Some("1000"));
        assert!(o.json);
        let o = parse_run("--napi sender --engine xdp --gen-cpu 2 --dut-cpu 3").unwrap();
        assert!(!o.napi_on_dut && o.engine == Engine::Xdp);
        assert_eq!((o.gen_cpu, o.dut_cpu), (2, 3));
    }

    #[test]
    fn run_rejects_bad_options() {
        for bad in [
            "--dut vpp9",
            "--size 12",
            "--flows 0",
            "--duration -1",
            "--count 0",
            "--rate x",
            "--repeat 0",
            "--duration 1 --count 5",
            "--frob",
            "--dut",
            "--napi both",
            "--gen-cpu x",
            "--table full",
        ] {
            assert!(parse_run(bad).is_err(), "accepted: {bad}");
        }
    }
}
