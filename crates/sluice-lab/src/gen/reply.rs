//! The answering far side (`--reply`): the receiver on the rx port answers every frame of
//! ours it gets, out of the same port, from its own receive loop (no kernel stack in the
//! path, at the rate frames arrive, on the tester's CPU); a second receiver on the tx port
//! counts and checks the answers as the reverse direction. The answers' frames are
//! `frame::answer`'s.

use super::check::{Plain, Role};
use super::frame::answer::{answer, answer_len, verify_answer};
use super::frame::{Profile, Stamp, CLOSE_SEQ, WARMUP_SEQ};
use super::port::FrameSink;
use sluice::drivers::af_packet::socket::MAX_BATCH;

/// How many times a batch of answers a full queue turned back is offered again before the
/// rest counts as not sent: the receive loop must get back to its ring.
const ANSWER_RETRIES: usize = 64;

/// What the answering side did.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Answered {
    /// Answers sent to the frames the run counts.
    pub(super) sent: u64,
    /// Answers sent to warm-up and closing frames (which no side counts).
    pub(super) uncounted: u64,
    /// Answers the port refused.
    pub(super) errors: u64,
    /// Answers not sent because the port's queue stayed full: lost by the tester.
    pub(super) queue_full: u64,
}

/// The rx port's receiver with `--reply`: checks the frames as `Plain` does and answers them.
pub(super) struct Answering {
    plain: Plain,
    sink: Box<dyn FrameSink>,
    batch: Vec<Vec<u8>>,
    /// Whether each answer in `batch` answers a frame the run counts.
    counted: Vec<bool>,
    /// Answers built in `batch`, not sent yet.
    ready: usize,
    pub(super) done: Answered,
}

impl Answering {
    pub(super) fn new(sink: Box<dyn FrameSink>) -> Answering {
        Answering {
            plain: Plain::new(),
            sink,
            batch: (0..MAX_BATCH).map(|_| Vec::with_capacity(9018)).collect(),
            counted: vec![false; MAX_BATCH],
            ready: 0,
            done: Answered::default(),
        }
    }
}

impl Role for Answering {
    #[inline]
    fn check(&mut self, profile: &Profile, data: &[u8], st: Stamp, full: bool) -> bool {
        self.plain.check(profile, data, st, full)
    }

    fn answer(&mut self, profile: &Profile, data: &[u8], st: Stamp) {
        if answer(profile, data, st, &mut self.batch[self.ready]) {
            self.counted[self.ready] = st.seq & (WARMUP_SEQ | CLOSE_SEQ) == 0;
            self.ready += 1;
            if self.ready == MAX_BATCH {
                self.flush();
            }
        }
    }

    fn flush(&mut self) {
        let mut at = 0;
        for _ in 0..ANSWER_RETRIES {
            if at == self.ready {
                break;
            }
            let r = self.sink.send(&self.batch[at..self.ready]);
            let counted = self.counted[at..at + r.sent].iter().filter(|&&c| c).count();
            self.done.sent += counted as u64;
            self.done.uncounted += (r.sent - counted) as u64;
            self.done.errors += r.errors as u64;
            at += r.sent + r.errors;
            if at < self.ready {
                std::thread::yield_now();
            }
        }
        self.done.queue_full += (self.ready - at) as u64;
        self.ready = 0;
    }
}

/// The tx port's receiver with `--reply`: the answers, checked against the answers to the
/// frames sent.
pub(super) struct Answers {
    sent: Vec<u8>,
    scratch: Vec<u8>,
}

impl Answers {
    pub(super) fn new() -> Answers {
        Answers {
            sent: Vec::with_capacity(9018),
            scratch: Vec::with_capacity(9018),
        }
    }
}

