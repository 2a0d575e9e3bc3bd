//! `sluice gen`: a packet generator on an af_packet port, with an optional receive side on a
//! second port that checks every frame it gets (loss, duplicates, reordering, corruption,
//! latency). Prints a pkt-gen style line once a second and a summary, or JSON.

pub mod frame;
pub mod port;

use crate::bench::linerate::{fmt_bps, fmt_pps, l2_bps};
use crate::drivers::af_packet::netdev;
use crate::drivers::af_packet::socket::MAX_BATCH;
use crate::drivers::cpu;
use frame::{Profile, Stamp};
use port::{FrameSink, FrameSource, Io, Ports};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "\
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

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return 0;
    }
    let opts = match parse_args(args) {
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

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// netmap pkt-gen's once-a-second line: `N pps (M pkts in T usec)`.
struct SecondLine {
    last: Instant,
    count: u64,
}

impl SecondLine {
    fn new() -> SecondLine {
        SecondLine {
            last: Instant::now(),
            count: 0,
        }
    }

    /// Print a line for the packets since the last one, if a second has passed.
    fn tick(&mut self, quiet: bool, prefix: &str, total: u64) {
        let now = Instant::now();
        if quiet || now - self.last < Duration::from_secs(1) {
            return;
        }
        let us = (now - self.last).as_micros() as u64;
        let pkts = total - self.count;
        eprintln!(
            "{prefix}{} pps ({pkts} pkts in {us} usec)",
            pkts * 1_000_000 / us.max(1)
        );
        self.last = now;
        self.count = total;
    }
}

/// What the sender did.
#[derive(Debug, Default)]
struct TxReport {
    packets: u64,
    bytes: u64,
    errors: u64,
    elapsed: Duration,
}

/// What the receiver saw.
#[derive(Debug, Default)]
struct RxReport {
    packets: u64,
    bytes: u64,
    corrupt: u64,
    dup: u64,
    reorder: u64,
    other: u64,
    /// Frames the kernel could not put in our receive ring: lost by the tester, not the DUT.
    ring_drops: u64,
    latencies: Vec<u64>,
}

/// The run's outcome.
pub struct Report {
    /// Both directions added up.
    tx: TxReport,
    rx: Option<RxReport>,
    /// Directions sent: 1, or 2 with --bi.
    lanes: usize,
}

/// Sequence numbers of warm-up frames carry this bit; receivers do not count them.
const WARMUP_SEQ: u64 = 1 << 47;

fn send_loop(
    opts: &Options,
    profile: &Profile,
    label: &str,
    sender: &mut dyn FrameSink,
    tx_done: &AtomicBool,
) -> TxReport {
    if !opts.warmup.is_zero() {
        let mut warm = opts.clone();
        warm.count = None;
        warm.duration = opts.warmup;
        warm.quiet = true;
        send_phase(&warm, profile, label, sender, WARMUP_SEQ);
    }
    let r = send_phase(opts, profile, label, sender, 0);
    tx_done.store(true, Ordering::Release);
    r
}

/// Send for the options' count or duration, numbering frames from `first_seq`.
fn send_phase(
    opts: &Options,
    profile: &Profile,
    label: &str,
    sender: &mut dyn FrameSink,
    first_seq: u64,
) -> TxReport {
    let mut batch: Vec<Vec<u8>> = (0..MAX_BATCH).map(|_| Vec::with_capacity(9018)).collect();
    let mut r = TxReport::default();
    let start = Instant::now();
    let mut next_seq = 0u64;
    let mut line = SecondLine::new();
    loop {
        let now = Instant::now();
        let elapsed = now - start;
        let left = match opts.count {
            Some(c) => c - next_seq,
            None if elapsed >= opts.duration => 0,
            None => u64::MAX,
        };
        if left == 0 {
            break;
        }
        let mut n = (MAX_BATCH as u64).min(left);
        if let Some(rate) = opts.rate {
            let allowed = (rate * elapsed.as_secs_f64()) as u64 + 1;
            let room = allowed.saturating_sub(next_seq);
            if room == 0 {
                let wait = Duration::from_secs_f64(1.0 / rate).min(Duration::from_millis(1));
                std::thread::sleep(wait);
                continue;
            }
            n = n.min(room);
        }
        let ts = now_ns();
        for (k, buf) in batch.iter_mut().take(n as usize).enumerate() {
            profile.build(first_seq + next_seq + k as u64, ts, buf);
        }
        let s = sender.send(&batch[..n as usize]);
        // Frames refused with an error are gone; frames not taken for a full queue are
        // sent again next time with the same sequence numbers.
        let taken = n as usize - s.queue_full;
        for f in &batch[..taken] {
            r.bytes += f.len() as u64;
        }
        r.packets += s.sent as u64;
        r.errors += s.errors as u64;
        next_seq += taken as u64;
        if s.queue_full > 0 {
            std::thread::yield_now();
        }
        line.tick(opts.quiet, label, r.packets);
    }
    r.elapsed = start.elapsed();
    r
}

/// Receive until the sender is done and nothing new arrived for a drain time.
fn receive_loop(
    opts: &Options,
    profile: &Profile,
    label: &str,
    ring: &mut dyn FrameSource,
    tx_done: &AtomicBool,
    mut capture: Option<PcapWriter>,
) -> RxReport {
    const DRAIN_QUIET: Duration = Duration::from_millis(300);
    const DRAIN_MAX: Duration = Duration::from_secs(2);
    let mut r = RxReport::default();
    let mut seen: Vec<u64> = Vec::new();
    let mut max_seq: Option<u64> = None;
    let mut scratch = Vec::with_capacity(9018);
    let mut done_at: Option<Instant> = None;
    let mut last_rx = Instant::now();
    let mut line = SecondLine::new();
    let rx_label = format!("{label}rx: ");
    loop {
        let got = ring.poll(&mut |ts, data| {
            if let Some(w) = capture.as_mut() {
                if w.write(ts, data).is_err() {
                    capture = None;
                    eprintln!("sluice gen: capture file write failed; capture stopped");
                }
            }
            let Some(st) = frame::stamp(data) else {
                r.other += 1;
                return;
            };
            let Stamp { seq, tx_ns } = st;
            if seq & WARMUP_SEQ != 0 {
                if !frame::verify(profile, data, st, &mut scratch) {
                    r.corrupt += 1;
                }
                return;
            }
            let word = (seq / 64) as usize;
            if word >= seen.len() {
                if word > 1 << 26 {
                    r.corrupt += 1;
                    return;
                }
                seen.resize(word + 1024, 0);
            }
            let bit = 1u64 << (seq % 64);
            if seen[word] & bit != 0 {
                r.dup += 1;
                return;
            }
            seen[word] |= bit;
            // Unique frames only: duplicates are counted apart.
            r.packets += 1;
            r.bytes += data.len() as u64;
            if max_seq.is_some_and(|m| seq < m) {
                r.reorder += 1;
            }
            max_seq = Some(max_seq.map_or(seq, |m| m.max(seq)));
            if !frame::verify(profile, data, st, &mut scratch) {
                r.corrupt += 1;
            }
            if r.latencies.len() < 4_000_000 {
                r.latencies.push(ts.saturating_sub(tx_ns));
            }
        }) > 0;
        let now = Instant::now();
        if got {
            last_rx = now;
        }
        line.tick(opts.quiet, &rx_label, r.packets);
        if tx_done.load(Ordering::Acquire) {
            let d = *done_at.get_or_insert(now);
            if now - last_rx >= DRAIN_QUIET || now - d >= DRAIN_MAX {
                break;
            }
        }
        if !got {
            ring.wait(10);
        }
    }
    if let Some(mut w) = capture {
        let _ = w.flush();
    }
    r.ring_drops = ring.drops();
    r
}

type PcapWriter = crate::drivers::pcap::file::Writer<std::io::BufWriter<std::fs::File>>;

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
        // The reverse direction mirrors addresses, so a bridge learns and a router routes.
        let mut p = opts.profile.clone();
        p.src_mac = opts.src_mac_reverse.unwrap_or(opts.profile.dst_mac);
        p.dst_mac = opts.dst_mac_reverse.unwrap_or(opts.profile.src_mac);
        p.src_net = opts.profile.dst_net;
        p.dst_net = opts.profile.src_net;
        v.push(Lane {
            tx: rx.clone(),
            rx: Some(opts.tx.clone()),
            profile: p,
            label: "reverse ",
        });
    }
    v
}

