//! The af_packet, af_xdp and memif engine: per direction, a sender thread that builds and
//! sends frames at the asked rate through a `port` sink, and a receiver thread (`check`) on
//! the other port.

use super::check::{receive_loop, PcapWriter, Plain};
use super::frame::{Profile, CLOSE_SEQ, L4};
use super::port::{FrameSink, FrameSource, Ports};
use super::reply::{Answered, Answering, Answers};
use super::report::{Report, Reverse, RxReport, SecondLine, TxReport};
use super::{lanes, now_ns, Options};
use sluice::drivers::af_packet::socket::MAX_BATCH;
use sluice::sys::cpu;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Send on every lane's port and check what the other ports receive.
pub(super) fn run_ports(opts: &Options) -> Result<Report, String> {
    let lanes = lanes(opts);
    // Kept until every thread is done: it holds the ports' device state (XDP programs, MTU).
    let mut ports = Ports::new(opts.io);
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    // Receivers first, so nothing sent is missed.
    for (k, lane) in lanes.iter().enumerate() {
        let done = Arc::new(AtomicBool::new(false));
        if let Some(name) = &lane.rx {
            let capture = match (&opts.rx_pcap, k) {
                (Some(p), 0) => Some(PcapWriter::create(p).map_err(|e| e.to_string())?),
                _ => None,
            };
            let ring = ports.source(name)?;
            let (o, d, profile, label) =
                (opts.clone(), done.clone(), lane.profile.clone(), lane.label);
            let rx = if opts.reply {
                // The answers go out of the port the frames came in on, and come back to
                // the port that sent them.
                let answering = Answering::new(ports.sink(name)?);
                let back = ports.source(&lane.tx)?;
                let (o2, d2, p2) = (opts.clone(), done.clone(), lane.profile.clone());
                receivers.push(spawn_receiver(opts, "gen-answers", back, move |ring| {
                    let mut role = Answers::new();
                    Received {
                        rx: receive_loop(&o2, &p2, "answers ", ring, &d2, None, &mut role),
                        answered: None,
                        reverse: true,
                    }
                })?);
                spawn_receiver(opts, "gen-rx", ring, move |ring| {
                    let mut role = answering;
                    let rx = receive_loop(&o, &profile, label, ring, &d, capture, &mut role);
                    Received {
                        rx,
                        answered: Some(role.done),
                        reverse: false,
                    }
                })?
            } else {
                spawn_receiver(opts, "gen-rx", ring, move |ring| Received {
                    rx: receive_loop(&o, &profile, label, ring, &d, capture, &mut Plain::new()),
                    answered: None,
                    reverse: false,
                })?
            };
            receivers.push(rx);
        }
        senders.push((ports.sink(&lane.tx)?, done));
    }
    ports.wait_links(Duration::from_secs(15))?;
    if let (false, true, Some(rx)) = (opts.bi, opts.teach, &opts.rx) {
        teach_destinations(opts, ports.sink(rx)?.as_mut());
    }
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
        reverse: None,
    };
    for h in handles {
        let t = h.join().map_err(|_| "sender thread failed".to_string())?;
        report.tx.packets += t.packets;
        report.tx.bytes += t.bytes;
        report.tx.errors += t.errors;
        report.tx.queue_full += t.queue_full;
        report.tx.elapsed = report.tx.elapsed.max(t.elapsed);
    }
    for h in receivers {
        let got = h.join().map_err(|_| "receiver thread failed".to_string())?;
        if got.reverse {
            report.reverse.get_or_insert_with(Reverse::default).rx = got.rx;
            continue;
        }
        if let Some(a) = got.answered {
            report.reverse.get_or_insert_with(Reverse::default).answered = a;
        }
        let r = got.rx;
        let all = report.rx.get_or_insert_with(RxReport::default);
        all.packets += r.packets;
        all.bytes += r.bytes;
        all.corrupt += r.corrupt;
        all.verified += r.verified;
        all.dup += r.dup;
        all.reorder += r.reorder;
        all.flow_reorder += r.flow_reorder;
        all.other += r.other;
        all.ring_drops += r.ring_drops;
        all.latencies.extend(r.latencies);
    }
    Ok(report)
}

