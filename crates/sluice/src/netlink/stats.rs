//! What the listener has done, for a `show lcp netlink` report: messages, changes made,
//! ignores by reason, overflows, resyncs and the last reconcile.

use std::collections::BTreeMap;

/// The listener's counters and state.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct NetlinkStats {
    /// The namespace it listens in (none: the daemon's own).
    pub netns: Option<String>,
    pub running: bool,
    /// The socket's receive buffer as the kernel granted it, in bytes.
    pub receive_buffer: usize,
    /// Messages received from the subscription (dumps not included).
    pub messages: u64,
    /// Messages received in dumps.
    pub dump_messages: u64,
    /// Rounds of changes applied under one router lock, and the FIB commits they made.
    pub batches: u64,
    pub commits: u64,
    /// Rounds that changed so much of the tables that the FIB was built anew at their
    /// commit instead of change by change.
    pub bulk_batches: u64,
    pub routes_added: u64,
    pub routes_replaced: u64,
    pub routes_deleted: u64,
    /// Route messages that changed nothing (the route was there already as told).
    pub routes_unchanged: u64,
    /// Route messages for a table that no tap of the listener's namespace routes in:
    /// refused, so that a namespace writes only its own tables.
    pub routes_refused_table: u64,
    pub addresses_added: u64,
    pub addresses_deleted: u64,
    pub neighbors_added: u64,
    pub neighbors_deleted: u64,
    pub link_messages: u64,
    /// Messages (or parts of them) not mirrored, by reason.
    pub ignored: BTreeMap<&'static str, u64>,
    /// The last change the router refused, with its reason.
    pub last_refusal: Option<String>,
    /// Times the socket's queue overflowed (ENOBUFS): messages were lost, and a resync
    /// followed.
    pub overflows: u64,
    /// Times the reader's queue to the applier was full (the applier that far behind):
    /// what the reader had read was dropped, and a resync followed.
    pub queue_overflows: u64,
    /// Dumps and reconciles done (the first at start-up).
    pub resyncs: u64,
    pub last_reconcile: Option<ReconcileReport>,
    /// The last socket or dump error.
    pub last_error: Option<String>,
}

/// What one dump and reconcile did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReconcileReport {
    /// start-up, overflow, queue full, pairs changed, link change, address deleted.
    pub reason: &'static str,
    /// Routes the dump held that sluice mirrors.
    pub routes: u64,
    pub added: u64,
    pub replaced: u64,
    pub unchanged: u64,
    /// Kernel routes sluice had that the dump no longer holds.
    pub deleted: u64,
    pub addresses_deleted: u64,
    pub neighbors_deleted: u64,
    /// From the dump's request until the router had applied it all.
    pub seconds: f64,
}

impl NetlinkStats {
    pub fn ignore(&mut self, reason: &'static str) {
        *self.ignored.entry(reason).or_default() += 1;
    }

    /// Ignored messages of all reasons.
    pub fn ignored_total(&self) -> u64 {
        self.ignored.values().sum()
    }
}
