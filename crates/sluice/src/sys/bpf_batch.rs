//! The map commands that move many entries in one call (BPF_MAP_LOOKUP_BATCH and
//! BPF_MAP_UPDATE_BATCH, Linux 5.6): a hash map of a million entries read one key at a time
//! costs two system calls an entry, seconds in all; in batches it is a few hundred calls.
//!
//! The same contract as `bpf`'s wrappers: each builds the attribute block itself from slices
//! whose lengths it checks against the map's key and value sizes.

use super::bpf::{bpf, invalid, map_delete, map_keys, map_lookup, put_u32, put_u64, BpfMap};
use std::io;
use std::os::fd::AsRawFd;

const BPF_MAP_LOOKUP_BATCH: libc::c_int = 24;
const BPF_MAP_UPDATE_BATCH: libc::c_int = 26;
const BPF_MAP_DELETE_BATCH: libc::c_int = 27;

/// Entries read per call at first (a hash bucket longer than this makes it grow).
const CHUNK: usize = 4096;

/// Entries of one map, laid end to end: key `i` is `keys[i * key_size..]`, alike values.
#[derive(Debug, Default)]
pub struct Entries {
    pub keys: Vec<u8>,
    pub values: Vec<u8>,
    key_size: usize,
    value_size: usize,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.keys.len().checked_div(self.key_size).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each entry's key and value.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.keys
            .chunks_exact(self.key_size.max(1))
            .zip(self.values.chunks_exact(self.value_size.max(1)))
    }
}

/// The batch block: in_batch, out_batch, keys, values, count, map_fd (elem_flags, flags 0).
fn batch_attr(map: &BpfMap, tokens: (u64, u64), keys: u64, values: u64, count: u32) -> [u8; 56] {
    let mut attr = [0u8; 56];
    put_u64(&mut attr, 0, tokens.0);
    put_u64(&mut attr, 8, tokens.1);
    put_u64(&mut attr, 16, keys);
    put_u64(&mut attr, 24, values);
    put_u32(&mut attr, 32, count);
    put_u32(&mut attr, 36, map.fd().as_raw_fd() as u32);
    attr
}

fn count_of(attr: &[u8; 56]) -> usize {
    u32::from_ne_bytes([attr[32], attr[33], attr[34], attr[35]]) as usize
}

/// Every entry of `map` now, at most about `most` (whole batches: a few more may come). A
/// hash map is read in batches; a map whose kind has no batch command (an LPM trie) key by
/// key. Entries added or removed meanwhile may be missed or seen, never torn.
pub fn map_entries(map: &BpfMap, most: usize) -> io::Result<Entries> {
    if map.is_percpu() {
        return Err(invalid(
            "map_entries reads maps that are not per-CPU".into(),
        ));
    }
    let (ks, vs) = (map.key_size as usize, map.value_size as usize);
    let mut out = Entries {
        key_size: ks,
        value_size: vs,
        ..Entries::default()
    };
    let mut chunk = CHUNK;
    // The kernel's position in the map (a hash map's bucket), opaque to us: 8 bytes is
    // room for any kind's.
    let (mut at, mut next) = (0u64, 0u64);
    let mut first = true;
    while out.len() < most {
        let mut keys = vec![0u8; ks * chunk];
        let mut values = vec![0u8; vs * chunk];
        let count = u32::try_from(chunk).map_err(|_| invalid("batch too large".into()))?;
        let in_batch = if first { 0 } else { &at as *const u64 as u64 };
        let out_batch = &mut next as *mut u64 as u64;
        let ptrs = (keys.as_mut_ptr() as u64, values.as_mut_ptr() as u64);
        let mut attr = batch_attr(map, (in_batch, out_batch), ptrs.0, ptrs.1, count);
        // SAFETY: the kernel reads 8 bytes at `at` (or nothing: null on the first call),
        // writes at most 8 at `next`, and writes at most `count` keys of key_size bytes and
        // values of value_size bytes at `keys` and `values`, which are exactly that long
        // (the map is not per-CPU, checked above: its values would be longer). All live
        // until the call returns.
        let rc = unsafe { bpf(BPF_MAP_LOOKUP_BATCH, &mut attr) };
        let n = count_of(&attr).min(chunk);
        match rc {
            Ok(_) => {}
            // The end of the map: `n` entries were still written.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                out.keys.extend_from_slice(&keys[..n * ks]);
                out.values.extend_from_slice(&values[..n * vs]);
                return Ok(out);
            }
            // A bucket holds more than `chunk` entries: again with room for it.
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) && chunk < 1 << 20 => {
                chunk *= 2;
                continue;
            }
            // No batch command for this kind of map: key by key.
            Err(e) if first && unsupported(&e) => return entries_one_by_one(map, most),
            Err(e) => return Err(e),
        }
        out.keys.extend_from_slice(&keys[..n * ks]);
        out.values.extend_from_slice(&values[..n * vs]);
        at = next;
        first = false;
    }
    Ok(out)
}

