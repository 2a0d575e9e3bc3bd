//! The fast path's BPF maps, shared by the programs of every interface with the fast path on:
//! the offloaded flows, the epoch, the devmap of egress interfaces and the per-CPU counters.

use crate::nat44::packet::Tuple;
use crate::sys::bpf::{map_create, map_delete, map_lookup_percpu, map_update, BpfMap, MapKind};
use crate::sys::bpf_batch::{map_delete_batch, map_entries, map_update_batch, Entries};

/// Bytes of a flow's key: ingress ifindex (4), kind (2), VLAN (2), address (16).
pub const KEY_LEN: usize = 24;
/// Bytes of a flow's value (`value::*` are the offsets).
pub const VALUE_LEN: usize = 72;
/// A cross-connect: everything received on the ingress interface.
pub const KIND_XCONNECT: u16 = 1;
/// A bridge domain's flow: untagged frames the ingress interface receives from one source
/// MAC to one (learnt, unicast) destination MAC.
pub const KIND_BRIDGE: u16 = 2;
/// An IPv4 route: what the ingress interface receives for the destinations of one prefix
/// (one address, or a whole route the FIB decides alike for every address in it).
pub const KIND_ROUTE4: u16 = 3;
/// An IPv6 route: as `KIND_ROUTE4`, for IPv6 destinations.
pub const KIND_ROUTE6: u16 = 5;
/// A NAT44 session's one direction: what the ingress interface receives of one exact
/// TCP/UDP tuple, routed and translated.
pub const KIND_NAT4: u16 = 4;
/// Bytes of a route's key in the `routes` trie: the prefix length in bits (of the ingress
/// ifindex and the address), the ingress ifindex, the address.
pub const ROUTE_KEY_LEN: usize = 12;
/// Bytes of an IPv6 route's key in the `routes6` trie: as `ROUTE_KEY_LEN`'s, with the
/// 16-byte address.
pub const ROUTE6_KEY_LEN: usize = 24;
/// Bytes of a NAT entry's key in the `nat` map: the ingress ifindex, the source and
/// destination addresses, the ports (network order), the protocol, three zero bytes.
pub const NAT_KEY_LEN: usize = 20;
/// Interfaces the fast path can know (devmap and counter slots).
pub const MAX_SLOTS: u32 = 256;
/// Refused sources at most; with more, routes are not offloaded.
pub const MAX_REFUSED: u32 = 4096;
/// NAT entries at most: both directions of a million sessions and more. The map allocates
/// an entry when it is added (about 150 bytes with the kernel's own), not all up front.
pub const MAX_NAT_ENTRIES: u32 = 1 << 21;

/// The kinds of entry the map that holds `kind`'s entries holds (the flows map: two).
pub fn kinds_in_map_of(kind: u16) -> &'static [u16] {
    match kind {
        KIND_XCONNECT | KIND_BRIDGE => &[KIND_XCONNECT, KIND_BRIDGE],
        KIND_ROUTE4 => &[KIND_ROUTE4],
        KIND_ROUTE6 => &[KIND_ROUTE6],
        _ => &[KIND_NAT4],
    }
}

