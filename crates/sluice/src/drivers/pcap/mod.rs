//! The pcap driver: an interface whose receive side replays a pcap file (once or looping) and
//! whose transmit side writes one. Graph tests run through it without the kernel, so they are
//! deterministic.

pub mod file;

use super::{DriverPorts, RxBurst, RxQueue, TxBurst, TxQueue};
use crate::buffer::{WorkerBuffers, NO_BUFFER};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A pcap interface as configured.
#[derive(Clone, Debug, Default)]
pub struct PcapConfig {
    pub rx_file: Option<PathBuf>,
    pub tx_file: Option<PathBuf>,
    /// Replay the file again and again instead of once.
    pub looping: bool,
    pub mtu: u32,
}

/// How far a replay has got; `show interface` and tests read it.
#[derive(Default, Debug)]
pub struct ReplayProgress {
    pub passes: AtomicU64,
    pub done: AtomicBool,
}

struct PcapRx {
    records: Vec<file::Record>,
    next: usize,
    looping: bool,
    progress: Arc<ReplayProgress>,
}

impl RxQueue for PcapRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        let mut r = RxBurst::default();
        while r.packets < out.len() {
            if self.next == self.records.len() {
                if self.records.is_empty() || !self.looping {
                    self.progress.done.store(true, Ordering::Relaxed);
                    break;
                }
                self.next = 0;
                self.progress.passes.fetch_add(1, Ordering::Relaxed);
            }
            let rec = &self.records[self.next];
            if rec.data.len() < rec.orig_len as usize {
                r.truncated += 1;
                self.next += 1;
                continue;
            }
            match bufs.packet_from_bytes(&rec.data) {
                Some(bi) => {
                    bufs.meta_mut(bi).timestamp_ns = rec.timestamp_ns;
                    out[r.packets] = bi;
                    r.packets += 1;
                    r.bytes += rec.data.len() as u64;
                }
                None if rec.data.len() > crate::buffer::DATA_SIZE * 8 => r.too_long += 1,
                // The pool is empty: try this record again on the next poll.
                None => break,
            }
            self.next += 1;
        }
        r
    }
}

struct PcapTx {
    writer: Arc<Mutex<file::Writer<BufWriter<File>>>>,
    mtu: u32,
    failed: bool,
}

impl TxQueue for PcapTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        let mut r = TxBurst::default();
        let mut w = self.writer.lock().unwrap();
        let mut segs: [&[u8]; 8] = [&[]; 8];
        for &bi in pkts {
            let len = bufs.packet_len(bi);
            // MTU counts the L3 payload: the frame may carry a 14-byte header and one tag.
            if len > self.mtu as usize + 18 {
                r.too_long += 1;
                continue;
            }
            let mut n = 0;
            let mut seg = bi;
            while seg != NO_BUFFER && n < segs.len() {
                segs[n] = bufs.data(seg);
                n += 1;
                seg = bufs.meta(seg).next;
            }
            let ts = match bufs.meta(bi).timestamp_ns {
                0 => now_ns(),
                t => t,
            };
            if self.failed || w.write_segments(ts, &segs[..n]).is_err() {
                self.failed = true;
                r.errors += 1;
            } else {
                r.sent += 1;
                r.bytes += len as u64;
            }
        }
        if w.flush().is_err() {
            self.failed = true;
        }
        drop(w);
        bufs.free_all(pkts);
        r
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Open a pcap interface: one rx queue (when it has an input file) and `tx_queues` tx queues
/// (when it has an output file) that share the writer.
pub fn open(
    cfg: &PcapConfig,
    tx_queues: usize,
) -> Result<(DriverPorts, Arc<ReplayProgress>), String> {
    let progress = Arc::new(ReplayProgress::default());
    let mut details = Vec::new();
    let mut rx: Vec<Box<dyn RxQueue>> = Vec::new();
    if let Some(path) = &cfg.rx_file {
        let records = file::read_file(path).map_err(|e| e.to_string())?;
        details.push(("rx-file".into(), path.display().to_string()));
        details.push(("rx-packets-in-file".into(), records.len().to_string()));
        details.push(("loop".into(), cfg.looping.to_string()));
        rx.push(Box::new(PcapRx {
            records,
            next: 0,
            looping: cfg.looping,
            progress: progress.clone(),
        }));
    }
    let mut tx: Vec<Box<dyn TxQueue>> = Vec::new();
    if let Some(path) = &cfg.tx_file {
        let writer = Arc::new(Mutex::new(
            file::Writer::create(path).map_err(|e| e.to_string())?,
        ));
        details.push(("tx-file".into(), path.display().to_string()));
        for _ in 0..tx_queues {
            tx.push(Box::new(PcapTx {
                writer: writer.clone(),
                mtu: cfg.mtu,
                failed: false,
            }));
        }
    }
    Ok((
        DriverPorts {
            rx,
            tx,
            mtu: cfg.mtu,
            details,
            restore: Vec::new(),
            live: None,
            mac: None,
        },
        progress,
    ))
}
