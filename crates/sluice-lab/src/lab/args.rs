//! The lab's command lines (`sluice lab up|down|run|bench`, `sluice bench`) as clap
//! declarations: option groups that several commands share, and the value parsers of their
//! one-value checks. The checks across options stay with each command.

use super::bench::Loadtest;
use super::dut::DutKind;
use super::table::TableSpec;
use crate::gen::frame::{Family, L4};
use crate::gen::port::Io;
use crate::gen::Engine;
use clap::builder::{PossibleValuesParser, TypedValueParser};

/// `sluice lab`: a tester | DUT lab of two network namespaces on one machine.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum LabCommand {
    /// Create namespaces sl-tester (t0, t1) and sl-dut (d0, d1), t0-d0 and t1-d1
    Up,
    /// Remove them (safe to run twice)
    Down,
    /// Send from t0 through a DUT to t1 and report what arrived
    Run(RunArgs),
    /// A matrix of loadtests x DUTs x repeats
    Bench(super::bench::BenchArgs),
    /// Draw the difference of two folded profiles (from --profile) as a flame graph: red
    /// where AFTER has more samples, blue where fewer
    Flamediff(FlamediffArgs),
}

/// `sluice lab flamediff`.
#[derive(clap::Args, Debug, Clone)]
pub struct FlamediffArgs {
    /// The reference profile (a .folded file)
    pub before: std::path::PathBuf,
    /// The profile compared with it
    pub after: std::path::PathBuf,
    /// The SVG to write
    #[arg(long, value_name = "FILE", default_value = "flamediff.svg")]
    pub out: std::path::PathBuf,
}

