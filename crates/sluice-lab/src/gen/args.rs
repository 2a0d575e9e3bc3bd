//! `sluice gen`'s command line: the options as clap declarations (their help is the usage
//! text), value parsers for the checks of one value, and `GenArgs::options` for the checks
//! across options.

use super::frame::{self, Family, Profile, L4};
use super::port::Io;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use sluice::wire::MacAddress;
use std::path::PathBuf;
use std::time::Duration;

/// `sluice gen`: the packet generator on af_packet, AF_XDP or memif ports.
#[derive(clap::Parser, Debug, Clone)]
#[command(name = "gen")]
pub struct GenArgs {
    /// Send on this interface
    #[arg(long, value_name = "IF")]
    tx: String,
    /// Count and check what arrives on this interface
    #[arg(long, value_name = "IF")]
    rx: Option<String>,
    /// Frame size with FCS: 64..9018, a list (64,512,1514) used in turn, 'mixed'
    /// (64,128,256,512,1024,1514), 'imix' (T-Rex bench: 64, 594, 1518 at 28:20:4) or
    /// 'simple-imix' (64, 594, 1518 at 7:4:1); 64 sends 60 bytes. The smallest frame (and the
    /// default) is 64 for IPv4/UDP, 78 for IPv6/UDP, 70 for IPv4/TCP, 90 for IPv6/TCP; a
    /// named mix's 64-byte frames take that size
    #[arg(long, value_name = "S", value_parser = size_arg)]
    size: Option<String>,
    /// Address family of the frames: ipv4 or ipv6
    #[arg(long, value_name = "F", default_value = "ipv4", value_parser = family_arg())]
    family: Family,
    /// Transport: udp, or tcp (each flow's first segment is a SYN, the next ones ACKs with
    /// their sequence numbers advancing; a FIN+ACK per flow after the run, not counted)
    #[arg(long, value_name = "P", default_value = "udp", value_parser = l4_arg())]
    l4: L4,
    /// 'single', N flows varying source address and source port (up to 4 128 768, each a
    /// 5-tuple of its own), or 'var2' (T-Rex: the low 16 bits of source and destination
    /// addresses both varying)
    #[arg(long, value_name = "F", default_value = "single", value_parser = flows_arg)]
    flows: String,
    /// Send N frames (default: --duration 5)
    #[arg(long, value_name = "N", value_parser = positive_count)]
    count: Option<u64>,
    /// Send for SECS seconds, at most 86400
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = day_seconds)]
    duration: Duration,
    /// Offered rate per direction, in pps or percent of the line rate of --link (default: as
    /// fast as the sender can)
    #[arg(long, value_name = "PPS|P%", value_parser = rate_arg)]
    rate: Option<Rate>,
    /// Link speed for --rate P%: 1G, 10G, 25G, 40G, 100G
    #[arg(long, value_name = "SPEED", default_value = "10G", value_parser = crate::bench::linerate::parse_link_speed)]
    link: f64,
    /// Send for SECS first (at most 600), at the same rate, without counting it
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = warmup_seconds)]
    warmup: Duration,
    /// af_packet (sluice's own sender and checking receiver on the --io ports), xdp (the
    /// kernel's XDP live-frames mode, many times faster on a veth, paced by the XDP program
    /// itself; single flow or var2, any size mix, one thread per direction; the receiver
    /// counts with the interface's counter, no per-frame checks; --count may overshoot by a
    /// few frames when paced) or testpmd (DPDK's testpmd in txonly mode on the --io port,
    /// an independent tester: one frame size, single flow, one way, full speed, --duration
    /// only; what arrives is counted by the rx interface's counter, or on memif by a second
    /// testpmd in rxonly mode pinned to --rx-cpu)
    #[arg(long = "engine", value_name = "E", default_value = "af_packet", value_parser = engine_arg())]
    engine: Engine,
    /// af_packet (packet socket, TPACKET ring with kernel receive timestamps), af_xdp
    /// (AF_XDP sockets through sluice's own driver; frames up to 2044 bytes, jumbo MTUs
    /// lowered for the run) or memif (--tx and --rx are memif socket paths; the generator is
    /// the client and waits up to 15 s for the DUT's server; a path written server:PATH
    /// makes the generator that port's server, for a DUT that is a memif client)
    #[arg(long, value_name = "IO", default_value = "af_packet", value_parser = io_arg())]
    io: Io,
    /// Pin the sender to CPU N (the receiver too, unless --rx-cpu)
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
    /// Pin the receiver to CPU N
    #[arg(long, value_name = "N")]
    rx_cpu: Option<usize>,
    #[arg(long, value_name = "MAC", default_value = "02:00:00:00:00:01")]
    src_mac: MacAddress,
    #[arg(long, value_name = "MAC", default_value = "02:00:00:00:00:02")]
    dst_mac: MacAddress,
    /// Step source and destination MACs through N pairs (their low 24 bits + 2k), so a bridge
    /// learns N sources; one way, the destinations (even with N = 1) are first sent from the
    /// rx port once, so a learning bridge knows them too
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1 << 23))]
    macs: Option<u32>,
    /// Tag every frame 802.1Q VLAN ID (4 bytes more than --size says)
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(u16).range(1..=4094), conflicts_with = "qinq")]
    vlan: Option<u16>,
    /// With --vlan or --qinq: the (inner) VLAN id steps through N ids by flow, from the one
    /// given (flow f takes ID + f % N): traffic spread over N tenants' sub-interfaces
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4094))]
    vlans: Option<u16>,
    /// Tag every frame QinQ: 802.1ad OUTER, 802.1Q INNER (8 bytes more than --size says)
    #[arg(long, value_name = "OUTER,INNER", value_parser = qinq_arg)]
    qinq: Option<(u16, u16)>,
    /// Send both ways at once (tx → rx and rx → tx), addresses mirrored
    #[arg(long)]
    bi: bool,
    /// The rx port answers every frame it gets, out of the same port, with the reversed
    /// 5-tuple (UDP: a datagram of the same size; TCP: a SYN+ACK to a SYN, an ACK to the
    /// rest), and the tx port counts the answers as the reverse direction (round-trip
    /// latency); the ports engine only, one way
    #[arg(long)]
    reply: bool,
    /// The DUT routes: accept rewritten MACs, a lower TTL, a new checksum
    #[arg(long)]
    routed: bool,
    /// The DUT translates sources (NAT44, with --routed): frames on the rx port may come
    /// from any IPv4 address and port, their IP and L4 checksums right; the rest is checked
    #[arg(long, requires = "routed")]
    translated: bool,
    /// Destination MAC of the reverse direction with --bi (default: the forward source MAC)
    #[arg(long, value_name = "MAC")]
    dst_mac_reverse: Option<MacAddress>,
    /// Source MAC of the reverse direction with --bi (default: the forward destination MAC)
    #[arg(long, value_name = "MAC")]
    src_mac_reverse: Option<MacAddress>,
    /// Source /16 (198.18 is RFC 2544's benchmarking range; T-Rex uses 16.0)
    #[arg(long, value_name = "A.B", default_value = "198.18", value_parser = net16)]
    src_net: [u8; 2],
    /// Destination /16 (T-Rex uses 48.0)
    #[arg(long, value_name = "C.D", default_value = "198.19", value_parser = net16)]
    dst_net: [u8; 2],
    /// IPv6 source prefix, /112 or shorter: flows vary its low 16 bits as --src-net's
    #[arg(long, value_name = "PREFIX", default_value = "2001:db8:198:18::/64", value_parser = frame::ip::net6)]
    src_net6: [u8; 16],
    /// IPv6 destination prefix, /112 or shorter (::1 in it, or ::k with var2)
    #[arg(long, value_name = "PREFIX", default_value = "2001:db8:198:19::/64", value_parser = frame::ip::net6)]
    dst_net6: [u8; 16],
    /// Write every frame the receiver gets to a pcap file
    #[arg(long, value_name = "FILE")]
    rx_pcap: Option<PathBuf>,
    /// Print the summary as one JSON object on stdout
    #[arg(long)]
    json: bool,
    /// No once-a-second lines
    #[arg(long)]
    quiet: bool,
    /// What the receiver compares byte by byte: every frame (all), or one in 16 (sample;
    /// every frame's sequence number, timestamp and length are still checked)
    #[arg(long, value_name = "HOW", default_value = "sample", value_parser = verify_arg())]
    verify: u64,
}

