//! The control plane's truth: which prefixes have which next hop. Ordered by (network address,
//! length) so that a prefix and all its more-specifics are one contiguous range, and the covering
//! route of a prefix is at most `BITS` point look-ups away. Its `lookup` is the slow, obviously
//! right longest match that tests compare the fast structures against.
//!
//! Stored compactly, as it holds every route of a full table: sorted chunks of up to 64 entries
//! (12 bytes each for IPv4, 24 for IPv6: address, length, next hop), found through a B-tree
//! keyed by each chunk's first entry. A B-tree of single routes costs about 20 and 50 bytes a
//! route (33 MiB measured for 1 M + 200 k routes).

use super::prefix::{left_mask, Addr, Prefix};
use super::publish::{check_next_hop, FibError};
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

/// Entries per chunk at most; a full chunk splits in two.
const CHUNK: usize = 64;

/// One route: the key is (address, length).
#[derive(Clone, Copy, Debug)]
struct Entry<P> {
    addr: P,
    len: u8,
    next_hop: u32,
}

impl<P: Copy + Ord> Entry<P> {
    fn key(&self) -> (P, u8) {
        (self.addr, self.len)
    }
}

#[derive(Clone, Debug)]
pub struct RouteTable<A: Addr> {
    /// Sorted chunks, each under the key of its first entry; none is empty.
    chunks: BTreeMap<Key<A>, Chunk<A>>,
    len: usize,
}

impl<A: Addr> Default for RouteTable<A> {
    fn default() -> RouteTable<A> {
        RouteTable::new()
    }
}

/// A route as the table hands it out: prefix and next hop.
type Routed<A> = (Prefix<A>, u32);
/// (address, length): the order of the table.
type Key<A> = (<A as Addr>::Packed, u8);
/// Sorted entries, never empty.
type Chunk<A> = Vec<Entry<<A as Addr>::Packed>>;

fn key<A: Addr>(p: Prefix<A>) -> Key<A> {
    (p.addr().pack(), p.len())
}

