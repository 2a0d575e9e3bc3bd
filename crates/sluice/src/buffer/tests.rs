//! The pool and handle tests: accounting, chains, and the ownership checks.

use super::*;

/// A worker that finds the shared free list held waits for it and counts the wait; a
/// worker whose cache serves it never takes the lock.
#[test]
fn free_list_takes_and_waits_are_counted() {
    let pool = BufferPool::new(4096, HugePages::Never).unwrap();
    let mut bufs = pool.worker_handle();
    let mut some = [0u32; 8];
    assert_eq!(bufs.alloc(&mut some), 8);
    let r = pool.report();
    assert_eq!((r.free_list_locks, r.free_list_contended), (1, 0));
    // Freed into and taken again from the cache: no lock.
    bufs.free_all(&some);
    assert_eq!(bufs.alloc(&mut some), 8);
    assert_eq!(pool.report().free_list_locks, 1);
    bufs.free_all(&some);

    let held = pool.free_lock();
    let other = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let mut bufs = pool.worker_handle();
            let mut one = [0u32; 1];
            let n = bufs.alloc(&mut one);
            bufs.free_all(&one[..n]);
            n
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while pool.contended() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the other worker never waited"
        );
        std::thread::yield_now();
    }
    drop(held);
    assert_eq!(other.join().unwrap(), 1);
    // The other worker took the lock twice: for its batch, and when its handle went
    // and gave its cache back.
    let r = pool.report();
    assert_eq!((r.free_list_locks, r.free_list_contended), (3, 1));
}

#[test]
fn clone_copies_every_segment_and_frees_independently() {
    let pool = BufferPool::new(16, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    for len in [60, 2048, 5000] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let bi = w.packet_from_bytes(&bytes).unwrap();
        w.meta_mut(bi).rx_if = 3;
        w.meta_mut(bi).flags = FLAG_TRACED | FLAG_LOCAL_ORIGIN;
        let c = w.clone_packet(bi).unwrap();
        w.free(bi);
        let mut out = Vec::new();
        w.copy_packet(c, &mut out);
        assert_eq!(out, bytes);
        assert_eq!(w.meta(c).rx_if, 3);
        assert_eq!(w.meta(c).flags, FLAG_LOCAL_ORIGIN);
        w.free(c);
    }
    w.publish_cache();
    assert_eq!(pool.report().in_use, 0);
}

#[test]
fn clone_with_the_pool_dry_allocates_nothing() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.packet_from_bytes(&[1u8; 5000]).unwrap(); // 3 segments
    assert_eq!(w.clone_packet(bi), None);
    w.free(bi);
    w.publish_cache();
    assert_eq!(pool.report().in_use, 0);
}

#[test]
fn alloc_and_free_return_to_idle() {
    let pool = BufferPool::new(1024, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let mut got = [0u32; 300];
    assert_eq!(w.alloc(&mut got), 300);
    assert_eq!(pool.report().in_use, 300);
    w.free_all(&got);
    w.publish_cache();
    let r = pool.report();
    assert_eq!(r.in_use, 0);
    assert_eq!(r.free_in_pool + r.free_in_caches, 1024);
}

#[test]
fn pool_runs_dry_without_panic() {
    let pool = BufferPool::new(10, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let mut got = [0u32; 16];
    assert_eq!(w.alloc(&mut got), 10);
    assert!(w.alloc_one().is_none());
    assert!(w.packet_from_bytes(&[1, 2, 3]).is_none());
}

#[test]
fn jumbo_packet_chains_and_copies_back() {
    let pool = BufferPool::new(64, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bytes: Vec<u8> = (0..9000u32).map(|i| (i * 7) as u8).collect();
    let bi = w.packet_from_bytes(&bytes).unwrap();
    assert_eq!(w.packet_len(bi), 9000);
    assert_ne!(w.meta(bi).next, NO_BUFFER);
    let mut back = Vec::new();
    w.copy_packet(bi, &mut back);
    assert_eq!(back, bytes);
    w.free(bi);
    w.publish_cache();
    assert_eq!(pool.report().in_use, 0);
}

#[test]
fn advance_drops_leading_bytes_within_the_first_segment() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.packet_from_bytes(&[1, 2, 3, 4, 5]).unwrap();
    assert!(w.advance(bi, 2));
    assert_eq!(w.data(bi), &[3, 4, 5]);
    assert_eq!(w.packet_len(bi), 3);
    assert!(!w.advance(bi, 4));
    assert!(!w.advance(bi, 1 << 20));
    assert!(w.advance(bi, 3));
    assert_eq!(w.packet_len(bi), 0);
}

#[test]
fn zero_length_packet_uses_one_buffer() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.packet_from_bytes(&[]).unwrap();
    assert_eq!(w.packet_len(bi), 0);
    assert_eq!(w.meta(bi).next, NO_BUFFER);
}

// Ownership checks: misuse panics with the buffer and its holder. tests/buffer_ownership.rs
// has the checks that hold in every build (a double free, another handle's buffer read, a
// made-up index, a held buffer given back as parked); these are the rest.

#[test]
#[should_panic(expected = "freed by worker handle 2, but it is held by worker handle 1")]
fn freeing_a_buffer_another_worker_holds_panics() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut a = pool.worker_handle();
    let mut b = pool.worker_handle();
    let bi = a.alloc_one().unwrap();
    b.free(bi);
}

