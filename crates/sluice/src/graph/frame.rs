//! Frames: vectors of up to 256 buffer indices, the unit of work between nodes.

/// Most packets a frame carries (VPP's frame size).
pub const FRAME_SIZE: usize = 256;

/// A fixed-capacity vector of buffer indices. Frames are allocated when a graph is built and
/// reused forever after; nothing is allocated per packet or per batch.
pub struct Frame {
    len: usize,
    buffers: Box<[u32; FRAME_SIZE]>,
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            len: 0,
            buffers: Box::new([0; FRAME_SIZE]),
        }
    }
}

impl Frame {
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len == FRAME_SIZE
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room left in this frame.
    #[inline(always)]
    pub fn room(&self) -> usize {
        FRAME_SIZE - self.len
    }

    /// Append one index; the caller checks `is_full` first.
    #[inline(always)]
    pub fn push(&mut self, bi: u32) {
        self.buffers[self.len] = bi;
        self.len += 1;
    }

    /// Append as many of `bis` as fit; returns how many did.
    #[inline(always)]
    pub fn extend(&mut self, bis: &[u32]) -> usize {
        let n = bis.len().min(self.room());
        self.buffers[self.len..self.len + n].copy_from_slice(&bis[..n]);
        self.len += n;
        n
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.buffers[..self.len]
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extend_stops_at_capacity() {
        let mut f = Frame::default();
        let many: Vec<u32> = (0..300).collect();
        assert_eq!(f.extend(&many), FRAME_SIZE);
        assert!(f.is_full());
        assert_eq!(f.extend(&many), 0);
        assert_eq!(f.as_slice()[255], 255);
    }
}
