//! ip4-rewrite / ip6-rewrite: the last step of forwarding. For the adjacency the lookup chose
//! it finds the Ethernet header (the adjacency's own when complete, else one from the
//! neighbour table), lets the family check the packet against it (TTL or hop limit, MTU),
//! lets the family change the IP header (TTL with its checksum and record route, or the hop
//! limit), cuts off any bytes after the datagram (link padding is not forwarded), writes the
//! new header in front of the IP header (any VLAN tags the packet came with go) and hands the
//! packet to interface-output or to the output arc's first feature on its interface. A
//! neighbour not known yet sends the packet, unchanged, to the family's resolver (ip4-arp,
//! ip6-nd), which brings it back here once the neighbour answers.
//!
//! What differs is each family's `RewriteRules` (`ip4/rewrite.rs`, `ip6/rewrite.rs`): IPv4
//! cuts a packet larger than the MTU into fragments when DF is clear (a slow path that
//! copies); IPv6 routers never fragment.

use super::Family;
use crate::buffer::{WorkerBuffers, FLAG_LOCAL_ORIGIN};
use crate::graph::features::{self, FeatureView, SharedFeatures};
use crate::graph::names::next_nodes;
use crate::graph::names::Counters;
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::nodes::IcmpErrorRequest;
use crate::nodes::{error_drop, interface_output};
use crate::router::adjacency::{ethernet_rewrite, AdjKind, Adjacency, L3View, SharedL3View};
use crate::wire::ethernet::{Repr as EthernetRepr, HEADER_LEN as ETH_HEADER_LEN};
use crate::wire::EtherType;
use std::fmt::Debug;
use std::net::IpAddr;

/// How many packets ahead the data is prefetched.
const PREFETCH_AHEAD: usize = 4;
/// The first next slot of the output arc's features (after the `Next` slots).
pub const OUTPUT_FEATURES: usize = 4;

next_nodes! {
    pub enum Next<F: RewriteRules> {
        InterfaceOutput = interface_output::NAME,
        /// ip4-arp or ip6-nd.
        Resolve = F::RESOLVE_NODE,
        IcmpError = F::ICMP_ERROR_NODE,
        Drop = error_drop::NAME,
    }
}

/// What happens to one packet; `Forward` and `Fragment` have already been applied to its
/// bytes, every other verdict leaves them as they arrived (icmp-error quotes them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict<C> {
    Forward {
        tx_if: u32,
    },
    /// Rewritten like `Forward`, but larger than `mtu`: to be cut into fragments.
    Fragment {
        tx_if: u32,
        mtu: u32,
    },
    /// The neighbour's MAC is not known yet.
    Resolve,
    Icmp(IcmpErrorRequest, C),
    Drop(C),
}

/// What a family's checks found in a packet that may be forwarded.
#[derive(Clone, Copy, Debug)]
pub struct Checked<A> {
    /// The datagram's length by its header (what follows is link padding).
    pub total: u32,
    pub destination: A,
    /// Larger than the adjacency's MTU, and allowed to be fragmented.
    pub too_big: bool,
}

