//! `sluice-xdp`, `sluice-bridge-xdp` and `sluice-router-xdp`: sluice cross-connecting,
//! bridging or routing d0 and d1 over AF_XDP with the XDP fast path on
//! (docs/xdp-fastpath.md).

use super::sluice::{start, start_router, Forwarding};
use super::DutSpec;
use crate::gen::port::Io;

/// `sluice-xdp`: AF_XDP ports with the XDP fast path on: the cross-connect, once the graph
/// has forwarded its first frames, is done by sluice's XDP program in the kernel. The tester
/// uses AF_XDP too: a frame XDP redirects into a veth reaches its peer only when the peer
/// has an XDP program (or GRO on), which the generator's AF_XDP ports have.
pub const XDP_FAST_PATH_DUT: DutSpec = DutSpec {
    takes_vlans: true,
    io: &[Io::AfXdp],
    ..DutSpec::new("sluice-xdp", |s| {
        let how = Forwarding::Xconnect(s.vlans);
        Ok(Box::new(start(
            s.dut_cpu,
            (Io::AfXdp, Some(FAST_PATH), None),
            how,
        )?))
    })
};

/// `sluice-bridge-xdp`: `sluice-bridge` on AF_XDP ports with the XDP fast path on: the
/// frames between two learnt addresses, once the graph has bridged some, are bridged by
/// sluice's XDP program (untagged only: no `--vlan`).
pub const BRIDGE_FAST_PATH_DUT: DutSpec = DutSpec {
    bridges: true,
    io: &[Io::AfXdp],
    ..DutSpec::new("sluice-bridge-xdp", |s| {
        let how = Forwarding::Bridge(s.vlans);
        Ok(Box::new(start(
            s.dut_cpu,
            (Io::AfXdp, Some(FAST_PATH), None),
            how,
        )?))
    })
};

/// `sluice-router-xdp`: `sluice-router` on AF_XDP ports with the XDP fast path on: each
/// destination's frames, once the graph has routed some, are routed by sluice's XDP program
/// (the small table or `--table`; no ACL: an ACL would keep every flow in the graph).
pub const ROUTER_FAST_PATH_DUT: DutSpec = DutSpec {
    routes: true,
    io: &[Io::AfXdp],
    ..DutSpec::new("sluice-router-xdp", |s| {
        let opts = (None, None, s.bird);
        Ok(Box::new(start_router(
            s.dut_cpu,
            (Io::AfXdp, Some(FAST_PATH)),
            s.table,
            opts,
        )?))
    })
};

/// The forced driver that means af_xdp with `fast-path = "on"`.
pub const FAST_PATH: &str = "af_xdp+fast-path";