/// Offsets in a flow's value.
pub mod value {
    /// The epoch the entry was made in (u32).
    pub const EPOCH: i16 = 0;
    /// The egress interface's devmap slot (u32).
    pub const OUT_SLOT: i16 = 4;
    /// The ingress and egress interfaces' counter slots (u16 each).
    pub const IN_STAT: i16 = 8;
    pub const OUT_STAT: i16 = 10;
    /// Routes: the neighbour's use flag in the router's view (u32; the installer's sweep
    /// marks it used while the flow is, as ip4-rewrite does for the graph's packets).
    pub const USE_SLOT: i16 = 12;
    /// Routes: the Ethernet header the graph writes (destination, then source MAC).
    pub const DST_MAC: i16 = 16;
    pub const SRC_MAC: i16 = 22;
    /// Routes: the longest frame the egress sends (its MTU plus the Ethernet header; u16).
    pub const MAX_LEN: i16 = 28;
    /// Routes: the ingress interface's MAC, the only destination MAC routed.
    pub const IN_MAC: i16 = 40;
    /// Frames the program forwarded by the entry (u64; a plain add from every CPU, so a
    /// count of activity, not an exact total: the installer ages entries by its changes).
    pub const HITS: i16 = 32;
    /// NAT: the tuple the frame leaves with (addresses and ports, network order).
    pub const NAT_SRC: i16 = 48;
    pub const NAT_DST: i16 = 52;
    pub const NAT_PORTS: i16 = 56;
    /// NAT: what the translation adds to the IPv4 header's and the transport's checksum
    /// (ones' complement sums, in the order the program loads them).
    pub const NAT_IP_SUM: i16 = 60;
    pub const NAT_L4_SUM: i16 = 62;
    /// The sweep's generation when a frame last took the entry (u32; the program copies
    /// the `epoch` map's second word): the installer ages entries by it, with no state of
    /// its own per entry.
    pub const SEEN: i16 = 64;
    /// NAT: the session's worker (u16) and index in its table (u32), told of its frames.
    pub const OWNER_WORKER: i16 = 46;
    pub const OWNER_INDEX: i16 = 68;
}

/// A flow's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub ifindex: u32,
    pub kind: u16,
    pub vlan: u16,
    pub addr: [u8; 16],
    /// Routes: the prefix length of `addr`.
    pub plen: u8,
}

impl Key {
    pub fn xconnect(ifindex: u32) -> Key {
        Key {
            ifindex,
            kind: KIND_XCONNECT,
            vlan: 0,
            addr: [0; 16],
            plen: 0,
        }
    }

    /// Frames received on `ifindex` from `src` to `dst`: the addresses as the frame holds
    /// them (destination first), untagged.
    pub fn bridge(ifindex: u32, dst: [u8; 6], src: [u8; 6]) -> Key {
        let mut addr = [0u8; 16];
        addr[..6].copy_from_slice(&dst);
        addr[6..12].copy_from_slice(&src);
        Key {
            ifindex,
            kind: KIND_BRIDGE,
            vlan: 0,
            addr,
            plen: 0,
        }
    }

    /// One destination address.
    pub fn route4(ifindex: u32, dst: [u8; 4]) -> Key {
        Key::route4_prefix(ifindex, dst, 32)
    }

    /// The destinations of `net`/`len` (host bits cleared).
    pub fn route4_prefix(ifindex: u32, net: [u8; 4], len: u8) -> Key {
        let len = len.min(32);
        let mask = u32::MAX.checked_shl(32 - len as u32).unwrap_or(0);
        let mut addr = [0u8; 16];
        addr[..4].copy_from_slice(&(u32::from_be_bytes(net) & mask).to_be_bytes());
        Key {
            ifindex,
            kind: KIND_ROUTE4,
            vlan: 0,
            addr,
            plen: len,
        }
    }

    /// The IPv6 destinations of `net`/`len` (host bits cleared).
    pub fn route6_prefix(ifindex: u32, net: [u8; 16], len: u8) -> Key {
        let len = len.min(128);
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        Key {
            ifindex,
            kind: KIND_ROUTE6,
            vlan: 0,
            addr: (u128::from_be_bytes(net) & mask).to_be_bytes(),
            plen: len,
        }
    }

    /// An IPv6 route's key in the `routes6` trie.
    pub fn route6_bytes(&self) -> [u8; ROUTE6_KEY_LEN] {
        let mut b = [0u8; ROUTE6_KEY_LEN];
        b[..4].copy_from_slice(&(32 + u32::from(self.plen)).to_ne_bytes());
        b[4..8].copy_from_slice(&self.ifindex.to_ne_bytes());
        b[8..].copy_from_slice(&self.addr);
        b
    }

