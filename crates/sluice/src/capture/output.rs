//! Where a queue's packets go: nowhere but the counters (`--memory`), or a nanosecond pcap
//! file of its own; and the merge of the per-queue files into one, in timestamp order.

use crate::drivers::pcap::file::Writer;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};

/// Bytes buffered per file before a write(2): large enough that a queue at a million small
/// packets a second writes a few hundred times a second.
const FILE_BUFFER: usize = 1 << 20;

/// The file names of a capture written to PREFIX.
#[derive(Clone, Debug)]
pub struct Files {
    pub prefix: PathBuf,
}

impl Files {
    /// `-w FILE|PREFIX`: a trailing `.pcap` is dropped, so `-w out.pcap --merge` writes
    /// out.pcap and `-w out.pcap` writes out.q0.pcap, out.q1.pcap...
    pub fn new(arg: &Path) -> Files {
        let s = arg.to_string_lossy();
        let prefix = s.strip_suffix(".pcap").unwrap_or(&s);
        Files {
            prefix: PathBuf::from(prefix),
        }
    }

    pub fn queue(&self, q: u32) -> PathBuf {
        PathBuf::from(format!("{}.q{q}.pcap", self.prefix.display()))
    }

    pub fn merged(&self) -> PathBuf {
        PathBuf::from(format!("{}.pcap", self.prefix.display()))
    }
}

/// A queue's destination.
pub enum Sink {
    /// Count only.
    Memory,
    File(Writer<BufWriter<File>>),
}

impl Sink {
    /// A new pcap file at `path` (created now, so an unwritable path is found before the
    /// capture starts).
    pub fn file(path: &Path, snaplen: u32) -> Result<Sink, String> {
        let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let w = Writer::new_nanos(BufWriter::with_capacity(FILE_BUFFER, f), snaplen)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Sink::File(w))
    }

    #[inline]
    pub fn write(
        &mut self,
        timestamp_ns: u64,
        segments: &[&[u8]],
        wire_len: u32,
    ) -> io::Result<()> {
        match self {
            Sink::Memory => Ok(()),
            Sink::File(w) => w.write_record(timestamp_ns, segments, wire_len),
        }
    }

    pub fn finish(self) -> io::Result<()> {
        match self {
            Sink::Memory => Ok(()),
            Sink::File(mut w) => w.flush(),
        }
    }
}

/// A frame re-assembled for the file: the VLAN tag the kernel took off put back after the
/// MAC addresses, everything cut to `snaplen`. At most three segments, borrowed.
pub fn segments<'a>(
    data: &'a [u8],
    tag: Option<&'a [u8; 4]>,
    snaplen: usize,
    out: &mut [&'a [u8]; 3],
) -> usize {
    let parts: [&[u8]; 3] = match tag {
        Some(t) if data.len() >= 12 => [&data[..12], &t[..], &data[12..]],
        _ => [data, &[], &[]],
    };
    let (mut n, mut room) = (0, snaplen);
    for p in parts {
        if room == 0 {
            break;
        }
        if p.is_empty() {
            continue;
        }
        let take = p.len().min(room);
        out[n] = &p[..take];
        room -= take;
        n += 1;
    }
    n
}

/// One record of a pcap file this module wrote (little-endian, nanoseconds).
struct Record {
    timestamp_ns: u64,
    header: [u8; 16],
    data: Vec<u8>,
}

/// Reads back, one record at a time, a file `Sink::file` wrote.
struct Reader {
    input: BufReader<File>,
    path: PathBuf,
}

impl Reader {
    fn open(path: &Path) -> Result<Reader, String> {
        let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut input = BufReader::with_capacity(FILE_BUFFER, f);
        let mut header = [0u8; 24];
        input
            .read_exact(&mut header)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Reader {
            input,
            path: path.to_owned(),
        })
    }

    fn next(&mut self) -> Result<Option<Record>, String> {
        let mut header = [0u8; 16];
        match self.input.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        }
        let word = |at: usize| {
            u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let timestamp_ns = word(0) as u64 * 1_000_000_000 + word(4) as u64;
        let mut data = vec![0u8; word(8) as usize];
        self.input
            .read_exact(&mut data)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(Some(Record {
            timestamp_ns,
            header,
            data,
        }))
    }
}

