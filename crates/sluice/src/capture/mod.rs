//! `sluice capture`: capture an interface's receive queues in parallel, one AF_PACKET
//! TPACKET_V3 ring and one thread per queue, each writing its own pcap file (or only counting,
//! with `--memory`); `--merge` joins the files in timestamp order at the end.
//!
//! # One socket per queue: a filter per socket, not a fanout group
//!
//! The kernel leaves a packet's receive queue in `skb->queue_mapping`. Two ways give each
//! socket one queue's packets:
//!
//! - a fanout group in PACKET_FANOUT_QM mode: the kernel hands each packet to member
//!   `queue_mapping % members`;
//! - a classic BPF filter on each socket that loads `queue_mapping` (SKF_AD_QUEUE) and keeps
//!   the packet only when it names the socket's queue (the way of the multiqueue BPF
//!   proposal for FreeBSD, whose per-descriptor queue mask this is).
//!
//! We use filters. Fanout QM cannot capture a subset (`-q 0,2`: the group's members share
//! every queue's packets among themselves, so queue 1's land somewhere), its member order is
//! the order the sockets joined and changes when one leaves, and it takes `queue_mapping` as
//! it is, while NIC drivers store receive queue K as K + 1: member K would get queue K - 1.
//! A filter says exactly which value it keeps, so each file holds one queue's packets and the
//! numbering of the driver is handled in one place (`queues::Numbering`). The cost is that
//! every socket's filter runs on every packet of the interface (a few JIT-compiled
//! instructions each); a rejected packet is neither cloned nor copied. Queue 0 also takes
//! packets with no queue recorded; when every queue is captured, queue 0's filter keeps all
//! that no other queue claims (a number outside the device's queues too), so nothing is lost
//! and nothing counted twice.
//!
//! Only received packets are captured: the rings ignore the interface's outgoing packets, as
//! those belong to a transmit queue.
//!
//! Layout: `queues` finds the queues and builds the filters, `output` writes the files and
//! merges them, `report` prints the counts; this file parses the options and runs the
//! threads. The rings are the af_packet driver's (`RxRing`); nothing here is `unsafe`.

mod output;
pub mod queues;
mod report;

pub use report::{QueueStats, Report, Stop};

use crate::drivers::af_packet::netdev;
use crate::drivers::af_packet::socket::{RxOptions, RxRing};
use output::{Files, Sink};
use queues::{Numbering, QueueSelection};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `sluice capture`: capture an interface's receive queues, one thread and one pcap file per
/// queue. Run it in the interface's namespace (`ip netns exec NS sluice capture ...`).
#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "capture",
    group(clap::ArgGroup::new("output").required(true).args(["write", "memory"]))
)]
pub struct CaptureArgs {
    /// Capture on this interface
    #[arg(short = 'i', long = "interface", value_name = "IF")]
    interface: String,
    /// Receive queues to capture: all, or a list like 0,2 or 0-3
    #[arg(short = 'q', long = "queues", value_name = "all|LIST", default_value = "all",
          value_parser = queues::parse_selection)]
    queues: QueueSelection,
    /// Write queue K to PREFIX.qK.pcap (nanosecond pcap; a trailing .pcap is dropped from
    /// PREFIX)
    #[arg(short = 'w', long = "write", value_name = "FILE|PREFIX")]
    write: Option<PathBuf>,
    /// Keep at most N bytes of each packet
    #[arg(long, value_name = "N", default_value = "262144",
          value_parser = clap::value_parser!(u32).range(1..=262_144))]
    snaplen: u32,
    /// Stop once N packets in all were written
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// Stop after S seconds (fractions allowed, at most 86400)
    #[arg(long, value_name = "S", value_parser = seconds_arg)]
    seconds: Option<Duration>,
    /// Capture to memory only: count packets and bytes, write no file (for benchmarks)
    #[arg(long)]
    memory: bool,
    /// With -w: merge the queues into one file, PREFIX.pcap, in timestamp order
    #[arg(long, requires = "write", conflicts_with = "memory")]
    merge: bool,
    /// Print the summary as one JSON document on stdout
    #[arg(long)]
    json: bool,
}

