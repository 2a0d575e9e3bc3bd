//! The update phase: route changes per second through each FIB's writer while another
//! thread looks up the IPv4 hit set, as a worker would.

use super::build::Fibs;
use super::{Kinds, Report, Routes, CHANGES};
use crate::fib::measure::{self, RouteWriter};
use crate::fib::synth::Rng;
use sluice::fib::poptrie_writer::{BLOCK_MIN, NO_BLOCKS, NO_SHORTCUT, SHORT_LEVELS};
use sluice::fib::prefix::{Prefix4, Prefix6};
use sluice::fib::{FibError, FibWriter};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Route changes/s through `w` while another thread looks up frames of `dst` with `frame`
/// (loading the table once per frame, as a worker does); and that thread's lookups/s.
fn updates_while_looking_up<W: RouteWriter>(
    w: &mut W,
    v4: &[(Prefix4, u32)],
    v6: &[(Prefix6, u32)],
    time: Duration,
    dst: &[u32],
    frame: impl Fn(&[u32], &mut [u32]) + Sync,
) -> (measure::UpdateRun, f64) {
    let stop = AtomicBool::new(false);
    let looked = AtomicU64::new(0);
    let mut rng = Rng::new(5);
    let started = Instant::now();
    let updates = std::thread::scope(|s| {
        s.spawn(|| {
            let mut out = [0u32; measure::BATCH];
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                for chunk in dst.chunks(measure::BATCH) {
                    frame(chunk, &mut out[..chunk.len()]);
                    n += chunk.len() as u64;
                }
                if dst.is_empty() {
                    std::thread::yield_now();
                }
            }
            looked.store(n, Relaxed);
        });
        let u = measure::update_rate(w, v4, v6, CHANGES, time, 64, &mut rng);
        stop.store(true, Relaxed);
        u
    });
    let lookups = looked.load(Relaxed) as f64 / started.elapsed().as_secs_f64();
    (updates, lookups)
}

/// Measures and says each FIB's route changes/s, `time` a figure, with a reader looking up
/// `hit4` meanwhile: the dataplane's, the variants `kinds` asks for (each a FIB of its own
/// with the same routes and the same changes), the previous FIB's.
pub(super) fn updates(
    routes: &Routes,
    fibs: &mut Fibs,
    kinds: Kinds,
    time: Duration,
    hit4: &[u32],
    r: &mut Report,
) -> Result<(), FibError> {
    let (v4, v6) = (&routes.v4, &routes.v6);
    if let Some(w) = &mut fibs.pop {
        let reader = w.reader();
        let (u, l) = updates_while_looking_up(w, v4, v6, time, hit4, |d, o| {
            reader.load().v4().lookup_batch(d, o)
        });
        let m = w.memory();
        say!(
            r,
            "updates  {:>8.0} route changes/s ({} changes in {:.2} s: random routes of the table \
             deleted and re-added, a commit every 64, whole-trie rebuilds included: {} + {} \
             (IPv4 + IPv6)) while another thread looks up {:.1} M/s",
            u.per_s,
            u.changes,
            u.seconds,
            m.v4.full_rebuilds,
            m.v6.full_rebuilds,
            l / 1e6,
        );
        r.doc.insert("updates_per_s".into(), u.per_s.into());
        r.doc.insert("update_changes".into(), u.changes.into());
        r.doc.insert("update_seconds".into(), u.seconds.into());
        r.doc
            .insert("lookups_per_s_during_updates".into(), l.into());
        r.doc.insert(
            "full_rebuilds".into(),
            (m.v4.full_rebuilds + m.v6.full_rebuilds).into(),
        );
    }
    if fibs.pop.is_some() && kinds.no_blocks {
        // The same changes through a FIB whose tries make no block.
        let per_s = variant(routes, (NO_BLOCKS, NO_SHORTCUT), "no blocks", time, hit4, r)?;
        r.doc
            .insert("updates_per_s_without_blocks".into(), per_s.into());
    }
    if fibs.pop.is_some() && kinds.shortcut {
        // The same changes through a FIB whose IPv6 trie has the shortcut.
        let per_s = variant(routes, (BLOCK_MIN, SHORT_LEVELS), "shortcut", time, hit4, r)?;
        r.doc
            .insert("updates_per_s_with_shortcut".into(), per_s.into());
    }
    if let Some(w) = &mut fibs.old {
        let reader = w.reader();
        let (u, l) = updates_while_looking_up(w, v4, v6, time, hit4, |d, o| {
            reader.load().v4().lookup_batch(d, o)
        });
        say_same_changes(r, "dir24 ", &u, l);
        r.dir24.insert("updates_per_s".into(), u.per_s.into());
        r.dir24
            .insert("lookups_per_s_during_updates".into(), l.into());
    }
    Ok(())
}

/// Route changes/s through a FIB of its own built with `(block_min, short_levels)`, said
/// under `name`.
fn variant(
    routes: &Routes,
    (block_min, short_levels): (u32, u32),
    name: &str,
    time: Duration,
    hit4: &[u32],
    r: &Report,
) -> Result<f64, FibError> {
    let (v4, v6) = (&routes.v4, &routes.v6);
    let mut w = FibWriter::with_routes_variant(
        v4.iter().copied(),
        v6.iter().copied(),
        block_min,
        short_levels,
    )?;
    let reader = w.reader();
    let (u, l) = updates_while_looking_up(&mut w, v4, v6, time, hit4, |d, o| {
        reader.load().v4().lookup_batch(d, o)
    });
    say_same_changes(r, name, &u, l);
    Ok(u.per_s)
}

/// The line of a FIB measured with the dataplane's sequence of changes.
fn say_same_changes(r: &Report, name: &str, u: &measure::UpdateRun, lookups: f64) {
    say!(
        r,
        "  {name} {:>8.0} route changes/s, the same sequence of changes ({} in {:.2} s), \
         while another thread looks up {:.1} M/s",
        u.per_s,
        u.changes,
        u.seconds,
        lookups / 1e6
    );
}
