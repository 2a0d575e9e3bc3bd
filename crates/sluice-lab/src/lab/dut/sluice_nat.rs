//! `sluice-nat`: sluice-router (addresses, routes, its own ARP) with NAT44 between d0
//! (inside) and d1 (outside), translating to the lab's pool (`plan::NAT_POOL`) as
//! `linux-nat` does. Its row's sessions are `show nat44 summary`'s. `sluice-nat-xdp` is the
//! same on AF_XDP ports with the XDP fast path on: sessions the graph has translated are
//! translated by sluice's XDP program.

use super::sluice::{start_router, Sluice};
use super::sluice_xdp::FAST_PATH;
use super::{Dut, DutSpec};
use crate::gen::frame::Family;
use crate::gen::port::Io;
use serde_json::Value;

/// `sluice-nat`: sluice routing between d0 and d1, NAT44 out of d1.
pub const NAT_DUT: DutSpec = DutSpec {
    routes: true,
    translates: true,
    ..DutSpec::new("sluice-nat", |s| {
        Ok(Box::new(start_nat(s.dut_cpu, (s.io, None), s.family)?))
    })
};

/// `sluice-nat-xdp`: sluice-nat with the XDP fast path on (AF_XDP ports, as sluice-xdp).
pub const NAT_FAST_PATH_DUT: DutSpec = DutSpec {
    routes: true,
    translates: true,
    io: &[Io::AfXdp],
    ..DutSpec::new("sluice-nat-xdp", |s| {
        let io = (Io::AfXdp, Some(FAST_PATH));
        Ok(Box::new(start_nat(s.dut_cpu, io, s.family)?))
    })
};

/// A running sluice-nat.
pub struct SluiceNat {
    router: Sluice,
}

/// sluice-router, then the pool, d0 inside and d1 outside.
pub fn start_nat(
    dut_cpu: usize,
    io: (Io, Option<&'static str>),
    family: Family,
) -> Result<SluiceNat, String> {
    if family != Family::Ipv4 {
        return Err("sluice-nat translates IPv4 (NAT44): no --family ipv6".into());
    }
    let router = start_router(dut_cpu, io, None, (None, None, false))?;
    let pool = format!("nat44 add address {}", crate::lab::plan::NAT_POOL);
    for line in [
        &pool,
        "set interface nat44 in d0",
        "set interface nat44 out d1",
    ] {
        router
            .ctl(line)
            .ok_or_else(|| format!("sluice-nat refused '{line}'"))?;
    }
    Ok(SluiceNat { router })
}

impl Dut for SluiceNat {
    fn ctl(&self, line: &str) -> Option<String> {
        self.router.ctl(line)
    }

    fn gen_args(&self) -> Vec<String> {
        let mut a = self.router.gen_args();
        // Frames reach t1 from d1's address and a port the NAT chose.
        a.push("--translated".into());
        a
    }

    fn table_load_s(&self) -> Option<f64> {
        self.router.table_load_s()
    }

    fn convergence(&self) -> Option<Value> {
        self.router.convergence()
    }

    fn stop(&mut self) {
        self.router.stop();
    }
}