/// `--seconds`: a positive number of seconds, at most a day.
fn seconds_arg(v: &str) -> Result<Duration, String> {
    let s: f64 = v
        .parse()
        .map_err(|_| format!("'{v}' is not a number of seconds"))?;
    if !(s > 0.0 && s <= 86_400.0) {
        return Err(format!("'{v}' is not between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// An error and the exit code it gives: 2 for what the command line asked that cannot be
/// (no such interface, no such queue, a path we cannot write), 1 for a run that failed.
struct Failure {
    code: i32,
    message: String,
}

fn usage(message: String) -> Failure {
    Failure { code: 2, message }
}

fn failed(message: String) -> Failure {
    Failure { code: 1, message }
}

pub fn main(args: CaptureArgs) -> i32 {
    let stop = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
        let _ = signal_hook::flag::register(sig, interrupted.clone());
    }
    match run(&args, &stop, &interrupted) {
        Ok(report) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.text());
            }
            0
        }
        Err(f) => {
            eprintln!("sluice capture: {}", f.message);
            f.code
        }
    }
}

/// One queue's ring and where its packets go, ready to run.
struct QueueRun {
    queue: u32,
    ring: RxRing,
    sink: Sink,
}

/// What the threads share: the stop flag, and the count of packets written when `--count`
/// bounds it.
struct Shared {
    stop: Arc<AtomicBool>,
    limit: Option<u64>,
    written: AtomicU64,
    /// The first write error, which stops every queue.
    error: std::sync::Mutex<Option<String>>,
}

