//! Loading a route file: the whole FIB is built in one go from the file's routes and the
//! routes already there.

use super::{NextHopSpec, Router};
use crate::fib::parse::{IpPrefix, Route};
use crate::fib::{FibWriter, Prefix4, Prefix6};
use crate::router::adjacency::ADJ_DROP;
use crate::router::allocator::AdjKey;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

impl Router {
    /// Load routes read from a file into the default table (before the workers start: the
    /// FIB is built in one go).
    /// A next hop is an address (on a connected network), an interface name (the prefix is
    /// then on-link there), or a dropping type (blackhole, unreachable, prohibit, throw, drop).
    pub fn load_routes(&mut self, file: &str, routes: &[Route]) -> Result<usize, String> {
        let start = Instant::now();
        let mut by_text: HashMap<&str, u32> = HashMap::new();
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for r in routes {
            // A prefix that already has a route (an interface address, config) keeps it.
            if self.source_of(r.prefix).is_some() {
                continue;
            }
            let adj = match by_text.get(&*r.next_hop) {
                Some(&a) => a,
                None => {
                    let a = self.file_next_hop(r)?;
                    by_text.insert(&r.next_hop, a);
                    a
                }
            };
            match r.prefix {
                IpPrefix::V4(p) => v4.push((p, adj)),
                IpPrefix::V6(p) => v6.push((p, adj)),
            }
        }
        let n = v4.len() + v6.len();
        let adjs: Vec<u32> = v4
            .iter()
            .map(|r| r.1)
            .chain(v6.iter().map(|r| r.1))
            .collect();
        for a in adjs {
            self.hold(a);
        }
        let fib = &self.table(0).fib;
        let existing4: Vec<(Prefix4, u32)> = fib.routes4().iter().collect();
        let existing6: Vec<(Prefix6, u32)> = fib.routes6().iter().collect();
        // The existing routes come last, so that they win over duplicates.
        self.table_mut(0).fib = FibWriter::with_routes(
            v4.into_iter().chain(existing4),
            v6.into_iter().chain(existing6),
        )
        .map_err(|e| format!("{file}: {e:?}"))?;
        // A new writer has new readers: the workers must be given them.
        self.tables_dirty = true;
        self.route_file = Some(file.to_string());
        self.route_file_routes += n;
        self.load_time += start.elapsed();
        Ok(n)
    }

    fn file_next_hop(&mut self, r: &Route) -> Result<u32, String> {
        let text: &str = &r.next_hop;
        if matches!(
            text,
            "blackhole" | "unreachable" | "prohibit" | "throw" | "drop"
        ) {
            return Ok(ADJ_DROP);
        }
        let v4 = matches!(r.prefix, IpPrefix::V4(_));
        if let Ok(addr) = text.parse::<IpAddr>() {
            return self
                .resolve_hop(
                    0,
                    v4,
                    &NextHopSpec::Via {
                        addr,
                        interface: None,
                        table: None,
                    },
                )
                .map_err(|e| format!("route {} {text}: {e}", r.prefix));
        }
        if let Ok(itf) = self.interface_index(text) {
            return Ok(self.adj_for(AdjKey::Glean(itf)));
        }
        Err(format!(
            "route {} {text}: the next hop is not an address, an interface or a drop type",
            r.prefix
        ))
    }
}
