//! A DPDK port's receive and transmit queues: mbufs in, sluice buffers out, and back, with
//! no copy (the mbuf is the header in each buffer's headroom; shim.c says where).

use super::eal;
use super::ffi;
use super::patch::{Held, PatchTx};
use super::port::Port;
use super::stock::{Pool, LENT};
use crate::buffer::{BufferMeta, WorkerBuffers, NO_BUFFER, STRIDE};
use crate::drivers::{DirectTx, PatchRx, RxBurst, RxQueue, TxBurst, TxQueue};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Most packets one call moves (the shim's burst).
pub const BURST: usize = 256;
/// Most segments one packet may have (jumbo frames over 2 KiB buffers).
pub const MAX_SEGS: usize = 8;
/// Where a segment's data may start at the earliest: past the object header and the mbuf
/// header in the headroom (shim.c).
pub const FIRST_DATA: usize = 192;
/// Buffers ahead whose tag and metadata a receive asks the CPU to fetch.
const RX_AHEAD: usize = 8;
/// Packets ahead whose metadata a transmit asks the CPU to fetch.
const TX_AHEAD: usize = 8;
/// Receive calls between two reads of the port's drop counters.
const STATS_POLLS: u32 = 4096;

/// The segment arrays the shim fills or reads.
struct Segments {
    slot: Vec<u32>,
    off: Vec<u16>,
    len: Vec<u16>,
    per_packet: Vec<u16>,
}

impl Segments {
    fn new() -> Segments {
        Segments {
            slot: vec![0; BURST * MAX_SEGS],
            off: vec![0; BURST * MAX_SEGS],
            len: vec![0; BURST * MAX_SEGS],
            per_packet: vec![0; BURST],
        }
    }
}

pub struct DpdkRx {
    pub port: Arc<Port>,
    pub q: u16,
    pub pool: Arc<Pool>,
    seg: Segments,
    /// This queue reports the buffers lent to DPDK (one queue of the process does).
    pub reports_lent: bool,
    /// This queue reports the port's drops (queue 0 does: DPDK counts them per port).
    pub reports_missed: bool,
    polls: u32,
    missed_seen: u64,
    /// The frames the last `rx_patch` kept back.
    held: Held,
}

impl DpdkRx {
    pub fn new(port: Arc<Port>, q: u16, pool: Arc<Pool>) -> DpdkRx {
        DpdkRx {
            port,
            q,
            pool,
            seg: Segments::new(),
            reports_lent: false,
            reports_missed: q == 0,
            polls: 0,
            missed_seen: 0,
            held: Held::new(),
        }
    }
}

impl DpdkRx {
    /// Turn the `got` packets the shim laid out into graph buffers in `out`.
    fn take(
        &mut self,
        bufs: &mut WorkerBuffers,
        out: &mut [u32],
        got: usize,
        refused: u32,
    ) -> RxBurst {
        let s = &self.seg;
        let mut r = RxBurst {
            bad_descriptors: refused as u64,
            ..RxBurst::default()
        };
        let segments: usize = s.per_packet[..got].iter().map(|&n| n as usize).sum();
        // Each buffer's tag and metadata share a line that was last touched a vector ago:
        // fetched ahead, the take-back (a locked compare-and-swap, which waits for it) and
        // the metadata store below find it in the cache.
        for &bi in &s.slot[..segments.min(RX_AHEAD)] {
            bufs.prefetch_meta(bi);
        }
        let mut k = 0;
        for i in 0..got {
            let n = s.per_packet[i] as usize;
            if k + RX_AHEAD < segments {
                bufs.prefetch_meta(s.slot[k + RX_AHEAD]);
            }
            if n == 1 {
                // One segment, the common case: no chain to walk or link.
                let (bi, off, len) = (s.slot[k], s.off[k], s.len[k]);
                k += 1;
                bufs.reclaim(bi);
                if (off as usize) < FIRST_DATA || off as usize + len as usize > STRIDE {
                    // Its metadata is a past life's (a chain it was sent in): one buffer.
                    bufs.meta_mut(bi).next = NO_BUFFER;
                    bufs.free(bi);
                    r.bad_descriptors += 1;
                    continue;
                }
                *bufs.meta_mut(bi) = BufferMeta {
                    offset: off,
                    len,
                    total_len: len as u32,
                    ..BufferMeta::FRESH
                };
                out[r.packets] = bi;
                r.packets += 1;
                r.bytes += len as u64;
                continue;
            }
            let segs = k..k + n;
            k += n;
            let sound = n > 0
                && segs.clone().all(|j| {
                    let (off, len) = (s.off[j] as usize, s.len[j] as usize);
                    off >= FIRST_DATA && off + len <= STRIDE
                });
            if !sound {
                for j in segs {
                    bufs.reclaim(s.slot[j]);
                    bufs.meta_mut(s.slot[j]).next = NO_BUFFER;
                    bufs.free(s.slot[j]);
                }
                r.bad_descriptors += 1;
                continue;
            }
            let total: u32 = segs.clone().map(|j| s.len[j] as u32).sum();
            for j in segs.clone() {
                let bi = s.slot[j];
                bufs.reclaim(bi);
                *bufs.meta_mut(bi) = BufferMeta {
                    offset: s.off[j],
                    len: s.len[j],
                    total_len: if j == segs.start {
                        total
                    } else {
                        s.len[j] as u32
                    },
                    next: if j + 1 < segs.end {
                        s.slot[j + 1]
                    } else {
                        NO_BUFFER
                    },
                    ..BufferMeta::FRESH
                };
            }
            out[r.packets] = s.slot[segs.start];
            r.packets += 1;
            r.bytes += total as u64;
        }
        LENT.fetch_sub(segments as i64, Ordering::Relaxed);
        r
    }
}

impl DpdkRx {
    /// Receive a burst into `out` for the graph, keeping back for the patch the frames
    /// `min..=max` bytes long that qualify (none when `min > max`; shim.c's sd_rx).
    fn receive(
        &mut self,
        bufs: &mut WorkerBuffers,
        out: &mut [u32],
        (min, max): (u16, u16),
    ) -> RxBurst {
        eal::register_thread();
        self.pool.top_up(bufs);
        let want = out.len().min(BURST) as u16;
        let (mut refused, mut held) = (0u32, 0u16);
        let s = &mut self.seg;
        let h = &mut self.held;
        // SAFETY: the segment arrays hold BURST * MAX_SEGS segments and BURST packets, the
        // held arrays BURST frames, the bounds passed; the port is open while this queue
        // holds its `Arc`.
        let got = unsafe {
            ffi::sd_rx(
                self.port.id,
                self.q,
                min,
                max,
                h.mbufs.as_mut_ptr().cast(),
                h.len.as_mut_ptr(),
                &mut held,
                s.slot.as_mut_ptr(),
                s.off.as_mut_ptr(),
                s.len.as_mut_ptr(),
                s.per_packet.as_mut_ptr(),
                want,
                s.slot.len() as u32,
                &mut refused,
            )
        } as usize;
        h.count = held as usize;
        self.take(bufs, out, got, refused)
    }
}

impl RxQueue for DpdkRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        self.receive(bufs, out, (1, 0))
    }

    fn rx_patch(
        &mut self,
        to: &DirectTx,
        min_frame: usize,
        bufs: &mut WorkerBuffers,
        out: &mut [u32],
    ) -> Option<PatchRx> {
        let target = PatchTx::of(to)?;
        if self.held.count > 0 {
            // Never left by the input node, which sends after each receive; sent, not lost.
            self.held.send(target);
        }
        let limits = (
            min_frame.min(u16::MAX as usize) as u16,
            target.max_frame.min(u16::MAX as usize) as u16,
        );
        let graph = self.receive(bufs, out, limits);
        let h = &self.held;
        Some(PatchRx {
            graph,
            held: h.count,
            held_bytes: h.len[..h.count].iter().map(|&l| l as u64).sum(),
        })
    }

    fn send_held(&mut self, to: &DirectTx) -> TxBurst {
        match PatchTx::of(to) {
            Some(target) => self.held.send(target),
            None => TxBurst::default(),
        }
    }

    fn take_missed(&mut self) -> u64 {
        if !self.reports_missed {
            return 0;
        }
        self.polls += 1;
        if self.polls < STATS_POLLS {
            return 0;
        }
        self.take_missed_now()
    }

    fn take_missed_now(&mut self) -> u64 {
        if !self.reports_missed {
            return 0;
        }
        self.polls = 0;
        let Some(s) = self.port.stats() else {
            return 0;
        };
        let total = s.missed + s.rx_errors + s.no_mbuf;
        let new = total.saturating_sub(self.missed_seen);
        self.missed_seen = total;
        new
    }

    fn held_buffers(&self) -> usize {
        if self.reports_lent {
            LENT.load(Ordering::Relaxed).max(0) as usize
        } else {
            0
        }
    }
}