    pub fn from_route6_bytes(b: &[u8]) -> Key {
        let plen = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]).saturating_sub(32);
        let ifindex = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
        let mut addr = [0u8; 16];
        addr.copy_from_slice(&b[8..24]);
        Key::route6_prefix(ifindex, addr, plen.min(128) as u8)
    }

    /// A NAT session's direction: frames of `t` received on `ifindex`.
    pub fn nat4(ifindex: u32, t: &Tuple) -> Key {
        let mut addr = [0u8; 16];
        addr[..4].copy_from_slice(&t.src.to_be_bytes());
        addr[4..8].copy_from_slice(&t.dst.to_be_bytes());
        addr[8..10].copy_from_slice(&t.sport.to_be_bytes());
        addr[10..12].copy_from_slice(&t.dport.to_be_bytes());
        addr[12] = t.proto;
        Key {
            ifindex,
            kind: KIND_NAT4,
            vlan: 0,
            addr,
            plen: 0,
        }
    }

    /// The tuple of a NAT entry's key.
    pub fn nat_tuple(&self) -> Tuple {
        let a = &self.addr;
        Tuple {
            proto: a[12],
            src: u32::from_be_bytes([a[0], a[1], a[2], a[3]]),
            dst: u32::from_be_bytes([a[4], a[5], a[6], a[7]]),
            sport: u16::from_be_bytes([a[8], a[9]]),
            dport: u16::from_be_bytes([a[10], a[11]]),
        }
    }

    /// A NAT entry's key in the `nat` map (as the program builds it from a frame).
    pub fn nat_bytes(&self) -> [u8; NAT_KEY_LEN] {
        let mut b = [0u8; NAT_KEY_LEN];
        b[..4].copy_from_slice(&self.ifindex.to_ne_bytes());
        b[4..17].copy_from_slice(&self.addr[..13]);
        b
    }

    pub fn from_nat_bytes(b: &[u8]) -> Key {
        let mut k = Key::nat4(
            u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            &Tuple::default(),
        );
        k.addr[..13].copy_from_slice(&b[4..17]);
        k
    }

    /// A route's key in the `routes` trie (the ifindex always matched whole).
    pub fn route_bytes(&self) -> [u8; ROUTE_KEY_LEN] {
        let mut b = [0u8; ROUTE_KEY_LEN];
        b[..4].copy_from_slice(&(32 + u32::from(self.plen)).to_ne_bytes());
        b[4..8].copy_from_slice(&self.ifindex.to_ne_bytes());
        b[8..].copy_from_slice(&self.addr[..4]);
        b
    }

    pub fn from_route_bytes(b: &[u8]) -> Key {
        let plen = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]).saturating_sub(32);
        let ifindex = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
        Key::route4_prefix(ifindex, [b[8], b[9], b[10], b[11]], plen.min(32) as u8)
    }

    pub fn bytes(&self) -> [u8; KEY_LEN] {
        let mut b = [0u8; KEY_LEN];
        b[..4].copy_from_slice(&self.ifindex.to_ne_bytes());
        b[4..6].copy_from_slice(&self.kind.to_ne_bytes());
        b[6..8].copy_from_slice(&self.vlan.to_ne_bytes());
        b[8..].copy_from_slice(&self.addr);
        b
    }

    pub fn from_bytes(b: &[u8]) -> Key {
        let mut addr = [0u8; 16];
        addr.copy_from_slice(&b[8..24]);
        Key {
            ifindex: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            kind: u16::from_ne_bytes([b[4], b[5]]),
            vlan: u16::from_ne_bytes([b[6], b[7]]),
            addr,
            plen: 0,
        }
    }
}

/// A flow's value: what the program does with its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    pub epoch: u32,
    pub out_slot: u32,
    pub in_stat: u16,
    pub out_stat: u16,
    pub hits: u64,
    /// The sweep generation a frame last took it in (`value::SEEN`).
    pub seen: u32,
    /// Routes and NAT (zero for a cross-connect): the rewrite and its checks.
    pub route: Option<RouteRewrite>,
    /// NAT only: the translation, after the route's rewrite.
    pub nat: Option<NatRewrite>,
}

/// What the NAT does to a frame of one session's direction: the tuple it leaves with, and
/// what that adds to the checksums (`fastpath::nat::rewrite_of`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NatRewrite {
    pub to: Tuple,
    pub ip_sum: u16,
    pub l4_sum: u16,
    /// The session: its worker and its index in that worker's table.
    pub worker: u16,
    pub index: u32,
}

