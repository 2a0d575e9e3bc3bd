//! A single-producer, single-consumer ring of buffer indices between two workers, without
//! locks: the producer writes slots then publishes its tail with a release store; the
//! consumer reads the tail with an acquire load, reads the slots, then publishes its head.
//! Each side keeps its own copy of the other's index and reloads it only when the ring looks
//! full (or empty), so in steady state neither side's cache line bounces per packet.
//!
//! The slots are atomics written and read with relaxed ordering (a plain move on x86): the
//! ordering comes from the head and tail. No `unsafe` is needed. `Producer` and `Consumer` are
//! the only handles and neither is `Clone`, so one thread pushes and one pops.

use crate::graph::counter::CacheAligned;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

struct Ring {
    slots: Box<[AtomicU32]>,
    mask: usize,
    /// Next slot the consumer reads (written by the consumer only).
    head: CacheAligned<AtomicUsize>,
    /// Next slot the producer writes (written by the producer only).
    tail: CacheAligned<AtomicUsize>,
}

/// The pushing side.
pub struct Producer {
    ring: Arc<Ring>,
    /// The consumer's head as last read.
    head: usize,
}

/// The popping side.
pub struct Consumer {
    ring: Arc<Ring>,
    /// The producer's tail as last read.
    tail: usize,
}

/// A ring of `capacity` slots (rounded up to a power of two, at least 2).
pub fn ring(capacity: usize) -> (Producer, Consumer) {
    let n = capacity.max(2).next_power_of_two();
    let ring = Arc::new(Ring {
        slots: (0..n).map(|_| AtomicU32::new(0)).collect(),
        mask: n - 1,
        head: CacheAligned(AtomicUsize::new(0)),
        tail: CacheAligned(AtomicUsize::new(0)),
    });
    (
        Producer {
            ring: ring.clone(),
            head: 0,
        },
        Consumer { ring, tail: 0 },
    )
}

impl Producer {
    /// Push as many of `items` as fit, in order; returns how many.
    pub fn push(&mut self, items: &[u32]) -> usize {
        let r = &*self.ring;
        let tail = r.tail.0.load(Ordering::Relaxed);
        let cap = r.mask + 1;
        if tail.wrapping_sub(self.head) + items.len() > cap {
            self.head = r.head.0.load(Ordering::Acquire);
        }
        let free = cap - tail.wrapping_sub(self.head);
        let n = free.min(items.len());
        for (k, &bi) in items[..n].iter().enumerate() {
            r.slots[tail.wrapping_add(k) & r.mask].store(bi, Ordering::Relaxed);
        }
        r.tail.0.store(tail.wrapping_add(n), Ordering::Release);
        n
    }

    pub fn capacity(&self) -> usize {
        self.ring.mask + 1
    }
}

impl Consumer {
    /// Pop up to `out.len()` items into `out`, in the order pushed; returns how many.
    pub fn pop(&mut self, out: &mut [u32]) -> usize {
        let r = &*self.ring;
        let head = r.head.0.load(Ordering::Relaxed);
        if self.tail.wrapping_sub(head) < out.len() {
            self.tail = r.tail.0.load(Ordering::Acquire);
        }
        let n = self.tail.wrapping_sub(head).min(out.len());
        for (k, slot) in out[..n].iter_mut().enumerate() {
            *slot = r.slots[head.wrapping_add(k) & r.mask].load(Ordering::Relaxed);
        }
        r.head.0.store(head.wrapping_add(n), Ordering::Release);
        n
    }

    /// Items waiting (a snapshot: the producer may be pushing).
    pub fn len(&self) -> usize {
        let r = &*self.ring;
        r.tail
            .0
            .load(Ordering::Acquire)
            .wrapping_sub(r.head.0.load(Ordering::Relaxed))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_to_capacity_and_keeps_order() {
        let (mut p, mut c) = ring(5);
        assert_eq!(p.capacity(), 8);
        assert_eq!(p.push(&[1, 2, 3]), 3);
        assert_eq!(p.push(&[4, 5, 6, 7, 8, 9, 10]), 5, "only 8 slots");
        assert_eq!(c.len(), 8);
        let mut out = [0u32; 3];
        assert_eq!(c.pop(&mut out), 3);
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(p.push(&[9, 10, 11, 12]), 3, "three slots freed");
        let mut all = [0u32; 16];
        assert_eq!(c.pop(&mut all), 8);
        assert_eq!(&all[..8], &[4, 5, 6, 7, 8, 9, 10, 11]);
        assert!(c.is_empty());
        assert_eq!(c.pop(&mut all), 0);
    }

    /// Two threads, many wraps of a small ring: every item arrives once, in order.
    #[test]
    fn two_threads_lose_and_reorder_nothing() {
        const N: u32 = 2_000_000;
        let (mut p, mut c) = ring(64);
        let producer = std::thread::spawn(move || {
            let mut next = 0u32;
            while next < N {
                let batch: Vec<u32> = (next..(next + 37).min(N)).collect();
                next += p.push(&batch) as u32;
                if next.is_multiple_of(1024) {
                    std::thread::yield_now();
                }
            }
        });
        let mut expect = 0u32;
        let mut buf = [0u32; 50];
        while expect < N {
            let n = c.pop(&mut buf);
            for &v in &buf[..n] {
                assert_eq!(v, expect);
                expect += 1;
            }
            if n == 0 {
                std::thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert!(c.is_empty());
    }
}
