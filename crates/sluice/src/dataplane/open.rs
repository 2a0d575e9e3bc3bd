//! Opening one configured interface: its driver's ports, and the `Interface` the rest of
//! the process sees; `driver = "auto"` picks AF_XDP or AF_PACKET here.

use crate::buffer::BufferPool;
use crate::config::{AfXdp, Driver, InterfaceConfig};
use crate::drivers::af_packet::{self, AfPacketConfig};
use crate::drivers::af_xdp::{self, AfXdpConfig};
use crate::drivers::dpdk::config::DpdkSection;
use crate::drivers::dpdk::DpdkConfig;
use crate::drivers::memif::{self, MemifConfig};
use crate::drivers::pcap::{self, PcapConfig, ReplayProgress};
use crate::drivers::DriverPorts;
use crate::interface::Interface;
use std::sync::Arc;

pub(super) struct Opened {
    pub(super) interface: Interface,
    pub(super) ports: DriverPorts,
}

pub(super) fn open_interface(
    cfg: &InterfaceConfig,
    index: u32,
    (workers, dpdk): (usize, &DpdkSection),
    pool: &Arc<BufferPool>,
) -> Result<(Opened, Option<Arc<ReplayProgress>>), String> {
    let name = cfg.name.get_ref();
    let mtu = cfg.mtu;
    let threads = workers + 1;
    let packet_socket = |host: &str, rx_slots: u32| {
        af_packet::open(&AfPacketConfig {
            host: host.to_string(),
            mtu,
            rx_queues: workers,
            tx_queues: threads,
            rx_slots,
        })
    };
    let xdp_socket = |d: &AfXdp| {
        let xdp = AfXdpConfig {
            host: d.host.clone(),
            mtu,
            workers,
            xdp_mode: d.xdp_mode,
            copy_mode: d.copy_mode,
            ring_size: d.ring_size,
            busy_poll: d.busy_poll,
            fast_path: d.fast_path,
            host_neighbours: false,
        };
        af_xdp::open(&xdp, pool)
    };
    let mut driver = cfg.driver.name();
    let opened = match &cfg.driver {
        Driver::AfPacket(d) => packet_socket(&d.host, d.ring_size).map(|ports| (ports, None)),
        Driver::AfXdp(d) => xdp_socket(d).map(|ports| (ports, None)),
        Driver::Auto(d) => {
            auto_open(d, mtu, xdp_socket, packet_socket).map(|(mut ports, chosen, why)| {
                driver = chosen;
                ports.details.insert(0, ("auto".into(), why));
                (ports, None)
            })
        }
        Driver::Memif(d) => memif::open(
            &MemifConfig {
                name: name.clone(),
                socket: d.socket.clone(),
                role: d.role,
                id: d.id,
                secret: d.secret.clone(),
                ring_size: d.ring_size,
                zero_copy: d.zero_copy,
                workers,
                log: true,
            },
            pool,
        )
        .map(|ports| (ports, None)),
        Driver::Pcap(d) => pcap::open(
            &PcapConfig {
                rx_file: d.rx_file.clone(),
                tx_file: d.tx_file.clone(),
                looping: d.looping,
                mtu: mtu.unwrap_or(crate::config::MAX_MTU),
            },
            threads,
        )
        // Only an interface that replays a file has progress to wait for.
        .map(|(ports, progress)| (ports, d.rx_file.is_some().then_some(progress))),
        Driver::Null(_) => Ok((
            crate::drivers::null::open(workers, threads, mtu.unwrap_or(1500)),
            None,
        )),
        Driver::Dpdk(d) => crate::drivers::dpdk::open(&DpdkConfig {
            devargs: d.devargs.clone(),
            mtu,
            workers,
            rx_desc: dpdk.rx_desc,
            tx_desc: dpdk.tx_desc,
            patch: dpdk.patch,
        })
        .map(|ports| (ports, None)),
    };
    let (ports, progress) = opened.map_err(|e| format!("interface {name}: {e}"))?;
    let mut interface = Interface::new(index, name, driver, threads);
    if let Some(host) = cfg.driver.host() {
        if let Ok(mac) = af_packet::netdev::mac(host) {
            interface.mac = crate::wire::MacAddress(mac);
        }
    }
    if let Some(mac) = ports.mac {
        interface.mac = crate::wire::MacAddress(mac);
    }
    interface.mtu = ports.mtu;
    interface.rx_queues = ports.rx.len();
    interface.tx_queues = ports.tx.len();
    interface.details = ports.details.clone();
    interface.live = ports.live.clone();
    if ports.tx.first().is_some_and(|t| t.direct().is_some()) {
        interface.patch = Some(Default::default());
    }
    if let Driver::AfXdp(d) = &cfg.driver {
        if d.fast_path {
            let ifindex = crate::drivers::host_device::index_if_up(&d.host)
                .map_err(|e| format!("interface {name}: {e}"))?;
            let fp = crate::drivers::af_xdp::fastpath::shared()?;
            interface.fast_path = Some(fp.register(ifindex, name, interface.live.clone())?);
        }
    }
    interface.set_up(cfg.up);
    Ok((Opened { interface, ports }, progress))
}

/// `driver = "auto"`: AF_XDP unless the MTU is too large for it or opening it fails, then
/// AF_PACKET. Returns the ports, the driver chosen and why, or both drivers' errors.
fn auto_open(
    d: &AfXdp,
    mtu: Option<u32>,
    xdp: impl FnOnce(&AfXdp) -> Result<DriverPorts, String>,
    packet: impl FnOnce(&str, u32) -> Result<DriverPorts, String>,
) -> Result<(DriverPorts, &'static str, String), String> {
    let refused = match mtu {
        Some(m) if m > af_xdp::MAX_MTU => format!("MTU {m} is above af_xdp's {}", af_xdp::MAX_MTU),
        _ => match xdp(d) {
            Ok(ports) => return Ok((ports, "af_xdp", "chose af_xdp".into())),
            Err(e) => e,
        },
    };
    // ring-size names the af_xdp rings here; the fallback keeps af_packet's own default.
    match packet(&d.host, af_packet::RX_SLOTS) {
        Ok(ports) => Ok((
            ports,
            "af_packet",
            format!("chose af_packet: af_xdp refused: {refused}"),
        )),
        Err(e) => Err(format!("driver auto: af_xdp: {refused}; af_packet: {e}")),
    }
}

/// Start DPDK before the first dpdk interface opens, with every dpdk interface's devargs.
pub(super) fn start_dpdk(
    cfg: &crate::config::Config,
    pool: &Arc<BufferPool>,
) -> Result<(), String> {
    let devices: Vec<String> = cfg
        .interfaces
        .iter()
        .filter_map(|i| match &i.driver {
            Driver::Dpdk(d) => Some(d.devargs.clone()),
            _ => None,
        })
        .collect();
    if devices.is_empty() {
        return Ok(());
    }
    crate::drivers::dpdk::start(&devices, &cfg.dpdk.eal_args, pool)
}