/// What the graph does to a routed frame: a new Ethernet header (TTL and checksum are the
/// program's), and what it checks first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteRewrite {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub max_len: u16,
    pub in_mac: [u8; 6],
    pub use_slot: u32,
}

impl Value {
    /// A fresh entry of `epoch` from `rx` to `tx`.
    pub fn between(
        epoch: u32,
        rx: super::Port,
        tx: super::Port,
        route: Option<RouteRewrite>,
    ) -> Value {
        Value {
            epoch,
            out_slot: u32::from(tx.slot),
            in_stat: rx.slot,
            out_stat: tx.slot,
            hits: 0,
            seen: 0,
            route,
            nat: None,
        }
    }

    pub fn bytes(&self) -> [u8; VALUE_LEN] {
        let mut b = [0u8; VALUE_LEN];
        b[0..4].copy_from_slice(&self.epoch.to_ne_bytes());
        b[4..8].copy_from_slice(&self.out_slot.to_ne_bytes());
        b[8..10].copy_from_slice(&self.in_stat.to_ne_bytes());
        b[10..12].copy_from_slice(&self.out_stat.to_ne_bytes());
        b[32..40].copy_from_slice(&self.hits.to_ne_bytes());
        b[64..68].copy_from_slice(&self.seen.to_ne_bytes());
        if let Some(r) = &self.route {
            b[16..22].copy_from_slice(&r.dst_mac);
            b[22..28].copy_from_slice(&r.src_mac);
            b[28..30].copy_from_slice(&r.max_len.to_ne_bytes());
            b[40..46].copy_from_slice(&r.in_mac);
            b[12..16].copy_from_slice(&r.use_slot.to_ne_bytes());
        }
        if let Some(n) = &self.nat {
            b[48..52].copy_from_slice(&n.to.src.to_be_bytes());
            b[52..56].copy_from_slice(&n.to.dst.to_be_bytes());
            b[56..58].copy_from_slice(&n.to.sport.to_be_bytes());
            b[58..60].copy_from_slice(&n.to.dport.to_be_bytes());
            // Big-endian sums: the program loads them as the frame's words, swapped alike.
            b[60..62].copy_from_slice(&n.ip_sum.to_be_bytes());
            b[62..64].copy_from_slice(&n.l4_sum.to_be_bytes());
            b[46..48].copy_from_slice(&n.worker.to_ne_bytes());
            b[68..72].copy_from_slice(&n.index.to_ne_bytes());
        }
        b
    }

    /// A value read back (`route` from the bytes when `kind` is a route's or a NAT
    /// entry's, `nat` for the latter).
    pub fn from_bytes_of(b: &[u8], kind: u16) -> Value {
        let mut v = Value::from_bytes(b);
        let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if kind == KIND_NAT4 {
            v.nat = Some(NatRewrite {
                to: Tuple {
                    proto: 0,
                    src: be32(48),
                    dst: be32(52),
                    sport: be16(56),
                    dport: be16(58),
                },
                ip_sum: be16(60),
                l4_sum: be16(62),
                worker: u16::from_ne_bytes([b[46], b[47]]),
                index: u32::from_ne_bytes([b[68], b[69], b[70], b[71]]),
            });
        }
        if kind == KIND_ROUTE4 || kind == KIND_ROUTE6 || kind == KIND_NAT4 {
            let mac = |i: usize| -> [u8; 6] { b[i..i + 6].try_into().unwrap() };
            v.route = Some(RouteRewrite {
                dst_mac: mac(16),
                src_mac: mac(22),
                max_len: u16::from_ne_bytes([b[28], b[29]]),
                in_mac: mac(40),
                use_slot: u32::from_ne_bytes([b[12], b[13], b[14], b[15]]),
            });
        }
        v
    }

