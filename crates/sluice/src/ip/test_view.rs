//! The router the IPv4 and IPv6 node tests run against (`ip4::rewrite::test_support`,
//! `ip6::input::test_support`): three interfaces, one adjacency of each kind leaving by if1,
//! and a few neighbours. Each family gives its addresses; the shape is the same.

use crate::router::adjacency::{ethernet_rewrite, AdjKind, Adjacency, L3Interface, L3View};
use crate::wire::MacAddress;
use std::net::IpAddr;

pub const HOST_MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 0xaa]);
pub const NEIGHBOR_MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 0xbb]);
pub const GLEANED_MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 0xcc]);

/// Interface k has MAC 02:00:00:00:01:k.
pub fn if_mac(k: u8) -> MacAddress {
    MacAddress([2, 0, 0, 0, 1, k])
}

/// Adjacency indices of `view`.
pub const ADJ_COMPLETE: u32 = 2;
pub const ADJ_GLEAN: u32 = 3;
pub const ADJ_INCOMPLETE: u32 = 4;
pub const ADJ_SMALL_MTU: u32 = 5;

/// What a family puts into the test view.
pub struct Addresses {
    /// Gives interface k its addresses (if2 gets none).
    pub address: fn(u8, &mut L3Interface),
    /// On if1: the complete neighbour, the one incomplete in its adjacency but in the
    /// neighbour table, and a gleaned host (in the table too).
    pub neighbor: IpAddr,
    pub incomplete: IpAddr,
    pub gleaned: IpAddr,
    /// The MTU of `ADJ_SMALL_MTU` (to `neighbor`).
    pub small_mtu: u32,
    pub ethertype: u16,
}

/// if0 and if1 with addresses, if2 without; the drop and local adjacencies, then one
/// adjacency of each kind (`ADJ_*`) leaving by if1.
pub fn view(a: &Addresses) -> L3View {
    let interfaces = (0..3u8)
        .map(|k| {
            let mut itf = L3Interface {
                mac: if_mac(k),
                mtu: 1500,
                // The glean adjacency leaves by if1.
                glean: if k == 1 { ADJ_GLEAN } else { 0 },
                ..Default::default()
            };
            if k < 2 {
                (a.address)(k, &mut itf);
            }
            itf
        })
        .collect();
    let mut v = L3View::new(interfaces);
    let neighbor = |next_hop: IpAddr, complete: bool, mtu: u32| Adjacency {
        kind: AdjKind::Neighbor,
        interface: 1,
        next_hop,
        complete,
        rewrite: if complete {
            ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), a.ethertype)
        } else {
            [0; 14]
        },
        mtu,
        ..Adjacency::simple(AdjKind::Neighbor)
    };
    v.adjs.push(neighbor(a.neighbor, true, 1500));
    v.adjs.push(Adjacency {
        interface: 1,
        mtu: 1500,
        ..Adjacency::simple(AdjKind::Glean)
    });
    v.adjs.push(neighbor(a.incomplete, false, 1500));
    v.adjs.push(neighbor(a.neighbor, true, a.small_mtu));
    v.neighbors.insert((1, a.incomplete), NEIGHBOR_MAC);
    v.neighbors.insert((1, a.gleaned), GLEANED_MAC);
    v
}

/// `f` with an 802.1Q tag (VLAN 100) after the MAC addresses.
pub fn tagged(f: &[u8]) -> Vec<u8> {
    let mut t = f[..12].to_vec();
    t.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
    t.extend_from_slice(&f[12..]);
    t
}
