//! The receiver: counts and checks every frame that arrives (loss, duplicates, reordering,
//! corruption, latency) and can write them to a pcap file. Every frame's sequence number,
//! timestamp and length are checked; its bytes are compared for one frame in
//! `--verify`'s sample (all with `--verify all`).

use super::frame::{self, Profile, Stamp, CLOSE_SEQ, WARMUP_SEQ};
use super::port::FrameSource;
use super::report::{RxReport, SecondLine};
use super::Options;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Receive until the sender is done and nothing new arrived for a drain time.
pub(super) fn receive_loop<R: Role>(
    opts: &Options,
    profile: &Profile,
    label: &str,
    ring: &mut dyn FrameSource,
    tx_done: &AtomicBool,
    mut capture: Option<PcapWriter>,
    role: &mut R,
) -> RxReport {
    const DRAIN_QUIET: Duration = Duration::from_millis(300);
    const DRAIN_MAX: Duration = Duration::from_secs(2);
    let mut r = RxReport::default();
    let mut seen: Vec<u64> = Vec::new();
    let mut max_seq: Option<u64> = None;
    // Per flow (a frame's flow is its sequence number mod the flows): the highest sequence
    // number seen + 1, 0 for none yet. Grows to the flows seen, at most `profile.flows`.
    let flows = profile.flows.max(1) as u64;
    let mut flow_max: Vec<u64> = Vec::new();
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
            let seq = st.seq;
            role.answer(profile, data, st);
            // Warm-up and closing frames are checked, not counted.
            if seq & (WARMUP_SEQ | CLOSE_SEQ) != 0 {
                if !role.check(profile, data, st, true) {
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
                let f = (seq % flows) as usize;
                if flow_max.get(f).is_some_and(|&m| seq + 1 < m) {
                    r.flow_reorder += 1;
                }
            }
            let f = (seq % flows) as usize;
            if f >= flow_max.len() {
                flow_max.resize(f + 1, 0);
            }
            flow_max[f] = flow_max[f].max(seq + 1);
            max_seq = Some(max_seq.map_or(seq, |m| m.max(seq)));
            let full = seq & opts.verify_mask == 0;
            r.verified += full as u64;
            if !role.check(profile, data, st, full) {
                r.corrupt += 1;
            }
            if r.latencies.len() < 4_000_000 {
                r.latencies.push(st.latency(ts));
            }
        }) > 0;
        role.flush();
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

/// What a receiver does with the frames of ours besides counting them: check them as the
/// frames sent (`Plain`), and answer them too (`reply::Answering`), or check them as the
/// answers to the frames sent (`reply::Answers`). Each receiver is compiled for its role,
/// so a plain receiver does nothing per frame it did not do before `--reply`.
pub(super) trait Role {
    /// Whether a frame of ours is the one its test header says was sent: its length, and
    /// every byte when `full`.
    fn check(&mut self, profile: &Profile, data: &[u8], st: Stamp, full: bool) -> bool;
    /// Answer a frame of ours (before it is checked and counted).
    #[inline]
    fn answer(&mut self, _profile: &Profile, _data: &[u8], _st: Stamp) {}
    /// After each poll: send what was answered.
    #[inline]
    fn flush(&mut self) {}
}

/// The receiver of the frames sent.
pub(super) struct Plain {
    scratch: Vec<u8>,
}

impl Plain {
    pub(super) fn new() -> Plain {
        Plain {
            scratch: Vec::with_capacity(9018),
        }
    }
}

impl Role for Plain {
    #[inline]
    fn check(&mut self, profile: &Profile, data: &[u8], st: Stamp, full: bool) -> bool {
        frame::check(profile, data, st, full, &mut self.scratch)
    }
}

pub(super) type PcapWriter = sluice::drivers::pcap::file::Writer<std::io::BufWriter<std::fs::File>>;

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Hands over prepared frames once, then nothing (the answering side's tests use it too).
    pub(in crate::gen) struct Frames(pub(in crate::gen) Vec<Vec<u8>>);

    impl FrameSource for Frames {
        fn poll(&mut self, f: &mut dyn FnMut(u64, &[u8])) -> usize {
            let n = self.0.len();
            for frame in self.0.drain(..) {
                f(super::super::now_ns(), &frame);
            }
            n
        }
        fn wait(&mut self, ms: i32) {
            std::thread::sleep(Duration::from_millis(ms.max(0) as u64));
        }
        fn drops(&mut self) -> u64 {
            0
        }
    }

    /// The frames of `seqs`, stamped now.
    pub(in crate::gen) fn built(p: &Profile, seqs: impl IntoIterator<Item = u64>) -> Vec<Vec<u8>> {
        let frame = |seq| {
            let mut f = Vec::new();
            p.build(seq, super::super::now_ns(), &mut f);
            f
        };
        seqs.into_iter().map(frame).collect()
    }

    /// What a receiver in `role` makes of `frames`, handed over at once, the sender done.
    pub(in crate::gen) fn received<R: Role>(
        opts: &Options,
        frames: Vec<Vec<u8>>,
        role: &mut R,
    ) -> RxReport {
        let done = AtomicBool::new(true);
        let p = &opts.profile;
        receive_loop(opts, p, "", &mut Frames(frames), &done, None, role)
    }

    /// Four flows (flow = sequence number mod 4). Frames of different flows passing each
    /// other are reordered but not within a flow; 9 after 5, both of flow 1, is.
    #[test]
    fn reordering_within_a_flow_is_told_apart() {
        let opts = crate::gen::args::tests::options("--tx t0 --flows 4").unwrap();
        let frames = built(&opts.profile, [0u64, 2, 1, 3, 4, 6, 9, 5, 7, 8]);
        let r = received(&opts, frames, &mut Plain::new());
        assert_eq!(r.packets, 10);
        // Behind a higher number: 1 (after 2), 5 (after 9), 7 (after 9), 8 (after 9).
        assert_eq!(r.reorder, 4);
        // Within its flow: only 5, after 9 of flow 1.
        assert_eq!(r.flow_reorder, 1);
        assert_eq!((r.corrupt, r.dup, r.other), (0, 0, 0));
    }
}
