//! The installer's sweep, once a second: entries of an older epoch and those no frame took
//! for `IDLE` go; the owners of those frames took (a route's neighbour, a NAT session, a
//! bridge's learnt address) hear of them, so that none of them ages out while only the
//! fast path carries its frames.
//!
//! The installer keeps nothing per entry to know this: the program writes the sweep's
//! generation into each entry a frame takes (`Value::seen`), and each sweep starts the next
//! generation before it reads the maps. An entry that holds the generation in which the
//! map was last read, or a later one, was taken since. Hash maps are read in batches, so a
//! million NAT entries cost a few hundred system calls a sweep, not two million.
//!
//! The NAT map is read less often: every quarter of the shortest timeout a session it
//! carries can have (UDP's or established TCP's), at most every 30 s. At a million
//! sessions a read costs the installer about half a second of CPU; the sessions hear of
//! their frames well before they would expire, and the sessions' own expiry withdraws
//! their entries in between.

use super::maps::{kinds_in_map_of, Key, Maps, Value, KIND_BRIDGE, KIND_NAT4, MAX_NAT_ENTRIES};
use super::{routes, FastPath, IDLE, MAX_FLOWS, SWEEP};
use crate::nat44::packet::Tuple;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The NAT map is read at most this many sweeps apart.
const NAT_SWEEPS_MOST: u32 = 30;

/// Sweeps an entry may go without a frame before it is idle.
pub(super) const IDLE_SWEEPS: u32 = (IDLE.as_secs() / SWEEP.as_secs()) as u32;

/// Whether an entry last seen in generation `seen` was taken since the sweep that ended
/// generation `ended` read its map (it holds that one or a later one: a frame of the
/// ending generation may have come after that read).
fn taken_since(seen: u32, ended: u32) -> bool {
    seen.wrapping_sub(ended) as i32 >= 0
}

/// Sweeps between two reads of the NAT map for sessions whose timeouts are `t`.
pub(super) fn nat_period(t: &crate::nat44::Timeouts) -> u32 {
    (t.udp.min(t.tcp_established) / 4).clamp(1, NAT_SWEEPS_MOST)
}

/// The CPU time this thread has used (the sweep's cost apart from the waits of a busy CPU).
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `t`, which lives across the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl FastPath {
    /// Remove the entries of an older epoch and those idle for `IDLE`; tell the owners of
    /// the entries frames took that they were used.
    pub(super) fn sweep(&self) {
        let started = (Instant::now(), thread_cpu());
        let epoch = self.epoch();
        // Frames from now on write the next generation: this one's are all in the maps.
        let ended = self.next_generation();
        let view = routes::current(&self.view.lock().unwrap_or_else(|p| p.into_inner()));
        let nat = self.nat.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let macs = self.macs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        let mut bridges: HashSet<Key> = HashSet::new();
        let mut touched: Vec<Vec<(u32, Tuple)>> = Vec::new();
        let mut read = 0u64;
        let mut swept_at = self.swept_at.lock().unwrap_or_else(|p| p.into_inner());
        for (i, (map, kind)) in self.maps.by_kind().into_iter().enumerate() {
            let (most, period) = match (kind, &nat) {
                (KIND_NAT4, Some(n)) => (MAX_NAT_ENTRIES, nat_period(&n.view.load().timeouts)),
                (KIND_NAT4, None) => (MAX_NAT_ENTRIES, 1),
                _ => (MAX_FLOWS, 1),
            };
            if ended.wrapping_sub(swept_at[i]) < period {
                continue;
            }
            let since = std::mem::replace(&mut swept_at[i], ended);
            // The entries to remove, apart by why: they go in one batch each.
            let (mut stale, mut idle) = (Vec::new(), Vec::new());
            let mut kept = [0u64; 6];
            for (key, value) in Maps::entries(map, kind, most as usize) {
                read += 1;
                if key.kind == KIND_BRIDGE {
                    bridges.insert(key);
                }
                if taken_since(value.seen, since) {
                    if let (Some(v), Some(r)) = (&view, &value.route) {
                        v.used.touch(r.use_slot);
                    }
                    // The owner hears of the frames: a session or a learnt address stays.
                    if let Some(n) = &value.nat {
                        let w = usize::from(n.worker);
                        if touched.len() <= w {
                            touched.resize_with(w + 1, Vec::new);
                        }
                        touched[w].push((n.index, key.nat_tuple()));
                    }
                    if let (Some(m), Some(t)) = (owners.get(&key), &macs) {
                        t.touch(m);
                    }
                }
                if value.epoch != epoch {
                    stale.push(key);
                } else if ended.wrapping_sub(value.seen) > IDLE_SWEEPS
                    && !taken_since(value.seen, ended)
                {
                    idle.push(key);
                } else if let Some(n) = kept.get_mut(usize::from(key.kind)) {
                    *n += 1;
                }
            }
            let s = &self.stats;
            for (keys, counter) in [(stale, &s.swept_stale), (idle, &s.swept_idle)] {
                for k in &keys {
                    owners.remove(k);
                }
                counter.fetch_add(self.maps.remove_all(&keys) as u64, Ordering::Relaxed);
            }
            for &k in kinds_in_map_of(kind) {
                s.kept_by_kind[usize::from(k)].store(kept[usize::from(k)], Ordering::Relaxed);
            }
        }
        drop(swept_at);
        // Forget the addresses of bridge entries the map no longer holds.
        owners.retain(|k, _| bridges.contains(k));
        drop(owners);
        if let Some(n) = &nat {
            for (w, t) in touched.into_iter().enumerate() {
                n.touch_offloaded(w, t);
            }
        }
        let s = &self.stats;
        s.swept_entries.store(read, Ordering::Relaxed);
        let micros = started.0.elapsed().as_micros().min(u64::MAX as u128) as u64;
        s.sweep_micros.store(micros, Ordering::Relaxed);
        let cpu = thread_cpu().saturating_sub(started.1);
        s.sweep_cpu_micros
            .store(cpu.as_micros() as u64, Ordering::Relaxed);
    }

    /// About how long since a frame last took an entry whose value is `v` (to the sweep).
    pub fn idle_seconds(&self, v: &Value) -> f64 {
        let now = self.generation.load(Ordering::SeqCst);
        let sweeps = now.wrapping_sub(v.seen).saturating_sub(1);
        f64::from(sweeps) * SWEEP.as_secs_f64()
    }

    /// Back off the egresses whose kernel did not send what the program redirected to them:
    /// their entries go, so their frames take the graph again at once.
    pub(super) fn watch_egress(&self) {
        let ports = self.ifindexes();
        let found = self
            .egress_watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .check(&self.maps, &ports, &self.backed_off);
        let s = &self.stats;
        s.egress_lost.fetch_add(found.lost, Ordering::Relaxed);
        let slots = found.backed_off;
        if slots.is_empty() {
            return;
        }
        s.backoffs.fetch_add(slots.len() as u64, Ordering::Relaxed);
        for (key, value) in self.maps.flows(MAX_NAT_ENTRIES as usize) {
            if slots.contains(&value.out_slot) && self.maps.remove(&key) {
                self.stats.swept_backoff.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
