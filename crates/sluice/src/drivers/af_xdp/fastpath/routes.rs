//! What routed flows need of the router beyond their entries: the sources ip4-lookup refuses
//! (kept in the `refused` map so that the program sends their frames to the graph), and the
//! neighbours the offloaded flows use (marked used, as ip4-rewrite marks them for the graph's
//! packets, so that the neighbour table does not age out a neighbour only XDP talks to).

use super::maps::{Maps, MAX_REFUSED};
use crate::router::adjacency::{L3View, SharedL3View};
use std::collections::HashSet;
use std::sync::Arc;

/// The `refused` map as the installer last made it.
#[derive(Default)]
pub struct RefusedSources {
    /// The router's view it was made from (`L3View::generation`).
    generation: Option<u64>,
    addrs: HashSet<u32>,
    /// More sources than the map holds: routes are not offloaded.
    over: bool,
}

/// Every address ip4-lookup may refuse as a source, in any table: the router's addresses and
/// the broadcast addresses of its subnets up to /30 (a superset of each table's: a frame
/// from one goes to the graph, which decides by its table).
pub fn refused_sources(view: &L3View) -> HashSet<u32> {
    let mut out = HashSet::new();
    for itf in &view.interfaces {
        for &(a, len) in &itf.v4 {
            out.insert(a);
            if len <= 30 {
                out.insert(a | u32::MAX.checked_shr(len as u32).unwrap_or(0));
            }
        }
    }
    out
}

impl RefusedSources {
    /// Make `maps.refused` say what `view` refuses, if the view changed since. Returns
    /// whether routes may be offloaded (the map could hold them all).
    pub fn sync(&mut self, maps: &Maps, view: Option<&L3View>) -> bool {
        let Some(view) = view else { return false };
        if self.generation == Some(view.generation) {
            return !self.over;
        }
        let want = refused_sources(view);
        self.over = want.len() > MAX_REFUSED as usize;
        if self.over {
            self.generation = Some(view.generation);
            return false;
        }
        let gone: Vec<u32> = self.addrs.difference(&want).copied().collect();
        let new: Vec<u32> = want.difference(&self.addrs).copied().collect();
        let mut ok = true;
        // `addrs` stays what the map holds: a failed update is tried again next time.
        for a in gone {
            if maps.set_refused(a, false).is_ok() {
                self.addrs.remove(&a);
            } else {
                ok = false;
            }
        }
        for a in new {
            if maps.set_refused(a, true).is_ok() {
                self.addrs.insert(a);
            } else {
                ok = false;
            }
        }
        self.generation = ok.then_some(view.generation);
        ok
    }
}

/// The view routes are offered from, if the dataplane routes.
pub fn current(view: &Option<SharedL3View>) -> Option<Arc<L3View>> {
    view.as_ref().map(|v| v.load_full())
}
