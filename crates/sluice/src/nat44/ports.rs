//! A worker's outside ports: each worker owns one slice of 1024-65535 on every outside
//! address, so that the port a reply is sent to names the worker holding its session
//! (`owner`), and no two workers ever hand out the same port.

/// The first port handed out; below it are the well-known ports (RFC 6335's system range).
pub const FIRST: u16 = 1024;
const COUNT: usize = 65536 - FIRST as usize;

/// The slice of ports worker `w` of `workers` owns: `[start, end)`.
pub fn slice(w: usize, workers: usize) -> (u32, u32) {
    let per = COUNT / workers.max(1);
    let start = FIRST as u32 + (w * per) as u32;
    (start, start + per as u32)
}

/// The worker whose slice holds `port` (`None` below `FIRST` or past the last slice).
pub fn owner(port: u16, workers: usize) -> Option<usize> {
    let per = COUNT / workers.max(1);
    let k = (port as usize).checked_sub(FIRST as usize)? / per;
    (k < workers).then_some(k)
}

/// One worker's ports of one outside address and protocol: a bit per port of its slice.
pub struct PortSet {
    start: u32,
    end: u32,
    used: Vec<u64>,
    in_use: usize,
    /// Where the search for a free port goes on from.
    cursor: u32,
}

impl PortSet {
    pub fn new((start, end): (u32, u32), seed: u32) -> PortSet {
        let n = (end - start) as usize;
        PortSet {
            start,
            end,
            used: vec![0; n.div_ceil(64)],
            in_use: 0,
            cursor: seed % (n.max(1) as u32),
        }
    }

    fn bit(&self, port: u16) -> Option<usize> {
        let p = port as u32;
        (p >= self.start && p < self.end).then(|| (p - self.start) as usize)
    }

    pub fn is_free(&self, port: u16) -> bool {
        self.bit(port)
            .is_some_and(|b| self.used[b / 64] & (1 << (b % 64)) == 0)
    }

    /// Take `port` if it is in the slice and free.
    pub fn take(&mut self, port: u16) -> bool {
        match self.bit(port) {
            Some(b) if self.used[b / 64] & (1 << (b % 64)) == 0 => {
                self.used[b / 64] |= 1 << (b % 64);
                self.in_use += 1;
                true
            }
            _ => false,
        }
    }

    /// A free port of the slice, taken; `None` when all are in use. The search starts after
    /// the last port handed out, a word of 64 ports at a time.
    pub fn take_any(&mut self) -> Option<u16> {
        let n = (self.end - self.start) as usize;
        if self.in_use >= n {
            return None;
        }
        let words = self.used.len();
        let first = self.cursor as usize / 64;
        for k in 0..=words {
            let w = (first + k) % words;
            let mut free = !self.used[w];
            // The last word's bits past the slice are not ports.
            if w == words - 1 && !n.is_multiple_of(64) {
                free &= (1u64 << (n % 64)) - 1;
            }
            if free != 0 {
                let b = w * 64 + free.trailing_zeros() as usize;
                self.used[w] |= 1 << (b % 64);
                self.in_use += 1;
                self.cursor = ((b + 1) % n) as u32;
                return Some((self.start as usize + b) as u16);
            }
        }
        None
    }

    pub fn release(&mut self, port: u16) {
        if let Some(b) = self.bit(port) {
            if self.used[b / 64] & (1 << (b % 64)) != 0 {
                self.used[b / 64] &= !(1 << (b % 64));
                self.in_use -= 1;
            }
        }
    }

    pub fn in_use(&self) -> usize {
        self.in_use
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_range_once_and_name_their_owner() {
        for workers in [1, 2, 3, 7] {
            let mut next = FIRST as u32;
            for w in 0..workers {
                let (s, e) = slice(w, workers);
                assert_eq!(s, next);
                assert_eq!(owner(s as u16, workers), Some(w));
                assert_eq!(owner((e - 1) as u16, workers), Some(w));
                next = e;
            }
            assert!(next <= 65536);
        }
        assert_eq!(owner(80, 2), None);
    }

    #[test]
    fn every_port_is_handed_out_once_then_none() {
        let mut p = PortSet::new((1024, 1024 + 130), 77);
        assert!(p.take(1100));
        assert!(!p.take(1100) && !p.take(80));
        let mut got: Vec<u16> = std::iter::from_fn(|| p.take_any()).collect();
        got.push(1100);
        got.sort();
        assert_eq!(got, (1024..1154).collect::<Vec<u16>>());
        assert_eq!(p.take_any(), None);
        p.release(1030);
        assert!(p.is_free(1030));
        assert_eq!(p.take_any(), Some(1030));
        assert_eq!(p.in_use(), 130);
    }
}