impl<A: Addr> RouteTable<A> {
    pub fn new() -> RouteTable<A> {
        RouteTable {
            chunks: BTreeMap::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk where `k` is or would go, to change: the last chunk starting at or before
    /// it, else the first. One search of the B-tree (the first key is found by following the
    /// leftmost edges, without comparisons).
    fn chunk_for_mut(
        chunks: &mut BTreeMap<Key<A>, Chunk<A>>,
        k: Key<A>,
    ) -> Option<(Key<A>, &mut Chunk<A>)> {
        let first = *chunks.first_key_value()?.0;
        let (&ck, chunk) = if k < first {
            chunks.iter_mut().next()?
        } else {
            chunks.range_mut(..=k).next_back()?
        };
        Some((ck, chunk))
    }

    /// A FIB writer's add: checks that `next_hop` fits the lookup tables, adds or replaces
    /// the route and, when that changed it, calls `changed` to bring them up to date. Returns
    /// the next hop it replaced.
    pub fn add(
        &mut self,
        p: Prefix<A>,
        next_hop: u32,
        changed: impl FnOnce(&Self),
    ) -> Result<Option<u32>, FibError> {
        check_next_hop(next_hop)?;
        let old = self.insert(p, next_hop);
        if old != Some(next_hop) {
            changed(self);
        }
        Ok(old)
    }

    /// Adds or replaces a route; returns the next hop it replaced.
    pub fn insert(&mut self, p: Prefix<A>, next_hop: u32) -> Option<u32> {
        let k = key(p);
        let entry = Entry {
            addr: k.0,
            len: k.1,
            next_hop,
        };
        let Some((ck, chunk)) = Self::chunk_for_mut(&mut self.chunks, k) else {
            self.chunks.insert(k, vec![entry]);
            self.len += 1;
            return None;
        };
        match chunk.binary_search_by(|e| e.key().cmp(&k)) {
            Ok(i) => Some(std::mem::replace(&mut chunk[i].next_hop, next_hop)),
            Err(i) => {
                chunk.insert(i, entry);
                self.len += 1;
                if i == 0 || chunk.len() > CHUNK {
                    // A new first entry re-keys the chunk; a full one splits.
                    if let Some(mut c) = self.chunks.remove(&ck) {
                        if c.len() > CHUNK {
                            let back = c.split_off(c.len() / 2);
                            self.chunks.insert(back[0].key(), back);
                        }
                        self.chunks.insert(c[0].key(), c);
                    }
                }
                None
            }
        }
    }

    /// Removes a route; returns its next hop, or `None` if there was no such route.
    pub fn remove(&mut self, p: Prefix<A>) -> Option<u32> {
        let k = key(p);
        let (ck, chunk) = Self::chunk_for_mut(&mut self.chunks, k)?;
        let i = chunk.binary_search_by(|e| e.key().cmp(&k)).ok()?;
        let old = chunk.remove(i).next_hop;
        self.len -= 1;
        if i == 0 || chunk.len() < CHUNK / 4 {
            // Re-key the chunk under its new first entry, and fold a small one into the next
            // so that deletes leave no trail of near-empty chunks.
            if let Some(mut c) = self.chunks.remove(&ck) {
                let next = self.chunks.range(ck..).next().map(|(&nk, n)| (nk, n.len()));
                if let Some((nk, n)) = next {
                    if c.len() < CHUNK / 4 && c.len() + n <= CHUNK {
                        if let Some(following) = self.chunks.remove(&nk) {
                            c.extend(following);
                        }
                    }
                }
                if let Some(first) = c.first().map(Entry::key) {
                    c.shrink_to(CHUNK / 2);
                    self.chunks.insert(first, c);
                }
            }
        }
        Some(old)
    }

    pub fn get(&self, p: Prefix<A>) -> Option<u32> {
        let k = key(p);
        let (_, chunk) = self.chunks.range(..=k).next_back()?;
        let i = chunk.binary_search_by(|e| e.key().cmp(&k)).ok()?;
        Some(chunk[i].next_hop)
    }

    /// The longest route strictly shorter than `p` that contains it.
    pub fn covering(&self, p: Prefix<A>) -> Option<(Prefix<A>, u32)> {
        self.longest_containing(p.addr(), p.len().checked_sub(1)?)
    }

    /// The longest route no longer than `bound` that contains `addr`, in a few point
    /// look-ups rather than one per length. The routes containing `addr` nest, and the longer
    /// one of two sorts after the shorter, so the last entry at or before `addr/bound` is the
    /// answer if it contains `addr`. If not, it differs from `addr` in the first bit after
    /// the `c` they share, where it has a 0 and `addr` a 1: a containing route longer than
    /// `c` would have that 1 too, and sort after it, so none is left but those no longer
    /// than `c`; the search goes on with `c` as the bound, which is shorter each time.
    fn longest_containing(&self, addr: A, bound: u8) -> Option<(Prefix<A>, u32)> {
        self.longest_containing_from(addr, bound, &[])
    }

    /// `longest_containing`, starting with `chunk` (used if `addr/bound` is in it).
    fn longest_containing_from<'a>(
        &'a self,
        addr: A,
        bound: u8,
        mut chunk: &'a [Entry<A::Packed>],
    ) -> Option<(Prefix<A>, u32)> {
        let a = addr.to_left_u128();
        let mut bound = bound.min(A::BITS);
        // The chunk of the last search: the next key is smaller, and usually in it still.
        loop {
            let k = key(Prefix::containing(addr, bound));
            if chunk.first().is_none_or(|first| first.key() > k) {
                chunk = self.chunks.range(..=k).next_back()?.1;
            }
            let e = match chunk.binary_search_by(|e| e.key().cmp(&k)) {
                Ok(i) => chunk.get(i),
                Err(i) => chunk.get(i.checked_sub(1)?),
            }?;
            let (ea, len) = (A::unpack(e.addr).to_left_u128(), e.len);
            if len <= bound && (a ^ ea) & left_mask(len) == 0 {
                return Prefix::new(A::unpack(e.addr), len).map(|q| (q, e.next_hop));
            }
            let shared = (a ^ ea).leading_zeros().min(128) as u8;
            if shared >= bound {
                // Not reachable with a well-ordered table; ends the search all the same.
                return None;
            }
            bound = shared;
        }
    }

    /// Longest-prefix match by probing every length from the longest down: slow and simple.
    pub fn lookup(&self, addr: A) -> Option<(Prefix<A>, u32)> {
        (0..=A::BITS).rev().find_map(|len| {
            let c = Prefix::containing(addr, len);
            self.get(c).map(|nh| (c, nh))
        })
    }

    /// `p` and every route inside it.
    pub fn within(&self, p: Prefix<A>) -> impl Iterator<Item = (Prefix<A>, u32)> + '_ {
        self.within_from(p, self.chunk_at(p))
    }