#[test]
#[should_panic(expected = "used by worker handle 1, but it is free")]
fn meta_mut_on_a_free_buffer_panics() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.alloc_one().unwrap();
    w.free(bi);
    w.meta_mut(bi).len = 1;
}

#[test]
#[should_panic(expected = "freed by worker handle 1, but it is free")]
fn freeing_a_chain_whose_segment_is_free_panics() {
    let pool = BufferPool::new(8, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let head = w.packet_from_bytes(&[7; DATA_SIZE + 1]).unwrap();
    let second = w.meta(head).next;
    let lone = w.alloc_one().unwrap();
    w.meta_mut(lone).next = second;
    w.free(lone);
    w.free(head);
}

#[test]
#[should_panic(expected = "used by worker handle 1, but it is lent to a device by worker handle 1")]
fn a_lent_buffer_cannot_be_used_until_reclaimed() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.alloc_one().unwrap();
    w.lend(bi);
    let _ = w.meta(bi);
}

#[test]
#[should_panic(expected = "given back to the pool, but it is already free")]
fn giving_back_a_free_buffer_panics() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.alloc_one().unwrap();
    w.free(bi);
    // SAFETY: a test of the check itself; the buffer is free, used by nobody.
    unsafe { pool.give_back(&[bi]) };
}

#[test]
fn lent_buffers_come_back_through_any_worker_or_the_pool() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut a = pool.worker_handle();
    let mut b = pool.worker_handle();
    let x = a.packet_from_bytes(&[1, 2, 3]).unwrap();
    let y = a.alloc_one().unwrap();
    a.lend(x);
    a.lend(y);
    // A device queue that moved to another thread hands its buffers to that worker.
    b.reclaim(x);
    assert_eq!(b.data(x), &[1, 2, 3]);
    b.free(x);
    // A closing driver returns what its device still had.
    // SAFETY: `y` is lent and `a` no longer touches it (its tag says so).
    unsafe { pool.give_back(&[y]) };
    drop((a, b));
    let r = pool.report();
    assert_eq!(r.free_in_pool, 4);
    assert_eq!(pool.tags.holder(y), "free");
}

#[test]
fn parked_packets_go_back_from_a_table_without_a_handle() {
    let pool = BufferPool::new(8, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let chain = w.packet_from_bytes(&[5; DATA_SIZE + 1]).unwrap();
    let lone = w.packet_from_bytes(&[6; 10]).unwrap();
    w.park(chain);
    w.park(lone);
    w.unpark(lone);
    assert_eq!(w.data(lone), &[6; 10]);
    w.free(lone);
    // The table goes away holding `chain` (two segments): both go back.
    pool.give_back_parked(&[chain]);
    drop(w);
    assert_eq!(pool.report().free_in_pool, 8);
}

#[test]
#[should_panic(expected = "parked in a table by worker handle 1")]
fn a_parked_packet_cannot_be_used_until_unparked() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.packet_from_bytes(&[1, 2, 3]).unwrap();
    w.park(bi);
    let _ = w.data(bi);
}