/// `--verify`: compare the bytes of one frame in how many.
fn verify_arg() -> impl clap::builder::TypedValueParser<Value = u64> {
    clap::builder::PossibleValuesParser::new(["all", "sample"]).map(|w| {
        if w == "all" {
            1
        } else {
            frame::VERIFY_SAMPLE
        }
    })
}

/// `--rate`: frames per second, or a percent of the link's line rate.
#[derive(Clone, Copy, Debug)]
enum Rate {
    Pps(f64),
    Percent(f64),
}

/// The generator's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// One way, send each destination MAC from the rx port first (`--macs` given).
    pub teach: bool,
    pub tx: String,
    pub rx: Option<String>,
    pub profile: Profile,
    pub count: Option<u64>,
    pub duration: Duration,
    pub rate: Option<f64>,
    pub cpu: Option<usize>,
    pub rx_cpu: Option<usize>,
    pub json: bool,
    pub quiet: bool,
    /// The --size word when it names a mix (imix, mixed...), for reports.
    pub size_name: Option<String>,
    pub rx_pcap: Option<std::path::PathBuf>,
    /// Send both ways at once: tx → rx and rx → tx.
    pub bi: bool,
    /// The rx port answers what it receives; the tx port counts the answers.
    pub reply: bool,
    /// Traffic sent before the measured period and not counted by the receiver.
    pub warmup: Duration,
    /// Who sends: sluice's ports, the kernel's XDP live frames or DPDK's testpmd.
    pub engine: Engine,
    /// How the ports are reached.
    pub io: Io,
    /// Destination MAC of the reverse direction (default: the forward source MAC).
    pub dst_mac_reverse: Option<sluice::wire::MacAddress>,
    /// Source MAC of the reverse direction (default: the forward destination MAC).
    pub src_mac_reverse: Option<sluice::wire::MacAddress>,
    /// The receiver compares the bytes of the frames whose sequence number has these bits
    /// clear: one in 16 (`VERIFY_SAMPLE - 1`), or all (0). A mask, not a modulus: the check
    /// runs per frame.
    pub verify_mask: u64,
}