    pub fn from_bytes(b: &[u8]) -> Value {
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        let mut ns = [0u8; 8];
        ns.copy_from_slice(&b[32..40]);
        Value {
            epoch: u32_at(0),
            out_slot: u32_at(4),
            in_stat: u16_at(8),
            out_stat: u16_at(10),
            hits: u64::from_ne_bytes(ns),
            seen: u32_at(64),
            route: None,
            nat: None,
        }
    }
}

/// An interface's fast-path counters (summed over CPUs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterfaceCounts {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

pub struct Maps {
    /// Cross-connects, by `Key::bytes`.
    pub flows: BpfMap,
    /// Routes, by `Key::route_bytes`: the longest prefix installed for a destination wins.
    pub routes: BpfMap,
    /// IPv6 routes, by `Key::route6_bytes`, alike.
    pub routes6: BpfMap,
    pub epoch: BpfMap,
    pub devmap: BpfMap,
    pub ifstats: BpfMap,
    pub reasons: BpfMap,
    /// IPv4 sources the graph refuses to route (the router's addresses and its subnets'
    /// broadcast addresses, in any table): a routed frame from one goes to the graph.
    pub refused: BpfMap,
    /// NAT sessions' directions, by `Key::nat_bytes`.
    pub nat: BpfMap,
}

impl Maps {
    /// The maps, with room for `max_flows` offloaded flows.
    pub fn create(max_flows: u32) -> Result<Maps, String> {
        let reasons = super::program::REASONS.len() as u32;
        Ok(Maps {
            flows: map_create(MapKind::Hash, KEY_LEN as u32, VALUE_LEN as u32, max_flows)?,
            routes: map_create(
                MapKind::LpmTrie,
                ROUTE_KEY_LEN as u32,
                VALUE_LEN as u32,
                max_flows,
            )?,
            routes6: map_create(
                MapKind::LpmTrie,
                ROUTE6_KEY_LEN as u32,
                VALUE_LEN as u32,
                max_flows,
            )?,
            // The epoch, then the sweep's generation (u32 each).
            epoch: map_create(MapKind::Array, 4, 8, 1)?,
            devmap: map_create(MapKind::DevMap, 4, 4, MAX_SLOTS)?,
            ifstats: map_create(MapKind::PercpuArray, 4, 32, MAX_SLOTS)?,
            reasons: map_create(MapKind::PercpuArray, 4, 8, reasons)?,
            refused: map_create(MapKind::Hash, 4, 4, MAX_REFUSED)?,
            nat: map_create(
                MapKind::SparseHash,
                NAT_KEY_LEN as u32,
                VALUE_LEN as u32,
                MAX_NAT_ENTRIES,
            )?,
        })
    }

    /// The epoch entries must be of, and the generation the program marks them seen in.
    pub fn set_epoch(&self, epoch: u32, generation: u32) -> Result<(), String> {
        let mut v = [0u8; 8];
        v[..4].copy_from_slice(&epoch.to_ne_bytes());
        v[4..].copy_from_slice(&generation.to_ne_bytes());
        map_update(&self.epoch, &0u32.to_ne_bytes(), &v)
            .map_err(|e| format!("setting the fast path's epoch: {e}"))
    }

    /// Devmap slot `slot` sends to interface `ifindex`.
    pub fn set_egress(&self, slot: u32, ifindex: u32) -> Result<(), String> {
        map_update(&self.devmap, &slot.to_ne_bytes(), &ifindex.to_ne_bytes())
            .map_err(|e| format!("adding ifindex {ifindex} to the fast path's devmap: {e}"))
    }

    /// The map of `key`'s kind, and its key there.
    pub fn map_of(&self, key: &Key) -> (&BpfMap, Vec<u8>) {
        match key.kind {
            KIND_ROUTE4 => (&self.routes, key.route_bytes().to_vec()),
            KIND_ROUTE6 => (&self.routes6, key.route6_bytes().to_vec()),
            KIND_NAT4 => (&self.nat, key.nat_bytes().to_vec()),
            _ => (&self.flows, key.bytes().to_vec()),
        }
    }

    pub fn insert(&self, key: &Key, value: &Value) -> Result<(), String> {
        let (map, k) = self.map_of(key);
        map_update(map, &k, &value.bytes()).map_err(|e| format!("offloading a flow: {e}"))
    }

