//! `pcap trace` (VPP's command): capture the packets the dataplane receives, sends or drops,
//! on one interface or all, up to a count, into a pcap file that tcpdump and Wireshark read.
//!
//! The input nodes (rx), the tx nodes (tx) and error-drop (drop) ask `wants` once a frame:
//! one relaxed load while no capture runs, so an idle capture costs nothing. While one runs,
//! each worker copies the packets it takes, with their time, into its own buffer: the first
//! `snaplen` bytes of each (never more), in one byte array per worker. A frame's packets
//! take that worker's buffer once ([`PcapTrace::worker`]); no packet takes a lock another
//! worker takes, so capturing on every worker serialises nothing. Once `max` packets are
//! taken the capture stops taking; `pcap trace off` (or the next start) merges the workers'
//! packets by time and writes the file, so no worker ever writes to a disk.
//!
//! The file is the operator's alone: it is created when the capture starts (so a bad path is
//! an error then, not after the capture), with mode 0600, never through a symlink and never
//! over an existing file (`O_CREAT | O_EXCL | O_NOFOLLOW`). A name without a `/` goes in a
//! private directory ([`TRACE_DIR`], mode 0700, refused if another user can write it or it is
//! a symlink), never in a shared one such as /tmp.

use crate::buffer::{WorkerBuffers, NO_BUFFER};
use crate::drivers::pcap::file::Writer;
use std::fs::File;
use std::io::BufWriter;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

/// What a capture takes: received, sent, dropped packets.
pub const RX: u8 = 1;
pub const TX: u8 = 2;
pub const DROP: u8 = 4;
/// `interface`: every interface.
pub const ANY: u32 = u32::MAX;

/// The largest `max`: a capture is kept in memory.
pub const MAX_PACKETS: u64 = 1_000_000;

/// Where a capture file named without a `/` goes: a directory of the daemon's own.
pub const TRACE_DIR: &str = "/run/sluice/traces";

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

/// One packet taken: its bytes are `caplen` bytes of its worker's array, from `at`.
struct Record {
    time_ns: u64,
    at: usize,
    len: u32,
    caplen: u32,
}

/// Bytes of bookkeeping a captured packet costs besides the `snaplen` bytes of its data.
pub const RECORD_BYTES: usize = std::mem::size_of::<Record>();

/// What one worker has taken.
#[derive(Default)]
struct Taken {
    records: Vec<Record>,
    bytes: Vec<u8>,
}

/// One worker's buffer, alone on its cache lines so that workers do not share one.
#[repr(align(128))]
#[derive(Default)]
struct Slot(Mutex<Taken>);

struct Running {
    spec: TraceSpec,
    file: File,
}

/// The capture shared by the control plane and every worker.
pub struct PcapTrace {
    /// `RX | TX | DROP` being taken now; 0 when none.
    active: AtomicU8,
    interface: AtomicU32,
    max: AtomicU64,
    /// Bytes kept of each packet (read once a frame).
    snaplen: AtomicU64,
    /// Packets claimed so far (may pass `max` by the claims refused).
    claimed: AtomicU64,
    /// The control plane's side: the spec and the open file.
    running: Mutex<Option<Running>>,
    /// A buffer per worker; a thread past the last shares one (still correct, only slower).
    slots: Box<[Slot]>,
}

impl Default for PcapTrace {
    fn default() -> PcapTrace {
        PcapTrace::new(1)
    }
}

/// `pcap trace status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStatus {
    pub spec: TraceSpec,
    pub captured: u64,
    /// Still taking packets (false once `max` were taken).
    pub taking: bool,
    /// Bytes of memory the captured packets hold (data and records).
    pub memory: u64,
}

/// One worker's hold on its buffer for a frame: `take` each packet through it.
pub struct Taker<'a> {
    trace: &'a PcapTrace,
    taken: MutexGuard<'a, Taken>,
    snaplen: usize,
}