/// Why a packet cannot go to the port as it is.
enum Refused {
    TooLong,
    Layout,
}

pub struct DpdkTx {
    pub port: Arc<Port>,
    pub q: u16,
    /// Held while sending when other threads share this DPDK queue.
    pub shared: Option<Arc<Mutex<()>>>,
    pub pool: Arc<Pool>,
    seg: Segments,
    /// The largest frame the port sends.
    pub max_frame: usize,
    /// Packets of this burst, by their place in `pkts`, that went to the shim.
    queued: Vec<u32>,
    /// Whether the cross-connect patch may send on this queue (`[dpdk] patch`).
    pub patch: bool,
}

impl DpdkTx {
    pub fn new(
        port: Arc<Port>,
        (q, shared): (u16, Option<Arc<Mutex<()>>>),
        pool: Arc<Pool>,
        max_frame: usize,
    ) -> DpdkTx {
        DpdkTx {
            port,
            q,
            shared,
            pool,
            seg: Segments::new(),
            max_frame,
            queued: Vec::with_capacity(BURST),
            patch: true,
        }
    }

    /// Lay packet `bi` out as segments at `k` and lend them (DPDK may free a sent mbuf into
    /// a stock, where another thread could take it, as soon as the shim hands it over); an
    /// error, with nothing laid out or lent, when it cannot be sent as it is (too long, too
    /// many segments, or data in the mbuf header's place).
    fn lay_out(&mut self, bufs: &mut WorkerBuffers, bi: u32, k: &mut usize) -> Result<(), Refused> {
        let m = bufs.meta(bi);
        if m.total_len as usize > self.max_frame {
            return Err(Refused::TooLong);
        }
        if m.next == NO_BUFFER {
            // One segment, the common case: its metadata read once.
            if (m.offset as usize) < FIRST_DATA {
                return Err(Refused::Layout);
            }
            (self.seg.slot[*k], self.seg.off[*k], self.seg.len[*k]) = (bi, m.offset, m.len);
            *k += 1;
            bufs.lend(bi);
            return Ok(());
        }
        let start = *k;
        let mut seg = bi;
        while seg != NO_BUFFER {
            let m = bufs.meta(seg);
            if *k - start == MAX_SEGS || (m.offset as usize) < FIRST_DATA {
                *k = start;
                return Err(Refused::Layout);
            }
            self.seg.slot[*k] = seg;
            self.seg.off[*k] = m.offset;
            self.seg.len[*k] = m.len;
            *k += 1;
            seg = m.next;
        }
        for &s in &self.seg.slot[start..*k] {
            bufs.lend(s);
        }
        Ok(())
    }
}

