//! The routers' addressing, documentation and benchmarking ranges only (RFC 5737, 3849,
//! 2544): the DUT's d0 and d1 with the tester's t0 and t1 on the same subnets, the
//! generator's destinations (198.19/16) routed to t1 and its sources (198.18/16) to t0. The
//! router DUTs (`dut/`) and the synthetic tables (`table.rs`) both build on it.

pub const D0_V4: &str = "192.0.2.1/24";
pub const T0_V4: &str = "192.0.2.2";
pub const D1_V4: &str = "198.51.100.1/24";
pub const T1_V4: &str = "198.51.100.2";
/// The NAT DUTs' outside addresses (on d1's network; the answers come by MAC): 32 of them,
/// 2 064 384 ports, room for a million sessions with one port each.
pub const NAT_POOL: &str = "198.51.100.128-198.51.100.159";
pub const D0_V6: &str = "2001:db8::1/64";
pub const T0_V6: &str = "2001:db8::2";
pub const D1_V6: &str = "2001:db8:1::1/64";
pub const T1_V6: &str = "2001:db8:1::2";
/// The generator's destinations (sent t0 → t1).
pub const TO_T1: &str = "198.19.0.0/16";
/// The generator's sources: the reverse direction's destinations.
pub const TO_T0: &str = "198.18.0.0/16";
/// The generator's IPv6 destinations and sources (`sluice gen`'s default prefixes).
pub const TO_T1_V6: &str = "2001:db8:198:19::/64";
pub const TO_T0_V6: &str = "2001:db8:198:18::/64";
/// Length of the IPv4 subnets on both sides.
pub const V4_LEN: &str = "24";
pub const V6_LEN: &str = "64";
