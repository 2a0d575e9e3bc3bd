//! ip4-lookup: the longest-prefix match of each packet's destination, for the whole frame in
//! one batched FIB lookup (with prefetch). The FIB is pinned once per frame through its
//! lock-free reader, so a route update published meanwhile takes effect from the next frame
//! and no packet ever sees a half-applied one. The next hop goes into the buffer's `adj`.

use super::ip4_input::IP4_LOOKUP;
use crate::fib::{FibReader, NO_ROUTE};
use crate::graph::frame::FRAME_SIZE;
use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::wire::ethernet::Repr as EthernetRepr;

pub const IP4_REWRITE: &str = "ip4-rewrite";

#[repr(usize)]
pub enum Next {
    Rewrite,
    Drop,
}

#[repr(usize)]
pub enum Error {
    NoRoute,
}
pub const ERRORS: [&str; 1] = ["ip4 no route to destination"];

pub struct Ip4Lookup {
    fib: FibReader,
    dst: Box<[u32; FRAME_SIZE]>,
    adj: Box<[u32; FRAME_SIZE]>,
}

impl Ip4Lookup {
    pub fn decl(fib: FibReader) -> NodeDecl {
        NodeDecl {
            name: IP4_LOOKUP.to_string(),
            kind: NodeKind::Internal,
            next: vec![IP4_REWRITE.to_string(), super::ERROR_DROP.to_string()],
            errors: ERRORS.to_vec(),
            node: Box::new(Ip4Lookup {
                fib,
                dst: Box::new([0; FRAME_SIZE]),
                adj: Box::new([0; FRAME_SIZE]),
            }),
        }
    }

    /// The destination of a packet ip4-input has checked (0.0.0.0 if it cannot be read,
    /// which matches only a default route).
    fn destination(data: &[u8]) -> u32 {
        let Ok(eth) = EthernetRepr::parse(data) else {
            return 0;
        };
        let at = eth.l3_offset as usize + 16;
        data.get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl Node for Ip4Lookup {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let n = frame.len().min(FRAME_SIZE);
        for (k, &bi) in frame[..n].iter().enumerate() {
            self.dst[k] = Self::destination(cx.bufs.data(bi));
        }
        {
            let fib = self.fib.load();
            fib.v4().lookup_batch(&self.dst[..n], &mut self.adj[..n]);
        }
        let tracing = cx.tracing();
        for (k, &bi) in frame[..n].iter().enumerate() {
            let adj = self.adj[k];
            let next = if adj == NO_ROUTE {
                cx.count_error(Error::NoRoute as usize, 1);
                Next::Drop
            } else {
                cx.bufs.meta_mut(bi).adj = adj;
                Next::Rewrite
            };
            if tracing {
                let d = self.dst[k].to_be_bytes();
                cx.trace(
                    bi,
                    format_args!("dst {}.{}.{}.{} next hop {adj:#x}", d[0], d[1], d[2], d[3]),
                );
            }
            cx.enqueue(next as usize, bi);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::{FibWriter, Prefix4};
    use crate::nodes::testing::Harness;

    fn to(dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[30..34].copy_from_slice(&dst);
        f
    }

    #[test]
    fn longest_prefix_wins_and_no_route_is_counted() {
        let mut w = FibWriter::new();
        w.add4(Prefix4::new(0x0a00_0000, 8).unwrap(), 7).unwrap();
        w.add4(Prefix4::new(0x0a01_0000, 16).unwrap(), 9).unwrap();
        w.commit();
        let h = Harness::new(1);
        let frames = vec![to([10, 1, 2, 3]), to([10, 2, 0, 1]), to([192, 0, 2, 1])];
        let out = h.run_node(Ip4Lookup::decl(w.reader()), &frames, 0);
        assert_eq!(out.to_next(Next::Rewrite as usize), 2);
        assert_eq!(out.to_next(Next::Drop as usize), 1);
        assert_eq!(out.errors[Error::NoRoute as usize], 1);
        let mut routed: Vec<u32> = out
            .adjs
            .iter()
            .copied()
            .filter(|&a| a != u32::MAX)
            .collect();
        routed.sort();
        assert_eq!(routed, vec![7, 9]);
    }

    #[test]
    fn an_update_published_later_applies_to_the_next_frame() {
        let mut w = FibWriter::new();
        let r = w.reader();
        let h = Harness::new(1);
        let out = h.run_node(Ip4Lookup::decl(r.clone()), &[to([10, 0, 0, 1])], 0);
        assert_eq!(out.to_next(Next::Drop as usize), 1);
        w.add4(Prefix4::new(0, 0).unwrap(), 3).unwrap();
        w.commit();
        let out = h.run_node(Ip4Lookup::decl(r), &[to([10, 0, 0, 1])], 0);
        assert_eq!(out.adjs, vec![3]);
    }
}
