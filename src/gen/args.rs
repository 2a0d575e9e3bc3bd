//! `sluice gen`'s command line: the usage text, the options and their checks.

use super::frame::{self, Profile};
use super::port::Io;
use std::time::Duration;

pub(super) const USAGE: &str = "\
usage: sluice gen --tx IF [--rx IF] [options]
  --tx IF              send on this interface
  --rx IF              count and check what arrives on this interface
  --size S             frame size with FCS: 64..9018, a list (64,512,1514) used in turn,
                       'mixed' (64,128,256,512,1024,1514), 'imix' (T-Rex bench: 64, 594,
                       1518 at 28:20:4) or 'simple-imix' (64, 594, 1518 at 7:4:1);
                       default 64 (60 bytes sent)
  --flows F            'single', N flows varying IPv4 source and UDP source port, or 'var2'
                       (T-Rex: source 16.0.0.0/16 and destination 48.0.0.0/16 both varying)
  --count N            send N frames                  (default: --duration 5)
  --duration SECS      send for SECS seconds
  --rate PPS|P%        offered rate per direction, in pps or percent of the line rate of
                       --link (default: as fast as the sender can)
  --link SPEED         1G, 10G, 25G, 40G, 100G, for --rate P% (default 10G)
  --warmup SECS        send for SECS first, at the same rate, without counting it
  --engine E           af_packet (default) or xdp: the kernel's XDP live-frames mode, many
                       times faster on a veth, paced by the XDP program itself; single flow
                       or var2, any size mix, one thread per direction; the receiver counts
                       with the interface's counter (no
                       per-frame checks; --count may overshoot by a few frames when paced)
  --io IO              af_packet (default: packet socket, TPACKET ring with kernel receive
                       timestamps), af_xdp (AF_XDP sockets through sluice's own driver;
                       frames up to 2044 bytes, jumbo MTUs lowered for the run) or memif
                       (--tx and --rx are memif socket paths; the generator is the client
                       and waits up to 15 s for the DUT's server)
  --cpu N              pin the sender to CPU N (the receiver too, unless --rx-cpu)
  --rx-cpu N           pin the receiver to CPU N
  --src-mac MAC        default 02:00:00:00:00:01
  --dst-mac MAC        default 02:00:00:00:00:02
  --bi                 send both ways at once (tx → rx and rx → tx), addresses mirrored
  --routed             the DUT routes: accept rewritten MACs, a lower TTL, a new checksum
  --dst-mac-reverse MAC, --src-mac-reverse MAC
                       MACs of the reverse direction with --bi (default: mirrored)
  --src-net A.B        source /16 (default 198.18, RFC 2544's benchmarking range;
  --dst-net C.D        destination /16, default 198.19; T-Rex uses 16.0 and 48.0)
  --rx-pcap FILE       write every frame the receiver gets to a pcap file
  --json               print the summary as one JSON object on stdout
  --quiet              no once-a-second lines";

/// The generator's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
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
    /// Traffic sent before the measured period and not counted by the receiver.
    pub warmup: Duration,
    /// Send with the kernel's XDP live-frames mode instead of AF_PACKET.
    pub xdp: bool,
    /// How the ports are reached.
    pub io: Io,
    /// Destination MAC of the reverse direction (default: the forward source MAC).
    pub dst_mac_reverse: Option<crate::wire::MacAddress>,
    /// Source MAC of the reverse direction (default: the forward destination MAC).
    pub src_mac_reverse: Option<crate::wire::MacAddress>,
}

fn value<'a>(it: &mut std::slice::Iter<'a, String>, flag: &str) -> Result<&'a str, String> {
    it.next()
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} needs a value"))
}

fn number<T: std::str::FromStr>(s: &str, flag: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("{flag}: '{s}' is not a valid number"))
}

/// `--engine af_packet|xdp`: whether to send with XDP live frames.
pub fn parse_engine(v: &str) -> Result<bool, String> {
    match v {
        "af_packet" => Ok(false),
        "xdp" => Ok(true),
        other => Err(format!("--engine: '{other}' is not af_packet or xdp")),
    }
}