/// A family's rewrite counters, `Error`: the first is the family's "not of the family"
/// (`NotIpv4 = "not an IPv4 packet"`), then come the ones every family's rewrite has, declared
/// here once, then the family's own. The node counts the shared ones by `SharedCounters`.
macro_rules! rewrite_counters {
    (
        $not_of_family:ident = $nof_reason:expr,
        $( $(#[$vmeta:meta])* $variant:ident = $reason:expr ),+ $(,)?
    ) => {
        $crate::graph::names::error_counters! {
            pub enum Error {
                $not_of_family = $nof_reason,
                DropAdjacency = "adjacency drops the packet",
                NotNeighbor = "adjacency is not a neighbour (local, multipath or stale)",
                NoInterface = "adjacency's interface is not in the view",
                $( $(#[$vmeta])* $variant = $reason ),+
            }
        }
        impl $crate::ip::rewrite::SharedCounters for Error {
            const NOT_OF_FAMILY: Error = Error::$not_of_family;
            const DROP_ADJACENCY: Error = Error::DropAdjacency;
            const NOT_NEIGHBOR: Error = Error::NotNeighbor;
            const NO_INTERFACE: Error = Error::NoInterface;
        }
    };
}
pub(crate) use rewrite_counters;

/// The counters of the drops every family's rewrite has (`rewrite_counters!`).
pub trait SharedCounters: Sized {
    const NOT_OF_FAMILY: Self;
    const DROP_ADJACENCY: Self;
    const NOT_NEIGHBOR: Self;
    const NO_INTERFACE: Self;
}

/// What a family's rewrite needs of it.
pub trait RewriteRules: Family {
    type Counter: Counters + SharedCounters + Debug + PartialEq;
    type Dst: Copy;
    /// ip4-arp or ip6-nd.
    const RESOLVE_NODE: &'static str;
    const OUTPUT_ARC: usize;
    /// What the hop count is called in traces ("ttl", "hop limit").
    const HOPS: &'static str;
    /// The counters of the cases each family names its own way.
    const UNRESOLVED: Self::Counter;
    const FRAGMENTED: Self::Counter;
    const FRAGMENT_FAILED: Self::Counter;
    /// The packet `ip` (its L3 header on) against the adjacency: `Err` is the verdict of one
    /// that is not forwarded (not of the family, expired, too big). `local`: the router made
    /// it (its hop count is fresh and not to be checked).
    fn check(
        ip: &[u8],
        adj: &Adjacency,
        local: bool,
    ) -> Result<Checked<Self::Dst>, Verdict<Self::Counter>>;
    /// The neighbour a packet to `dst` goes to on a connected network: `dst` itself.
    fn on_link(dst: Self::Dst) -> IpAddr;
    /// Change the IP header of a forwarded packet (not one the router made): the hop count
    /// and what goes with it.
    fn forward(view: &L3View, adj: &Adjacency, ip: &mut [u8]);
    /// The hop count, for traces.
    fn hops(ip: &[u8]) -> Option<u8>;
    /// Cut the datagram `ip` into fragments of at most `mtu` bytes, handing each to `emit`
    /// (false: stop, it failed); how many were made, `None` when it failed. Only a family
    /// whose `check` says `too_big` is asked.
    fn fragment(
        ip: &[u8],
        mtu: usize,
        scratch: &mut Vec<u8>,
        emit: impl FnMut(&[u8]) -> bool,
    ) -> Option<usize>;
}

/// Why `neighbor_header` found no header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoHeader {
    /// The neighbour's MAC is not known yet.
    Unresolved,
    /// The adjacency's interface is not in the view.
    NoInterface,
}

/// The Ethernet header of `ethertype` a packet by `adj` leaves with: the adjacency's own when
/// complete, else one to the MAC the view knows for `neighbor()` (the next hop, or the
/// destination itself on a connected network).
pub(crate) fn neighbor_header(
    view: &L3View,
    adj: &Adjacency,
    neighbor: impl FnOnce() -> IpAddr,
    ethertype: EtherType,
) -> Result<[u8; ETH_HEADER_LEN], NoHeader> {
    if adj.kind == AdjKind::Neighbor && adj.complete {
        // Tell the control plane the neighbour is in use (it probes a stale one by this).
        view.used.touch(adj.slot);
        return Ok(adj.rewrite);
    }
    let n = view
        .neighbors
        .get(&(adj.interface, neighbor()))
        .ok_or(NoHeader::Unresolved)?;
    view.used.touch(n.slot);
    let itf = view.interface(adj.interface).ok_or(NoHeader::NoInterface)?;
    Ok(ethernet_rewrite(n.mac, itf.mac, ethertype.0))
}

/// Put `header` in front of the IP header at `l3` (VLAN tags in between go) and send the
/// packet out of `tx_if`. False when the packet is too short for it.
fn write_header(
    bufs: &mut WorkerBuffers,
    bi: u32,
    l3: usize,
    header: &[u8; ETH_HEADER_LEN],
    tx_if: u32,
) -> bool {
    let Some(strip) = l3.checked_sub(ETH_HEADER_LEN) else {
        return false;
    };
    if strip > 0 && !bufs.advance(bi, strip) {
        return false;
    }
    let (meta, data) = bufs.meta_data_mut(bi);
    let Some(eth) = data.get_mut(..ETH_HEADER_LEN) else {
        return false;
    };
    eth.copy_from_slice(header);
    meta.tx_if = tx_if;
    true
}

/// Fragmentation's scratch: the whole packet, one fragment's datagram and frame, the
/// fragments' buffers. Empty until a packet needs it.
#[derive(Default)]
struct Fragmenter {
    whole: Vec<u8>,
    piece: Vec<u8>,
    frame: Vec<u8>,
    out: Vec<u32>,
}

/// The rewrite node of family `F`.
pub struct IpRewrite<F: RewriteRules> {
    view: SharedL3View,
    /// The output arc's features on each interface (an output ACL).
    features: SharedFeatures,
    fragmenter: Fragmenter,
    _family: std::marker::PhantomData<F>,
}

impl<F: RewriteRules> IpRewrite<F> {
    /// With no output feature on any interface.
    pub fn decl(view: SharedL3View) -> NodeDecl
    where
        Self: crate::graph::Node,
    {
        Self::decl_with(view, features::shared(FeatureView::new()))
    }

    /// Packets leave for interface-output, or for the output arc's first feature on their
    /// interface (its features are this node's nexts from `OUTPUT_FEATURES` on).
    pub fn decl_with(view: SharedL3View, features: SharedFeatures) -> NodeDecl
    where
        Self: crate::graph::Node,
    {
        let node = IpRewrite::<F> {
            view,
            features,
            fragmenter: Fragmenter::default(),
            _family: std::marker::PhantomData,
        };
        let decl = NodeDecl::internal(F::REWRITE_NODE, &Next::names::<F>(), F::Counter::ALL, node)
            .with_next(features::feature_names(F::OUTPUT_ARC));
        // The rewrite is what the XDP fast path's route entries do (the header, the TTL or
        // hop limit and IPv4's checksum; the MTU and TTL checks).
        decl.offload_safe()
    }

    /// Decide one packet's fate and, when it is forwarded, rewrite it in place.
    pub fn rewrite(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict<F::Counter> {
        // One ownership check for the common case: the metadata and bytes stay in hand
        // until the packet is rewritten, unless it needs trimming or its tags stripped.
        let (meta_cell, data) = bufs.meta_data_mut(bi);
        let meta = *meta_cell;
        let adj = *view.adj(meta.adj);
        match adj.kind {
            AdjKind::Neighbor | AdjKind::Glean => {}
            AdjKind::Drop => return Verdict::Drop(F::Counter::DROP_ADJACENCY),
            AdjKind::Local | AdjKind::Multipath => return Verdict::Drop(F::Counter::NOT_NEIGHBOR),
        }
        let l3 = meta.l3_offset as usize;
        let Some(ip) = crate::nodes::l3_in(data, l3, F::ETHERTYPE) else {
            return Verdict::Drop(F::Counter::NOT_OF_FAMILY);
        };
        // Our own replies and errors start with a fresh hop count and are not forwarded.
        let local = meta.flags & FLAG_LOCAL_ORIGIN != 0;
        let checked = match F::check(ip, &adj, local) {
            Ok(c) => c,
            Err(v) => return v,
        };
        let neighbor = || match adj.kind {
            AdjKind::Glean => F::on_link(checked.destination),
            _ => adj.next_hop,
        };
        let header = match neighbor_header(view, &adj, neighbor, F::ETHERTYPE) {
            Ok(h) => h,
            Err(NoHeader::Unresolved) => return Verdict::Resolve,
            Err(NoHeader::NoInterface) => return Verdict::Drop(F::Counter::NO_INTERFACE),
        };
        if !local {
            F::forward(view, &adj, data.get_mut(l3..).unwrap_or_default());
        }
        let tx_if = adj.interface;
        let end = l3 + checked.total as usize;
        if meta.total_len as usize <= end && l3 == ETH_HEADER_LEN {
            // Untagged and no padding: the header goes in place.
            data[..ETH_HEADER_LEN].copy_from_slice(&header);
            meta_cell.tx_if = tx_if;
        } else {
            if meta.total_len as usize > end {
                crate::nodes::trim_to(bufs, bi, end);
            }
            if !write_header(bufs, bi, l3, &header, tx_if) {
                return Verdict::Drop(F::Counter::NOT_OF_FAMILY);
            }
        }
        if checked.too_big {
            return Verdict::Fragment {
                tx_if,
                mtu: adj.mtu,
            };
        }
        Verdict::Forward { tx_if }
    }

    /// Cut the rewritten packet `bi` (Ethernet header, then the datagram) into fragments of
    /// at most `mtu` bytes of IP, each in a new buffer behind the same Ethernet header and
    /// queued for the output arc; `bi` itself goes back to the pool. On failure nothing is
    /// sent and `bi` is for the caller to drop.
    fn fragment(&mut self, cx: &mut NodeCx<'_>, bi: u32, mtu: u32) -> Result<usize, F::Counter> {
        let Fragmenter {
            whole,
            piece,
            frame,
            out,
        } = &mut self.fragmenter;
        cx.bufs.copy_packet(bi, whole);
        let meta = *cx.bufs.meta(bi);
        out.clear();
        let bufs = &mut *cx.bufs;
        let (eth, ip) = whole.split_at(ETH_HEADER_LEN.min(whole.len()));
        let done = F::fragment(ip, mtu as usize, piece, |f| {
            frame.clear();
            frame.extend_from_slice(eth);
            frame.extend_from_slice(f);
            let Some(nb) = bufs.packet_from_bytes(frame) else {
                return false;
            };
            let m = bufs.meta_mut(nb);
            m.rx_if = meta.rx_if;
            m.tx_if = meta.tx_if;
            m.adj = meta.adj;
            m.flags = meta.flags;
            m.trace_index = meta.trace_index;
            out.push(nb);
            true
        });
        match done {
            Some(n) => {
                // Fragments take the output arc too: an output ACL sees each of them.
                let features = self.features.load();
                let slot =
                    features::start_slot(&features, F::OUTPUT_ARC, meta.tx_if, OUTPUT_FEATURES);
                cx.enqueue_all(slot, out);
                cx.bufs.free(bi);
                Ok(n)
            }
            None => {
                for &nb in out.iter() {
                    cx.bufs.free(nb);
                }
                Err(F::FRAGMENT_FAILED)
            }
        }
    }

    fn trace(cx: &mut NodeCx<'_>, bi: u32, verdict: Verdict<F::Counter>) {
        let adj = cx.bufs.meta(bi).adj;
        let line = |e: F::Counter| F::Counter::ALL.get(e.into()).copied().unwrap_or("?");
        match verdict {
            Verdict::Forward { tx_if } => {
                let eth = EthernetRepr::parse(cx.bufs.data(bi));
                let (Ok(eth), Some(hops)) = (eth, F::hops(cx.bufs.l3(bi))) else {
                    return;
                };
                cx.trace(
                    bi,
                    format_args!("adj {adj} tx if {tx_if} {eth} {} now {hops}", F::HOPS),
                );
            }
            Verdict::Fragment { tx_if, mtu } => cx.trace(
                bi,
                format_args!(
                    "adj {adj} tx if {tx_if}: {} (mtu {mtu})",
                    line(F::FRAGMENTED)
                ),
            ),
            Verdict::Icmp(req, e) => cx.trace(
                bi,
                format_args!(
                    "adj {adj}: {} ({} {} code {} arg {})",
                    line(e),
                    F::ICMP_ERROR_NODE,
                    req.kind,
                    req.code,
                    req.arg
                ),
            ),
            Verdict::Resolve => cx.trace(bi, format_args!("adj {adj}: {}", line(F::UNRESOLVED))),
            Verdict::Drop(e) => cx.trace(bi, format_args!("adj {adj}: drop: {}", line(e))),
        }
    }
}

traced_loop_nodes!(IpRewrite<super::V4>, IpRewrite<super::V6>);

impl<F: RewriteRules> TracedLoop for IpRewrite<F> {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let view = self.view.load();
        let features = self.features.load();
        let output_features = features.any(F::OUTPUT_ARC);
        for (k, &bi) in frame.iter().enumerate() {
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let mut verdict = Self::rewrite(&view, cx.bufs, bi);
            if let Verdict::Icmp(req, _) = verdict {
                cx.bufs.meta_mut(bi).aux = req.to_aux();
            }
            if TRACE {
                Self::trace(cx, bi, verdict);
            }
            if let Verdict::Fragment { mtu, .. } = verdict {
                match self.fragment(cx, bi, mtu) {
                    Ok(_) => {
                        cx.count_error(F::FRAGMENTED.into(), 1);
                        continue;
                    }
                    Err(e) => {
                        if TRACE {
                            let line = F::Counter::ALL.get(e.into()).copied().unwrap_or("?");
                            cx.trace(bi, line);
                        }
                        verdict = Verdict::Drop(e);
                    }
                }
            }
            let slot = match verdict {
                Verdict::Forward { tx_if } if output_features => {
                    features::start_slot(&features, F::OUTPUT_ARC, tx_if, OUTPUT_FEATURES)
                }
                Verdict::Forward { .. } | Verdict::Fragment { .. } => {
                    Next::InterfaceOutput as usize
                }
                Verdict::Resolve => {
                    cx.count_error(F::UNRESOLVED.into(), 1);
                    Next::Resolve as usize
                }
                Verdict::Icmp(_, e) => {
                    cx.count_error(e.into(), 1);
                    Next::IcmpError as usize
                }
                Verdict::Drop(e) => {
                    cx.count_error(e.into(), 1);
                    Next::Drop as usize
                }
            };
            cx.enqueue(slot, bi);
        }
    }
}

/// Run family `F`'s rewrite on one received `frame` by adjacency `adj` with `flags`: the
/// verdict, the bytes after it and the interface it is to leave by.
#[cfg(test)]
pub(crate) fn rewrite_one<F: RewriteRules>(
    view: &SharedL3View,
    frame: &[u8],
    adj: u32,
    flags: u8,
) -> (Verdict<F::Counter>, Vec<u8>, u32) {
    let pool = crate::buffer::BufferPool::new(16, crate::buffer::HugePages::Never).unwrap();
    let mut bufs = pool.worker_handle();
    let bi = crate::nodes::testing::received(&mut bufs, frame);
    bufs.meta_mut(bi).adj = adj;
    bufs.meta_mut(bi).flags = flags;
    let verdict = IpRewrite::<F>::rewrite(&view.load(), &mut bufs, bi);
    let mut out = Vec::new();
    bufs.copy_packet(bi, &mut out);
    let tx = bufs.meta(bi).tx_if;
    bufs.free(bi);
    (verdict, out, tx)
}