fn rx_counter(name: &str) -> Result<u64, String> {
    let p = format!("/sys/class/net/{name}/statistics/rx_packets");
    std::fs::read_to_string(&p)
        .map_err(|e| format!("{p}: {e}"))?
        .trim()
        .parse()
        .map_err(|e| format!("{p}: {e}"))
}

/// The XDP engine's template (the profile's longest frame) and what its program varies.
pub fn xdp_frames(profile: &Profile) -> (Vec<u8>, crate::drivers::xdp_live::Variation) {
    let longest = (0..profile.sizes.len() as u64)
        .max_by_key(|&s| profile.frame_len(s))
        .unwrap_or(0);
    let mut template = Vec::new();
    profile.build(longest, 0, &mut template);
    let v = crate::drivers::xdp_live::Variation {
        var2_flows: profile.var2.then_some(profile.flows),
        lengths: (0..profile.sizes.len() as u64)
            .map(|s| profile.frame_len(s) as u32)
            .collect(),
    };
    (template, v)
}

/// Sending with XDP live frames, one thread per direction; the receiver side is each rx
/// interface's counter.
fn run_xdp(opts: &Options) -> Result<Report, String> {
    let lanes = lanes(opts);
    let mean_len = Report::mean_size(opts) - frame::FCS_LEN as f64;
    let before: Vec<Option<u64>> = lanes
        .iter()
        .map(|l| l.rx.as_deref().map(rx_counter).transpose())
        .collect::<Result<_, _>>()?;
    // Load every program before any sends, so that a refusal sends nothing.
    let mut engines = Vec::new();
    for lane in &lanes {
        let idx =
            netdev::index(&lane.tx).ok_or_else(|| format!("interface '{}' not found", lane.tx))?;
        let (f, variation) = xdp_frames(&lane.profile);
        let mut engine = crate::drivers::xdp_live::LiveFrames::new(&f, idx, &variation)?;
        engine.set_rate(opts.rate)?;
        engines.push(engine);
    }
    let mut handles = Vec::new();
    for (lane, mut engine) in lanes.iter().zip(engines) {
        let (o, label) = (opts.clone(), lane.label);
        handles.push(
            std::thread::Builder::new()
                .name("gen-xdp".into())
                .spawn(move || xdp_send(&o, label, &mut engine))
                .map_err(|e| e.to_string())?,
        );
    }
    let mut sent = 0;
    let mut elapsed = Duration::ZERO;
    for h in handles {
        let (n, t) = h.join().map_err(|_| "sender thread failed".to_string())??;
        sent += n;
        elapsed = elapsed.max(t);
    }
    let mut rx = None;
    for (lane, b) in lanes.iter().zip(before) {
        let (Some(name), Some(b)) = (&lane.rx, b) else {
            continue;
        };
        // Wait until the counter stops moving (frames still in the DUT).
        let mut last = rx_counter(name)?;
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = rx_counter(name)?;
            if now == last {
                break;
            }
            last = now;
        }
        let r = rx.get_or_insert_with(RxReport::default);
        r.packets += last - b;
    }
    if let Some(r) = rx.as_mut() {
        r.bytes = (r.packets as f64 * mean_len) as u64;
    }
    Ok(Report {
        tx: TxReport {
            packets: sent,
            bytes: (sent as f64 * mean_len) as u64,
            errors: 0,
            elapsed,
        },
        rx,
        lanes: lanes.len(),
    })
}