/// `--size`: a size, a list or a named mix, checked; kept as written.
pub fn size_arg(v: &str) -> Result<String, String> {
    // clap names the option in its message already.
    frame::parse_sizes(v).map_err(|e| e.trim_start_matches("--size: ").to_string())?;
    Ok(v.to_string())
}

/// `--qinq OUTER,INNER`: two VLAN ids.
pub fn qinq_arg(v: &str) -> Result<(u16, u16), String> {
    let id = |s: &str| {
        s.trim()
            .parse::<u16>()
            .ok()
            .filter(|n| (1..=4094).contains(n))
            .ok_or_else(|| format!("'{s}' is not a VLAN id (1-4094)"))
    };
    let (o, i) = v.split_once(',').ok_or("expected OUTER,INNER")?;
    Ok((id(o)?, id(i)?))
}

/// `--flows`: single, var2 or a number of flows; kept as written.
pub fn flows_arg(v: &str) -> Result<String, String> {
    let max = crate::gen::frame::MAX_FLOWS;
    if v == "single" || v == "var2" || v.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n)) {
        Ok(v.to_string())
    } else {
        Err(format!(
            "not 'single', 'var2' or a number of flows 1..={max}"
        ))
    }
}

fn positive_count(v: &str) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("not a positive number".into()),
    }
}

/// Seconds in `(lo, hi]`, or `[lo, hi]` when `lo` is 0 and `zero_ok`.
fn seconds_in(v: &str, zero_ok: bool, hi: f64) -> Result<Duration, String> {
    match v.parse::<f64>() {
        Ok(s) if (s > 0.0 || (zero_ok && s == 0.0)) && s <= hi => Ok(Duration::from_secs_f64(s)),
        _ if zero_ok => Err(format!("not a number of seconds in 0..={hi}")),
        _ => Err(format!("not a number of seconds in (0, {hi}]")),
    }
}