impl TxQueue for DpdkTx {
    fn direct(&self) -> Option<DirectTx> {
        self.patch.then(|| {
            Arc::new(PatchTx {
                port: self.port.clone(),
                q: self.q,
                shared: self.shared.clone(),
                max_frame: self.max_frame,
            }) as DirectTx
        })
    }

    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        eal::register_thread();
        let mut r = TxBurst::default();
        for chunk in pkts.chunks(BURST) {
            self.queued.clear();
            let mut k = 0;
            for (i, &bi) in chunk.iter().enumerate() {
                // The metadata of packets a few ahead: each is a miss, fetched while this one
                // is laid out.
                if let Some(&ahead) = chunk.get(i + TX_AHEAD) {
                    bufs.prefetch_meta(ahead);
                }
                let start = k;
                match self.lay_out(bufs, bi, &mut k) {
                    Ok(()) => {
                        self.seg.per_packet[self.queued.len()] = (k - start) as u16;
                        self.queued.push(bi);
                    }
                    Err(why) => {
                        match why {
                            Refused::TooLong => r.too_long += 1,
                            // Too many segments, or a header prepended into the mbuf's place.
                            Refused::Layout => r.errors += 1,
                        }
                        bufs.free(bi);
                    }
                }
            }
            LENT.fetch_add(k as i64, Ordering::Relaxed);
            let s = &self.seg;
            let _one_at_a_time = self
                .shared
                .as_ref()
                .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()));
            // SAFETY: the arrays hold `k` segments for `queued.len()` packets, laid out by
            // `lay_out` from buffers this handle held and has just lent; the port is open.
            let sent = unsafe {
                ffi::sd_tx(
                    self.port.id,
                    self.q,
                    self.pool.mp,
                    s.slot.as_ptr(),
                    s.off.as_ptr(),
                    s.len.as_ptr(),
                    s.per_packet.as_ptr(),
                    self.queued.len() as u16,
                )
            } as usize;
            // What the port did not take is still ours, untouched.
            let first_unsent: usize = s.per_packet[..sent].iter().map(|&n| n as usize).sum();
            for &sl in &self.seg.slot[first_unsent..k] {
                bufs.reclaim(sl);
            }
            LENT.fetch_sub((k - first_unsent) as i64, Ordering::Relaxed);
            r.bytes += self.seg.len[..first_unsent]
                .iter()
                .map(|&l| l as u64)
                .sum::<u64>();
            for &bi in &self.queued[sent..] {
                bufs.free(bi);
            }
            r.sent += sent;
            r.queue_full += self.queued.len() - sent;
        }
        self.pool.trim(bufs);
        r
    }
}