    /// The longest route that contains `p` (`p` itself if it is a route, else `covering(p)`),
    /// and `within(p)`: what an update of the FIB asks for together, for one search of the
    /// B-tree.
    pub fn covering_and_within(
        &self,
        p: Prefix<A>,
    ) -> (Option<Routed<A>>, impl Iterator<Item = Routed<A>> + '_) {
        let first = self.chunk_at(p);
        let chunk = first.map_or(&[][..], |(_, c)| &c[..]);
        let cover = self.longest_containing_from(p.addr(), p.len(), chunk);
        (cover, self.within_from(p, first))
    }

    /// The chunk where `p` is or would be: the last starting at or before it, else the first.
    fn chunk_at(&self, p: Prefix<A>) -> Option<(&Key<A>, &Chunk<A>)> {
        self.chunks
            .range(..=key(p))
            .next_back()
            .or_else(|| self.chunks.first_key_value())
    }

    /// `within(p)`, from `first`, `chunk_at(p)`.
    fn within_from<'a>(
        &'a self,
        p: Prefix<A>,
        first: Option<(&'a Key<A>, &'a Chunk<A>)>,
    ) -> impl Iterator<Item = Routed<A>> + 'a {
        let (start, end) = (key(p), (p.last().pack(), A::BITS));
        // The chunk where `p` would be, from `p` on (found by binary search), then the chunks
        // after it, which start past `p` (searched for only if the range goes on past the
        // first, which it rarely does).
        let rest = first.map(|(&ck, _)| ck);
        let head = first.map_or(&[][..], |(_, c)| {
            &c[c.partition_point(|e| e.key() < start)..]
        });
        head.iter()
            .chain(
                rest.into_iter()
                    .flat_map(move |ck| self.chunks.range((Excluded(ck), Unbounded)))
                    .flat_map(|(_, c)| c.iter()),
            )
            .take_while(move |e| e.key() <= end)
            .filter_map(|e| Prefix::new(A::unpack(e.addr), e.len).map(|p| (p, e.next_hop)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (Prefix<A>, u32)> + '_ {
        self.chunks
            .values()
            .flat_map(|c| c.iter())
            .filter_map(|e| Prefix::new(A::unpack(e.addr), e.len).map(|p| (p, e.next_hop)))
    }

    /// A table of `routes` (a later duplicate replaces an earlier one), built in one go:
    /// chunks three-quarters full, each allocated once at its size, so a full table leaves
    /// no spare room and no freed holes behind.
    pub fn from_routes(routes: impl IntoIterator<Item = (Prefix<A>, u32)>) -> RouteTable<A> {
        let mut all: Vec<(Key<A>, usize, u32)> = routes
            .into_iter()
            .enumerate()
            .map(|(i, (p, nh))| (key(p), i, nh))
            .collect();
        all.sort_unstable_by_key(|&(k, i, _)| (k, i));
        // The last of each run of equal keys.
        let mut entries = all
            .chunk_by(|a, b| a.0 == b.0)
            .filter_map(|run| run.last())
            .map(|&((addr, len), _, next_hop)| Entry {
                addr,
                len,
                next_hop,
            })
            .peekable();
        let mut t = RouteTable::new();
        while entries.peek().is_some() {
            let mut c = Vec::with_capacity(CHUNK * 3 / 4);
            c.extend(entries.by_ref().take(CHUNK * 3 / 4));
            t.len += c.len();
            if let Some(first) = c.first().map(Entry::key) {
                t.chunks.insert(first, c);
            }
        }
        t
    }

    /// Bytes held: the chunks' allocations and, per chunk, about a B-tree slot (key, vector
    /// header and a share of the node's edges).
    pub fn approx_memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<Entry<A::Packed>>();
        let slot = std::mem::size_of::<(Key<A>, Chunk<A>)>() * 3 / 2;
        self.chunks
            .values()
            .map(|c| c.capacity() * entry + slot)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::prefix::Prefix4;

    fn p(s: &str) -> Prefix4 {
        let (a, l) = s.split_once('/').unwrap();
        let a: std::net::Ipv4Addr = a.parse().unwrap();
        Prefix4::new(u32::from(a), l.parse().unwrap()).unwrap()
    }

    #[test]
    fn fib_routes_covering_within_and_lookup() {
        let mut t = RouteTable::new();
        assert_eq!(t.insert(p("10.0.0.0/8"), 1), None);
        t.insert(p("10.1.0.0/16"), 2);
        t.insert(p("10.1.2.0/24"), 3);
        t.insert(p("11.0.0.0/8"), 4);
        assert_eq!(t.insert(p("10.1.0.0/16"), 5), Some(2));
        assert_eq!(t.covering(p("10.1.2.0/24")), Some((p("10.1.0.0/16"), 5)));
        assert_eq!(t.covering(p("10.0.0.0/8")), None);
        let inside: Vec<_> = t
            .within(p("10.0.0.0/8"))
            .map(|(q, _)| q.to_string())
            .collect();
        assert_eq!(inside, ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24"]);
        assert_eq!(t.lookup(0x0a01_0203), Some((p("10.1.2.0/24"), 3)));
        assert_eq!(t.lookup(0x0a01_0303), Some((p("10.1.0.0/16"), 5)));
        assert_eq!(t.lookup(0x0c00_0000), None);
        assert_eq!(t.remove(p("10.1.0.0/16")), Some(5));
        assert_eq!(t.remove(p("10.1.0.0/16")), None);
        assert_eq!(t.lookup(0x0a01_0303), Some((p("10.0.0.0/8"), 1)));
    }

    use proptest::prelude::*;

    proptest! {
        /// Inserts and removes in chunks that split, re-key and fold, against a B-tree of
        /// single routes: the same routes in the same order, the same answers.
        #[test]
        fn fib_routes_chunks_match_a_btree(
            ops in prop::collection::vec((0u32..4096, 16u8..=32, prop::option::of(0u32..9)), 1..600),
        ) {
            let mut t = RouteTable::new();
            let mut want = std::collections::BTreeMap::new();
            for &(x, len, nh) in &ops {
                let q = Prefix4::containing(0x0a00_0000 | x << 8 | x >> 4, len);
                match nh {
                    Some(nh) => prop_assert_eq!(t.insert(q, nh), want.insert((q.addr(), len), nh)),
                    None => prop_assert_eq!(t.remove(q), want.remove(&(q.addr(), len))),
                }
            }
            prop_assert_eq!(t.len(), want.len());
            let got: Vec<_> = t.iter().map(|(q, nh)| ((q.addr(), q.len()), nh)).collect();
            let all: Vec<_> = want.iter().map(|(&k, &nh)| (k, nh)).collect();
            prop_assert_eq!(&got, &all);
            // The whole space, and a prefix before every route.
            prop_assert_eq!(t.within(Prefix4::containing(0, 0)).count(), all.len());
            prop_assert_eq!(t.within(Prefix4::containing(0x0900_0000, 8)).count(), 0);
            for &(x, len, _) in &ops {
                let q = Prefix4::containing(0x0a00_0000 | x << 8 | x >> 4, len.saturating_sub(3));
                let inside: Vec<_> = t.within(q).map(|(p, nh)| ((p.addr(), p.len()), nh)).collect();
                let expect: Vec<_> = all
                    .iter()
                    .filter(|((a, l), _)| *l >= q.len() && q.contains(*a))
                    .copied()
                    .collect();
                prop_assert_eq!(inside, expect);
                prop_assert_eq!(t.get(q), want.get(&(q.addr(), q.len())).copied());
                // Covering routes against the definition: the longest shorter route present.
                let probe = Prefix4::containing(0x0a00_0000 | x << 8 | x >> 4 | 0x5a, len);
                let slow = (0..probe.len()).rev().find_map(|l| {
                    let c = Prefix4::containing(probe.addr(), l);
                    want.get(&(c.addr(), l)).map(|&nh| (c, nh))
                });
                prop_assert_eq!(t.covering(probe), slow);
                let own = want.get(&(probe.addr(), probe.len())).map(|&nh| (probe, nh));
                prop_assert_eq!(t.covering_and_within(probe).0, own.or(slow));
            }
        }
    }
}
