//! The CPU's time-stamp counter, for clocks per packet in `show runtime`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Read the time-stamp counter (constant-rate on the machines we run on).
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no memory effects and is available on every x86_64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Ticks per second, measured once against the monotonic clock (about 20 ms).
pub fn hz() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        let (t0, c0) = (Instant::now(), now());
        std::thread::sleep(Duration::from_millis(20));
        let (t1, c1) = (Instant::now(), now());
        c1.wrapping_sub(c0) as f64 / (t1 - t0).as_secs_f64()
    })
}
