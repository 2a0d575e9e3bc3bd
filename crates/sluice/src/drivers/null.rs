//! The null driver: an interface with no device. Each receive burst fills every buffer the
//! worker offers with a 60-byte frame (64 bytes on a wire with its FCS) of one of `FLOWS`
//! UDP flows in turn (the source port goes round 1024 to 1279, so a flow hash spreads them:
//! `sluice bench graph --handoff`), and the
//! transmit side frees what it is given and counts it as sent. The graph and the workers can
//! then be measured with nothing else in the way: no kernel, no copies but the frame's own,
//! no peer (`sluice bench graph`).

use super::{DriverPorts, RxBurst, RxQueue, TxBurst, TxQueue};
use crate::buffer::WorkerBuffers;

/// The frame every receive makes: unicast from 02:00:00:00:00:01 to
/// 02:00:00:00:00:02, IPv4 UDP from 198.18.0.1:1024 to 198.19.0.1:1024, TTL 64, a valid
/// header checksum, zero payload.
pub fn frame() -> [u8; 60] {
    let mut f = [0u8; 60];
    f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[..12].copy_from_slice(&[0x45, 0, 0, 46, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
    ip[16..20].copy_from_slice(&[198, 19, 0, 1]);
    let sum = crate::wire::ipv4::checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f[34..42].copy_from_slice(&[4, 0, 4, 0, 0, 26, 0, 0]);
    f
}

/// Flows a null queue's frames go round.
pub const FLOWS: u16 = 256;

/// Frame `k` of a null queue: `frame()` with UDP source port 1024 + k mod `FLOWS` (the UDP
/// checksum is 0, unused, so nothing else changes).
pub fn frame_of(base: &[u8; 60], k: u16) -> [u8; 60] {
    let mut f = *base;
    f[34..36].copy_from_slice(&(1024 + k % FLOWS).to_be_bytes());
    f
}

struct NullRx {
    frame: [u8; 60],
    /// The flow of the next frame.
    next: u16,
}

impl RxQueue for NullRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        // With the pool empty fewer frames are made: a null device loses nothing.
        let n = bufs.alloc(out);
        for &bi in &out[..n] {
            let m = bufs.meta_mut(bi);
            m.len = self.frame.len() as u16;
            m.total_len = self.frame.len() as u32;
            let data = bufs.data_mut(bi);
            data.copy_from_slice(&self.frame);
            data[34..36].copy_from_slice(&(1024 + self.next).to_be_bytes());
            self.next = (self.next + 1) % FLOWS;
        }
        RxBurst {
            packets: n,
            bytes: (n * self.frame.len()) as u64,
            ..RxBurst::default()
        }
    }
}

struct NullTx;

impl TxQueue for NullTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        let bytes = pkts.iter().map(|&bi| bufs.packet_len(bi) as u64).sum();
        bufs.free_all(pkts);
        TxBurst {
            sent: pkts.len(),
            bytes,
            ..TxBurst::default()
        }
    }
}

/// A null interface with `rx_queues` receive queues and `tx_queues` transmit queues.
pub fn open(rx_queues: usize, tx_queues: usize, mtu: u32) -> DriverPorts {
    DriverPorts {
        rx: (0..rx_queues)
            .map(|_| {
                Box::new(NullRx {
                    frame: frame(),
                    next: 0,
                }) as Box<dyn RxQueue>
            })
            .collect(),
        tx: (0..tx_queues)
            .map(|_| Box::new(NullTx) as Box<dyn TxQueue>)
            .collect(),
        mtu,
        details: vec![("device".into(), "none (null driver)".into())],
        mac: None,
        restore: Vec::new(),
        live: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};

    #[test]
    fn receive_makes_frames_and_transmit_frees_them() {
        let pool = BufferPool::new(1024, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let mut ports = open(1, 2, 1500);
        let mut out = [0u32; 256];
        let r = ports.rx[0].rx_burst(&mut bufs, &mut out);
        assert_eq!((r.packets, r.bytes), (256, 256 * 60));
        let mut copy = Vec::new();
        bufs.copy_packet(out[7], &mut copy);
        assert_eq!(copy, frame_of(&frame(), 7));
        assert_eq!(&copy[34..36], &1031u16.to_be_bytes());
        assert_eq!(crate::wire::ipv4::checksum(&copy[14..34]), 0);
        // The flows go round: frame 256 is frame 0's flow again.
        bufs.copy_packet(out[0], &mut copy);
        assert_eq!(copy, frame());
        let mut more = [0u32; 256];
        ports.rx[0].rx_burst(&mut bufs, &mut more);
        let mut again = Vec::new();
        bufs.copy_packet(more[0], &mut again);
        assert_eq!(again, frame());
        bufs.free_all(&more);
        let t = ports.tx[1].tx_burst(&mut bufs, &out);
        assert_eq!((t.sent, t.bytes), (256, 256 * 60));
        // Every buffer came back: the pool can give all of them again.
        let mut all = vec![0u32; 1024];
        assert_eq!(bufs.alloc(&mut all), 1024);
        bufs.free_all(&all);
    }

    #[test]
    fn an_empty_pool_makes_fewer_frames() {
        let pool = BufferPool::new(1024, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let mut held = vec![0u32; 1000];
        assert_eq!(bufs.alloc(&mut held), 1000);
        let mut ports = open(1, 1, 1500);
        let mut out = [0u32; 256];
        let r = ports.rx[0].rx_burst(&mut bufs, &mut out);
        assert_eq!(r.packets, 24);
        bufs.free_all(&out[..24]);
        bufs.free_all(&held);
    }
}
