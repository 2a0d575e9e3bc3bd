//! One DPDK port: found by its devargs' name, configured with a receive queue per worker
//! and a transmit queue per thread, started, and stopped and closed when the last of its
//! queues goes away. Its link, counters and extended counters feed `show interface` and
//! `show hardware`.

use super::eal;
use super::ffi;
use crate::drivers::LiveStatus;
use std::ffi::{c_char, CString};

pub struct Port {
    pub id: u16,
    /// Transmit queues configured: one a thread, or fewer when the device has fewer (the
    /// threads then share them, each behind a lock).
    pub tx_queues: u16,
    pub mac: [u8; 6],
    pub info: Vec<(String, String)>,
}

/// A port's basic counters (`rte_eth_stats`).
pub struct Stats {
    pub received: u64,
    pub sent: u64,
    pub missed: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub no_mbuf: u64,
}

/// Offload bits of `rte_ethdev.h` that `show hardware` names.
const RX_OFFLOADS: [(u64, &str); 6] = [
    (1 << 1, "ipv4-cksum"),
    (1 << 2, "udp-cksum"),
    (1 << 3, "tcp-cksum"),
    (1 << 4, "tcp-lro"),
    (1 << 9, "vlan-strip"),
    (1 << 13, "scatter"),
];
const TX_OFFLOADS: [(u64, &str); 5] = [
    (1 << 1, "ipv4-cksum"),
    (1 << 2, "udp-cksum"),
    (1 << 3, "tcp-cksum"),
    (1 << 5, "tcp-tso"),
    (1 << 15, "multi-segs"),
];

fn names(bits: u64, table: &[(u64, &str)]) -> String {
    let v: Vec<&str> = table
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

pub struct Setup<'a> {
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub mtu: u32,
    pub rss_key: &'a [u8],
    pub pools: Vec<*mut ffi::Mempool>,
}

impl Port {
    /// Find the port `devargs` named at EAL start-up and start it as `s` says.
    pub fn start(devargs: &str, s: &Setup<'_>) -> Result<Port, String> {
        let name = eal::port_name(devargs);
        let cname = CString::new(name.clone()).map_err(|e| e.to_string())?;
        let mut id = 0u16;
        // SAFETY: a valid C string and a u16 to write to.
        if unsafe { ffi::sd_port_find(cname.as_ptr(), &mut id) } != 0 {
            return Err(format!(
                "DPDK has no port '{name}' (devargs '{devargs}': is the PMD installed, the \
                 device bound to vfio-pci?)"
            ));
        }
        // SAFETY: all-zero bytes are a valid PortInfo (integers and a char array).
        let mut info: ffi::PortInfo = unsafe { std::mem::zeroed() };
        // SAFETY: `id` is a port DPDK knows; `info` is ours to fill.
        if unsafe { ffi::sd_port_info(id, &mut info) } != 0 {
            return Err(format!("DPDK port '{name}': no device information"));
        }
        let driver = ffi::text(&info.driver);
        if s.rx_queues > info.max_rx_queues || info.max_tx_queues == 0 {
            return Err(format!(
                "DPDK port '{name}' ({driver}) has {} rx and {} tx queues; sluice needs {} rx \
                 (one a worker) and at least one tx",
                info.max_rx_queues, info.max_tx_queues, s.rx_queues
            ));
        }
        let tx_queues = s.tx_queues.min(info.max_tx_queues);
        let dma = if eal::is_pci(devargs) {
            dma_map(id)?
        } else {
            "a virtual device: no DMA mapping"
        };
        let conf = ffi::PortConf {
            rx_queues: s.rx_queues,
            tx_queues,
            rx_desc: s.rx_desc,
            tx_desc: s.tx_desc,
            mtu: s.mtu,
            promisc: 1,
            rss_key: s.rss_key.as_ptr(),
            rss_key_len: s.rss_key.len() as u8,
        };
        let mut err = ffi::err_buf();
        // SAFETY: `conf` points at `rss_key`, alive for the call; `pools` holds one live
        // mempool per receive queue, as the shim reads them.
        let rc =
            unsafe { ffi::sd_port_start(id, &conf, s.pools.as_ptr(), err.as_mut_ptr(), err.len()) };
        if rc != 0 {
            // SAFETY: the port exists; stopping and closing a half-set-up port is allowed.
            unsafe { ffi::sd_port_stop(id) };
            return Err(format!(
                "DPDK port '{name}' ({driver}): {}",
                ffi::text(&err)
            ));
        }
        let rss = if s.rx_queues > 1 && info.rss_hf != 0 {
            format!("on, {} queues, sluice's Toeplitz key", s.rx_queues)
        } else if s.rx_queues > 1 {
            "not offered by the device".into()
        } else {
            "off (one receive queue)".into()
        };
        let details = vec![
            ("pmd".into(), driver.clone()),
            ("devargs".into(), devargs.to_string()),
            ("port-id".into(), id.to_string()),
            (
                "queues".into(),
                if tx_queues < s.tx_queues {
                    format!(
                        "{} rx ({} descriptors), {} tx ({} descriptors) shared by {} threads \
                         behind a lock",
                        s.rx_queues, s.rx_desc, tx_queues, s.tx_desc, s.tx_queues
                    )
                } else {
                    format!(
                        "{} rx ({} descriptors), {} tx ({} descriptors)",
                        s.rx_queues, s.rx_desc, tx_queues, s.tx_desc
                    )
                },
            ),
            ("rss".into(), rss),
            (
                "rx-offloads".into(),
                format!(
                    "offered: {}; used: none",
                    names(info.rx_offload_capa, &RX_OFFLOADS)
                ),
            ),
            (
                "tx-offloads".into(),
                format!(
                    "offered: {}; used: {}",
                    names(info.tx_offload_capa, &TX_OFFLOADS),
                    if info.tx_offload_capa & (1 << 15) != 0 {
                        "multi-segs"
                    } else {
                        "none"
                    }
                ),
            ),
            (
                "buffers".into(),
                format!("zero copy: each mbuf is the header in a sluice buffer's headroom; {dma}"),
            ),
        ];
        Ok(Port {
            id,
            tx_queues,
            mac: info.mac,
            info: details,
        })
    }