/// Merge the per-queue files into `out` by timestamp, then remove them. Each file is in
/// the order its queue received; the merge takes the earliest head each time (ties to the
/// lower queue), so one queue's packets keep their order.
pub fn merge(inputs: &[PathBuf], out: &Path, snaplen: u32) -> Result<u64, String> {
    let mut readers = inputs
        .iter()
        .map(|p| Reader::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut heads = readers
        .iter_mut()
        .map(|r| r.next())
        .collect::<Result<Vec<_>, _>>()?;
    let f = File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = Writer::new_nanos(BufWriter::with_capacity(FILE_BUFFER, f), snaplen)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let mut written = 0;
    while let Some(i) = (0..heads.len())
        .filter(|&i| heads[i].is_some())
        .min_by_key(|&i| heads[i].as_ref().map(|r| r.timestamp_ns))
    {
        let Some(r) = heads[i].take() else {
            break;
        };
        let orig_len = u32::from_le_bytes([r.header[12], r.header[13], r.header[14], r.header[15]]);
        w.write_record(r.timestamp_ns, &[&r.data], orig_len)
            .map_err(|e| format!("{}: {e}", out.display()))?;
        written += 1;
        heads[i] = readers[i].next()?;
    }
    w.flush().map_err(|e| format!("{}: {e}", out.display()))?;
    for p in inputs {
        std::fs::remove_file(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::pcap::file::read_file;

    #[test]
    fn prefixes_and_names() {
        let f = Files::new(Path::new("/tmp/cap.pcap"));
        assert_eq!(f.queue(3), PathBuf::from("/tmp/cap.q3.pcap"));
        assert_eq!(f.merged(), PathBuf::from("/tmp/cap.pcap"));
        assert_eq!(
            Files::new(Path::new("x")).queue(0),
            PathBuf::from("x.q0.pcap")
        );
    }

    #[test]
    fn vlan_tags_go_back_and_snaplen_cuts() {
        let data: Vec<u8> = (0..20).collect();
        let tag = [0x81, 0x00, 0x00, 0x05];
        let mut out: [&[u8]; 3] = [&[]; 3];
        let n = segments(&data, Some(&tag), 100, &mut out);
        let joined: Vec<u8> = out[..n].concat();
        assert_eq!(&joined[..12], &data[..12]);
        assert_eq!(&joined[12..16], &tag);
        assert_eq!(&joined[16..], &data[12..]);
        let n = segments(&data, Some(&tag), 14, &mut out);
        assert_eq!(out[..n].concat().len(), 14);
        let n = segments(&data, None, 5, &mut out);
        assert_eq!(out[..n].concat(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn merge_orders_by_time_and_removes_the_parts() {
        let dir = std::env::temp_dir().join(format!("sluice-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = Files::new(&dir.join("m"));
        let times = [[10u64, 40, 50], [20, 30, 60]];
        for (q, ts) in times.iter().enumerate() {
            let mut s = Sink::file(&files.queue(q as u32), 64).unwrap();
            for &t in ts {
                s.write(t, &[&[q as u8; 3]], 70).unwrap();
            }
            s.finish().unwrap();
        }
        let inputs = [files.queue(0), files.queue(1)];
        assert_eq!(merge(&inputs, &files.merged(), 64).unwrap(), 6);
        let r = read_file(&files.merged()).unwrap();
        let got: Vec<(u64, u8)> = r.iter().map(|r| (r.timestamp_ns, r.data[0])).collect();
        assert_eq!(
            got,
            vec![(10, 0), (20, 1), (30, 1), (40, 0), (50, 0), (60, 1)]
        );
        assert!(r.iter().all(|r| r.orig_len == 70));
        assert!(!files.queue(0).exists() && !files.queue(1).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
