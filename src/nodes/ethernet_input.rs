//! ethernet-input: checks the Ethernet header and sends each frame to the feature its
//! receive interface is configured for. Frames too short to be real are dropped here, each
//! with its reason counted.

use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::SharedL2Modes;
use crate::wire::ethernet::{ParseError, Repr};

/// How many packets ahead the data is prefetched.
const PREFETCH_AHEAD: usize = 4;

#[repr(usize)]
enum Next {
    L2Xconnect,
    Drop,
}

#[repr(usize)]
#[derive(Clone, Copy)]
enum Error {
    TruncatedHeader,
    Runt,
    TruncatedVlan,
    TooManyVlans,
    NoMode,
}
const ERRORS: [&str; 5] = [
    "frame shorter than the ethernet header",
    "runt frame (shorter than the 60-byte minimum)",
    "truncated VLAN tag",
    "more than two VLAN tags",
    "interface has no L2 or L3 mode (unhandled)",
];

pub struct EthernetInput {
    modes: SharedL2Modes,
    /// Frames shorter than this are runts. 60 (IEEE 802.3 without FCS) unless configured.
    min_frame: usize,
}

impl EthernetInput {
    pub fn decl(modes: SharedL2Modes, min_frame: usize) -> NodeDecl {
        NodeDecl {
            name: super::ETHERNET_INPUT.to_string(),
            kind: NodeKind::Internal,
            next: vec![
                super::L2_XCONNECT.to_string(),
                super::ERROR_DROP.to_string(),
            ],
            errors: ERRORS.to_vec(),
            node: Box::new(EthernetInput { modes, min_frame }),
        }
    }

    /// Decide where one frame goes; `Err` names the drop reason.
    #[inline(always)]
    fn classify(&self, first_segment: &[u8], len: usize) -> Result<Repr, Error> {
        let repr = Repr::parse(first_segment).map_err(|e| match e {
            ParseError::TruncatedHeader => Error::TruncatedHeader,
            ParseError::TruncatedVlan => Error::TruncatedVlan,
            ParseError::TooManyVlans => Error::TooManyVlans,
        })?;
        if len < self.min_frame {
            return Err(Error::Runt);
        }
        Ok(repr)
    }

    fn run<const TRACE: bool>(&self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        for (k, &bi) in frame.iter().enumerate() {
            // Frames written by the device (or another core) are not in our cache yet: start
            // loading a few packets ahead while this one is classified.
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let len = cx.bufs.packet_len(bi);
            let verdict = self.classify(cx.bufs.data(bi), len);
            let next = match verdict {
                Ok(_) => {
                    let rx = cx.bufs.meta(bi).rx_if as usize;
                    if modes.xconnect.get(rx).copied().flatten().is_some() {
                        Next::L2Xconnect
                    } else {
                        cx.count_error(Error::NoMode as usize, 1);
                        Next::Drop
                    }
                }
                Err(e) => {
                    cx.count_error(e as usize, 1);
                    Next::Drop
                }
            };
            if TRACE {
                match verdict {
                    Ok(r) => cx.trace(bi, r),
                    Err(e) => cx.trace(bi, format_args!("drop: {}", ERRORS[e as usize])),
                }
            }
            cx.enqueue(next as usize, bi);
        }
    }
}

impl Node for EthernetInput {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        if cx.tracing() {
            self.run::<true>(cx, frame);
        } else {
            self.run::<false>(cx, frame);
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::{frame_bytes, Harness};

    fn harness() -> Harness {
        let h = Harness::new(2);
        h.set_xconnect(0, 1);
        h
    }

    #[test]
    fn good_frame_goes_to_xconnect() {
        let h = harness();
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), 60),
            &[frame_bytes(64)],
            0,
        );
        assert_eq!(out.to_next(Next::L2Xconnect as usize), 1);
        assert_eq!(out.errors, vec![0, 0, 0, 0, 0]);
    }

    #[test]
    fn short_frames_are_dropped_by_reason() {
        let h = harness();
        let mut tagged_short = frame_bytes(64);
        tagged_short[12..14].copy_from_slice(&[0x81, 0x00]);
        tagged_short.truncate(16);
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), 60),
            &[
                frame_bytes(10),
                frame_bytes(40),
                tagged_short,
                frame_bytes(0),
            ],
            0,
        );
        assert_eq!(out.to_next(Next::Drop as usize), 4);
        assert_eq!(out.errors[Error::TruncatedHeader as usize], 2);
        assert_eq!(out.errors[Error::Runt as usize], 1);
        assert_eq!(out.errors[Error::TruncatedVlan as usize], 1);
    }

    #[test]
    fn interface_without_mode_drops_with_reason() {
        let h = harness();
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), 60),
            &[frame_bytes(64)],
            1,
        );
        assert_eq!(out.to_next(Next::Drop as usize), 1);
        assert_eq!(out.errors[Error::NoMode as usize], 1);
    }
}
