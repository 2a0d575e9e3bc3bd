//! `sluice-xdp`: sluice cross-connecting d0 and d1 over AF_XDP with the XDP fast path on
//! (docs/xdp-fastpath.md).

use super::sluice::{start, Forwarding};
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
            (Io::AfXdp, Some(FAST_PATH)),
            how,
        )?))
    })
};

/// The forced driver that means af_xdp with `fast-path = "on"`.
pub const FAST_PATH: &str = "af_xdp+fast-path";