/// Open the rings and files, capture until a stop, and report.
fn run(
    args: &CaptureArgs,
    stop: &Arc<AtomicBool>,
    interrupted: &AtomicBool,
) -> Result<Report, Failure> {
    let name = args.interface.as_str();
    let ifindex =
        netdev::index(name).ok_or_else(|| usage(format!("interface '{name}' not found")))?;
    let rx_queues = queues::rx_queue_count(Path::new("/sys/class/net"), name, ifindex)
        .map_err(|e| failed(format!("{name}: {e}")))?;
    let selected = args.queues.resolve(name, rx_queues).map_err(usage)?;
    let driver = netdev::driver(name).unwrap_or_else(|_| "unknown".into());
    let numbering = Numbering::of_driver(&driver);
    let files = args.write.as_deref().map(Files::new);
    if let (Some(f), true) = (&files, args.merge) {
        // Found unwritable now, not after the capture.
        std::fs::File::create(f.merged())
            .map_err(|e| usage(format!("{}: {e}", f.merged().display())))?;
    }
    let catch_all = selected.len() as u32 == rx_queues;
    let mut runs = Vec::with_capacity(selected.len());
    for &q in &selected {
        let sink = match &files {
            Some(f) => Sink::file(&f.queue(q), args.snaplen).map_err(usage)?,
            None => Sink::Memory,
        };
        let options = RxOptions {
            promiscuous: true,
            filter: queues::queue_filter(
                q,
                rx_queues,
                numbering,
                args.snaplen,
                catch_all && q == 0,
            ),
            ..RxOptions::default()
        };
        let ring = RxRing::open(ifindex, &options)
            .map_err(|e| failed(format!("{name} queue {q}: {e}")))?;
        runs.push(QueueRun {
            queue: q,
            ring,
            sink,
        });
    }

    // Every ring is bound: from here on no packet of the selected queues is missed. Said on
    // stderr, so a script (or a test) can start sending.
    let list: Vec<String> = selected.iter().map(u32::to_string).collect();
    eprintln!(
        "sluice capture: capturing on {name}, queue{} {}",
        if list.len() == 1 { "" } else { "s" },
        list.join(",")
    );
    let shared = Arc::new(Shared {
        stop: stop.clone(),
        limit: args.count,
        written: AtomicU64::new(0),
        error: std::sync::Mutex::new(None),
    });
    let started = Instant::now();
    let snaplen = args.snaplen as usize;
    let threads: Vec<_> = runs
        .into_iter()
        .map(|r| {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("capture-q{}", r.queue))
                .spawn(move || drain(r, &shared, snaplen))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| failed(format!("starting a capture thread: {e}")))?;

    let deadline = args.seconds.map(|s| started + s);
    let mut why = Stop::Signal;
    while !stop.load(Ordering::Relaxed) {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            why = Stop::Seconds;
            stop.store(true, Ordering::Relaxed);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut stats = Vec::with_capacity(threads.len());
    for t in threads {
        stats.push(
            t.join()
                .map_err(|_| failed("a capture thread panicked".into()))?,
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    if let Some(e) = shared.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(failed(e));
    }
    if why == Stop::Signal
        && !interrupted.load(Ordering::Relaxed)
        && args
            .count
            .is_some_and(|n| shared.written.load(Ordering::Relaxed) >= n)
    {
        why = Stop::Count;
    }

    let mut written_files: Vec<PathBuf> = Vec::new();
    if let Some(f) = &files {
        let parts: Vec<PathBuf> = selected.iter().map(|&q| f.queue(q)).collect();
        if args.merge {
            output::merge(&parts, &f.merged(), args.snaplen).map_err(failed)?;
            written_files.push(f.merged());
        } else {
            written_files = parts;
        }
    }
    Ok(Report {
        interface: name.to_string(),
        driver,
        rx_queues,
        queues: stats,
        seconds,
        stop: why,
        files: written_files,
    })
}

/// Packets handled between two looks at the stop flag.
const BATCH: u32 = 4096;
/// How long a thread sleeps in poll(2) when its ring is empty.
const IDLE_WAIT_MS: i32 = 20;

/// A queue's thread: read the ring, write each packet, until told to stop.
fn drain(r: QueueRun, shared: &Shared, snaplen: usize) -> QueueStats {
    let QueueRun {
        queue,
        mut ring,
        mut sink,
    } = r;
    let mut st = QueueStats {
        queue,
        ..QueueStats::default()
    };
    let mut error = None;
    'run: while !shared.stop.load(Ordering::Relaxed) {
        let mut got = 0;
        while let Some(f) = ring.next_frame() {
            if let Some(limit) = shared.limit {
                // Claim a place among the N packets: exactly N are written in all.
                let n = shared.written.fetch_add(1, Ordering::Relaxed);
                if n >= limit {
                    shared.stop.store(true, Ordering::Relaxed);
                    break 'run;
                }
                if n + 1 == limit {
                    shared.stop.store(true, Ordering::Relaxed);
                }
            }
            let tag = f.vlan.map(|(tpid, tci)| {
                let mut t = [0u8; 4];
                t[..2].copy_from_slice(&tpid.to_be_bytes());
                t[2..].copy_from_slice(&tci.to_be_bytes());
                t
            });
            let mut segs: [&[u8]; 3] = [&[]; 3];
            let n = output::segments(f.data, tag.as_ref(), snaplen, &mut segs);
            let wire_len = f.wire_len + if tag.is_some() { 4 } else { 0 };
            if let Err(e) = sink.write(f.timestamp_ns, &segs[..n], wire_len) {
                error = Some(e.to_string());
                break 'run;
            }
            st.packets += 1;
            st.bytes += wire_len as u64;
            st.first_ns.get_or_insert(f.timestamp_ns);
            st.last_ns = f.timestamp_ns;
            got += 1;
            if got == BATCH {
                break;
            }
        }
        if got == 0 {
            ring.wait(IDLE_WAIT_MS);
        }
    }
    st.drops = ring.socket().take_drops();
    if let Err(e) = sink.finish() {
        error.get_or_insert(e.to_string());
    }
    if let Some(e) = error {
        shared.stop.store(true, Ordering::Relaxed);
        if let Ok(mut slot) = shared.error.lock() {
            slot.get_or_insert(format!("queue {queue}: {e}"));
        }
    }
    st
}