fn day_seconds(v: &str) -> Result<Duration, String> {
    seconds_in(v, false, 86400.0)
}

fn warmup_seconds(v: &str) -> Result<Duration, String> {
    seconds_in(v, true, 600.0)
}

fn rate_arg(v: &str) -> Result<Rate, String> {
    if let Some(pct) = v.strip_suffix('%') {
        return match pct.parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Ok(Rate::Percent(p)),
            _ => Err("not a percent in (0, 100]".into()),
        };
    }
    match v.parse::<f64>() {
        Ok(r) if r >= 1.0 && r.is_finite() => Ok(Rate::Pps(r)),
        _ => Err("not a rate of at least 1 pps, or a percent such as 50%".into()),
    }
}

/// `--src-net`, `--dst-net`: a /16 as `198.18` or `16.0.0.0/16`.
fn net16(v: &str) -> Result<[u8; 2], String> {
    let parts: Option<Vec<u8>> = v
        .trim_end_matches(".0.0/16")
        .split('.')
        .map(|p| p.parse::<u8>().ok())
        .collect();
    parts
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| "not a /16 such as 198.18 or 16.0.0.0/16".into())
}

/// Who sends the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// sluice's own sender and checking receiver on the --io ports (af_packet by default).
    Ports,
    /// The kernel's XDP live-frames mode on a veth.
    Xdp,
    /// DPDK's testpmd in txonly mode: a tester nobody here wrote.
    Testpmd,
}

impl Engine {
    /// The --engine word.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Ports => "af_packet",
            Engine::Xdp => "xdp",
            Engine::Testpmd => "testpmd",
        }
    }

    /// The engine counts arrivals without reading frames (no latency, no checks).
    pub fn counts_only(self) -> bool {
        self != Engine::Ports
    }
}

/// `--engine af_packet|xdp|testpmd`.
pub fn engine_arg() -> impl TypedValueParser<Value = Engine> {
    PossibleValuesParser::new(["af_packet", "xdp", "testpmd"]).map(|e| match e.as_str() {
        "xdp" => Engine::Xdp,
        "testpmd" => Engine::Testpmd,
        _ => Engine::Ports,
    })
}

/// `--family ipv4|ipv6`.
pub fn family_arg() -> impl TypedValueParser<Value = Family> {
    PossibleValuesParser::new(["ipv4", "ipv6"]).map(|f| match f.as_str() {
        "ipv6" => Family::Ipv6,
        _ => Family::Ipv4,
    })
}

/// `--l4 udp|tcp`.
pub fn l4_arg() -> impl TypedValueParser<Value = L4> {
    PossibleValuesParser::new(["udp", "tcp"]).map(|p| match p.as_str() {
        "tcp" => L4::Tcp,
        _ => L4::Udp,
    })
}

/// `--io af_packet|af_xdp|memif`.
pub fn io_arg() -> impl TypedValueParser<Value = Io> {
    PossibleValuesParser::new(["af_packet", "af_xdp", "memif"]).try_map(|v| Io::parse(&v))
}

/// The lab's `--io`: the generator's, or dpdk-null (no generator).
pub fn lab_io_arg() -> impl TypedValueParser<Value = Io> {
    PossibleValuesParser::new(["af_packet", "af_xdp", "memif", "dpdk-null"])
        .try_map(|v| Io::parse(&v))
}