impl Taker<'_> {
    /// Capture packet `bi` if the capture still has room: its first `snaplen` bytes.
    pub fn take(&mut self, bufs: &WorkerBuffers, bi: u32) {
        let t = self.trace;
        let k = t.claimed.fetch_add(1, Ordering::Relaxed);
        let max = t.max.load(Ordering::Relaxed);
        if k >= max || t.active.load(Ordering::Relaxed) == 0 {
            t.active.store(0, Ordering::Relaxed);
            return;
        }
        let time_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let taken = &mut *self.taken;
        let at = taken.bytes.len();
        let mut seg = bi;
        while seg != NO_BUFFER && taken.bytes.len() - at < self.snaplen {
            let data = bufs.data(seg);
            let room = self.snaplen - (taken.bytes.len() - at);
            taken.bytes.extend_from_slice(&data[..data.len().min(room)]);
            seg = bufs.meta(seg).next;
        }
        taken.records.push(Record {
            time_ns,
            at,
            len: bufs.packet_len(bi) as u32,
            caplen: (taken.bytes.len() - at) as u32,
        });
        if k + 1 >= max {
            t.active.store(0, Ordering::Relaxed);
        }
    }
}

impl PcapTrace {
    /// A capture with a buffer for each of `workers` workers (at least one).
    pub fn new(workers: usize) -> PcapTrace {
        PcapTrace {
            active: AtomicU8::new(0),
            interface: AtomicU32::new(ANY),
            max: AtomicU64::new(0),
            snaplen: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            running: Mutex::new(None),
            slots: (0..workers.max(1)).map(|_| Slot::default()).collect(),
        }
    }

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

    /// Worker `thread`'s buffer, for the packets of one frame. Only that worker takes it
    /// while a capture runs (the control plane takes it at `status` and `off`).
    pub fn worker(&self, thread: usize) -> Taker<'_> {
        let slot = &self.slots[thread % self.slots.len()];
        Taker {
            trace: self,
            taken: slot.0.lock().unwrap_or_else(|e| e.into_inner()),
            snaplen: self.snaplen.load(Ordering::Relaxed) as usize,
        }
    }

    /// Start a capture, creating its file; a running one is refused.
    pub fn start(&self, spec: TraceSpec) -> Result<(), String> {
        if spec.what & (RX | TX | DROP) == 0 {
            return Err("capture what? rx, tx and/or drop".into());
        }
        if spec.max == 0 || spec.max > MAX_PACKETS {
            return Err(format!("max {}: 1 to {MAX_PACKETS}", spec.max));
        }
        if spec.snaplen == 0 {
            return Err("snaplen 0: at least 1 byte".into());
        }
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_some() {
            return Err("a capture is running: 'pcap trace off' writes it first".into());
        }
        let file = create_private(&spec.file)?;
        for s in self.slots.iter() {
            *s.0.lock().unwrap_or_else(|e| e.into_inner()) = Taken::default();
        }
        self.interface.store(spec.interface, Ordering::Relaxed);
        self.max.store(spec.max, Ordering::Relaxed);
        self.snaplen.store(spec.snaplen as u64, Ordering::Relaxed);
        self.claimed.store(0, Ordering::Relaxed);
        let what = spec.what;
        *running = Some(Running { spec, file });
        self.active.store(what, Ordering::Relaxed);
        Ok(())
    }

    /// Packets captured and the memory they hold, over every worker.
    fn totals(&self) -> (u64, u64) {
        let (mut n, mut bytes) = (0, 0);
        for s in self.slots.iter() {
            let t = s.0.lock().unwrap_or_else(|e| e.into_inner());
            n += t.records.len() as u64;
            bytes += (t.bytes.capacity() + t.records.capacity() * RECORD_BYTES) as u64;
        }
        (n, bytes)
    }

    pub fn status(&self) -> Option<TraceStatus> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let spec = running.as_ref()?.spec.clone();
        let (captured, memory) = self.totals();
        Some(TraceStatus {
            spec,
            captured,
            taking: self.active.load(Ordering::Relaxed) != 0,
            memory,
        })
    }

    /// Stop the capture and write its file, the workers' packets merged in time order;
    /// returns the file and the packets written. `Err` if none runs or the file cannot be
    /// written.
    pub fn stop(&self) -> Result<(PathBuf, u64), String> {
        self.active.store(0, Ordering::Relaxed);
        let Some(r) = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return Err("no capture is running (pcap trace rx|tx|drop ... starts one)".into());
        };
        // Each worker's packets are in its time order; merge them by time (the sort is
        // stable, so packets of one worker with one timestamp keep their order).
        let taken: Vec<Taken> = self
            .slots
            .iter()
            .map(|s| std::mem::take(&mut *s.0.lock().unwrap_or_else(|e| e.into_inner())))
            .collect();
        let mut order: Vec<(u64, usize, usize)> = taken
            .iter()
            .enumerate()
            .flat_map(|(w, t)| {
                t.records
                    .iter()
                    .enumerate()
                    .map(move |(k, r)| (r.time_ns, w, k))
            })
            .collect();
        order.sort_by_key(|&(time, w, k)| (time, w, k));
        let path = r.spec.file;
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut w = Writer::new(BufWriter::new(r.file)).map_err(fail)?;
        for &(_, worker, k) in &order {
            let t = &taken[worker];
            let p = &t.records[k];
            let data = &t.bytes[p.at..p.at + p.caplen as usize];
            w.write_record(p.time_ns, &[data], p.len).map_err(fail)?;
        }
        w.flush().map_err(fail)?;
        Ok((path.clone(), order.len() as u64))
    }
}