/// Parse the command line (without the leading `gen`).
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        tx: String::new(),
        rx: None,
        profile: Profile {
            sizes: vec![64],
            flows: 1,
            var2: false,
            src_net: [198, 18],
            dst_net: [198, 19],
            routed: false,
            src_mac: "02:00:00:00:00:01".parse().unwrap_or_default(),
            dst_mac: "02:00:00:00:00:02".parse().unwrap_or_default(),
        },
        count: None,
        duration: Duration::from_secs(5),
        rate: None,
        cpu: None,
        rx_cpu: None,
        json: false,
        quiet: false,
        size_name: None,
        rx_pcap: None,
        bi: false,
        warmup: Duration::ZERO,
        xdp: false,
        io: Io::AfPacket,
        dst_mac_reverse: None,
        src_mac_reverse: None,
    };
    let mut rate_percent: Option<f64> = None;
    let mut link_bps = 10e9;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--tx" => o.tx = value(&mut it, a)?.to_string(),
            "--rx" => o.rx = Some(value(&mut it, a)?.to_string()),
            "--size" => {
                let v = value(&mut it, a)?;
                o.profile.sizes = frame::parse_sizes(v)?;
                o.size_name = v.parse::<usize>().is_err().then(|| v.to_string());
            }
            "--flows" => {
                let v = value(&mut it, a)?;
                o.profile.var2 = v == "var2";
                o.profile.flows = if v == "single" {
                    1
                } else if v == "var2" {
                    frame::VAR2_FLOWS
                } else {
                    let n: u32 = number(v, a)?;
                    if !(1..=65536).contains(&n) {
                        return Err(format!("--flows: {n} is outside 1..=65536"));
                    }
                    n
                };
            }
            "--count" => {
                let n: u64 = number(value(&mut it, a)?, a)?;
                if n == 0 {
                    return Err("--count must be at least 1".into());
                }
                o.count = Some(n);
            }
            "--duration" => {
                let s: f64 = number(value(&mut it, a)?, a)?;
                if !(s > 0.0 && s <= 86400.0) {
                    return Err(format!("--duration: {s} is outside (0, 86400] seconds"));
                }
                o.duration = Duration::from_secs_f64(s);
            }
            "--rate" => {
                let v = value(&mut it, a)?;
                if let Some(pct) = v.strip_suffix('%') {
                    let p: f64 = number(pct, a)?;
                    if !(p > 0.0 && p <= 100.0) {
                        return Err(format!("--rate: {v} is not a percent in (0, 100]"));
                    }
                    rate_percent = Some(p);
                } else {
                    let r: f64 = number(v, a)?;
                    if !(r >= 1.0 && r.is_finite()) {
                        return Err(format!("--rate: {r} must be at least 1 pps"));
                    }
                    o.rate = Some(r);
                }
            }
            "--link" => {
                link_bps = crate::bench::linerate::parse_link_speed(value(&mut it, a)?)
                    .map_err(|e| format!("--link: {e}"))?;
            }
            "--warmup" => {
                let w: f64 = number(value(&mut it, a)?, a)?;
                if !(0.0..=600.0).contains(&w) {
                    return Err(format!("--warmup: {w} is outside 0..=600 seconds"));
                }
                o.warmup = Duration::from_secs_f64(w);
            }
            "--cpu" => o.cpu = Some(number(value(&mut it, a)?, a)?),
            "--rx-cpu" => o.rx_cpu = Some(number(value(&mut it, a)?, a)?),
            "--src-mac" => o.profile.src_mac = value(&mut it, a)?.parse()?,
            "--dst-mac" => o.profile.dst_mac = value(&mut it, a)?.parse()?,
            "--rx-pcap" => o.rx_pcap = Some(value(&mut it, a)?.into()),
            "--bi" => o.bi = true,
            "--engine" => o.xdp = parse_engine(value(&mut it, a)?)?,
            "--io" => o.io = Io::parse(value(&mut it, a)?)?,
            "--routed" => o.profile.routed = true,
            "--dst-mac-reverse" => o.dst_mac_reverse = Some(value(&mut it, a)?.parse()?),
            "--src-mac-reverse" => o.src_mac_reverse = Some(value(&mut it, a)?.parse()?),
            "--src-net" | "--dst-net" => {
                let v = value(&mut it, a)?;
                let parts: Vec<u8> = v
                    .trim_end_matches(".0.0/16")
                    .split('.')
                    .map(|p| p.parse::<u8>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| {
                        format!("{a}: '{v}' is not a /16 such as 198.18 or 16.0.0.0/16")
                    })?;
                let net: [u8; 2] = parts.try_into().map_err(|_| {
                    format!("{a}: '{v}' is not a /16 such as 198.18 or 16.0.0.0/16")
                })?;
                if a == "--src-net" {
                    o.profile.src_net = net;
                } else {
                    o.profile.dst_net = net;
                }
            }
            "--json" => o.json = true,
            "--quiet" => o.quiet = true,
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    if o.tx.is_empty() {
        return Err("--tx IF is required".into());
    }
    if o.xdp {
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
    if o.xdp && o.io != Io::AfPacket {
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
    if let Some(p) = rate_percent {
        // Percent of the link's line rate for this size mix: what T-Rex's -m N% means.
        let sizes = &o.profile.sizes;
        let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        o.rate = Some(p / 100.0 * crate::bench::linerate::line_rate_pps(link_bps, mean));
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
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_and_flags() {
        let o = parse_args(&args("--tx t0")).unwrap();
        assert_eq!(o.profile.sizes, vec![64]);
        assert_eq!(o.profile.flows, 1);
        assert_eq!(o.duration, Duration::from_secs(5));
        let o = parse_args(&args(
            "--tx t0 --rx t1 --size 64,1514 --flows 100 --count 10 --rate 1000 --cpu 0 --json",
        ))
        .unwrap();
        assert_eq!(o.rx.as_deref(), Some("t1"));
        assert_eq!(o.profile.flows, 100);
        assert_eq!(o.count, Some(10));
        assert_eq!(o.rate, Some(1000.0));
        assert!(o.json);
    }

    #[test]
    fn rate_in_percent_of_line_rate() {
        let o = parse_args(&args("--tx t0 --rate 50% --link 10G")).unwrap();
        assert!((o.rate.unwrap() - 7_440_476.19).abs() < 1.0);
        // IMIX's mean size decides the frame rate of a full link.
        let o = parse_args(&args(
            "--tx t0 --size simple-imix --rate 100% --link 1G --warmup 2",
        ))
        .unwrap();
        let mean = (7.0 * 64.0 + 4.0 * 594.0 + 1518.0) / 12.0;
        assert!((o.rate.unwrap() - 1e9 / ((mean + 20.0) * 8.0)).abs() < 1.0);
        assert_eq!(o.warmup, Duration::from_secs(2));
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
        ] {
            assert!(parse_args(&args(bad)).is_err(), "accepted: {bad}");
        }
    }
}