impl GenArgs {
    /// The settings, after the checks that involve several options.
    pub fn options(self) -> Result<Options, String> {
        let var2 = self.flows == "var2";
        let flows = match self.flows.as_str() {
            "single" => 1,
            "var2" => frame::VAR2_FLOWS,
            n => n
                .parse()
                .map_err(|_| format!("--flows: '{n}' is not a number"))?,
        };
        let min = frame::min_size(self.family, self.l4);
        let size = self.size.unwrap_or_else(|| min.to_string());
        let kind = format!("{}/{}", self.family.name(), self.l4.name()).to_uppercase();
        let o = Options {
            profile: Profile {
                sizes: frame::sizes_for(&size, min, &kind)?,
                flows,
                var2,
                src_net: self.src_net,
                dst_net: self.dst_net,
                family: self.family,
                l4: self.l4,
                src_net6: self.src_net6,
                dst_net6: self.dst_net6,
                routed: self.routed,
                translated: self.translated,
                src_mac: self.src_mac,
                dst_mac: self.dst_mac,
                macs: self.macs.unwrap_or(1),
                vlans: match (self.vlan, self.qinq) {
                    (Some(v), _) => vec![(0x8100, v)],
                    (None, Some((o, i))) => vec![(0x88a8, o), (0x8100, i)],
                    (None, None) => Vec::new(),
                },
                vlan_spread: self.vlans.unwrap_or(1),
            },
            size_name: size.parse::<usize>().is_err().then_some(size),
            tx: self.tx,
            rx: self.rx,
            count: self.count,
            duration: self.duration,
            rate: None,
            cpu: self.cpu,
            rx_cpu: self.rx_cpu,
            json: self.json,
            quiet: self.quiet,
            rx_pcap: self.rx_pcap,
            bi: self.bi,
            reply: self.reply,
            warmup: self.warmup,
            engine: self.engine,
            io: self.io,
            dst_mac_reverse: self.dst_mac_reverse,
            src_mac_reverse: self.src_mac_reverse,
            verify_mask: self.verify - 1,
            teach: self.macs.is_some(),
        };
        check(&o)?;
        if o.engine == Engine::Testpmd && self.rate.is_some() {
            return Err("--engine testpmd sends as fast as it can: no --rate".into());
        }
        let rate = match self.rate {
            None => None,
            Some(Rate::Pps(r)) => Some(r),
            Some(Rate::Percent(p)) => {
                // Percent of the link's line rate for this size mix: what T-Rex's -m N% means.
                let sizes = &o.profile.sizes;
                let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
                Some(p / 100.0 * crate::bench::linerate::line_rate_pps(self.link, mean))
            }
        };
        Ok(Options { rate, ..o })
    }
}