    pub fn stats(&self) -> Option<Stats> {
        let mut v = [0u64; 6];
        // SAFETY: the port is open; `v` has the six values the shim writes.
        (unsafe { ffi::sd_port_stats(self.id, v.as_mut_ptr()) } == 0).then_some(Stats {
            received: v[0],
            sent: v[1],
            missed: v[2],
            rx_errors: v[3],
            tx_errors: v[4],
            no_mbuf: v[5],
        })
    }

    /// Extended counters, zeros included.
    pub fn xstats(&self) -> Vec<(String, u64)> {
        const MAX: usize = 512;
        let mut names = vec![[0 as c_char; 64]; MAX];
        let mut values = vec![0u64; MAX];
        // SAFETY: the arrays hold MAX entries, the bound passed; the port is open.
        let n = unsafe {
            ffi::sd_port_xstats(self.id, names.as_mut_ptr(), values.as_mut_ptr(), MAX as u32)
        };
        if n <= 0 {
            return Vec::new();
        }
        (0..(n as usize).min(MAX))
            .map(|i| (ffi::text(&names[i]), values[i]))
            .collect()
    }

    /// Link up, speed in Mb/s, full duplex.
    pub fn link(&self) -> (bool, u32, bool) {
        let (mut speed, mut duplex) = (0u32, 0);
        // SAFETY: the port is open; the two values are ours to write.
        let up = unsafe { ffi::sd_port_link(self.id, &mut speed, &mut duplex) } == 1;
        (up, speed, duplex == 1)
    }
}

/// Map sluice's buffer region for the port's device to DMA into (IOVA = VA); what was done,
/// for `show hardware`.
fn dma_map(id: u16) -> Result<&'static str, String> {
    let e = eal::get()?;
    let region = e.buffers().region();
    let page = if region.huge_pages() { 2 << 20 } else { 4096 };
    let mut err = ffi::err_buf();
    // SAFETY: the region is the pool's mapping, alive for the rest of the process (EAL holds
    // the pool); the port exists; the error buffer is ours.
    let rc = unsafe {
        ffi::sd_port_dma_map(
            id,
            region.ptr().cast(),
            region.len() as u64,
            page,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    match rc {
        0 => Ok("the buffer region is mapped for the device's DMA (IOVA = VA)"),
        1 => Ok("no DMA mapping (a virtual device)"),
        _ => Err(format!("DPDK port {id}: {}", ffi::text(&err))),
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: no queue of this port is in use (each holds an Arc of it, and this is the
        // last); stopping returns the mbufs on its rings to their pools.
        unsafe { ffi::sd_port_stop(self.id) };
        if let Ok(e) = eal::get() {
            e.port_closed();
        }
    }
}

impl LiveStatus for Port {
    fn link_up(&self) -> bool {
        self.link().0
    }

    fn details(&self) -> Vec<(String, String)> {
        let (up, speed, full) = self.link();
        let mut d = self.info.clone();
        d.push((
            "link".into(),
            if up {
                format!(
                    "up, {speed} Mb/s, {} duplex",
                    if full { "full" } else { "half" }
                )
            } else {
                "down".into()
            },
        ));
        if let Some(s) = self.stats() {
            d.push((
                "port-counters".into(),
                format!(
                    "received {}, sent {}, missed {}, rx errors {}, tx errors {}, no mbuf {}",
                    s.received, s.sent, s.missed, s.rx_errors, s.tx_errors, s.no_mbuf
                ),
            ));
        }
        for (n, v) in self.xstats().into_iter().filter(|x| x.1 != 0) {
            d.push((format!("xstat {n}"), v.to_string()));
        }
        d
    }

    fn device_counters(&self) -> Vec<(String, u64)> {
        self.xstats()
    }
}

#[cfg(test)]
mod tests {
    use super::ffi;
    use crate::rss::{Toeplitz, STANDARD_KEY};
    use std::net::Ipv4Addr;

    /// The key sluice gives a port's RSS, hashed by DPDK's reference Toeplitz and by sluice's
    /// software one: a NIC that spreads by it puts a flow where sluice's hash says.
    #[test]
    fn dpdk_and_sluice_hash_alike_with_the_ports_key() {
        let soft = Toeplitz::new(&STANDARD_KEY);
        for i in 0..1000u32 {
            let src = Ipv4Addr::from(0xc612_0000 ^ i.wrapping_mul(2_654_435_761));
            let dst = Ipv4Addr::from(0xc613_0001u32.wrapping_add(i * 7));
            let (sport, dport) = ((1024 + i * 13) as u16, (80 + i) as u16);
            let words = [
                u32::from(src),
                u32::from(dst),
                (sport as u32) << 16 | dport as u32,
            ];
            // SAFETY: three words and a 40-byte key, as rte_softrss reads them.
            let (with_ports, addresses) = unsafe {
                (
                    ffi::sd_softrss(words.as_ptr(), 3, STANDARD_KEY.as_ptr()),
                    ffi::sd_softrss(words.as_ptr(), 2, STANDARD_KEY.as_ptr()),
                )
            };
            assert_eq!(
                with_ports,
                soft.v4_ports(src, dst, sport, dport),
                "{src} {dst}"
            );
            assert_eq!(addresses, soft.v4(src, dst), "{src} {dst}");
        }
    }
}
