//! Whole packets in buffers: built from bytes, copied out, cloned (flooding).

use super::{WorkerBuffers, DATA_SIZE, FLAG_TRACED, NO_BUFFER, STRIDE};

impl WorkerBuffers {
    /// Build a packet from `bytes`, chaining segments when it is larger than one buffer.
    /// Returns `None` (and allocates nothing) when the pool runs dry.
    pub fn packet_from_bytes(&mut self, bytes: &[u8]) -> Option<u32> {
        let segments = bytes.len().div_ceil(DATA_SIZE).max(1);
        let mut idx = [0u32; 8];
        if segments > idx.len() {
            return None;
        }
        if !self.alloc_all(&mut idx[..segments]) {
            return None;
        }
        for (k, chunk_start) in (0..segments).map(|k| (k, k * DATA_SIZE)) {
            let chunk = &bytes[chunk_start..bytes.len().min(chunk_start + DATA_SIZE)];
            let bi = idx[k];
            let next = if k + 1 < segments {
                idx[k + 1]
            } else {
                NO_BUFFER
            };
            let m = self.meta_mut(bi);
            m.len = chunk.len() as u16;
            m.next = next;
            m.total_len = if k == 0 { bytes.len() as u32 } else { 0 };
            self.data_mut(bi).copy_from_slice(chunk);
        }
        Some(idx[0])
    }

    /// Fill all of `out` with fresh buffers, or allocate nothing and say so.
    fn alloc_all(&mut self, out: &mut [u32]) -> bool {
        let got = self.alloc(out);
        if got < out.len() {
            // Give back what a short allocation did hand out.
            for &bi in &out[..got] {
                self.pool.tags.release(bi, self.id);
                self.cache.push(bi);
            }
            return false;
        }
        true
    }

    /// A copy of packet `bi` in fresh buffers: each segment and its metadata, with the trace
    /// flag cleared (a trace record follows one packet). Flooding sends a copy to each member
    /// but the last, which gets the original. `None`, with nothing allocated, when the pool
    /// runs dry or the chain is longer than a packet can be.
    pub fn clone_packet(&mut self, bi: u32) -> Option<u32> {
        let mut segs = [0u32; 8];
        let mut n = 0;
        let mut seg = bi;
        while seg != NO_BUFFER {
            *segs.get_mut(n)? = seg;
            n += 1;
            seg = self.meta(seg).next;
        }
        let mut copies = [0u32; 8];
        if !self.alloc_all(&mut copies[..n]) {
            return None;
        }
        for k in 0..n {
            let (from, to) = (segs[k], copies[k]);
            let mut m = *self.meta(from);
            m.next = if k + 1 < n { copies[k + 1] } else { NO_BUFFER };
            m.flags &= !FLAG_TRACED;
            *self.meta_mut(to) = m;
            // Through the stack: two buffers of one handle cannot both be borrowed.
            let mut bytes = [0u8; STRIDE];
            let len = self.data(from).len();
            bytes[..len].copy_from_slice(self.data(from));
            self.data_mut(to).copy_from_slice(&bytes[..len]);
        }
        Some(copies[0])
    }

    /// Copy a packet (all its segments) into `out`, replacing its contents.
    pub fn copy_packet(&self, bi: u32, out: &mut Vec<u8>) {
        out.clear();
        let mut seg = bi;
        while seg != NO_BUFFER {
            out.extend_from_slice(self.data(seg));
            seg = self.meta(seg).next;
        }
    }
}
