//! The dpdk driver: any port DPDK drives (a NIC bound to vfio-pci, or one of DPDK's virtual
//! devices: net_null, net_ring, net_pcap, net_memif, net_af_packet, net_af_xdp), named by
//! its devargs. Zero copy in VPP's manner: DPDK's mbufs are headers inside sluice's own
//! buffers and its mempools get and put sluice's buffers (`stock.rs`; shim.c shows the
//! layout), so a received frame is the buffer the graph processes and the buffer sent.
//!
//! Built only where `pkg-config libdpdk` finds DPDK (build.rs); elsewhere `driver = "dpdk"`
//! is refused at start with how to get it.

pub mod config;
#[cfg(sluice_dpdk)]
mod eal;
#[cfg(sluice_dpdk)]
mod ffi;
#[cfg(sluice_dpdk)]
mod patch;
#[cfg(sluice_dpdk)]
mod port;
#[cfg(sluice_dpdk)]
mod queues;
#[cfg(sluice_dpdk)]
mod stock;
#[cfg(all(test, sluice_dpdk))]
mod zero_copy_tests;

use super::DriverPorts;
use crate::buffer::BufferPool;
use std::sync::Arc;

/// Whether this binary has the driver.
pub const BUILT: bool = cfg!(sluice_dpdk);

/// Why a binary without the driver refuses a dpdk interface.
pub const NOT_BUILT: &str = "this sluice was built without DPDK: install DPDK's development \
    files (Debian: apt-get install dpdk-dev, so that `pkg-config libdpdk` finds them) and \
    build again";

/// Descriptors of each receive and transmit queue unless `[dpdk]` says otherwise (the port
/// may round them to what it supports).
pub const DEFAULT_DESCRIPTORS: u16 = 1024;

/// A dpdk interface as configured.
#[derive(Clone, Debug)]
pub struct DpdkConfig {
    pub devargs: String,
    pub mtu: Option<u32>,
    pub workers: usize,
    pub rx_desc: u16,
    pub tx_desc: u16,
    /// Whether the cross-connect patch may send on its transmit queues.
    pub patch: bool,
}

/// Start DPDK for `devices` (every dpdk interface's devargs) with the operator's extra EAL
/// arguments, once per process, before the first dpdk interface opens.
pub fn start(devices: &[String], extra: &[String], pool: &Arc<BufferPool>) -> Result<(), String> {
    #[cfg(sluice_dpdk)]
    return eal::start(devices, extra, pool);
    #[cfg(not(sluice_dpdk))]
    {
        let _ = (devices, extra, pool);
        Err(NOT_BUILT.into())
    }
}

/// Open one dpdk interface: one receive queue a worker, one transmit queue a thread.
pub fn open(cfg: &DpdkConfig) -> Result<DriverPorts, String> {
    #[cfg(sluice_dpdk)]
    return open_port(cfg);
    #[cfg(not(sluice_dpdk))]
    {
        let _ = cfg;
        Err(NOT_BUILT.into())
    }
}

#[cfg(sluice_dpdk)]
fn open_port(cfg: &DpdkConfig) -> Result<DriverPorts, String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    /// The first rx queue opened reports the buffers lent to DPDK, for the whole process.
    static REPORTER: AtomicBool = AtomicBool::new(false);
    let e = eal::get()?;
    let threads = cfg.workers + 1;
    let pools = (0..threads)
        .map(|q| e.pool(q))
        .collect::<Result<Vec<_>, _>>()?;
    // Enough in each receive pool's stock for the port to fill its rings at start.
    let mut handle = e.buffers().worker_handle();
    for p in &pools[..cfg.workers] {
        let want = cfg.rx_desc as usize + 2 * stock::CACHE as usize;
        if p.lend(&mut handle, want) < want {
            return Err(format!(
                "the buffer pool has too few free buffers for {} descriptors a queue \
                 (raise buffers in [dataplane])",
                cfg.rx_desc
            ));
        }
    }
    drop(handle);
    let mtu = cfg.mtu.unwrap_or(1500);
    // A memif peer (VPP, testpmd) has as many rings each way as it was given queues, and
    // DPDK's net_memif refuses a ring its server lacks: one transmit queue a worker, so both
    // ways match, the main thread sharing a worker's behind its lock.
    let memif = cfg.devargs.starts_with("net_memif");
    let setup = port::Setup {
        rx_queues: cfg.workers as u16,
        tx_queues: if memif { cfg.workers } else { threads } as u16,
        rx_desc: cfg.rx_desc,
        tx_desc: cfg.tx_desc,
        mtu,
        rss_key: &crate::rss::STANDARD_KEY,
        pools: pools[..cfg.workers].iter().map(|p| p.mp).collect(),
    };
    let port = Arc::new(port::Port::start(&cfg.devargs, &setup)?);
    e.port_opened();
    let mut rx: Vec<Box<dyn super::RxQueue>> = Vec::new();
    for (q, p) in pools[..cfg.workers].iter().enumerate() {
        let mut queue = queues::DpdkRx::new(port.clone(), q as u16, p.clone());
        queue.reports_lent = !REPORTER.swap(true, Ordering::Relaxed);
        rx.push(Box::new(queue));
    }
    let max_frame = mtu as usize + 18;
    // Fewer DPDK tx queues than threads: thread t sends on queue t mod n, behind its lock.
    let n = port.tx_queues as usize;
    let locks: Vec<Option<Arc<std::sync::Mutex<()>>>> = (0..n)
        .map(|_| (n < threads).then(|| Arc::new(std::sync::Mutex::new(()))))
        .collect();
    let tx: Vec<Box<dyn super::TxQueue>> = pools
        .iter()
        .enumerate()
        .map(|(t, p)| {
            let q = ((t % n) as u16, locks[t % n].clone());
            let mut queue = queues::DpdkTx::new(port.clone(), q, p.clone(), max_frame);
            queue.patch = cfg.patch;
            Box::new(queue) as Box<dyn super::TxQueue>
        })
        .collect();
    let details = vec![("dpdk".into(), eal::version())];
    Ok(DriverPorts {
        rx,
        tx,
        mtu,
        details,
        restore: Vec::new(),
        mac: Some(port.mac),
        live: Some(port),
    })
}
