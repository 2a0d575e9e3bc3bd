//! Who holds each buffer: a tag per buffer, moved by every hand-over and checked on every
//! access. Debug and test builds only: release builds leave this module and every call into
//! it out, and rely on the invariant it checks (see the pool module's "Ownership and
//! soundness").
//!
//! A tag is `FREE` (in the pool's free list or a worker's cache), the id of the worker handle
//! that holds the buffer (in its frames, its drivers' queues, its nodes' tables), or `LENT`
//! plus that id (on a device's ring, which the kernel or a peer reads and writes).

use std::sync::atomic::{AtomicU16, Ordering};

const FREE: u16 = 0;
const LENT: u16 = 0x8000;
/// Handle ids run 1..=MAX_ID and then wrap (ids only name holders in checks and messages).
const MAX_ID: u16 = LENT - 1;

/// The next handle id after `counter`'s, never FREE and never with the LENT bit.
fn next_handle(counter: &AtomicU16) -> u16 {
    counter.fetch_add(1, Ordering::Relaxed) % MAX_ID + 1
}

/// What a tag says, for messages.
fn describe(tag: u16) -> String {
    match tag {
        FREE => "free".into(),
        t if t & LENT != 0 => format!("lent to a device by worker handle {}", t & MAX_ID),
        t => format!("held by worker handle {t}"),
    }
}

pub(super) struct Tags {
    tags: Box<[AtomicU16]>,
    last_id: AtomicU16,
}

impl Tags {
    pub fn new(count: u32) -> Tags {
        Tags {
            tags: (0..count).map(|_| AtomicU16::new(FREE)).collect(),
            last_id: AtomicU16::new(0),
        }
    }

    /// An id for a new worker handle.
    pub fn new_handle(&self) -> u16 {
        next_handle(&self.last_id)
    }

    /// Move `bi`'s tag from `from` to `to`, or panic saying that worker handle `id` tried
    /// to do `what` and what it found instead. (The message is built only on failure: a
    /// hand-over is on every packet's path.)
    #[track_caller]
    fn moved(&self, bi: u32, from: u16, to: u16, what: &str, id: u16) {
        if let Err(found) =
            self.tags[bi as usize].compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed)
        {
            panic!(
                "buffer {bi}: {what} by worker handle {id}, but it is {}",
                describe(found)
            );
        }
    }

    /// Worker `id` takes free buffer `bi` (alloc).
    #[track_caller]
    pub fn claim(&self, bi: u32, id: u16) {
        self.moved(bi, FREE, id, "allocated", id);
    }

    /// Worker `id` frees `bi`: it must hold it (a second free finds it free).
    #[track_caller]
    pub fn release(&self, bi: u32, id: u16) {
        self.moved(bi, id, FREE, "freed", id);
    }

    /// Worker `id` hands `bi` to a device.
    #[track_caller]
    pub fn lend(&self, bi: u32, id: u16) {
        self.moved(bi, id, LENT | id, "lent", id);
    }

    /// Worker `id` takes `bi` back from a device (whoever lent it: a queue may change threads).
    #[track_caller]
    pub fn reclaim(&self, bi: u32, id: u16) {
        let found = self.tags[bi as usize].load(Ordering::Relaxed);
        if found & LENT == 0 {
            panic!(
                "buffer {bi}: taken back from a device by worker handle {id}, but it is {}",
                describe(found)
            );
        }
        self.moved(bi, found, id, "taken back", id);
    }

    /// A holder with no handle (a closing driver, a node's table) returns `bi` to the pool.
    #[track_caller]
    pub fn give_back(&self, bi: u32) {
        let found = self.tags[bi as usize].swap(FREE, Ordering::Relaxed);
        if found == FREE {
            panic!("buffer {bi}: given back to the pool, but it is already free");
        }
    }

    /// `bi` must be free (it is entering or leaving a free list).
    #[track_caller]
    pub fn check_free(&self, bi: u32) {
        let found = self.tags[bi as usize].load(Ordering::Relaxed);
        if found != FREE {
            panic!("buffer {bi}: on a free list, but it is {}", describe(found));
        }
    }

    /// Worker `id` touches `bi`'s data or metadata: it must hold it.
    #[track_caller]
    pub fn check_held(&self, bi: u32, id: u16) {
        let found = self.tags[bi as usize].load(Ordering::Relaxed);
        if found != id {
            panic!(
                "buffer {bi}: used by worker handle {id}, but it is {}",
                describe(found)
            );
        }
    }

    /// `bi`'s tag is `id` (for tests of the transfers).
    #[cfg(test)]
    pub fn holder(&self, bi: u32) -> String {
        describe(self.tags[bi as usize].load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_ids_skip_free_and_lent_values() {
        let t = Tags::new(1);
        t.last_id.store(MAX_ID - 1, Ordering::Relaxed);
        assert_eq!(t.new_handle(), MAX_ID);
        assert_eq!(t.new_handle(), 1);
        assert_eq!(t.new_handle(), 2);
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
