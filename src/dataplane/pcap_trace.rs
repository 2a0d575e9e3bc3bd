//! `pcap trace` (VPP's command): capture the packets the dataplane receives, sends or drops,
//! on one interface or all, up to a count, into a pcap file that tcpdump and Wireshark read.
//!
//! The input nodes (rx), the tx nodes (tx) and error-drop (drop) ask `wants` once a frame:
//! one relaxed load while no capture runs, so an idle capture costs nothing. While one runs,
//! each packet it takes is copied, with its time, into memory under a lock — a debugging aid,
//! not a fast path. Once `max` packets are taken the capture stops taking; `pcap trace off`
//! (or the next `pcap trace` start) writes the file, so no worker ever writes to a disk.

use crate::buffer::WorkerBuffers;
use crate::drivers::pcap::file::Writer;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a capture takes: received, sent, dropped packets.
pub const RX: u8 = 1;
pub const TX: u8 = 2;
pub const DROP: u8 = 4;
/// `interface`: every interface.
pub const ANY: u32 = u32::MAX;

/// The largest `max`: a capture is kept in memory.
pub const MAX_PACKETS: u64 = 1_000_000;

/// A capture's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSpec {
    /// `RX | TX | DROP`, at least one.
    pub what: u8,
    pub max: u64,
    /// An interface index or `ANY`.
    pub interface: u32,
    /// Bytes kept of each packet.
    pub snaplen: usize,
    pub file: PathBuf,
}

struct Captured {
    time_ns: u64,
    len: usize,
    data: Vec<u8>,
}

struct Running {
    spec: TraceSpec,
    packets: Vec<Captured>,
}

/// The capture shared by the control plane and every worker.
#[derive(Default)]
pub struct PcapTrace {
    /// `RX | TX | DROP` being taken now; 0 when none.
    active: AtomicU8,
    interface: AtomicU32,
    max: AtomicU64,
    /// Packets claimed so far (may pass `max` by the claims refused).
    claimed: AtomicU64,
    running: Mutex<Option<Running>>,
}

/// `pcap trace status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStatus {
    pub spec: TraceSpec,
    pub captured: u64,
    /// Still taking packets (false once `max` were taken).
    pub taking: bool,
}

impl PcapTrace {
    /// Whether packets of kind `what` on interface `index` are being captured.
    #[inline]
    pub fn wants(&self, what: u8, index: u32) -> bool {
        self.active.load(Ordering::Relaxed) & what != 0 && {
            let i = self.interface.load(Ordering::Relaxed);
            i == ANY || i == index
        }
    }

    /// Whether any packet of kind `what` is being captured (error-drop asks this once a
    /// frame, then `wants` per packet).
    #[inline]
    pub fn any(&self, what: u8) -> bool {
        self.active.load(Ordering::Relaxed) & what != 0
    }

    /// Capture packet `bi` if the capture still has room.
    pub fn take(&self, bufs: &WorkerBuffers, bi: u32) {
        let k = self.claimed.fetch_add(1, Ordering::Relaxed);
        if k >= self.max.load(Ordering::Relaxed) {
            self.active.store(0, Ordering::Relaxed);
            return;
        }
        let time_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut data = Vec::new();
        bufs.copy_packet(bi, &mut data);
        let len = data.len();
        let mut running = self.running.lock().unwrap();
        if let Some(r) = running.as_mut() {
            data.truncate(r.spec.snaplen);
            r.packets.push(Captured { time_ns, len, data });
            if r.packets.len() as u64 >= r.spec.max {
                self.active.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Start a capture; a running one is refused.
    pub fn start(&self, spec: TraceSpec) -> Result<(), String> {
        if spec.what & (RX | TX | DROP) == 0 {
            return Err("capture what? rx, tx and/or drop".into());
        }
        if spec.max == 0 || spec.max > MAX_PACKETS {
            return Err(format!("max {}: 1 to {MAX_PACKETS}", spec.max));
        }
        let mut running = self.running.lock().unwrap();
        if running.is_some() {
            return Err("a capture is running: 'pcap trace off' writes it first".into());
        }
        self.interface.store(spec.interface, Ordering::Relaxed);
        self.max.store(spec.max, Ordering::Relaxed);
        self.claimed.store(0, Ordering::Relaxed);
        let what = spec.what;
        *running = Some(Running {
            spec,
            packets: Vec::new(),
        });
        self.active.store(what, Ordering::Relaxed);
        Ok(())
    }

    pub fn status(&self) -> Option<TraceStatus> {
        let running = self.running.lock().unwrap();
        running.as_ref().map(|r| TraceStatus {
            spec: r.spec.clone(),
            captured: r.packets.len() as u64,
            taking: self.active.load(Ordering::Relaxed) != 0,
        })
    }

    /// Stop the capture and write its file, in the order packets were taken; returns the
    /// file and the packets written. `Err` if none runs or the file cannot be written.
    pub fn stop(&self) -> Result<(PathBuf, u64), String> {
        self.active.store(0, Ordering::Relaxed);
        let Some(r) = self.running.lock().unwrap().take() else {
            return Err("no capture is running (pcap trace rx|tx|drop ... starts one)".into());
        };
        let path = r.spec.file;
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut w = Writer::create(&path).map_err(fail)?;
        for p in &r.packets {
            w.write_record(p.time_ns, &[&p.data], p.len as u32)
                .map_err(fail)?;
        }
        w.flush().map_err(fail)?;
        Ok((path.clone(), r.packets.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};

    fn spec(what: u8, max: u64, file: PathBuf) -> TraceSpec {
        TraceSpec {
            what,
            max,
            interface: 3,
            snaplen: 10,
            file,
        }
    }

    #[test]
    fn takes_up_to_max_of_what_it_was_asked_then_writes_the_file() {
        let dir = std::env::temp_dir().join(format!("sluice-pcaptrace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.pcap");
        let pool = BufferPool::new(64, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let t = PcapTrace::default();
        assert!(!t.wants(RX, 3), "nothing before a start");
        assert!(t.stop().unwrap_err().contains("no capture"));
        assert!(t.start(spec(0, 5, file.clone())).is_err());
        assert!(t.start(spec(RX, 0, file.clone())).is_err());
        t.start(spec(RX | DROP, 2, file.clone())).unwrap();
        assert!(t
            .start(spec(RX, 2, file.clone()))
            .unwrap_err()
            .contains("running"));
        assert!(t.wants(RX, 3) && t.wants(DROP, 3) && t.any(DROP));
        assert!(!t.wants(TX, 3), "tx was not asked for");
        assert!(!t.wants(RX, 4), "another interface");
        for k in 0..3u8 {
            let bi = bufs.packet_from_bytes(&[k; 20]).unwrap();
            if t.wants(RX, 3) {
                t.take(&bufs, bi);
            }
            bufs.free(bi);
        }
        let s = t.status().unwrap();
        assert_eq!((s.captured, s.taking), (2, false), "stopped taking at max");
        assert!(!t.wants(RX, 3));
        let (path, n) = t.stop().unwrap();
        assert_eq!((path, n), (file.clone(), 2));
        let recs = crate::drivers::pcap::file::read_file(&file).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].data, vec![1u8; 10], "cut at the snaplen");
        assert_eq!(recs[1].orig_len, 20);
        assert!(t.status().is_none());
        // A path that cannot be written: the error names it.
        t.start(spec(RX, 1, dir.join("no/such/dir.pcap"))).unwrap();
        assert!(t.stop().unwrap_err().contains("no/such/dir.pcap"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
