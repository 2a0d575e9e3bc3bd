//! Zero copy, shown on DPDK's net_ring device (a port whose transmit ring is its receive
//! ring): a buffer sent is the very buffer received, its bytes never copied, and every buffer
//! lent to DPDK comes back, also from a port closed with frames on its rings. One test: DPDK
//! starts once per process.

use super::{open, start, DpdkConfig, DriverPorts};
use crate::buffer::{BufferMeta, BufferPool, HugePages, WorkerBuffers};
use std::sync::Arc;

fn ring(name: &str) -> DriverPorts {
    open(&DpdkConfig {
        devargs: name.into(),
        mtu: None,
        workers: 1,
        rx_desc: 256,
        tx_desc: 256,
        patch: true,
    })
    .unwrap()
}

/// `n` frames of lengths 60, 80, ... 1320 (and round again), each filled with its own byte.
fn frames(bufs: &mut WorkerBuffers, n: u32) -> Vec<u32> {
    (0..n)
        .map(|k| {
            let bi = bufs.alloc_one().unwrap();
            let len = 60 + (k % 64) as usize * 20;
            *bufs.meta_mut(bi) = BufferMeta {
                len: len as u16,
                total_len: len as u32,
                ..BufferMeta::FRESH
            };
            bufs.data_mut(bi).fill(k as u8);
            bi
        })
        .collect()
}

fn all_free(pool: &Arc<BufferPool>) {
    let r = pool.report();
    assert_eq!(r.free_in_pool, r.total, "{r:?}");
}

#[test]
fn sent_buffers_come_back_as_the_received_ones_and_a_closed_port_returns_its_frames() {
    let pool = BufferPool::new(8192, HugePages::Never).unwrap();
    start(&["net_ring0".into(), "net_ring1".into()], &[], &pool).unwrap();
    let mut bufs = pool.worker_handle();

    let mut port = ring("net_ring0");
    let sent = frames(&mut bufs, 64);
    let r = port.tx[0].tx_burst(&mut bufs, &sent);
    assert_eq!((r.sent, r.errors, r.queue_full), (64, 0, 0), "{r:?}");
    let mut out = [0u32; 256];
    let got = port.rx[0].rx_burst(&mut bufs, &mut out);
    // The same buffers, in order: the port moved mbuf pointers, which are sluice's buffers.
    assert_eq!(&out[..got.packets], &sent[..]);
    for (k, &bi) in out[..got.packets].iter().enumerate() {
        let d = bufs.data(bi);
        assert_eq!(d.len(), 60 + k * 20);
        assert!(d.iter().all(|&b| b == k as u8), "frame {k} changed");
        bufs.free(bi);
    }
    drop(port);
    bufs.flush_cache();
    all_free(&pool);

    // Closed with 100 frames still on its ring, never received: all come back.
    let mut port = ring("net_ring1");
    let sent = frames(&mut bufs, 100);
    assert_eq!(port.tx[0].tx_burst(&mut bufs, &sent).sent, 100);
    drop(port);
    bufs.flush_cache();
    all_free(&pool);
}
