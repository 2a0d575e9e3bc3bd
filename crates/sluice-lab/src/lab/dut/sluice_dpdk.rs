//! `sluice-dpdk`: sluice cross-connecting d0 and d1 with its dpdk driver, through DPDK's
//! net_af_xdp or net_af_packet PMD on the veths (`sluice_config` writes each port's devargs).

use super::sluice::{start, Forwarding};
use super::DutSpec;
use crate::gen::port::Io;

/// `sluice-dpdk`: sluice's dpdk driver on the veths, through DPDK's net_af_xdp PMD (`--io
/// af_xdp`, its UMEM is sluice's buffer region) or its net_af_packet PMD (`--io af_packet`).
pub const DPDK_DUT: DutSpec = DutSpec {
    io: &[Io::AfPacket, Io::AfXdp, Io::DpdkNull],
    unavailable: || {
        (!::sluice::drivers::dpdk::BUILT).then(|| ::sluice::drivers::dpdk::NOT_BUILT.into())
    },
    ..DutSpec::new("sluice-dpdk", |s| {
        let how = Forwarding::Xconnect(&[]);
        Ok(Box::new(start(
            s.dut_cpu,
            (s.io, Some("dpdk"), s.null_frame),
            how,
        )?))
    })
};

/// Port `k`'s devargs line: net_null (no generator), else DPDK's net_af_xdp or net_af_packet
/// on veth dK. net_af_xdp without busy polling: its default makes a system call on every
/// empty poll, which doubled dpdk-input's clocks a packet on the veths.
pub fn devargs(io: Io, k: usize, null_frame: Option<usize>) -> String {
    let port = match io {
        Io::DpdkNull => super::null_devargs(k, null_frame),
        Io::AfXdp => format!("net_af_xdp{k},iface=d{k},busy_budget=0"),
        _ => format!("net_af_packet{k},iface=d{k}"),
    };
    format!("devargs = \"{port}\"\n")
}

/// sluice's `[dpdk]` lines for its `driver` on `io`: over net_af_xdp, rings as large as sluice's
/// own af_xdp driver's (2048 entries), so that the two drivers are compared on the same rings.
pub fn section(driver: &str, io: Io) -> String {
    match (driver, io) {
        ("dpdk", Io::AfXdp) => format!(
            "[dpdk]\nrx-descriptors = {n}\ntx-descriptors = {n}\n",
            n = ::sluice::drivers::af_xdp::DEFAULT_RING_SIZE
        ),
        _ => String::new(),
    }
}