/// The checks across options.
fn check(o: &Options) -> Result<(), String> {
    if o.engine == Engine::Testpmd {
        if o.profile.flows != 1 || o.profile.sizes.len() != 1 {
            return Err("--engine testpmd sends one frame size, single flow".into());
        }
        if o.count.is_some() || o.bi || !o.warmup.is_zero() || o.rx_pcap.is_some() {
            return Err(
                "--engine testpmd sends one way for --duration: no --count, --bi, --warmup or --rx-pcap"
                    .into(),
            );
        }
        if o.io == Io::Memif
            && o.rx.is_some()
            && o.rx_cpu.unwrap_or(o.cpu.unwrap_or(0)) == o.cpu.unwrap_or(0)
        {
            return Err(
                "--engine testpmd on memif receives with a second testpmd: give it a CPU of its \
                 own with --rx-cpu (sharing the sender's, it would lose most frames itself)"
                    .into(),
            );
        }
        if o.tx.starts_with("server:") || o.rx.as_deref().is_some_and(|r| r.starts_with("server:"))
        {
            return Err("--engine testpmd is a memif client only".into());
        }
    }
    let ipv4_udp = (o.profile.family, o.profile.l4) == (Family::Ipv4, L4::Udp);
    if o.engine == Engine::Testpmd && !ipv4_udp {
        return Err(
            "--engine testpmd sends the IPv4/UDP frames its txonly mode builds: no --family \
             ipv6 or --l4 tcp"
                .into(),
        );
    }
    if o.engine == Engine::Xdp && o.profile.l4 == L4::Tcp {
        return Err(
            "--engine xdp sends UDP: TCP segments need per-flow sequence numbers its program \
             does not keep"
                .into(),
        );
    }
    if o.engine == Engine::Xdp {
        if o.profile.flows != 1 && !o.profile.var2 {
            return Err("--engine xdp sends single flow or var2".into());
        }
        if o.profile.sizes.iter().any(|&s| s > 3524) {
            return Err("--engine xdp sends frames of at most 3524 bytes".into());
        }
        if !o.warmup.is_zero() || o.rx_pcap.is_some() {
            return Err("--engine xdp does not combine with --warmup or --rx-pcap".into());
        }
    }
    if o.profile.macs_overlap() {
        return Err(format!(
            "--macs {}: the source MACs from {} and the destinations from {} (stepping by 2) \
             meet; choose MACs that differ by an odd number or far apart",
            o.profile.macs, o.profile.src_mac, o.profile.dst_mac
        ));
    }
    if o.engine != Engine::Ports && o.profile.macs > 1 {
        return Err("--macs needs the ports engine (not --engine xdp or testpmd)".into());
    }
    if o.profile.vlan_spread > 1 {
        let Some(&(_, first)) = o.profile.vlans.last() else {
            return Err("--vlans N steps the VLAN id of --vlan or --qinq: give one".into());
        };
        let last = first as u32 + o.profile.vlan_spread as u32 - 1;
        if last > 4094 {
            return Err(format!(
                "--vlans {}: ids {first} to {last} go past 4094",
                o.profile.vlan_spread
            ));
        }
        if o.profile.flows < o.profile.vlan_spread as u32 {
            return Err(format!(
                "--vlans {}: only {} flows, so some VLANs would carry nothing",
                o.profile.vlan_spread, o.profile.flows
            ));
        }
    }
    if o.engine != Engine::Ports && !o.profile.vlans.is_empty() {
        return Err("--vlan and --qinq need the ports engine (not --engine xdp or testpmd)".into());
    }
    if o.engine == Engine::Xdp && o.io != Io::AfPacket {
        return Err("--engine xdp sends by itself: it does not combine with --io".into());
    }
    let biggest = o.profile.sizes.iter().max().copied().unwrap_or(64) - 4;
    if biggest > o.io.max_frame() {
        return Err(format!(
            "--io {}: frames of {} bytes (with FCS) are too large; at most {}",
            o.io.name(),
            biggest + 4,
            o.io.max_frame() + 4
        ));
    }
    if o.reply {
        if o.engine != Engine::Ports {
            return Err(format!(
                "--reply answers from the ports engine's receive loop; --engine {} counts \
                 arrivals without reading them",
                o.engine.name()
            ));
        }
        if o.rx.is_none() || o.bi {
            return Err("--reply needs --rx (the answering port) and goes one way: no --bi".into());
        }
        if o.teach && o.io != Io::AfPacket {
            return Err("--reply with --macs needs --io af_packet".into());
        }
    }
    if o.bi && o.rx.is_none() {
        return Err("--bi needs --rx (the other port)".into());
    }
    if o.rx_pcap.is_some() && o.rx.is_none() {
        return Err("--rx-pcap needs --rx".into());
    }
    if o.rx.as_deref() == Some(o.tx.as_str()) {
        return Err("--rx must be another interface than --tx".into());
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;

    /// The options `sluice gen ARGS` would run with.
    pub(crate) fn options(s: &str) -> Result<Options, String> {
        parse_args(s)
    }

    fn parse_args(s: &str) -> Result<Options, String> {
        let words = std::iter::once("gen").chain(s.split_whitespace());
        GenArgs::try_parse_from(words)
            .map_err(|e| e.to_string())?
            .options()
    }

    #[test]
    fn defaults_and_flags() {
        let o = parse_args("--tx t0").unwrap();
        assert_eq!(o.profile.sizes, vec![64]);
        assert_eq!(o.profile.flows, 1);
        assert_eq!(o.duration, Duration::from_secs(5));
        let o = parse_args(
            "--tx t0 --rx t1 --size 64,1514 --flows 100 --count 10 --rate 1000 --cpu 0 --json",
        )
        .unwrap();
        assert_eq!(o.rx.as_deref(), Some("t1"));
        assert_eq!(o.profile.flows, 100);
        assert_eq!(o.count, Some(10));
        assert_eq!(o.rate, Some(1000.0));
        assert!(o.json);
    }

    #[test]
    fn vlans_spread_the_tag_over_tenants() {
        let o = parse_args("--tx t0 --flows var2 --vlan 100 --vlans 16").unwrap();
        assert_eq!(
            (o.profile.vlans.clone(), o.profile.vlan_spread),
            (vec![(0x8100, 100)], 16)
        );
        let e = parse_args("--tx t0 --flows 100 --vlans 4").unwrap_err();
        assert!(e.contains("give one"), "{e}");
    }

    #[test]
    fn rate_in_percent_of_line_rate() {
        let o = parse_args("--tx t0 --rate 50% --link 10G").unwrap();
        assert!((o.rate.unwrap() - 7_440_476.19).abs() < 1.0);
        // IMIX's mean size decides the frame rate of a full link.
        let o = parse_args("--tx t0 --size simple-imix --rate 100% --link 1G --warmup 2").unwrap();
        let mean = (7.0 * 64.0 + 4.0 * 594.0 + 1518.0) / 12.0;
        assert!((o.rate.unwrap() - 1e9 / ((mean + 20.0) * 8.0)).abs() < 1.0);
        assert_eq!(o.warmup, Duration::from_secs(2));
    }

    #[test]
    fn family_and_l4_choose_the_frames_and_their_smallest_size() {
        let o = parse_args("--tx t0 --family ipv6").unwrap();
        assert_eq!((o.profile.family, o.profile.l4), (Family::Ipv6, L4::Udp));
        assert_eq!((o.profile.sizes.clone(), o.size_name), (vec![78], None));
        let o = parse_args("--tx t0 --l4 tcp --size imix").unwrap();
        assert!(o.profile.sizes.contains(&70) && !o.profile.sizes.contains(&64));
        assert_eq!(o.size_name.as_deref(), Some("imix"));
        let o = parse_args("--tx t0 --family ipv6 --l4 tcp --src-net6 2001:db8:aa::/48").unwrap();
        assert_eq!(o.profile.sizes, vec![90]);
        assert_eq!(&o.profile.src_net6[..6], &[0x20, 1, 0xd, 0xb8, 0, 0xaa]);
        // IPv4/UDP as it was.
        let o = parse_args("--tx t0").unwrap();
        assert_eq!((o.profile.family, o.profile.l4), (Family::Ipv4, L4::Udp));
        assert_eq!((o.profile.sizes.clone(), o.size_name), (vec![64], None));
        for bad in [
            "--tx t0 --family ipv6 --size 64",
            "--tx t0 --l4 tcp --size 64,1518",
            "--tx t0 --family ipx",
            "--tx t0 --l4 sctp",
            "--tx t0 --src-net6 2001:db8::1/64",
            "--tx t0 --dst-net6 2001:db8::/120",
            "--tx t0 --dst-net6 2001:db8::",
            "--tx t0 --family ipv6 --engine testpmd",
            "--tx t0 --l4 tcp --engine testpmd",
            "--tx t0 --l4 tcp --engine xdp",
        ] {
            assert!(parse_args(bad).is_err(), "accepted: {bad}");
        }
    }

    #[test]
    fn bad_values_are_errors() {
        for bad in [
            "",
            "--rx t1",
            "--tx t0 --size 10",
            "--tx t0 --flows 0",
            "--tx t0 --flows many",
            "--tx t0 --count 0",
            "--tx t0 --rate -5",
            "--tx t0 --duration 0",
            "--tx t0 --frobnicate",
            "--tx t0 --rx t0",
            "--tx t0 --src-mac 02:00",
            "--tx t0 --count",
            "--tx t0 --rate 0%",
            "--tx t0 --rate 101%",
            "--tx t0 --link 3G",
            "--tx t0 --warmup -1",
            "--tx t0 --flows 100 --vlans 4",
            "--tx t0 --flows 100 --vlan 4000 --vlans 100",
            "--tx t0 --flows 2 --vlan 10 --vlans 4",
            "--tx t0 --flows 100 --vlan 10 --vlans 0",
            "--tx t0 --reply",
            "--tx t0 --rx t1 --reply --bi",
            "--tx t0 --rx t1 --reply --engine xdp",
            "--tx t0 --rx t1 --reply --engine testpmd --duration 1",
            "--tx t0 --rx t1 --reply --macs 4 --io af_xdp",
        ] {
            assert!(parse_args(bad).is_err(), "accepted: {bad}");
        }
    }
}
