//! The buffers lent to DPDK. Each DPDK mempool sluice creates is backed by a `Stock`: the
//! sluice buffers DPDK may take as mbufs. The shim's mempool ops call `sluice_dpdk_stock_get`
//! and `_put` (in bulk: each thread that moves packets has an lcore id, so DPDK's per-lcore
//! caches take most gets and puts). Every buffer in a stock, in a mempool cache or on a
//! port's rings is lent (its owner tag says so); `LENT` counts them for `show buffers`.
//!
//! Workers keep the stocks at a working level: a receive tops up its pool's stock from its
//! own buffers when it runs low, a transmit trims a stock that grew past the high mark
//! (mbufs a port freed after sending).

use super::ffi::{self, Mempool};
use crate::buffer::{BufferPool, WorkerBuffers};
use std::ffi::{c_int, c_uint, c_void, CString};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

/// Below this a receive tops the stock up, by `BATCH`.
pub const LOW: usize = 512;
/// Above this a transmit trims the stock back to `LOW + BATCH`.
pub const HIGH: usize = 4096;
pub const BATCH: usize = 256;
/// Buffers each lcore's mempool cache may hold.
pub const CACHE: u32 = 512;

/// Buffers lent to DPDK, over all pools: lent minus taken back.
pub static LENT: AtomicI64 = AtomicI64::new(0);

pub struct Stock {
    slots: Mutex<Vec<u32>>,
}

impl Stock {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

/// One DPDK mempool over sluice's buffers.
pub struct Pool {
    pub mp: *mut Mempool,
    /// Boxed so that its address, which the mempool keeps, never moves.
    pub stock: Box<Stock>,
}

// SAFETY: `mp` is a DPDK mempool, which DPDK lets any thread use (gets and puts are
// thread-safe through the ops, which lock the stock); the pointer itself is never freed while
// a `Pool` exists (pools live until the process ends).
unsafe impl Send for Pool {}
// SAFETY: as above; `Pool` has no interior state outside the locked stock.
unsafe impl Sync for Pool {}

impl Pool {
    /// A mempool named `name` whose mbufs are the buffers of `stock`.
    pub fn create(name: &str, pool: &BufferPool) -> Result<Pool, String> {
        let stock = Box::new(Stock {
            slots: Mutex::new(Vec::new()),
        });
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        let mut err = ffi::err_buf();
        // The cache may hold 1.5 times its size; DPDK wants that below the pool's size.
        let n = pool.count().max(CACHE * 2);
        // SAFETY: the name and error buffer are valid for the call; the stock pointer stays
        // valid as long as the returned pool (it is boxed and kept in it), and the shim uses
        // it only to call back the functions below.
        let mp = unsafe {
            ffi::sd_pool_create(
                cname.as_ptr(),
                n,
                CACHE,
                &*stock as *const Stock as *mut c_void,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if mp.is_null() {
            return Err(ffi::text(&err));
        }
        Ok(Pool { mp, stock })
    }

    /// Lend `want` of this handle's free buffers to the stock; returns how many it had.
    pub fn lend(&self, bufs: &mut WorkerBuffers, want: usize) -> usize {
        let mut got = vec![0u32; want];
        let n = bufs.alloc(&mut got);
        for &bi in &got[..n] {
            bufs.lend(bi);
        }
        // SAFETY: `mp` is this pool's live mempool; the `n` slots are buffers just lent (no
        // handle touches them), whose headroom the shim writes the mbuf header into.
        unsafe { ffi::sd_mbuf_prepare(self.mp, got.as_ptr(), n as c_uint) };
        LENT.fetch_add(n as i64, Ordering::Relaxed);
        self.stock.lock().extend_from_slice(&got[..n]);
        n
    }

    /// Below the low mark: lend a batch.
    pub fn top_up(&self, bufs: &mut WorkerBuffers) {
        if self.stock.len() < LOW {
            self.lend(bufs, BATCH);
        }
    }

    /// Above the high mark: take the surplus back into this handle's free buffers.
    pub fn trim(&self, bufs: &mut WorkerBuffers) {
        let surplus: Vec<u32> = {
            let mut s = self.stock.lock();
            if s.len() <= HIGH {
                return;
            }
            let keep = LOW + BATCH;
            s.split_off(keep)
        };
        for &bi in &surplus {
            bufs.reclaim(bi);
            bufs.free(bi);
        }
        LENT.fetch_sub(surplus.len() as i64, Ordering::Relaxed);
    }

    /// When no port is open and no thread moves packets: the lcore caches flushed, every
    /// buffer of the stock goes back to `pool`.
    pub fn give_back(&self, pool: &Arc<BufferPool>) {
        // SAFETY: `mp` is this pool's live mempool; the caller makes sure no thread uses it.
        unsafe { ffi::sd_pool_flush(self.mp) };
        let all = std::mem::take(&mut *self.stock.lock());
        LENT.fetch_sub(all.len() as i64, Ordering::Relaxed);
        // SAFETY: these buffers were lent to DPDK and came back to the stock, which is their
        // only holder: no port is open to hold an mbuf of them and no handle will reclaim
        // them (they just left the stock), so nothing uses them again.
        unsafe { pool.give_back(&all) };
    }
}

/// The shim's dequeue: `n` slots out of the stock into `slots`, all or none (0, or -1).
///
/// # Safety
///
/// `stock` is a `Stock` a live `Pool` holds (the mempool's `pool_data`), and `slots` has room
/// for `n` values: the shim passes its own array of at least `n`.
#[no_mangle]
pub unsafe extern "C" fn sluice_dpdk_stock_get(
    stock: *mut c_void,
    slots: *mut u32,
    n: c_uint,
) -> c_int {
    // SAFETY: the function's contract.
    let (stock, out) = unsafe {
        (
            &*(stock as *const Stock),
            std::slice::from_raw_parts_mut(slots, n as usize),
        )
    };
    let mut s = stock.lock();
    if s.len() < out.len() {
        return -1;
    }
    let at = s.len() - out.len();
    out.copy_from_slice(&s[at..]);
    s.truncate(at);
    0
}

/// The shim's enqueue: `n` slots back into the stock. Slots the shim could not place
/// (`u32::MAX`: an mbuf that is not one of ours) are left out.
///
/// # Safety
///
/// As for `sluice_dpdk_stock_get`, with `slots` holding `n` values.
#[no_mangle]
pub unsafe extern "C" fn sluice_dpdk_stock_put(stock: *mut c_void, slots: *const u32, n: c_uint) {
    // SAFETY: the function's contract.
    let (stock, from) = unsafe {
        (
            &*(stock as *const Stock),
            std::slice::from_raw_parts(slots, n as usize),
        )
    };
    stock
        .lock()
        .extend(from.iter().copied().filter(|&s| s != u32::MAX));
}

/// The shim's count of what the stock holds.
///
/// # Safety
///
/// As for `sluice_dpdk_stock_get`.
#[no_mangle]
pub unsafe extern "C" fn sluice_dpdk_stock_count(stock: *mut c_void) -> c_uint {
    // SAFETY: the function's contract.
    let stock = unsafe { &*(stock as *const Stock) };
    stock.len() as c_uint
}
