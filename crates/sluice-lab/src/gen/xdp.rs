//! The XDP engine: the kernel's XDP live-frames mode sends (and paces) the frames, one thread
//! per direction; the receiver side is each rx interface's counter.

use super::frame::{self, Profile};
use super::report::{Report, RxReport, SecondLine, TxReport};
use super::{lanes, Options};
use sluice::drivers::af_packet::netdev;
use sluice::sys::cpu;
use std::time::{Duration, Instant};

pub(super) fn rx_counter(name: &str) -> Result<u64, String> {
    let p = format!("/sys/class/net/{name}/statistics/rx_packets");
    std::fs::read_to_string(&p)
        .map_err(|e| format!("{p}: {e}"))?
        .trim()
        .parse()
        .map_err(|e| format!("{p}: {e}"))
}

/// The XDP engine's template (the profile's longest frame) and what its program varies.
pub fn xdp_frames(profile: &Profile) -> (Vec<u8>, crate::gen::xdp_live::Variation) {
    let longest = (0..profile.sizes.len() as u64)
        .max_by_key(|&s| profile.frame_len(s))
        .unwrap_or(0);
    let mut template = Vec::new();
    profile.build(longest, 0, &mut template);
    let v = crate::gen::xdp_live::Variation {
        var2_flows: profile.var2.then_some(profile.flows),
        lengths: (0..profile.sizes.len() as u64)
            .map(|s| profile.frame_len(s) as u32)
            .collect(),
        ipv6: profile.family == crate::gen::frame::Family::Ipv6,
    };
    (template, v)
}

/// Sending with XDP live frames, one thread per direction; the receiver side is each rx
/// interface's counter.
pub(super) fn run_xdp(opts: &Options) -> Result<Report, String> {
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
        let mut engine = crate::gen::xdp_live::LiveFrames::new(&f, idx, &variation)?;
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
            queue_full: 0,
            elapsed,
        },
        rx,
        lanes: lanes.len(),
        reverse: None,
    })
}

/// One direction of the XDP engine: frames sent and the time they took.
fn xdp_send(
    opts: &Options,
    label: &str,
    engine: &mut crate::gen::xdp_live::LiveFrames,
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