/// What the kernel answers a batch command a map kind does not have.
fn unsupported(e: &io::Error) -> bool {
    // 524 is the kernel's ENOTSUPP, which it returns to user space here.
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::EOPNOTSUPP | 524)
    )
}

fn entries_one_by_one(map: &BpfMap, most: usize) -> io::Result<Entries> {
    let (ks, vs) = (map.key_size as usize, map.value_size as usize);
    let mut out = Entries {
        key_size: ks,
        value_size: vs,
        ..Entries::default()
    };
    let mut v = vec![0u8; vs];
    for k in map_keys(map, most)? {
        if map_lookup(map, &k, &mut v).is_ok() {
            out.keys.extend_from_slice(&k);
            out.values.extend_from_slice(&v);
        }
    }
    Ok(out)
}

/// Set `map[key] = value` for each pair of `keys` and `values` (laid end to end, as
/// `Entries`), in one call. How many were stored, and the error that stopped the rest (the
/// pair after those stored is the one refused, E2BIG when the map is full).
pub fn map_update_batch(map: &BpfMap, keys: &[u8], values: &[u8]) -> (usize, Option<io::Error>) {
    let (ks, vs) = (map.key_size as usize, map.value_size as usize);
    let n = keys.len() / ks.max(1);
    if ks == 0 || !keys.len().is_multiple_of(ks) || values.len() != n * vs || map.is_percpu() {
        let msg = format!(
            "a batch of {} key bytes and {} value bytes for a map of {ks}-byte keys and \
             {vs}-byte values",
            keys.len(),
            values.len()
        );
        return (0, Some(invalid(msg)));
    }
    if n == 0 {
        return (0, None);
    }
    let Ok(count) = u32::try_from(n) else {
        return (0, Some(invalid("batch too large".into())));
    };
    let mut attr = batch_attr(
        map,
        (0, 0),
        keys.as_ptr() as u64,
        values.as_ptr() as u64,
        count,
    );
    // SAFETY: the kernel reads `count` keys of key_size bytes at `keys` and as many values of
    // value_size bytes at `values` (the map is not per-CPU): both slices are exactly that
    // long (checked above) and live until the call returns.
    match unsafe { bpf(BPF_MAP_UPDATE_BATCH, &mut attr) } {
        Ok(_) => (n, None),
        Err(e) => (count_of(&attr).min(n), Some(e)),
    }
}