    pub fn remove(&self, key: &Key) -> bool {
        let (map, k) = self.map_of(key);
        map_delete(map, &k).is_ok()
    }

    /// Remove `keys`, all of one map's kinds, from that map in batches: how many it held.
    pub fn remove_all(&self, keys: &[Key]) -> usize {
        let Some(first) = keys.first() else { return 0 };
        let bytes: Vec<u8> = keys.iter().flat_map(|k| self.map_of(k).1).collect();
        map_delete_batch(self.map_of(first).0, &bytes)
    }

    /// Refuse (or no longer refuse) routed frames from IPv4 source `addr`.
    pub fn set_refused(&self, addr: u32, refused: bool) -> Result<(), String> {
        let key = addr.to_be_bytes();
        if refused {
            map_update(&self.refused, &key, &1u32.to_ne_bytes())
                .map_err(|e| format!("refusing a source in the fast path: {e}"))
        } else {
            map_delete(&self.refused, &key)
                .map_err(|e| format!("no longer refusing a source in the fast path: {e}"))
        }
    }

    /// Each map with the kind of its entries.
    pub fn by_kind(&self) -> [(&BpfMap, u16); 4] {
        [
            (&self.flows, KIND_XCONNECT),
            (&self.routes, KIND_ROUTE4),
            (&self.routes6, KIND_ROUTE6),
            (&self.nat, KIND_NAT4),
        ]
    }

    /// The entries of `map` (of `kind`'s) now, at most about `most`, as keys and values.
    pub fn entries(map: &BpfMap, kind: u16, most: usize) -> Vec<(Key, Value)> {
        let raw = map_entries(map, most).unwrap_or_default();
        decode(&raw, kind)
    }

    /// Every offloaded flow now (at most about `most` of each map).
    pub fn flows(&self, most: usize) -> Vec<(Key, Value)> {
        let mut out = Vec::new();
        for (map, kind) in self.by_kind() {
            out.extend(Maps::entries(map, kind, most));
        }
        out.sort_by_key(|(k, _)| (k.bytes(), k.plen));
        out.dedup_by_key(|(k, _)| *k);
        out
    }

    /// Store the pairs of `keys` and `values` (laid end to end) in `map`: how many were,
    /// and why the rest were not.
    pub fn insert_batch(map: &BpfMap, keys: &[u8], values: &[u8]) -> (usize, Option<String>) {
        let (n, e) = map_update_batch(map, keys, values);
        (n, e.map(|e| format!("offloading flows: {e}")))
    }

    /// Counter slot `slot`'s totals over every CPU.
    pub fn interface_counts(&self, slot: u32) -> InterfaceCounts {
        let per_cpu = map_lookup_percpu(&self.ifstats, &slot.to_ne_bytes()).unwrap_or_default();
        let mut c = InterfaceCounts::default();
        for v in per_cpu {
            let at = |i: usize| u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
            c.rx_packets += at(0);
            c.rx_bytes += at(1);
            c.tx_packets += at(2);
            c.tx_bytes += at(3);
        }
        c
    }

    /// Frames counted for each reason (`program::REASONS` order), over every CPU.
    pub fn reason_counts(&self) -> Vec<u64> {
        (0..super::program::REASONS.len() as u32)
            .map(|r| {
                map_lookup_percpu(&self.reasons, &r.to_ne_bytes())
                    .unwrap_or_default()
                    .iter()
                    .map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap()))
                    .sum()
            })
            .collect()
    }
}

/// The keys and values of a map of `kind`'s entries, decoded.
fn decode(raw: &Entries, kind: u16) -> Vec<(Key, Value)> {
    raw.iter()
        .map(|(k, v)| {
            let key = match kind {
                KIND_ROUTE4 => Key::from_route_bytes(k),
                KIND_ROUTE6 => Key::from_route6_bytes(k),
                KIND_NAT4 => Key::from_nat_bytes(k),
                _ => Key::from_bytes(k),
            };
            (key, Value::from_bytes_of(v, key.kind))
        })
        .collect()
}