/// What a receiver thread saw.
struct Received {
    rx: RxReport,
    /// The answering side's counts (`--reply`, the rx port's receiver).
    answered: Option<Answered>,
    /// The receiver of the answers (`--reply`, on the tx port).
    reverse: bool,
}

/// Start a receiver thread on `ring`, pinned to the receive CPU.
fn spawn_receiver(
    opts: &Options,
    name: &str,
    mut ring: Box<dyn FrameSource>,
    f: impl FnOnce(&mut dyn FrameSource) -> Received + Send + 'static,
) -> Result<JoinHandle<Received>, String> {
    let pin = opts.rx_cpu.or(opts.cpu);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if let Some(c) = pin {
                let _ = cpu::pin_current_thread(c);
            }
            f(ring.as_mut())
        })
        .map_err(|e| e.to_string())
}

/// One way with `--macs N`: send one frame from each of the N destination MACs out of the
/// rx port (numbered as warm-up frames, which receivers do not count), so that a learning
/// bridge knows where they are before the run instead of flooding to them throughout.
fn teach_destinations(opts: &Options, sink: &mut dyn FrameSink) {
    let reverse = super::reverse_profile(opts);
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(MAX_BATCH);
    let mut seq = 0u64;
    let n = opts.profile.macs as u64;
    while seq < n {
        batch.clear();
        while batch.len() < MAX_BATCH && seq < n {
            let mut f = Vec::new();
            reverse.build(WARMUP_SEQ | seq, now_ns(), &mut f);
            batch.push(f);
            seq += 1;
        }
        // Paced: the DUT learns from these, it must not drop them.
        let _ = send_all(sink, &batch);
        std::thread::sleep(Duration::from_micros(200));
    }
    // The DUT's learner applies what it saw.
    std::thread::sleep(Duration::from_millis(300));
}

/// Send every frame of `batch`, retrying what a full queue refused for a while; returns
/// how many went (or were refused for good).
fn send_all(sink: &mut dyn FrameSink, batch: &[Vec<u8>]) -> usize {
    let mut sent = 0;
    for _ in 0..1000 {
        if sent == batch.len() {
            break;
        }
        let r = sink.send(&batch[sent..]);
        // A frame the kernel refuses is not retried.
        sent += r.sent + r.errors;
        if sent < batch.len() {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    sent
}

pub(super) use super::frame::WARMUP_SEQ;

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
    let mut r = send_phase(opts, profile, label, sender, 0);
    // Frames still queued in the port after this wait never left: not sent, but refused.
    let stuck = sender.drain(Duration::from_millis(500)) as u64;
    r.packets -= stuck.min(r.packets);
    r.errors += stuck;
    if profile.l4 == L4::Tcp {
        close_flows(opts, profile, sender, r.packets + r.errors);
        sender.drain(Duration::from_millis(500));
    }
    tx_done.store(true, Ordering::Release);
    r
}

/// TCP: close every flow the run opened with a FIN+ACK at its next sequence number, at the
/// run's rate. The frames carry `CLOSE_SEQ`, so receivers check them without counting them,
/// and the sender does not count them either. `taken` is how many frames the run numbered.
fn close_flows(opts: &Options, profile: &Profile, sender: &mut dyn FrameSink, taken: u64) {
    let flows = profile.flows.max(1) as u64;
    let opened = taken.min(flows);
    let mut batch: Vec<Vec<u8>> = (0..MAX_BATCH).map(|_| Vec::with_capacity(9018)).collect();
    let mut flow = 0;
    while flow < opened {
        let n = (MAX_BATCH as u64).min(opened - flow) as usize;
        let ts = now_ns();
        for buf in batch.iter_mut().take(n) {
            // The flow's next frame: the first at or past `taken` that belongs to it.
            let next = flow + flows * (taken - flow).div_ceil(flows);
            profile.build(CLOSE_SEQ | next, ts, buf);
            flow += 1;
        }
        send_all(sender, &batch[..n]);
        if let Some(rate) = opts.rate {
            std::thread::sleep(Duration::from_secs_f64(n as f64 / rate));
        }
    }
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
        r.queue_full += s.queue_full as u64;
        next_seq += taken as u64;
        if s.queue_full > 0 {
            std::thread::yield_now();
        }
        line.tick(opts.quiet, label, r.packets);
    }
    r.elapsed = start.elapsed();
    r
}
