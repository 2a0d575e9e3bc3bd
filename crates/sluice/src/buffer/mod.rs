//! The buffer pool: one contiguous region of fixed-size packet buffers named by `u32` index.
//!
//! Every buffer is owned by exactly one place at a time: the pool's free list, a worker's
//! cache, a frame in flight, or a driver. Nothing is counted per packet; instead each owner
//! reports how many it holds and `show buffers` checks that the sum adds up, so a leak shows
//! as an `unaccounted` count instead of hiding.
//!
//! # Ownership and soundness
//!
//! A buffer index is a capability. Each index is held by one holder at a time: a free list
//! (the pool's, or a worker's cache), one [`WorkerBuffers`] handle (in its frames, its
//! drivers' queues), a device that handle lent it to, or a table it parked it in. Indices move
//! only by these hand-overs: `alloc` (free list → handle), `free` (handle → its cache, and on
//! to the pool), `lend`/`reclaim` (handle → device ring → a handle), `park`/`unpark` (handle →
//! a node's table → a handle), and the pool's `give_back_parked` (a table going away → pool)
//! and `give_back` (a closing driver → pool). No path hands an index straight from one worker
//! to another; a buffer changes threads only through a free list or a device ring.
//!
//! Every build checks that rule where it matters (`ownership.rs`): each buffer has an owner
//! tag that the hand-overs move, and `free`, `lend`, `park` and every accessor (`meta`,
//! `meta_mut`, `data`, `data_mut`, `raw`, `raw_mut`, and those built on them) check that the
//! calling handle holds the buffer. A made-up or stale index — a double free, a buffer
//! another handle holds, a free one, one lent to a device or parked — panics with the buffer
//! and its holder (in a release build, `panic = "abort"`: the process stops rather than race).
//! So the accessors are safe functions that are sound for any `u32`: a handle reads or writes
//! a buffer only while its tag names that handle, and only that handle's thread moves the tag
//! away from it (`&self`/`&mut self` keep that from happening while a view is borrowed).
//! The check is one load and a compare a call, from a tag that shares a cache line with the
//! buffer's metadata; hot nodes take the metadata and the bytes together (`meta_data`,
//! `meta_data_mut`) for one check a packet. The graph bench measured no rate lost against
//! the unchecked release build (docs/performance.md).
//!
//! The one hand-over the tags cannot check is `give_back`/`give_back_chains`: a closing
//! driver's buffers carry the tag of the handle that lent or queued them, so the pool cannot
//! tell them from buffers that handle still uses. Those two are `unsafe fn`s with a stated
//! contract, called only from driver code. Nodes that keep packets past a call park them and
//! return them with the safe `give_back_parked`, which accepts parked buffers only.

mod meta;
mod ownership;
mod packet;
mod pool;
mod region;
#[cfg(test)]
mod tests;
mod worker;

use std::sync::atomic::AtomicU64;

pub use meta::{
    BufferMeta, FLAG_L2_OFFER, FLAG_LOCAL_ORIGIN, FLAG_NAT_DONE, FLAG_NAT_HINT, FLAG_NAT_OFFER,
    FLAG_OFFLOAD, FLAG_TO_WORKER, FLAG_TRACED, NAT_OFFER_REPLY, UNTAGGED_L3_OFFSET,
};
pub use pool::BufferPool;
pub use region::Region;
pub use worker::WorkerBuffers;

/// Bytes of packet data in one buffer segment.
pub const DATA_SIZE: usize = 2048;
/// Bytes before the data, so that encapsulations can prepend headers without a copy.
pub const HEADROOM: usize = 256;
/// Distance between two buffers in the region.
pub const STRIDE: usize = HEADROOM + DATA_SIZE;
/// "No buffer": ends a chain.
pub const NO_BUFFER: u32 = u32::MAX;
/// How many buffers a worker moves between its cache and the pool at once.
const CACHE_BATCH: usize = 256;
/// A worker's cache never holds more than this; the rest goes back to the pool.
const CACHE_MAX: usize = 4 * CACHE_BATCH;

/// How a pool should get its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// 2 MiB huge pages when the system has enough free, normal pages otherwise.
    Auto,
    /// Huge pages or fail.
    Require,
    /// Normal pages only.
    Never,
}

/// Who holds how many buffers; workers publish theirs once per loop.
#[derive(Default)]
pub struct OwnerCounts {
    /// Free buffers kept in the worker's private cache.
    pub cached: AtomicU64,
    /// Buffers inside frames that the graph has not finished with.
    pub in_frames: AtomicU64,
    /// Buffers held by drivers (rings, pending transmit).
    pub in_drivers: AtomicU64,
}

/// A snapshot of where the buffers are, for `show buffers`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BufferReport {
    pub total: u64,
    pub free_in_pool: u64,
    pub free_in_caches: u64,
    pub in_use: u64,
    pub in_frames: u64,
    pub in_drivers: u64,
    /// In use but claimed by no owner: a leak if it stays above zero when traffic stops.
    pub unaccounted: i64,
    pub buffer_size: u64,
    pub data_size: u64,
    pub region_bytes: u64,
    pub huge_pages: bool,
    /// Times a thread took the shared free list's lock (a batch of 256 buffers to or from
    /// its cache), and how many of those found it held by another thread and waited.
    pub free_list_locks: u64,
    pub free_list_contended: u64,
}
