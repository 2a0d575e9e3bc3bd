//! The classic pcap file format (as libpcap writes it): a 24-byte file header, then per
//! packet a 16-byte record header and the bytes.
//!
//! ```text
//! file:   magic u32 | version 2.4 (u16,u16) | thiszone i32 | sigfigs u32 | snaplen u32 | linktype u32
//! record: seconds u32 | fraction u32 (us, or ns with the 0xa1b23c4d magic) | caplen u32 | len u32
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;
/// Largest snap length we write and accept.
pub const SNAPLEN: u32 = 262_144;

/// One packet read from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub timestamp_ns: u64,
    /// Length on the wire; more than `data.len()` when the capture cut the packet.
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// Read a whole pcap file. Errors say what is wrong and where.
pub fn read_file(path: &Path) -> io::Result<Vec<Record>> {
    let mut bytes = Vec::new();
    File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?
        .read_to_end(&mut bytes)?;
    parse(&bytes).map_err(|msg| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {msg}", path.display()),
        )
    })
}

/// Parse pcap bytes; never panics on malformed input.
pub fn parse(bytes: &[u8]) -> Result<Vec<Record>, String> {
    let header = bytes
        .get(..FILE_HEADER_LEN)
        .ok_or_else(|| format!("too short for a pcap header ({} bytes)", bytes.len()))?;
    let magic_le = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let magic_be = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    let (little, nanos) = match (magic_le, magic_be) {
        (MAGIC_MICROS, _) => (true, false),
        (MAGIC_NANOS, _) => (true, true),
        (_, MAGIC_MICROS) => (false, false),
        (_, MAGIC_NANOS) => (false, true),
        _ => return Err(format!("not a pcap file (magic 0x{magic_le:08x})")),
    };
    let u32_at = |b: &[u8], at: usize| {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if little {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    };
    let linktype = u32_at(header, 20) & 0x0fff_ffff;
    if linktype != LINKTYPE_ETHERNET {
        return Err(format!("link type {linktype} is not Ethernet (1)"));
    }
    let mut records = Vec::new();
    let mut at = FILE_HEADER_LEN;
    while at < bytes.len() {
        let rh = bytes
            .get(at..at + RECORD_HEADER_LEN)
            .ok_or_else(|| format!("record {} header cut short at byte {at}", records.len() + 1))?;
        let secs = u32_at(rh, 0) as u64;
        let frac = u32_at(rh, 4) as u64;
        let caplen = u32_at(rh, 8);
        let orig_len = u32_at(rh, 12);
        if caplen > SNAPLEN {
            return Err(format!(
                "record {} claims {caplen} bytes (more than {SNAPLEN})",
                records.len() + 1
            ));
        }
        let start = at + RECORD_HEADER_LEN;
        let data = bytes.get(start..start + caplen as usize).ok_or_else(|| {
            format!(
                "record {} data cut short at byte {start}",
                records.len() + 1
            )
        })?;
        records.push(Record {
            timestamp_ns: secs * 1_000_000_000 + if nanos { frac } else { frac * 1000 },
            orig_len: orig_len.max(caplen),
            data: data.to_vec(),
        });
        at = start + caplen as usize;
    }
    Ok(records)
}

/// Writes a pcap file, little-endian, Ethernet link type: microsecond timestamps (`new`,
/// `create`), or nanosecond ones (`new_nanos`, magic 0xa1b23c4d, which tcpdump and tshark read).
pub struct Writer<W: Write> {
    out: W,
    nanos: bool,
}

impl Writer<BufWriter<File>> {
    pub fn create(path: &Path) -> io::Result<Self> {
        let f = File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Writer::new(BufWriter::new(f))
    }
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> io::Result<Self> {
        Writer::with_header(out, false, SNAPLEN)
    }

    /// Nanosecond timestamps; `snaplen` (at most SNAPLEN) goes in the file header.
    pub fn new_nanos(out: W, snaplen: u32) -> io::Result<Self> {
        Writer::with_header(out, true, snaplen.min(SNAPLEN))
    }

    fn with_header(mut out: W, nanos: bool, snaplen: u32) -> io::Result<Self> {
        let magic = if nanos { MAGIC_NANOS } else { MAGIC_MICROS };
        let mut h = Vec::with_capacity(FILE_HEADER_LEN);
        h.extend_from_slice(&magic.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(Writer { out, nanos })
    }

    /// Append one packet, given as the segments of a buffer chain.
    pub fn write_segments(&mut self, timestamp_ns: u64, segments: &[&[u8]]) -> io::Result<()> {
        let len: usize = segments.iter().map(|s| s.len()).sum();
        self.write_record(timestamp_ns, segments, len as u32)
    }

    /// Append one packet that may have been cut: `segments` hold the bytes kept, `orig_len`
    /// is its length on the wire (never less than what was kept).
    pub fn write_record(
        &mut self,
        timestamp_ns: u64,
        segments: &[&[u8]],
        orig_len: u32,
    ) -> io::Result<()> {
        let caplen: usize = segments.iter().map(|s| s.len()).sum();
        let fraction = if self.nanos {
            timestamp_ns % 1_000_000_000
        } else {
            timestamp_ns % 1_000_000_000 / 1000
        };
        let mut rh = [0u8; RECORD_HEADER_LEN];
        rh[0..4].copy_from_slice(&((timestamp_ns / 1_000_000_000) as u32).to_le_bytes());
        rh[4..8].copy_from_slice(&(fraction as u32).to_le_bytes());
        rh[8..12].copy_from_slice(&(caplen as u32).to_le_bytes());
        rh[12..16].copy_from_slice(&orig_len.max(caplen as u32).to_le_bytes());
        self.out.write_all(&rh)?;
        for s in segments {
            self.out.write_all(s)?;
        }
        Ok(())
    }

    pub fn write(&mut self, timestamp_ns: u64, data: &[u8]) -> io::Result<()> {
        self.write_segments(timestamp_ns, &[data])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trip() {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.write(1_500_000_123_000, &[1, 2, 3]).unwrap();
        w.write_segments(2_000_000_000, &[&[4, 5], &[6]]).unwrap();
        let bytes = w.into_inner();
        assert_eq!(bytes.len(), 24 + 16 + 3 + 16 + 3);
        let r = parse(&bytes).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].data, vec![1, 2, 3]);
        assert_eq!(r[0].timestamp_ns, 1_500_000_123_000);
        assert_eq!(r[1].data, vec![4, 5, 6]);
    }

    #[test]
    fn nanosecond_files_and_cut_records_round_trip() {
        let mut w = Writer::new_nanos(Vec::new(), 96).unwrap();
        w.write_record(1_500_000_123_456, &[&[1, 2], &[3]], 60)
            .unwrap();
        let bytes = w.into_inner();
        assert_eq!(&bytes[16..20], &96u32.to_le_bytes());
        let r = parse(&bytes).unwrap();
        assert_eq!(r[0].timestamp_ns, 1_500_000_123_456);
        assert_eq!(r[0].data, vec![1, 2, 3]);
        assert_eq!(r[0].orig_len, 60);
    }

    #[test]
    fn malformed_files_are_errors_not_panics() {
        assert!(parse(&[]).unwrap_err().contains("too short"));
        assert!(parse(&[0u8; 24]).unwrap_err().contains("not a pcap"));
        let mut w = Writer::new(Vec::new()).unwrap();
        w.write(0, &[9; 40]).unwrap();
        let bytes = w.into_inner();
        assert!(parse(&bytes[..bytes.len() - 1])
            .unwrap_err()
            .contains("cut short"));
        assert!(parse(&bytes[..30])
            .unwrap_err()
            .contains("header cut short"));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut bytes = Writer::new(Vec::new()).unwrap().into_inner();
            bytes.extend_from_slice(&tail);
            let _ = parse(&bytes);
        }
    }
}