/// One direction of the XDP engine: frames sent and the time they took.
fn xdp_send(
    opts: &Options,
    label: &str,
    engine: &mut crate::drivers::xdp_live::LiveFrames,
) -> Result<(u64, Duration), String> {
    if let Some(c) = opts.cpu {
        cpu::pin_current_thread(c)?;
    }
    // Calls of about a tenth of a second: every call waits for an RCU grace period, so small
    // ones would cost more than they run, and long ones would overshoot --duration. The
    // program paces itself, so a call's length is runs of the kernel's loop, not frames.
    let mut runs: u32 = 1 << 16;
    let mut per_sec = 1e7;
    let (mut gap_s, mut pace) = (0.0f64, 0.0f64);
    let start = Instant::now();
    let mut sent = 0u64;
    let mut line = SecondLine::new();
    loop {
        let done = match opts.count {
            Some(c) => sent >= c,
            None => start.elapsed() >= opts.duration,
        };
        if done {
            break;
        }
        let mut n = runs;
        if let (Some(c), None) = (opts.count, opts.rate) {
            n = n.min((c - sent).min(u32::MAX as u64) as u32);
        }
        if opts.count.is_none() {
            // The last call ends at --duration, not a quarter second past it.
            let left = opts.duration.saturating_sub(start.elapsed()).as_secs_f64();
            n = n.min(((left * per_sec) as u32).max(4096));
        }
        if let Some(rate) = opts.rate {
            // Each call also waits for an RCU grace period, when nothing is sent. Pace this
            // call so that by its end the average is the asked rate: what will be owed then,
            // spread over the part of the call that sends.
            let call_s = n as f64 / per_sec;
            let sending_s = (call_s - gap_s).max(call_s * 0.5);
            let owed = rate * (start.elapsed().as_secs_f64() + call_s) - sent as f64;
            let paced = (owed / sending_s).clamp(rate, rate * 1.5);
            engine.set_rate(Some(paced))?;
            pace = paced;
        }
        let before_call = sent;
        let t = Instant::now();
        engine.run(n)?;
        let wall = t.elapsed().as_secs_f64().max(1e-6);
        // Aim for calls of a quarter second: long enough that the grace period between
        // calls is a small share, short enough to stop near --duration.
        per_sec = n as f64 / wall;
        runs = (per_sec / 4.0).clamp(4096.0, (1u32 << 26) as f64) as u32;
        sent = engine.sent()?;
        if opts.rate.is_some() && pace > 0.0 {
            // Frames went out at `pace` while the call was sending: the rest was the gap.
            gap_s = (wall - (sent - before_call) as f64 / pace).clamp(0.0, wall * 0.5);
        }
        line.tick(opts.quiet, label, sent);
    }
    // The last call ended with a grace period in which nothing was sent.
    let elapsed = start
        .elapsed()
        .saturating_sub(Duration::from_secs_f64(gap_s));
    Ok((sent, elapsed))
}