/// Delete each of `keys` (laid end to end) from `map`, in as few calls as the kernel allows:
/// how many were deleted. A key the map does not hold is passed over (the kernel stops a
/// batch there); a map kind without the batch command is done key by key.
pub fn map_delete_batch(map: &BpfMap, keys: &[u8]) -> usize {
    let ks = map.key_size as usize;
    if ks == 0 || !keys.len().is_multiple_of(ks) {
        return 0;
    }
    let (mut from, mut deleted) = (0, 0);
    let total = keys.len() / ks;
    while from < total {
        let rest = &keys[from * ks..];
        let count = u32::try_from(total - from).unwrap_or(u32::MAX);
        let mut attr = batch_attr(map, (0, 0), rest.as_ptr() as u64, 0, count);
        // SAFETY: the kernel reads at most `count` keys of key_size bytes at `rest`, which
        // holds exactly `total - from` of them and lives until the call returns; a delete
        // writes no values.
        match unsafe { bpf(BPF_MAP_DELETE_BATCH, &mut attr) } {
            Ok(_) => return deleted + (total - from),
            Err(e) if unsupported(&e) => {
                let one_by_one = rest.chunks(ks).filter(|k| map_delete(map, k).is_ok());
                return deleted + one_by_one.count();
            }
            // The key after those deleted was refused (not in the map): pass it over.
            Err(_) => {
                let n = count_of(&attr).min(total - from);
                deleted += n;
                from += n + 1;
            }
        }
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::bpf::{map_create, map_update, MapKind};

    fn pairs(n: u32) -> (Vec<u8>, Vec<u8>) {
        let keys = (0..n).flat_map(|i| i.to_ne_bytes()).collect();
        let values = (0..n)
            .flat_map(|i| u64::from(i * 3).to_ne_bytes())
            .collect();
        (keys, values)
    }

    #[test]
    fn a_batch_stores_and_reads_back_every_entry_of_a_large_hash_map() {
        let map = map_create(MapKind::SparseHash, 4, 8, 300_000).unwrap();
        let (keys, values) = pairs(250_000);
        let (n, e) = map_update_batch(&map, &keys, &values);
        assert_eq!((n, e.map(|e| e.to_string())), (250_000, None));
        let got = map_entries(&map, usize::MAX).unwrap();
        assert_eq!(got.len(), 250_000);
        let mut seen = vec![false; 250_000];
        for (k, v) in got.iter() {
            let k = u32::from_ne_bytes(k.try_into().unwrap());
            assert_eq!(u64::from_ne_bytes(v.try_into().unwrap()), u64::from(k * 3));
            assert!(
                !std::mem::replace(&mut seen[k as usize], true),
                "key {k} twice"
            );
        }
        // At most about `most`: whole batches, never the whole map.
        let some = map_entries(&map, 10).unwrap().len();
        assert!((10..=CHUNK).contains(&some), "{some}");
    }

    #[test]
    fn a_batch_delete_passes_over_keys_the_map_does_not_hold() {
        let map = map_create(MapKind::SparseHash, 4, 8, 1000).unwrap();
        let (keys, values) = pairs(500);
        assert_eq!(map_update_batch(&map, &keys, &values).0, 500);
        // Every even key of 0..600: 250 held, 50 (500..600) never were.
        let evens: Vec<u8> = (0..600u32)
            .step_by(2)
            .flat_map(|i| i.to_ne_bytes())
            .collect();
        assert_eq!(map_delete_batch(&map, &evens), 250);
        let left = map_entries(&map, usize::MAX).unwrap();
        assert_eq!(left.len(), 250);
        assert!(left
            .iter()
            .all(|(k, _)| u32::from_ne_bytes(k.try_into().unwrap()) % 2 == 1));
        // The same keys again: none is held any more.
        assert_eq!(map_delete_batch(&map, &evens), 0);
    }

    #[test]
    fn a_full_map_stores_what_fits_and_says_why_not_the_rest() {
        let map = map_create(MapKind::Hash, 4, 8, 100).unwrap();
        let (keys, values) = pairs(150);
        let (n, e) = map_update_batch(&map, &keys, &values);
        assert_eq!(n, 100);
        assert_eq!(e.and_then(|e| e.raw_os_error()), Some(libc::E2BIG));
        assert_eq!(map_entries(&map, usize::MAX).unwrap().len(), 100);
        // Sizes that are not the map's are refused before the kernel.
        let (n, e) = map_update_batch(&map, &keys[..6], &values[..8]);
        assert_eq!(n, 0);
        assert!(e.unwrap().to_string().contains("4-byte keys"));
    }

    #[test]
    fn a_trie_without_batch_commands_is_read_key_by_key() {
        let trie = map_create(MapKind::LpmTrie, 8, 4, 64).unwrap();
        let mut keys = Vec::new();
        for i in 0..20u32 {
            let mut k = 32u32.to_ne_bytes().to_vec();
            k.extend_from_slice(&i.to_be_bytes());
            map_update(&trie, &k, &i.to_ne_bytes()).unwrap();
            keys.extend_from_slice(&k);
        }
        assert_eq!(map_entries(&trie, usize::MAX).unwrap().len(), 20);
        assert_eq!(map_delete_batch(&trie, &keys[..10 * 8]), 10);
        assert_eq!(map_entries(&trie, usize::MAX).unwrap().len(), 10);
    }
}
