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
    use super::super::check::receive_loop;
    use super::super::check::tests::Frames;
    use super::*;
    use sluice::drivers::af_packet::socket::SendResult;
    use std::sync::atomic::AtomicBool;
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

    /// The rx port's receiver answers every frame (warm-up and closing ones too, not counted),
    /// and the tx port's receiver counts the answers of the counted ones, all checked.
    #[test]
    fn frames_in_answers_out_counted() {
        for args in ["--l4 tcp --flows 7 --size imix", "--family ipv6 --flows 5"] {
            let opts = crate::gen::args::tests::options(&format!("--tx t0 --rx t1 --reply {args}"))
                .unwrap();
            let p = &opts.profile;
            let mut frames = Vec::new();
            for seq in (0..300u64).chain([WARMUP_SEQ | 3, CLOSE_SEQ | 300]) {
                let mut f = Vec::new();
                p.build(seq, super::super::now_ns(), &mut f);
                frames.push(f);
            }
            let kept = Arc::new(Mutex::new(Vec::new()));
            let mut answering = Answering::new(Box::new(Kept(kept.clone())));
            let done = AtomicBool::new(true);
            let fwd = receive_loop(
                &opts,
                p,
                "",
                &mut Frames(frames),
                &done,
                None,
                &mut answering,
            );
            assert_eq!((fwd.packets, fwd.corrupt), (300, 0), "{args}");
            let a = answering.done;
            assert_eq!(
                (a.sent, a.uncounted, a.errors, a.queue_full),
                (300, 2, 0, 0)
            );
            let answers = std::mem::take(&mut *kept.lock().unwrap());
            assert_eq!(answers.len(), 302);
            let back = receive_loop(
                &opts,
                p,
                "",
                &mut Frames(answers),
                &done,
                None,
                &mut Answers::new(),
            );
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