fn run(opts: &Options) -> Result<Report, String> {
    if opts.xdp {
        return run_xdp(opts);
    }
    let lanes = lanes(opts);
    // Kept until every thread is done: it holds the ports' device state (XDP programs, MTU).
    let mut ports = Ports::new(opts.io);
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    // Receivers first, so nothing sent is missed.
    for (k, lane) in lanes.iter().enumerate() {
        let done = Arc::new(AtomicBool::new(false));
        if let Some(name) = &lane.rx {
            let mut ring = ports.source(name)?;
            let capture = match (&opts.rx_pcap, k) {
                (Some(p), 0) => Some(PcapWriter::create(p).map_err(|e| e.to_string())?),
                _ => None,
            };
            let (o, d, profile, label) =
                (opts.clone(), done.clone(), lane.profile.clone(), lane.label);
            let pin = opts.rx_cpu.or(opts.cpu);
            receivers.push(
                std::thread::Builder::new()
                    .name("gen-rx".into())
                    .spawn(move || {
                        if let Some(c) = pin {
                            let _ = cpu::pin_current_thread(c);
                        }
                        receive_loop(&o, &profile, label, ring.as_mut(), &d, capture)
                    })
                    .map_err(|e| e.to_string())?,
            );
        }
        senders.push((ports.sink(&lane.tx)?, done));
    }
    ports.wait_links(Duration::from_secs(15))?;
    let mut handles = Vec::new();
    for (lane, (mut sender, done)) in lanes.into_iter().zip(senders) {
        let o = opts.clone();
        handles.push(
            std::thread::Builder::new()
                .name("gen-tx".into())
                .spawn(move || {
                    if let Some(c) = o.cpu {
                        let _ = cpu::pin_current_thread(c);
                    }
                    send_loop(&o, &lane.profile, lane.label, sender.as_mut(), &done)
                })
                .map_err(|e| e.to_string())?,
        );
    }
    let mut report = Report {
        tx: TxReport::default(),
        rx: None,
        lanes: handles.len(),
    };
    for h in handles {
        let t = h.join().map_err(|_| "sender thread failed".to_string())?;
        report.tx.packets += t.packets;
        report.tx.bytes += t.bytes;
        report.tx.errors += t.errors;
        report.tx.elapsed = report.tx.elapsed.max(t.elapsed);
    }
    for h in receivers {
        let r = h.join().map_err(|_| "receiver thread failed".to_string())?;
        let all = report.rx.get_or_insert_with(RxReport::default);
        all.packets += r.packets;
        all.bytes += r.bytes;
        all.corrupt += r.corrupt;
        all.dup += r.dup;
        all.reorder += r.reorder;
        all.other += r.other;
        all.ring_drops += r.ring_drops;
        all.latencies.extend(r.latencies);
    }
    Ok(report)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

impl Report {
    fn mean_size(opts: &Options) -> f64 {
        opts.profile.sizes.iter().sum::<usize>() as f64 / opts.profile.sizes.len() as f64
    }

    fn tx_pps(&self) -> f64 {
        self.tx.packets as f64 / self.tx.elapsed.as_secs_f64().max(1e-9)
    }

    fn rx_pps(&self) -> f64 {
        self.rx.as_ref().map_or(0.0, |r| {
            r.packets as f64 / self.tx.elapsed.as_secs_f64().max(1e-9)
        })
    }

    /// Whether the sender offered the asked rate (within 1 %).
    fn rate_reached(&self, opts: &Options) -> bool {
        opts.rate.is_none_or(|r| self.tx_pps() >= r * 0.99)
    }

    pub fn to_json(&self, opts: &Options) -> serde_json::Value {
        let size = if let Some(name) = &opts.size_name {
            json!(name)
        } else if opts.profile.sizes.len() == 1 {
            json!(opts.profile.sizes[0])
        } else {
            json!(opts.profile.sizes)
        };
        let mut v = json!({
            "tx_interface": opts.tx, "rx_interface": opts.rx,
            "direction": if self.lanes == 2 { "bi" } else { "uni" },
            "tx_packets": self.tx.packets, "tx_bytes": self.tx.bytes, "tx_errors": self.tx.errors,
            "duration_s": self.tx.elapsed.as_secs_f64(),
            "tx_pps": self.tx_pps(),
            "frame_size": size,
            "flows": if opts.profile.var2 { json!("var2") } else { json!(opts.profile.flows) },
            "rate_asked": opts.rate, "rate_reached": self.rate_reached(opts),
            "tx_cpu": opts.cpu,
            "io": if opts.xdp { "xdp-live-frames" } else { opts.io.name() },
        });
        if let Some(rx) = &self.rx {
            let mut lat = rx.latencies.clone();
            lat.sort_unstable();
            let m = v.as_object_mut().expect("object");
            m.insert("rx_packets".into(), json!(rx.packets));
            m.insert("rx_bytes".into(), json!(rx.bytes));
            m.insert(
                "lost".into(),
                json!(self.tx.packets.saturating_sub(rx.packets)),
            );
            m.insert("rx_corrupt".into(), json!(rx.corrupt));
            m.insert("rx_dup".into(), json!(rx.dup));
            m.insert("rx_reorder".into(), json!(rx.reorder));
            m.insert("rx_other".into(), json!(rx.other));
            m.insert("rx_ring_drops".into(), json!(rx.ring_drops));
            m.insert("rx_pps".into(), json!(self.rx_pps()));
            m.insert(
                "l2_bps".into(),
                json!(l2_bps(self.rx_pps(), Self::mean_size(opts))),
            );
            m.insert(
                "latency_ns".into(),
                json!({"min": lat.first().copied().unwrap_or(0), "median": percentile(&lat, 0.5),
                       "p99": percentile(&lat, 0.99), "max": lat.last().copied().unwrap_or(0)}),
            );
        }
        v
    }

    pub fn text(&self, opts: &Options) -> String {
        let mut s = format!(
            "sent {} frames in {:.3} s: {} ({})",
            self.tx.packets,
            self.tx.elapsed.as_secs_f64(),
            fmt_pps(self.tx_pps()),
            fmt_bps(l2_bps(self.tx_pps(), Self::mean_size(opts)))
        );
        if self.tx.errors > 0 {
            s += &format!(", {} refused by the kernel", self.tx.errors);
        }
        s.push('\n');
        if let (false, Some(r)) = (self.rate_reached(opts), opts.rate) {
            s += &format!(
                "rate not reached: asked {}, sent {} — this run measures the generator\n",
                fmt_pps(r),
                fmt_pps(self.tx_pps())
            );
        }
        if let Some(rx) = self.rx.as_ref().filter(|r| r.ring_drops > 0) {
            s += &format!(
                "the receiver's ring overflowed: {} frames lost by the tester, not the DUT\n",
                rx.ring_drops
            );
        }
        if let Some(rx) = &self.rx {
            s += &format!(
                "received {} ({} lost, {} corrupt, {} duplicate, {} reordered, {} not ours): {} ({} L2)\n",
                rx.packets,
                self.tx.packets.saturating_sub(rx.packets),
                rx.corrupt,
                rx.dup,
                rx.reorder,
                rx.other,
                fmt_pps(self.rx_pps()),
                fmt_bps(l2_bps(self.rx_pps(), Self::mean_size(opts)))
            );
        }
        s
    }
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
