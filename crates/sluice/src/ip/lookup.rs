//! ip4-lookup / ip6-lookup: the longest-prefix match of each packet's destination, for the
//! whole frame in batched FIB lookups (one per routing table the frame holds, with prefetch),
//! then each family's decision on what the adjacency means for the packet
//! (`LookupRules::decide`, in `ip4/lookup.rs` and `ip6/lookup.rs`): for us → local delivery,
//! a blackhole → counted drop, equal-cost paths → one member by a flow hash, a neighbour or
//! a connected network → rewrite, no route → an ICMP error. The table set, the FIBs and the
//! adjacency view are each pinned once per frame, so an update takes effect from the next
//! frame whole.

use super::Family;
use crate::buffer::{BufferMeta, FLAG_OFFLOAD};
use crate::graph::frame::FRAME_SIZE;
use crate::graph::names::next_nodes;
use crate::graph::names::Counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::ip::table_lookup::{FamilyLookup, TableLookup};
use crate::nodes::error_drop;
use crate::nodes::IcmpErrorRequest;
use crate::router::adjacency::{L3View, SharedL3View};
use crate::router::SharedTables;

next_nodes! {
    pub enum Next<F: Family> {
        Rewrite = F::REWRITE_NODE,
        Local = F::LOCAL_NODE,
        IcmpError = F::ICMP_ERROR_NODE,
        Drop = error_drop::NAME,
    }
}

/// Where one packet goes: next node, adjacency, the counter it bumps and the error it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision<C> {
    pub next: Next,
    pub adj: u32,
    pub counted: Option<C>,
    pub icmp: Option<IcmpErrorRequest>,
}

impl<C> Decision<C> {
    pub fn go(next: Next, adj: u32) -> Self {
        Decision {
            next,
            adj,
            counted: None,
            icmp: None,
        }
    }

    pub fn drop(adj: u32, e: C) -> Self {
        Decision {
            next: Next::Drop,
            adj,
            counted: Some(e),
            icmp: None,
        }
    }

    pub fn error(adj: u32, e: C, req: IcmpErrorRequest) -> Self {
        Decision {
            next: Next::IcmpError,
            adj,
            counted: Some(e),
            icmp: Some(req),
        }
    }
}

/// What a family decides after its FIB lookup.
pub trait LookupRules: Family {
    /// What the decision needs of a packet, read once per packet before the lookup.
    type Key: Copy + Default + Send;
    /// The destination address the FIB is looked up with.
    type Addr: FamilyLookup + Send;
    type Counter: Counters;
    /// A packet's key from its L3 header (`None`: unreadable; its lookup must find at most
    /// a default route).
    fn key(ip: Option<&[u8]>) -> Self::Key;
    fn destination(key: &Self::Key) -> Self::Addr;
    /// The fate of a packet of routing table `table` whose FIB lookup gave `fib_adj`, from
    /// its metadata and its first segment's bytes.
    fn decide(
        view: &L3View,
        table: u16,
        key: &Self::Key,
        fib_adj: u32,
        meta: &BufferMeta,
        data: &[u8],
    ) -> Decision<Self::Counter>;
    /// The destination as people write it, for traces.
    fn display(dst: Self::Addr) -> String;
}

/// The lookup node of family `F`.
pub struct IpLookup<F: LookupRules> {
    tables: SharedTables,
    lookup: TableLookup<F::Addr>,
    view: SharedL3View,
    keys: Box<[F::Key; FRAME_SIZE]>,
    dst: Box<[F::Addr; FRAME_SIZE]>,
    adj: Box<[u32; FRAME_SIZE]>,
}

impl<F: LookupRules> IpLookup<F> {
    pub fn decl(tables: SharedTables, view: SharedL3View) -> NodeDecl
    where
        Self: Node,
    {
        let decl = NodeDecl::internal(
            F::LOOKUP_NODE,
            &Next::names::<F>(),
            F::Counter::ALL,
            IpLookup::<F> {
                tables,
                lookup: TableLookup::default(),
                view,
                keys: Box::new([F::Key::default(); FRAME_SIZE]),
                dst: Box::new([F::Addr::default(); FRAME_SIZE]),
                adj: Box::new([0; FRAME_SIZE]),
            },
        );
        // The decision is the ingress's table and the destination, which the XDP fast path
        // keys its routes by (the sources refused it checks itself), but for ECMP.
        decl.offload_safe()
    }
}

super::per_family_nodes!(IpLookup);

impl<F: LookupRules> IpLookup<F> {
    /// The node's loop, `Node::process` of each family's instance.
    #[inline(always)]
    fn process_frame(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let n = frame.len().min(FRAME_SIZE);
        let tables = self.tables.load();
        for (k, &bi) in frame[..n].iter().enumerate() {
            let key = F::key(crate::nodes::l3_header(cx.bufs, bi, F::ETHERTYPE));
            self.dst[k] = F::destination(&key);
            self.keys[k] = key;
        }
        // Without VRFs every packet is of table 0: no per-packet table to find.
        if tables.fibs.len() <= 1 {
            self.lookup.table[..n].fill(0);
        } else {
            for (t, &bi) in self.lookup.table[..n].iter_mut().zip(&frame[..n]) {
                *t = tables.table_of(cx.bufs.meta(bi).rx_if, F::IPV6);
            }
        }
        self.lookup
            .lookup(&tables, &self.dst[..n], &mut self.adj[..n], n);
        // Loaded after the FIBs: the control plane publishes a view before the FIBs that
        // point into it, so every adjacency these FIBs name is in this view.
        let view = self.view.load();
        let tracing = cx.tracing();
        for (k, &bi) in frame[..n].iter().enumerate() {
            let table = self.lookup.table[k];
            let (m, data) = cx.bufs.meta_data_mut(bi);
            let d = F::decide(&view, table, &self.keys[k], self.adj[k], m, data);
            if d.adj != self.adj[k] {
                // An ECMP member picked by the flow's hash: the destination alone does not
                // say which, so the fast path cannot carry the flow.
                m.flags &= !FLAG_OFFLOAD;
            }
            m.adj = d.adj;
            if let Some(req) = d.icmp {
                m.aux = req.to_aux();
            }
            let counted: Option<usize> = d.counted.map(Into::into);
            if let Some(e) = counted {
                cx.count_error(e, 1);
            }
            if tracing {
                let why = counted.and_then(|e| F::Counter::ALL.get(e)).unwrap_or(&"");
                cx.trace(
                    bi,
                    format_args!(
                        "dst {} table {table} adj {:#x} {:?} {why}",
                        F::display(self.dst[k]),
                        d.adj,
                        d.next
                    ),
                );
            }
            cx.enqueue(d.next as usize, bi);
        }
        n
    }
}