/// Create a capture file: new (never over an existing file), not through a symlink, mode
/// 0600 whatever the umask allows beyond it.
pub fn create_private(path: &Path) -> Result<File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{}: exists (a capture never writes over a file or through a link: remove it \
                 or name another)",
                path.display()
            ),
            _ => format!("{}: {e}", path.display()),
        })
}

/// The private directory `dir` for capture files named without a `/`: made with mode 0700 if
/// missing; refused if it is a symlink, not a directory, not ours, or open to other users.
pub fn private_dir(dir: &Path) -> Result<&Path, String> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Our effective uid, without unsafe code: /proc/self belongs to it.
    let me = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    if !m.file_type().is_dir() || m.uid() != me || m.mode() & 0o077 != 0 {
        return Err(format!(
            "{}: not a private directory (it must be a directory of uid {me}, mode 0700, not \
             a link)",
            dir.display()
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};
    use std::time::Duration;

    fn spec(what: u8, max: u64, file: PathBuf) -> TraceSpec {
        TraceSpec {
            what,
            max,
            interface: 3,
            snaplen: 10,
            file,
        }
    }

    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sluice-pt-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn takes_up_to_max_of_what_it_was_asked_then_writes_the_file() {
        let dir = test_dir("max");
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
            .start(spec(RX, 2, dir.join("other.pcap")))
            .unwrap_err()
            .contains("running"));
        assert!(t.wants(RX, 3) && t.wants(DROP, 3) && t.any(DROP));
        assert!(!t.wants(TX, 3), "tx was not asked for");
        assert!(!t.wants(RX, 4), "another interface");
        for k in 0..3u8 {
            let bi = bufs.packet_from_bytes(&[k; 20]).unwrap();
            if t.wants(RX, 3) {
                t.worker(0).take(&bufs, bi);
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
        // A path that cannot be made: the error names it, at the start.
        let e = t
            .start(spec(RX, 1, dir.join("no/such/dir.pcap")))
            .unwrap_err();
        assert!(e.contains("no/such/dir.pcap"), "{e}");
        // Nor over an existing file.
        let e = t.start(spec(RX, 1, file.clone())).unwrap_err();
        assert!(e.contains("exists"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A symlink planted at the capture's path is refused, and its target left untouched.
    #[test]
    fn a_symlink_at_the_path_is_refused_and_its_target_untouched() {
        let dir = test_dir("symlink");
        let (target, link) = (dir.join("victim"), dir.join("t.pcap"));
        std::fs::write(&target, b"precious").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let t = PcapTrace::default();
        let wrote = t
            .start(spec(RX, 1, link.clone()))
            .and_then(|_| t.stop().map(|_| ()));
        let e = wrote.expect_err("wrote through a symlink");
        assert!(e.contains("t.pcap"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        // A dangling link is refused too (O_EXCL): nothing is created at its target.
        let (gone, dangling) = (dir.join("gone"), dir.join("d.pcap"));
        std::os::unix::fs::symlink(&gone, &dangling).unwrap();
        assert!(t.start(spec(RX, 1, dangling)).is_err());
        assert!(!gone.exists());
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The file is the operator's alone: mode 0600 whatever the umask.
    #[test]
    fn the_file_is_made_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = test_dir("mode");
        let file = dir.join("t.pcap");
        let t = PcapTrace::default();
        t.start(spec(RX, 1, file.clone())).unwrap();
        t.stop().unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A capture keeps at most snaplen bytes of each packet in memory, however long the
    /// packet: jumbo frames cut to 10 bytes cost 10 bytes and a record each.
    #[test]
    fn memory_per_packet_is_bounded_by_snaplen() {
        let dir = test_dir("snaplen");
        let pool = BufferPool::new(64, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let t = PcapTrace::default();
        t.start(spec(RX, 100, dir.join("t.pcap"))).unwrap();
        for _ in 0..100 {
            let bi = bufs.packet_from_bytes(&[7u8; 9000]).unwrap();
            t.worker(0).take(&bufs, bi);
            bufs.free(bi);
        }
        let s = t.status().unwrap();
        assert_eq!(s.captured, 100);
        // Vectors grow by doubling: at most twice what 100 packets need.
        let bound = 2 * 100 * (10 + RECORD_BYTES) as u64;
        assert!(s.memory <= bound, "{} bytes for 100 packets", s.memory);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Workers take packets into buffers of their own: one worker holding its buffer (as it
    /// does for a frame) does not hold up another, and the file has both workers' packets
    /// merged in time order.
    #[test]
    fn workers_capture_without_a_shared_lock_and_the_file_merges_them_by_time() {
        let dir = test_dir("workers");
        let file = dir.join("t.pcap");
        let pool = BufferPool::new(256, HugePages::Never).unwrap();
        let t = std::sync::Arc::new(PcapTrace::new(2));
        t.start(spec(RX, 200, file.clone())).unwrap();
        let held = t.worker(0);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let other = {
            let (t, pool) = (t.clone(), pool.clone());
            std::thread::spawn(move || {
                let mut bufs = pool.worker_handle();
                for k in 0..100u8 {
                    let bi = bufs.packet_from_bytes(&[k; 60]).unwrap();
                    t.worker(1).take(&bufs, bi);
                    bufs.free(bi);
                }
                done_tx.send(()).unwrap();
            })
        };
        // A hang detector, not a speed test: with one lock for all, this never arrives.
        done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("worker 1 waited for worker 0's buffer");
        drop(held);
        other.join().unwrap();
        // Now both at once, interleaved in time.
        let mut threads = Vec::new();
        for w in 0..2usize {
            let (t, pool) = (t.clone(), pool.clone());
            threads.push(std::thread::spawn(move || {
                let mut bufs = pool.worker_handle();
                for k in 0..50u8 {
                    let bi = bufs.packet_from_bytes(&[w as u8; 60]).unwrap();
                    bufs.data_mut(bi)[1] = k;
                    t.worker(w).take(&bufs, bi);
                    bufs.free(bi);
                }
            }));
        }
        threads.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(t.stop().unwrap().1, 200);
        let recs = crate::drivers::pcap::file::read_file(&file).unwrap();
        assert_eq!(recs.len(), 200);
        assert!(
            recs.windows(2)
                .all(|p| p[0].timestamp_ns <= p[1].timestamp_ns),
            "not in time order"
        );
        for w in 0..2u8 {
            let seq: Vec<u8> = recs[100..]
                .iter()
                .filter(|r| r.data[0] == w && r.data.len() == 10)
                .map(|r| r.data[1])
                .collect();
            let sorted = seq.windows(2).all(|p| p[0] < p[1]);
            assert!(sorted && seq.len() == 50, "worker {w}: {seq:?}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_private_directory_is_made_0700_and_a_shared_one_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = test_dir("private");
        let traces = dir.join("run/traces");
        assert_eq!(private_dir(&traces).unwrap(), traces.as_path());
        let mode = std::fs::metadata(&traces).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        assert!(private_dir(&traces).is_ok(), "made again: still fine");
        std::fs::set_permissions(&traces, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(private_dir(&traces)
            .unwrap_err()
            .contains("not a private directory"));
        let link = dir.join("link");
        std::os::unix::fs::symlink(&traces, &link).unwrap();
        std::fs::set_permissions(&traces, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(
            private_dir(&link).is_err(),
            "a link to a directory is not one"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
