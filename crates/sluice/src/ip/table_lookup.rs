//! The FIB lookup of a frame whose packets may belong to several routing tables (VRFs), for
//! ip4-lookup and ip6-lookup alike. Each packet is looked up in the table of the interface
//! it came in on. A frame of one table — every frame when no VRF is configured — is one
//! batched lookup, as before; a mixed frame is sorted by table and each table's run is
//! gathered into one batch (keeping the prefetching), or looked up one by one when short.

use crate::fib::{Fib, NO_ROUTE};
use crate::graph::frame::FRAME_SIZE;
use crate::router::TableSet;

/// Lookups in one family of a table: a batch, or one address.
pub trait FamilyLookup: Copy + Default {
    fn lookup_batch(fib: &Fib, dst: &[Self], out: &mut [u32]);
    fn lookup_one(fib: &Fib, dst: Self) -> u32;
}

impl FamilyLookup for u32 {
    #[inline(always)]
    fn lookup_batch(fib: &Fib, dst: &[u32], out: &mut [u32]) {
        fib.v4().lookup_batch(dst, out)
    }
    #[inline(always)]
    fn lookup_one(fib: &Fib, dst: u32) -> u32 {
        fib.v4().lookup(dst)
    }
}

impl FamilyLookup for u128 {
    #[inline(always)]
    fn lookup_batch(fib: &Fib, dst: &[u128], out: &mut [u32]) {
        fib.v6().lookup_batch(dst, out)
    }
    #[inline(always)]
    fn lookup_one(fib: &Fib, dst: u128) -> u32 {
        fib.v6().lookup(dst)
    }
}

/// A run of packets of one table shorter than this is looked up one by one: a batched
/// lookup's setup costs more than its overlapped misses save on a few addresses.
const BATCH_MIN: usize = 8;

/// A lookup node's per-frame arrays: the table of each packet and the gather space of a
/// mixed frame. Allocated once with the node.
pub struct TableLookup<A> {
    pub table: Box<[u16; FRAME_SIZE]>,
    /// A mixed frame's packets sorted by table: table << 8 | packet.
    order: Box<[u32; FRAME_SIZE]>,
    dst: Box<[A; FRAME_SIZE]>,
    out: Box<[u32; FRAME_SIZE]>,
}

impl<A: FamilyLookup> Default for TableLookup<A> {
    fn default() -> Self {
        TableLookup {
            table: Box::new([0; FRAME_SIZE]),
            order: Box::new([0; FRAME_SIZE]),
            dst: Box::new([A::default(); FRAME_SIZE]),
            out: Box::new([0; FRAME_SIZE]),
        }
    }
}

impl<A: FamilyLookup> TableLookup<A> {
    /// `out[k]` = the adjacency of `dst[k]` in table `self.table[k]` of `set`, for the first
    /// `n` packets (`NO_ROUTE` in a table that no longer exists: table 0 answers instead).
    pub fn lookup(&mut self, set: &TableSet, dst: &[A], out: &mut [u32], n: usize) {
        let n = n.min(FRAME_SIZE).min(dst.len()).min(out.len());
        if n == 0 {
            return;
        }
        let first = self.table[0];
        if self.table[..n].iter().all(|&t| t == first) {
            match set.fib(first) {
                Some(f) => A::lookup_batch(&f.load(), &dst[..n], &mut out[..n]),
                None => out[..n].fill(NO_ROUTE),
            }
            return;
        }
        // Mixed: the packets sorted by table (a frame is at most 256, so the packet fits in
        // the low byte), then each table's run looked up under one pin of its FIB: gathered
        // into one batch when long, one by one when short (a frame of many tenants).
        for (k, o) in self.order[..n].iter_mut().enumerate() {
            *o = (self.table[k] as u32) << 8 | k as u32;
        }
        self.order[..n].sort_unstable();
        let mut i = 0;
        while i < n {
            let t = (self.order[i] >> 8) as u16;
            let run = self.order[i..n]
                .iter()
                .take_while(|&&o| (o >> 8) as u16 == t)
                .count();
            let lanes = &self.order[i..i + run];
            match set.fib(t) {
                Some(f) if run >= BATCH_MIN => {
                    for (d, &o) in self.dst.iter_mut().zip(lanes) {
                        *d = dst[(o & 0xff) as usize];
                    }
                    A::lookup_batch(&f.load(), &self.dst[..run], &mut self.out[..run]);
                    for (&r, &o) in self.out.iter().zip(lanes) {
                        out[(o & 0xff) as usize] = r;
                    }
                }
                Some(f) => {
                    let fib = f.load();
                    for &o in lanes {
                        let k = (o & 0xff) as usize;
                        out[k] = A::lookup_one(&fib, dst[k]);
                    }
                }
                None => lanes
                    .iter()
                    .for_each(|&o| out[(o & 0xff) as usize] = NO_ROUTE),
            }
            i += run;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::{FibWriter, Prefix4};

    /// Two tables with the same prefix and different next hops; a frame mixing them gets
    /// each packet's answer from its own table, and a frame of one table the same answers.
    #[test]
    fn each_packet_is_looked_up_in_its_own_table() {
        let mut a = FibWriter::new();
        let mut b = FibWriter::new();
        let p = Prefix4::new(0x0a00_0000, 8).unwrap();
        a.add4(p, 1).unwrap();
        b.add4(p, 2).unwrap();
        b.add4(Prefix4::new(0x0b00_0000, 8).unwrap(), 3).unwrap();
        a.commit();
        b.commit();
        let set = TableSet {
            fibs: vec![Some(a.reader()), None, Some(b.reader())],
            by_interface4: vec![0, 2],
            by_interface6: vec![],
        };
        let mut tl = TableLookup::<u32>::default();
        let dst: Vec<u32> = (0..200)
            .map(|k| if k % 3 == 0 { 0x0b00_0001 } else { 0x0a00_0001 })
            .collect();
        let mut out = vec![0; 200];
        for k in 0..200 {
            tl.table[k] = set.table_of((k % 2) as u32, false);
        }
        tl.lookup(&set, &dst, &mut out, 200);
        for (k, &got) in out.iter().enumerate() {
            let want = match (k % 2, k % 3) {
                (0, 0) => NO_ROUTE,
                (0, _) => 1,
                (_, 0) => 3,
                _ => 2,
            };
            assert_eq!(got, want, "packet {k}");
        }
        // A removed table (index 1) answers as table 0; an unknown interface is in table 0.
        assert_eq!(set.table_of(9, false), 0);
        tl.table[..2].copy_from_slice(&[1, 1]);
        tl.lookup(&set, &dst[1..3], &mut out[..2], 2);
        assert_eq!(&out[..2], &[1, 1]);
    }
}
