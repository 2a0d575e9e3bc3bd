//! The buffer pool's ownership checks hold in every build, release included (scripts/test.sh
//! runs this file in both): a worker handle that uses, frees or hands on a buffer it does not
//! hold stops with the buffer and its holder named, instead of racing with the thread that
//! holds it. (The library's own unit tests are built with `cfg(test)` and cannot show this
//! for a release build; this file links the library as the daemon does.)

use sluice::buffer::{BufferPool, HugePages};

#[test]
#[should_panic(expected = "used by worker handle 2, but it is held by worker handle 1")]
fn reading_a_buffer_another_handle_holds_is_caught() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut a = pool.worker_handle();
    let b = pool.worker_handle();
    let bi = a.packet_from_bytes(&[1, 2, 3]).unwrap();
    let _ = b.data(bi);
}

#[test]
#[should_panic(expected = "used by worker handle 2, but it is held by worker handle 1")]
fn writing_a_buffer_another_handle_holds_is_caught() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut a = pool.worker_handle();
    let mut b = pool.worker_handle();
    let bi = a.alloc_one().unwrap();
    b.meta_mut(bi).len = 7;
}

#[test]
#[should_panic(expected = "used by worker handle 1, but it is free")]
fn a_made_up_index_is_caught() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    w.data_mut(3)[0] = 1;
}

#[test]
#[should_panic(expected = "freed by worker handle 1, but it is free")]
fn a_double_free_is_caught() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.alloc_one().unwrap();
    w.free(bi);
    w.free(bi);
}

/// The safe way back to the pool refuses a buffer a live handle holds: it cannot pull a
/// buffer out from under the handle using it.
#[test]
#[should_panic(expected = "given back from a table, but it is held by worker handle 1")]
fn the_safe_give_back_refuses_a_held_buffer() {
    let pool = BufferPool::new(4, HugePages::Never).unwrap();
    let mut w = pool.worker_handle();
    let bi = w.alloc_one().unwrap();
    pool.give_back_parked(&[bi]);
}

/// What the checks let through: buffers moved by the hand-overs.
#[test]
fn the_hand_overs_pass() {
    let pool = BufferPool::new(8, HugePages::Never).unwrap();
    let mut a = pool.worker_handle();
    let mut b = pool.worker_handle();
    let bi = a.packet_from_bytes(&[9; 100]).unwrap();
    a.lend(bi);
    b.reclaim(bi);
    assert_eq!(b.data(bi), &[9; 100]);
    b.park(bi);
    b.unpark(bi);
    b.free(bi);
    let held = a.alloc_one().unwrap();
    a.park(held);
    pool.give_back_parked(&[held]);
    drop((a, b));
    assert_eq!(pool.report().free_in_pool, 8);
    assert_eq!(pool.holder(held), "free");
}