impl Role for Answers {
    fn check(&mut self, profile: &Profile, data: &[u8], st: Stamp, full: bool) -> bool {
        if full {
            verify_answer(profile, data, st, &mut self.sent, &mut self.scratch)
        } else {
            data.len() == answer_len(profile, st.seq)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::tests::{built, received};
    use super::super::report::RxReport;
    use super::super::Options;
    use super::*;
    use sluice::drivers::af_packet::socket::SendResult;
    use std::sync::{Arc, Mutex};

    /// Keeps what is sent.
    struct Kept(Arc<Mutex<Vec<Vec<u8>>>>);

    impl FrameSink for Kept {
        fn send(&mut self, frames: &[Vec<u8>]) -> SendResult {
            self.0.lock().unwrap().extend(frames.iter().cloned());
            SendResult {
                sent: frames.len(),
                ..SendResult::default()
            }
        }
    }

    /// What the rx port's answering receiver makes of `frames`, what it did, and the answers
    /// it sent.
    fn answered(opts: &Options, frames: Vec<Vec<u8>>) -> (RxReport, Answered, Vec<Vec<u8>>) {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let mut answering = Answering::new(Box::new(Kept(kept.clone())));
        let r = received(opts, frames, &mut answering);
        let answers = std::mem::take(&mut *kept.lock().unwrap());
        (r, answering.done, answers)
    }

    /// Through a NAT44 router: the frames reach the rx port from the NAT's address and
    /// ports it chose, are counted by their test header and answered to that address and
    /// port; the answers, translated back, reach the tx port as the answers to the frames
    /// sent, and are counted and checked as such.
    #[test]
    fn translated_frames_counted_and_answered() {
        use super::super::frame::tests::{nat44, NAT_ADDRESS};
        for args in ["--l4 tcp --flows 7 --size imix", "--flows 5 --size 64,1514"] {
            let opts = crate::gen::args::tests::options(&format!(
                "--tx t0 --rx t1 --reply --routed --translated {args}"
            ))
            .unwrap();
            let p = &opts.profile;
            // Each frame as the NAT passes it (the port it gives the flow), and its source.
            let sent: Vec<_> = (built(p, 0..300).into_iter().zip(0u64..))
                .map(|(f, seq)| {
                    let src: [u8; 4] = f[26..30].try_into().unwrap();
                    let sport = u16::from_be_bytes([f[34], f[35]]);
                    let port = 20_000 + p.flow_of(seq) as u16;
                    (nat44(&f, Some((NAT_ADDRESS, port)), None), (src, sport))
                })
                .collect();
            let frames = sent.iter().map(|(f, _)| f.clone()).collect();
            let (fwd, _, answers) = answered(&opts, frames);
            assert_eq!((fwd.packets, fwd.corrupt, fwd.other), (300, 0, 0), "{args}");
            assert!(fwd.verified > 0, "{args}: some compared whole");
            assert_eq!(answers.len(), 300);
            let back: Vec<Vec<u8>> = answers
                .iter()
                .zip(&sent)
                .map(|(a, (_, original))| {
                    assert_eq!(a[30..34], NAT_ADDRESS, "{args}: answered to the NAT");
                    nat44(a, None, Some(*original))
                })
                .collect();
            let rev = received(&opts, back, &mut Answers::new());
            assert_eq!((rev.packets, rev.corrupt, rev.other), (300, 0, 0), "{args}");
            assert_eq!(
                rev.verified,
                300 / 16 + 1,
                "{args}: one in 16 compared whole"
            );
        }
    }

    /// The rx port's receiver answers every frame (warm-up and closing ones too, not counted),
    /// and the tx port's receiver counts the answers of the counted ones, all checked.
    #[test]
    fn frames_in_answers_out_counted() {
        for args in ["--l4 tcp --flows 7 --size imix", "--family ipv6 --flows 5"] {
            let opts = crate::gen::args::tests::options(&format!("--tx t0 --rx t1 --reply {args}"))
                .unwrap();
            let seqs = (0..300u64).chain([WARMUP_SEQ | 3, CLOSE_SEQ | 300]);
            let (fwd, a, answers) = answered(&opts, built(&opts.profile, seqs));
            assert_eq!((fwd.packets, fwd.corrupt), (300, 0), "{args}");
            assert_eq!(
                (a.sent, a.uncounted, a.errors, a.queue_full),
                (300, 2, 0, 0)
            );
            assert_eq!(answers.len(), 302);
            let back = received(&opts, answers, &mut Answers::new());
            assert_eq!(back.packets, 300, "{args}");
            assert_eq!(
                back.verified,
                300 / 16 + 1,
                "{args}: one in 16 compared whole"
            );
            assert_eq!(
                (back.corrupt, back.dup, back.reorder, back.other),
                (0, 0, 0, 0)
            );
            assert_eq!(back.latencies.len(), 300);
        }
    }
}
