//! Who holds each buffer: a tag per buffer, moved by every hand-over and checked on every
//! access, in every build. This is what makes the index-taking accessors of
//! [`WorkerBuffers`](super::WorkerBuffers) sound as safe functions: a handle touches a buffer
//! only while the buffer's tag names that handle, and only that handle's own thread moves a
//! tag away from it (see the pool module's "Ownership and soundness").
//!
//! A tag is `FREE` (in the pool's free list or a worker's cache), the id of the worker handle
//! that holds the buffer (in its frames, its drivers' queues), `LENT` plus that id (on a
//! device's ring, which the kernel or a peer reads and writes), or `PARKED` plus that id (in a
//! node's table that may outlive the handle: a packet waiting for its neighbour).
//!
//! The hot checks are one relaxed load and a compare (`check_held`, `release`, `lend`) or one
//! store (`claim`). Each tag shares a cache line with its buffer's metadata (`Slot`), so the
//! check touches no line the access would not have touched anyway. The moves that
//! can race with another thread (`reclaim`, `give_back`: two takers of one lent buffer) are a
//! compare-and-swap, so exactly one wins. Relaxed ordering is enough for the tags themselves:
//! a handle only ever compares a tag with its own id, and a thread never reads an older value
//! of a location than one it wrote or read before (coherence), so once a handle has moved a
//! tag away from its id it cannot see its id there again unless it claims the buffer anew.
//! The buffer's bytes are ordered by the hand-over that carries the index (the free list's
//! mutex, a ring's release/acquire), as before.

use super::BufferMeta;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

const FREE: u32 = 0;
const LENT: u32 = 0x8000_0000;
const PARKED: u32 = 0x4000_0000;
/// Handle ids run 1..=MAX_ID and are never reused, so a stale tag never names a live handle.
const MAX_ID: u32 = PARKED - 1;

/// What a tag says, for messages.
fn describe(tag: u32) -> String {
    match tag {
        FREE => "free".into(),
        t if t & LENT != 0 => format!("lent to a device by worker handle {}", t & MAX_ID),
        t if t & PARKED != 0 => format!("parked in a table by worker handle {}", t & MAX_ID),
        t => format!("held by worker handle {t}"),
    }
}

