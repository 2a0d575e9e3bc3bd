//! A token bucket for what a worker sends on its own initiative (ICMP errors): `rate` tokens
//! a second, at most `burst` saved up. It runs on the time-stamp counter, which costs a few
//! cycles to read, and is owned by one worker, so nothing is shared or atomic.
//!
//! Tokens are kept in fixed point, `ticks_per_sec` units to the token, so that refilling is
//! one multiplication and no tick is lost to rounding however often the bucket is asked.

use crate::sys::tsc;

#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Tokens per second.
    rate: u64,
    /// Most units the bucket holds: `burst` tokens.
    capacity: u64,
    /// Units one token costs: the clock's ticks per second.
    unit: u64,
    /// Units now in the bucket.
    level: u64,
    /// Clock reading of the last refill.
    last: u64,
}

impl TokenBucket {
    /// A full bucket on a clock of `ticks_per_sec`, read at `now`.
    pub fn new(rate: u64, burst: u64, ticks_per_sec: u64, now: u64) -> TokenBucket {
        let unit = ticks_per_sec.max(1);
        let capacity = burst.saturating_mul(unit);
        TokenBucket {
            rate,
            capacity,
            unit,
            level: capacity,
            last: now,
        }
    }

    /// A full bucket on the time-stamp counter (measures its rate on first use, ~20 ms).
    pub fn on_tsc(rate: u64, burst: u64) -> TokenBucket {
        TokenBucket::new(rate, burst, tsc::hz() as u64, tsc::now())
    }

    /// Take one token at clock reading `now`, if there is one.
    pub fn allow_at(&mut self, now: u64) -> bool {
        // A clock that went backwards (another core's counter) refills nothing.
        let elapsed = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        self.level = self
            .level
            .saturating_add(elapsed.saturating_mul(self.rate))
            .min(self.capacity);
        if self.level >= self.unit {
            self.level -= self.unit;
            true
        } else {
            false
        }
    }

    /// Take one token now, by the time-stamp counter.
    pub fn allow(&mut self) -> bool {
        self.allow_at(tsc::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 1_000_000; // a microsecond clock

    fn taken(b: &mut TokenBucket, now: u64, tries: usize) -> usize {
        (0..tries).filter(|_| b.allow_at(now)).count()
    }

    #[test]
    fn burst_then_rate() {
        let mut b = TokenBucket::new(1000, 100, HZ, 0);
        assert_eq!(taken(&mut b, 0, 150), 100);
        // One millisecond buys one token at 1000/s.
        assert_eq!(taken(&mut b, 1_000, 10), 1);
        // Half a millisecond later: nothing; the other half completes a token.
        assert_eq!(taken(&mut b, 1_500, 10), 0);
        assert_eq!(taken(&mut b, 2_000, 10), 1);
        // A long idle time refills to the burst, no more.
        assert_eq!(taken(&mut b, 100 * HZ, 1000), 100);
    }

    #[test]
    fn frequent_asks_lose_no_time() {
        let mut b = TokenBucket::new(1000, 1, HZ, 0);
        assert!(b.allow_at(0));
        // Asked every 10 µs for 10 ms: exactly the 10 tokens that accrued.
        let got = (1..=1000).filter(|k| b.allow_at(k * 10)).count();
        assert_eq!(got, 10);
    }

    #[test]
    fn backwards_clock_and_extremes_do_not_panic() {
        let mut b = TokenBucket::new(u64::MAX, u64::MAX, u64::MAX, 0);
        assert!(b.allow_at(0));
        assert!(b.allow_at(u64::MAX));
        let mut z = TokenBucket::new(0, 0, 0, 5);
        assert!(!z.allow_at(1));
        assert!(!z.allow_at(u64::MAX));
        let mut b = TokenBucket::new(1000, 2, HZ, 5_000);
        assert_eq!(taken(&mut b, 0, 5), 2);
        // Going back did not move the refill point: time counts from 5 000 again.
        assert_eq!(taken(&mut b, 5_999, 5), 0);
        assert_eq!(taken(&mut b, 6_000, 5), 1);
    }

    #[test]
    fn tsc_bucket_gives_its_burst() {
        let mut b = TokenBucket::on_tsc(0, 3);
        assert_eq!((0..10).filter(|_| b.allow()).count(), 3);
    }
}
