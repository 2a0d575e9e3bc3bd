//! A session's key: a flow the same for both directions.

use super::state::{ICMP, ICMPV6};
use crate::acl::rule::FlowKey;

/// A flow as a session knows it, the same for both directions: side a is the lower
/// (address, port) of the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionKey {
    /// The routing table (VRF) of the interface the ACL checked: tenants with the same
    /// addresses never share a session.
    pub table: u16,
    pub ipv6: bool,
    pub proto: u8,
    pub a: u128,
    pub b: u128,
    pub pa: u16,
    pub pb: u16,
}

impl SessionKey {
    /// The session of `k`'s flow and whether `k` goes from side a to side b; none for a
    /// fragment after the first (no ports: it cannot be told which flow it is part of).
    /// For ICMP (type in `sport`, code in `dport`) a query and its reply share a session:
    /// the query's type stands as its sender's port and the reply's as its receiver's, so
    /// a reply matches the query it answers, and a query the other way does not.
    pub fn of(k: &FlowKey, table: u16) -> Option<(SessionKey, bool)> {
        if k.later_fragment {
            return None;
        }
        let (sp, dp) = match k.proto {
            ICMP | ICMPV6 => match icmp_query(k.proto, k.sport as u8) {
                (query, false) => (query as u16, 0),
                (query, true) => (0, query as u16),
            },
            _ => (k.sport, k.dport),
        };
        let forward = (k.src, sp) <= (k.dst, dp);
        let (a, pa, b, pb) = if forward {
            (k.src, sp, k.dst, dp)
        } else {
            (k.dst, dp, k.src, sp)
        };
        Some((
            SessionKey {
                table,
                ipv6: k.ipv6,
                proto: k.proto,
                a,
                b,
                pa,
                pb,
            },
            forward,
        ))
    }

    pub(super) fn meta(&self) -> u64 {
        self.pa as u64
            | (self.pb as u64) << 16
            | (self.proto as u64) << 32
            | (self.ipv6 as u64) << 40
            | (self.table as u64) << 48
    }

    pub(super) fn hash(&self, seed: u64) -> u64 {
        let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        let mut h = seed;
        for w in [
            self.a as u64,
            (self.a >> 64) as u64,
            self.b as u64,
            (self.b >> 64) as u64,
            self.meta(),
        ] {
            h = mix(h, w);
        }
        h ^ h >> 32
    }
}

/// An ICMP type as (the query it is or answers, whether it is the answer): echo,
/// timestamp, information and address mask for IPv4, echo for ICMPv6. Other types (errors
/// among them) stand for themselves.
pub(super) fn icmp_query(proto: u8, t: u8) -> (u8, bool) {
    let pairs: &[(u8, u8)] = if proto == ICMP {
        &[(8, 0), (13, 14), (15, 16), (17, 18)]
    } else {
        &[(128, 129)]
    };
    for &(q, r) in pairs {
        if t == q {
            return (q, false);
        }
        if t == r {
            return (q, true);
        }
    }
    (t, false)
}