/// The one message for every refused hand-over; out of line, so the checks stay small.
#[cold]
#[inline(never)]
#[track_caller]
fn refuse(bi: u32, what: &str, id: u32, found: u32) -> ! {
    let by = match id {
        FREE => String::new(),
        id => format!(" by worker handle {id}"),
    };
    panic!("buffer {bi}: {what}{by}, but it is {}", describe(found))
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(bi: u32) -> ! {
    panic!("buffer index {bi} out of range")
}

/// One buffer's tag and metadata, one cache line: every access checks the tag and then reads
/// or writes the metadata beside it.
#[repr(C, align(64))]
struct Slot {
    tag: AtomicU32,
    meta: UnsafeCell<BufferMeta>,
}

pub(super) struct Tags {
    slots: Box<[Slot]>,
    last_id: AtomicU32,
}

impl Tags {
    pub fn new(count: u32) -> Tags {
        Tags {
            slots: (0..count)
                .map(|_| Slot {
                    tag: AtomicU32::new(FREE),
                    meta: UnsafeCell::new(BufferMeta::FRESH),
                })
                .collect(),
            last_id: AtomicU32::new(0),
        }
    }

    /// Buffer `bi`'s metadata cell (panics when out of range). Who may touch it is the
    /// caller's to show, from the tag.
    #[inline(always)]
    pub fn meta(&self, bi: u32) -> &UnsafeCell<BufferMeta> {
        &self.slots[bi as usize].meta
    }

    /// As `meta`, without the bounds check.
    ///
    /// # Safety
    ///
    /// `i` is below the pool's buffer count (`check_held` passed for it).
    #[inline(always)]
    pub unsafe fn meta_unchecked(&self, i: usize) -> &UnsafeCell<BufferMeta> {
        // SAFETY: `i < count` (the caller's contract), and there are `count` slots.
        unsafe { &self.slots.get_unchecked(i).meta }
    }

    /// An id for a new worker handle. Ids are not reused: after 2^31 - 1 handles (a daemon
    /// makes one per worker and driver thread) the pool refuses more.
    pub fn new_handle(&self) -> u32 {
        let id = self.last_id.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        assert!(
            (1..=MAX_ID).contains(&id),
            "buffer pool: out of worker handle ids"
        );
        id
    }

    #[inline(always)]
    fn tag(&self, bi: u32) -> &AtomicU32 {
        &self.slots[bi as usize].tag
    }

    /// Worker `id` takes free buffer `bi` (alloc). The index came off a free list, where
    /// each free buffer is once (every way onto one checks the tag first), so no other thread
    /// moves this tag now: a store is enough. Debug builds still check it was free.
    #[inline(always)]
    #[track_caller]
    pub fn claim(&self, bi: u32, id: u32) {
        #[cfg(any(test, debug_assertions))]
        self.check_free(bi);
        self.tag(bi).store(id, Ordering::Relaxed);
    }

    /// Worker `id` frees `bi`: it must hold it (a second free finds it free). Only `id`'s
    /// thread moves a tag that says `id`, so the load and the store need no atomic exchange.
    #[inline(always)]
    #[track_caller]
    pub fn release(&self, bi: u32, id: u32) {
        let found = self.tag(bi).load(Ordering::Relaxed);
        if found != id {
            refuse(bi, "freed", id, found);
        }
        self.tag(bi).store(FREE, Ordering::Relaxed);
    }

    /// Worker `id` hands `bi` to a device.
    #[inline(always)]
    #[track_caller]
    pub fn lend(&self, bi: u32, id: u32) {
        let found = self.tag(bi).load(Ordering::Relaxed);
        if found != id {
            refuse(bi, "lent", id, found);
        }
        self.tag(bi).store(LENT | id, Ordering::Relaxed);
    }

    /// Worker `id` puts `bi` in a table of held packets (`WorkerBuffers::park`).
    #[inline(always)]
    #[track_caller]
    pub fn park(&self, bi: u32, id: u32) {
        let found = self.tag(bi).load(Ordering::Relaxed);
        if found != id {
            refuse(bi, "parked", id, found);
        }
        self.tag(bi).store(PARKED | id, Ordering::Relaxed);
    }

    /// Worker `id` takes parked `bi` out of its table. A compare-and-swap, as in `reclaim`.
    #[track_caller]
    pub fn unpark(&self, bi: u32, id: u32) {
        self.take(bi, PARKED, id, "taken out of a table");
    }

    /// A table of parked packets is going away without a handle: `bi` goes free. Safe
    /// because a parked buffer is used by no handle until one unparks it, and of an unpark
    /// and this only one wins the compare-and-swap.
    #[track_caller]
    pub fn give_back_parked(&self, bi: u32) {
        self.take(bi, PARKED, FREE, "given back from a table");
    }

    /// Move `bi` from any tag with bit `state` to `to`, or panic.
    #[inline(always)]
    #[track_caller]
    fn take(&self, bi: u32, state: u32, to: u32, what: &str) {
        let tag = self.tag(bi);
        let found = tag.load(Ordering::Relaxed);
        if found & state == 0
            || tag
                .compare_exchange(found, to, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            refuse(bi, what, to, tag.load(Ordering::Relaxed));
        }
    }

    /// Worker `id` takes `bi` back from a device (whoever lent it: a queue may change
    /// threads). A compare-and-swap: of two threads taking one lent buffer, one wins.
    #[inline(always)]
    #[track_caller]
    pub fn reclaim(&self, bi: u32, id: u32) {
        self.take(bi, LENT, id, "taken back from a device");
    }

    /// A holder with no handle (a closing driver, a node's table) returns `bi` to the pool.
    /// The caller vouches that it holds `bi` (`BufferPool::give_back`'s contract); what is
    /// checked here is that nobody gave it back before, with a compare-and-swap so that of
    /// two such holders only one succeeds.
    #[track_caller]
    pub fn give_back(&self, bi: u32) {
        let tag = self.tag(bi);
        let mut found = tag.load(Ordering::Relaxed);
        loop {
            if found == FREE {
                panic!("buffer {bi}: given back to the pool, but it is already free");
            }
            match tag.compare_exchange(found, FREE, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => found = now,
            }
        }
    }

    /// `bi` must be free (it is entering or leaving a free list; debug and test builds).
    #[cfg(any(test, debug_assertions))]
    #[track_caller]
    pub fn check_free(&self, bi: u32) {
        let found = self.tag(bi).load(Ordering::Relaxed);
        if found != FREE {
            panic!("buffer {bi}: on a free list, but it is {}", describe(found));
        }
    }

    /// Worker `id` touches `bi`'s data or metadata: `bi` must be in range (there is a tag
    /// for each buffer of the pool, so this one bounds check serves the caller's index into
    /// the metadata and the region too) and held by `id`.
    #[inline(always)]
    #[track_caller]
    pub fn check_held(&self, bi: u32, id: u32) {
        let Some(slot) = self.slots.get(bi as usize) else {
            out_of_range(bi);
        };
        let tag = &slot.tag;
        let found = tag.load(Ordering::Relaxed);
        if found != id {
            refuse(bi, "used", id, found);
        }
    }

    /// Who holds `bi`, in words (tests, messages).
    pub fn holder(&self, bi: u32) -> String {
        describe(self.tag(bi).load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_ids_are_never_free_lent_or_reused() {
        let t = Tags::new(1);
        assert_eq!(t.new_handle(), 1);
        t.last_id.store(MAX_ID - 1, Ordering::Relaxed);
        assert_eq!(t.new_handle(), MAX_ID);
        let exhausted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.new_handle()));
        assert!(exhausted.is_err(), "an id past MAX_ID was handed out");
    }

    #[test]
    fn tags_follow_a_buffer_through_its_holders() {
        let t = Tags::new(2);
        t.claim(1, 5);
        t.check_held(1, 5);
        t.lend(1, 5);
        assert_eq!(t.holder(1), "lent to a device by worker handle 5");
        t.reclaim(1, 6);
        t.check_held(1, 6);
        t.release(1, 6);
        t.check_free(1);
        t.claim(0, 3);
        t.give_back(0);
        t.check_free(0);
        t.claim(0, 3);
        t.park(0, 3);
        assert_eq!(t.holder(0), "parked in a table by worker handle 3");
        t.unpark(0, 3);
        t.park(0, 3);
        t.give_back_parked(0);
        t.check_free(0);
    }

    #[test]
    #[should_panic(
        expected = "buffer 0: given back from a table, but it is held by worker handle 1"
    )]
    fn giving_back_a_held_buffer_as_parked_panics() {
        let t = Tags::new(1);
        t.claim(0, 1);
        t.give_back_parked(0);
    }

    #[test]
    #[should_panic(expected = "taken back from a device by worker handle 2, but it is parked")]
    fn a_parked_buffer_is_not_lent() {
        let t = Tags::new(1);
        t.claim(0, 1);
        t.park(0, 1);
        t.reclaim(0, 2);
    }

    #[test]
    #[should_panic(
        expected = "buffer 0: taken back from a device by worker handle 2, but it is held by worker handle 1"
    )]
    fn reclaiming_a_buffer_that_was_not_lent_panics() {
        let t = Tags::new(1);
        t.claim(0, 1);
        t.reclaim(0, 2);
    }

    #[test]
    #[should_panic(expected = "buffer 0: given back to the pool, but it is already free")]
    fn giving_back_a_free_buffer_panics() {
        Tags::new(1).give_back(0);
    }
}