/// `sluice lab run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// sluice (its default driver `auto` on the veths: AF_XDP where it can run), sluice-af_xdp
    /// (AF_XDP ports whatever --io says), sluice-af_packet (AF_PACKET ports), sluice-xdp
    /// (AF_XDP with the XDP fast path on; --io af_xdp), linux-bridge, linux-router, linux-nat
    /// (linux-router masquerading what leaves by d1; implies --reply), sluice-router (sluice routing, resolving its next hops by ARP), sluice-router-xdp
    /// (sluice-router with the XDP fast path on; --io af_xdp), sluice-nat
    /// (sluice-router with NAT44 out of d1; implies --reply), sluice-nat-xdp (sluice-nat with
    /// the XDP fast path on; --io af_xdp),
    /// sluice-bridge (a learning bridge domain, as linux-bridge is), sluice-bridge-xdp
    /// (sluice-bridge with the XDP fast path on; --io af_xdp), sluice-dpdk (sluice's
    /// dpdk driver: DPDK's net_af_xdp or net_af_packet on the veths, or net_null with --io
    /// dpdk-null), testpmd,
    /// vpp (l2 xconnect), vpp-router (when vpp and vppctl are on the PATH), or a comma list
    #[arg(long = "dut", value_name = "LIST", value_delimiter = ',', default_value = "sluice", value_parser = dut_arg)]
    pub duts: Vec<DutKind>,
    /// Route tables for the router DUTs: small (the test routes alone), full (and 1M IPv4 +
    /// 200k IPv6 synthetic routes via t0/t1 that never overlap the traffic) or V4[+V6]
    /// synthetic routes; a comma list runs each; the load time of each is printed
    #[arg(long = "table", value_name = "LIST", value_delimiter = ',', default_value = "small", value_parser = table_arg)]
    pub tables: Vec<TableSpec>,
    /// Frame size with FCS (lists and 'mixed' as sluice gen takes) [default: the smallest
    /// of --family and --l4: 64 for IPv4/UDP, 78 IPv6/UDP, 70 IPv4/TCP, 90 IPv6/TCP]
    #[arg(long, value_name = "S", value_parser = crate::gen::size_arg)]
    pub size: Option<String>,
    #[command(flatten)]
    pub frames: FrameArgs,
    /// t1 answers every frame it receives (sluice gen --reply): traffic crosses the DUT both
    /// ways, TCP flows open (SYN, SYN+ACK, ACK), and the results count the answers as the
    /// reverse direction, with round-trip latency; one way only (no --bi)
    #[arg(long, conflicts_with = "bi")]
    pub reply: bool,
    /// single, var2 (T-Rex) or a number of flows
    #[arg(long, value_name = "F", default_value = "single", value_parser = crate::gen::flows_arg)]
    pub flows: String,
    /// Step source and destination MACs through N pairs, so a bridge DUT learns N sources
    /// and forwards to N known destinations (sluice gen --macs)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1 << 23))]
    pub macs: u32,
    /// Tag the frames 802.1Q VLAN ID; the sluice DUTs take them on sub-interfaces of d0
    /// and d1 (cross-connected or bridged), popping and pushing the tag
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(u16).range(1..=4094), conflicts_with = "qinq")]
    pub vlan: Option<u16>,
    /// Tag the frames QinQ (802.1ad OUTER, 802.1Q INNER), as --vlan does
    #[arg(long, value_name = "OUTER,INNER", value_parser = crate::gen::qinq_arg)]
    pub qinq: Option<(u16, u16)>,
    /// The router DUTs filter what they forward: N deny rules the traffic never matches
    /// (single sources in 100.64.0.0/10), then a permit; sluice-router as an input ACL on
    /// d0 and d1, linux-router as N nftables rules in its forward hook
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub acl_rules: Option<u32>,
    /// With --acl-rules (0 if not given): the final rule keeps state — sluice's is
    /// permit+reflect (a session per flow; later packets skip the rules), the kernel's chain
    /// starts with 'ct state established,related accept' (conntrack on)
    #[arg(long)]
    pub stateful: bool,
    /// sluice-router routes N tenants, each in its own routing table (VRF) on 802.1Q
    /// sub-interfaces d0.K and d1.K (K = 100 to 99 + N) with the same addresses; the
    /// generator spreads the flows over the N VLANs (sluice gen --vlan 100 --vlans N)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub vrfs: Option<u16>,
    /// Where sluice-router's synthetic table comes from: static (its [fib] route file) or
    /// bird (BIRD 2 in the DUT namespace announces it, exports it into Linux's main table
    /// through taps mirroring d0 and d1, and sluice learns it over netlink; the lab prints
    /// how long an announcement and a withdrawal take to reach sluice's FIB)
    #[arg(long, value_name = "static|bird", default_value = "static", value_parser = ["static", "bird"])]
    pub control: String,
    /// Seconds per run [default: 5] (or --count)
    #[arg(long, value_name = "SECS", value_parser = seconds_arg, conflicts_with = "count")]
    pub duration: Option<String>,
    /// Frames per run
    #[arg(long, value_name = "N", value_parser = count_arg)]
    pub count: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Send both ways at once (t0 -> t1 and t1 -> t0)
    #[arg(long)]
    pub bi: bool,
    /// Runs per DUT, alternating DUTs run by run; the table shows medians
    #[arg(long, value_name = "N", default_value = "1", value_parser = repeat_arg)]
    pub repeat: usize,
    /// One JSON document instead of the table
    #[arg(long)]
    pub json: bool,
    /// Do not measure first what the generator sends alone (1 s with no DUT forwarding);
    /// the table's Gen max column is then '-'
    #[arg(long)]
    pub no_calibrate: bool,
    /// Sample the DUT's CPU with perf during each run and write a flame graph per DUT and
    /// run (flame-DUT-N.svg and .folded) into --profile-dir; the table lists each DUT's top
    /// functions
    #[arg(long)]
    pub profile: bool,
    /// Where --profile writes
    #[arg(long, value_name = "DIR", default_value = "lab-profile")]
    pub profile_dir: std::path::PathBuf,
    #[command(flatten)]
    pub cpus: CpuArgs,
    #[command(flatten)]
    pub ports: PortArgs,
}

/// The offered rate, for every command that sends.
#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    /// Offered rate per direction (default: as fast as the generator can)
    #[arg(long, value_name = "PPS", value_parser = rate_arg)]
    pub rate: Option<String>,
}

/// What the frames carry (`lab run`, `lab bench`, `bench`). In a loadtest the 64b class is
/// the kind's smallest frame (78 B IPv6/UDP, 70 B IPv4/TCP, 90 B IPv6/TCP).
#[derive(clap::Args, Debug, Clone)]
pub struct FrameArgs {
    /// Address family of the frames (sluice gen --family); the router DUTs route the
    /// generator's IPv6 networks as they do its IPv4 ones
    #[arg(long, value_name = "F", default_value = "ipv4", value_parser = crate::gen::family_arg())]
    pub family: Family,
    /// Transport of the frames: udp, or tcp (flows that open with a SYN; sluice gen --l4)
    #[arg(long, value_name = "P", default_value = "udp", value_parser = crate::gen::l4_arg())]
    pub l4: L4,
}

impl FrameArgs {
    /// `lt` with its size raised to the kind's smallest frame where it is below it (the 64 B
    /// class); the named mixes already start at the kind's smallest.
    pub fn loadtest(&self, mut lt: Loadtest) -> Loadtest {
        let min = crate::gen::frame::min_size(self.family, self.l4);
        if lt.size.parse::<usize>().is_ok_and(|n| n < min) {
            lt.size = min.to_string();
        }
        lt
    }
}

/// Where generator and DUT run.
#[derive(clap::Args, Debug, Clone)]
pub struct CpuArgs {
    /// Where the DUT's ports do their receive work: in NAPI threads on the DUT's CPU (dut,
    /// so every DUT pays for its own receiving), or in the sender's context as a veth does
    /// unless told otherwise (sender)
    #[arg(long = "napi", value_name = "WHERE", default_value = "dut", value_parser = napi_arg(), action = clap::ArgAction::Set)]
    pub napi_on_dut: bool,
    /// Generator CPU
    #[arg(long, value_name = "N", default_value = "0", value_parser = cpu_arg)]
    pub gen_cpu: usize,
    /// DUT worker CPU
    #[arg(long, value_name = "N", default_value = "1", value_parser = cpu_arg)]
    pub dut_cpu: usize,
}

/// How generator and DUT reach the lab's ports.
#[derive(clap::Args, Debug, Clone)]
pub struct PortArgs {
    /// Generator engine: af_packet (sluice's generator on the --io ports), xdp (kernel XDP
    /// live frames, several times faster; single flow or var2, counted by the receiving
    /// port's interface counter) or testpmd (DPDK's testpmd in txonly mode on the --io port:
    /// an independent tester; single flow, one size, one way, full speed, counted by the
    /// receiving port's counter or, on memif, by a testpmd in rxonly mode)
    #[arg(long = "engine", value_name = "E", default_value = "af_packet", value_parser = crate::gen::engine_arg())]
    pub engine: Engine,
    /// The path between generator and DUT: af_packet, af_xdp (both the generator's ports and
    /// sluice's or testpmd's use AF_XDP; the veths run at MTU 1500 so XDP can run natively)
    /// or memif (no kernel in the path: the DUT's d0/d1 are memif servers, the generator
    /// their client; sluice and testpmd only) or dpdk-null (no generator: sluice-dpdk and
    /// testpmd each forward between two DPDK net_null ports, which make and take the frames,
    /// on the DUT CPU)
    #[arg(long, value_name = "IO", default_value = "af_packet", value_parser = crate::gen::lab_io_arg())]
    pub io: Io,
}

pub fn dut_arg(v: &str) -> Result<DutKind, String> {
    DutKind::parse(v.trim())
}

fn table_arg(v: &str) -> Result<TableSpec, String> {
    // clap names the option in its message already.
    TableSpec::parse(v.trim()).map_err(|e| e.trim_start_matches("--table: ").to_string())
}

pub fn loadtest_arg(v: &str) -> Result<Loadtest, String> {
    Loadtest::parse(v.trim())
}

fn napi_arg() -> impl TypedValueParser<Value = bool> {
    PossibleValuesParser::new(["dut", "sender"]).map(|w| w == "dut")
}

fn cpu_arg(v: &str) -> Result<usize, String> {
    v.parse().map_err(|_| "not a CPU number".to_string())
}

/// Seconds per run, kept as written for the generator.
pub fn seconds_arg(v: &str) -> Result<String, String> {
    if v.parse::<f64>().is_ok_and(|s| s > 0.0 && s <= 3600.0) {
        Ok(v.to_string())
    } else {
        Err("not a number of seconds (0, 3600]".into())
    }
}

fn count_arg(v: &str) -> Result<String, String> {
    if v.parse::<u64>().is_ok_and(|n| n > 0) {
        Ok(v.to_string())
    } else {
        Err("not a positive number".into())
    }
}

fn rate_arg(v: &str) -> Result<String, String> {
    if v.parse::<f64>().is_ok_and(|r| r >= 1.0) {
        Ok(v.to_string())
    } else {
        Err("not a rate in pps".into())
    }
}

pub fn repeat_arg(v: &str) -> Result<usize, String> {
    v.parse()
        .ok()
        .filter(|n| (1..=100).contains(n))
        .ok_or_else(|| "not 1..100".into())
}

/// Test helper: `ARGS` parsed as the options `A` declares, without a program name.
#[cfg(test)]
pub(crate) fn parse_words<A: clap::Args>(s: &str) -> Result<A, String> {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Words<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    let words = std::iter::once("sluice").chain(s.split_whitespace());
    Words::<A>::try_parse_from(words)
        .map(|w| w.args)
        .map_err(|e| e.to_string())
}
