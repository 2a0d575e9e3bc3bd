//! The session tables' unit tests.

use super::state::{ICMP, ICMPV6, TCP, UDP};
use super::table::{SLOTS, SWEEP_BUCKETS};
use super::*;
use crate::acl::rule::FlowKey;
use crate::wire::tcp::{ACK, SYN};
use std::collections::HashMap;

fn key(src: u32, sport: u16, dst: u32, dport: u16, proto: u8, flags: u8) -> FlowKey {
    FlowKey {
        ipv6: false,
        src: (src as u128) << 96,
        dst: (dst as u128) << 96,
        proto,
        sport,
        dport,
        tcp_flags: flags,
        later_fragment: false,
    }
}

fn reply(k: &FlowKey, flags: u8) -> FlowKey {
    FlowKey {
        src: k.dst,
        dst: k.src,
        sport: k.dport,
        dport: k.sport,
        tcp_flags: flags,
        ..*k
    }
}

#[test]
fn no_tables_until_enabled() {
    let s = Sessions::new(2, 1000, Timeouts::default());
    let k = key(1, 1, 2, 2, UDP, 0);
    assert!(s.tables().is_empty());
    assert!(!s.open(0, &k, 0));
    assert_eq!(s.lookup(0, &k, 0), Lookup::Miss);
    s.enable();
    assert_eq!(s.tables().len(), 2);
    assert_eq!(s.tables()[0].capacity(), s.per_worker());
    assert_eq!(s.tables()[0].memory_bytes(), SessionTable::memory_for(1000));
    assert!(s.open(0, &k, 0));
}

#[test]
fn both_directions_find_the_session_and_other_flows_do_not() {
    let s = Sessions::new(1, 1000, Timeouts::default());
    s.enable();
    let k = key(0x0a00_0001, 40000, 0xc000_0201, 80, TCP, 0x02);
    assert_eq!(s.lookup(0, &k, 0), Lookup::Miss);
    assert!(s.open(0, &k, 0));
    assert_eq!(s.lookup(0, &reply(&k, 0x12), 10), Lookup::Hit);
    assert_eq!(s.lookup(0, &k, 20), Lookup::Hit);
    // Another port, another protocol, another family: other flows.
    let mut other = k;
    other.sport = 40001;
    assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
    other = k;
    other.proto = UDP;
    assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
    other = k;
    other.ipv6 = true;
    assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
    // A later fragment cannot be told: never a hit, never a session.
    other = k;
    other.later_fragment = true;
    assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
    assert!(!s.open(0, &other, 20));
    let (n, v) = s.tables()[0].live(20, &s.timeouts, 10);
    assert_eq!(n, 1);
    assert_eq!(v[0].state(), "established");
    assert!(v[0].from_a);
}

/// Two tenants (routing tables) with the same addresses: a session one opens is not the
/// other's, and each keeps its table through the slot.
#[test]
fn a_session_belongs_to_its_routing_table() {
    let s = Sessions::new(1, 1000, Timeouts::default());
    s.enable();
    let k = key(0x0a00_0001, 40000, 0xc000_0201, 80, UDP, 0);
    let p = s.prepare(0, &k, 7).unwrap();
    assert_eq!(s.open_prepared(0, &p, 0, 0), Ok(()));
    let back = reply(&k, 0);
    let hit = |table| {
        let p = s.prepare(0, &back, table).unwrap();
        s.lookup_prepared(0, &p, 0, 10)
    };
    assert_eq!(hit(7), Lookup::Hit);
    assert_eq!(hit(0), Lookup::Miss);
    assert_eq!(hit(8), Lookup::Miss);
    let (_, v) = s.tables()[0].live(10, &s.timeouts, 10);
    assert_eq!(v[0].key.table, 7);
}

#[test]
fn icmp_requests_and_replies_share_a_session() {
    let s = Sessions::new(1, 100, Timeouts::default());
    s.enable();
    for (proto, request, answer) in [(ICMP, 8, 0), (ICMP, 13, 14), (ICMPV6, 128, 129)] {
        let req = key(1, request, 2, 0, proto, 0);
        assert!(s.open(0, &req, 0));
        let mut rep = reply(&req, 0);
        rep.sport = answer;
        rep.dport = 0;
        assert_eq!(s.lookup(0, &rep, 1), Lookup::Hit, "{proto} {answer}");
        // A query the other way is not an answer.
        let mut back = rep;
        back.sport = request;
        assert_eq!(s.lookup(0, &back, 1), Lookup::Miss, "{proto} {request}");
    }
}

#[test]
fn sessions_expire_by_protocol_and_tcp_state() {
    let t = Timeouts {
        tcp_established: 100,
        tcp_transient: 10,
        udp: 5,
        icmp: 3,
        other: 2,
    };
    let s = Sessions::new(1, 100, t);
    s.enable();
    let udp = key(1, 1, 2, 2, UDP, 0);
    assert!(s.open(0, &udp, 0));
    assert_eq!(s.lookup(0, &udp, 4_000), Lookup::Hit); // seen again at 4 s
    assert_eq!(s.lookup(0, &udp, 9_000), Lookup::Hit); // 5 s after
    assert_eq!(s.lookup(0, &udp, 14_001), Lookup::Miss); // 5.001 s after: gone
    assert_eq!(s.tables()[0].stats.expired.load(Relaxed), 1);
    // TCP: a SYN alone is transient (10 s); SYN-ACK back makes it established (100 s);
    // a FIN each way closes it (10 s again); so does a RST.
    let syn = key(1, 1000, 2, 80, TCP, 0x02);
    assert!(s.open(0, &syn, 0));
    assert_eq!(s.lookup(0, &syn, 11_000), Lookup::Miss);
    assert!(s.open(0, &syn, 20_000));
    assert_eq!(s.lookup(0, &reply(&syn, 0x12), 20_000), Lookup::Hit);
    assert_eq!(s.lookup(0, &syn, 90_000), Lookup::Hit);
    assert_eq!(s.lookup(0, &syn, 180_000), Lookup::Hit);
    let fin = key(1, 1000, 2, 80, TCP, 0x11);
    assert_eq!(s.lookup(0, &fin, 180_000), Lookup::Hit);
    assert_eq!(s.lookup(0, &reply(&fin, 0x11), 180_000), Lookup::Hit);
    assert_eq!(s.lookup(0, &syn, 191_000), Lookup::Miss);
    let rst = key(3, 1000, 2, 80, TCP, 0x02);
    assert!(s.open(0, &rst, 0));
    assert_eq!(s.lookup(0, &reply(&rst, 0x12), 0), Lookup::Hit);
    assert_eq!(s.lookup(0, &reply(&rst, 0x04), 1_000), Lookup::Hit);
    assert_eq!(s.lookup(0, &rst, 12_000), Lookup::Miss);
}

#[test]
fn a_full_table_counts_what_it_cannot_hold_and_stays_its_size() {
    let s = Sessions::new(1, 64, Timeouts::default());
    s.enable();
    let t = &s.tables()[0];
    let (cap, bytes) = (t.capacity(), t.memory_bytes());
    let mut made = 0;
    // Answered sessions: a full table may not evict them.
    for i in 0..10 * cap as u32 {
        let k = key(i, 1, 2, 2, UDP, 0);
        if s.open(0, &k, 0) {
            made += 1;
            assert_eq!(s.lookup(0, &reply(&k, 0), 0), Lookup::Hit);
        }
    }
    assert!(made <= cap && made * 10 >= cap * 8, "{made} of {cap}");
    assert_eq!(t.stats.table_full.load(Relaxed) as usize, 10 * cap - made);
    assert_eq!(t.stats.entries.load(Relaxed) as usize, made);
    assert_eq!(t.stats.evicted.load(Relaxed), 0);
    assert_eq!((t.capacity(), t.memory_bytes()), (cap, bytes));
    // Every session made is found; once expired and swept, the room is back.
    let found = (0..10 * cap as u32)
        .filter(|&i| s.lookup(0, &key(i, 1, 2, 2, UDP, 0), 0) == Lookup::Hit)
        .count();
    assert_eq!(found, made);
    let later = 1_000_000;
    for _ in 0..t.buckets.len() / SWEEP_BUCKETS {
        s.sweep(0, SWEEP_BUCKETS, later);
    }
    assert_eq!(t.live(later, &s.timeouts, 0).0, 0);
    assert_eq!(t.stats.expired.load(Relaxed) as usize, made);
    assert_eq!(t.stats.entries.load(Relaxed), 0);
    assert!(s.open(0, &key(7, 1, 2, 2, UDP, 0), later));
}

#[test]
fn the_table_agrees_with_a_map_through_random_opens_and_expiries() {
    let t = Timeouts {
        udp: 3,
        ..Timeouts::default()
    };
    let s = Sessions::new(1, 4096, t);
    s.enable();
    let mut model: HashMap<SessionKey, u64> = HashMap::new();
    let mut x = 12345u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for step in 0..200_000u64 {
        let now = step * 10;
        let r = rnd();
        let k = key((r % 3000) as u32, (r >> 20) as u16 % 3, 9, 53, UDP, 0);
        let (sk, _) = SessionKey::of(&k, 0).unwrap();
        let live = model.get(&sk).is_some_and(|&seen| now - seen <= 3000);
        let got = s.lookup(0, &k, now);
        assert_eq!(got == Lookup::Hit, live, "step {step}");
        if live {
            model.insert(sk, now);
        } else if r >> 40 & 1 == 0 {
            assert!(s.open(0, &k, now), "table full at step {step}");
            model.insert(sk, now);
        }
        if step % 8 == 0 {
            s.sweep(0, SWEEP_BUCKETS, now);
        }
    }
}

#[test]
fn another_worker_finds_a_session_while_its_owner_changes_its_table() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    // The stable session is UDP and never expires here; the others are another
    // protocol that expires after a second.
    let t = Timeouts {
        udp: 1 << 30,
        other: 1,
        ..Timeouts::default()
    };
    let s = Arc::new(Sessions::new(2, 2048, t));
    s.enable();
    let stable = key(1, 1, 2, 2, UDP, 0);
    assert!(s.open(0, &stable, 0));
    // Answered: never evicted to make room for the others.
    assert_eq!(s.lookup(0, &reply(&stable, 0), 0), Lookup::Hit);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let reader = {
        let (s, stop, started) = (s.clone(), stop.clone(), started.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                // Worker 1 sees worker 0's session, from either side, and never one
                // that was not made (a torn read would).
                assert_eq!(s.lookup(1, &reply(&stable, 0), 0), Lookup::Hit);
                assert_eq!(s.lookup(1, &key(99, 7, 3, 3, 47, 0), 0), Lookup::Miss);
                n += 1;
                started.store(true, Relaxed);
            }
            n
        })
    };
    // On a busy machine the reader may start late: the changes begin once it reads.
    while !started.load(Relaxed) {
        std::thread::yield_now();
    }
    // Worker 0 opens and expires thousands of others around it.
    for round in 0..50u64 {
        for i in 0..1000u32 {
            s.open(0, &key(100 + i, 7, 3, 3, 47, 0), round * 10_000);
        }
        for _ in 0..s.tables()[0].buckets.len() / SWEEP_BUCKETS {
            s.sweep(0, SWEEP_BUCKETS, round * 10_000 + 5_000);
        }
        assert_eq!(s.tables()[0].live(round * 10_000 + 5_000, &t, 0).0, 1);
    }
    stop.store(true, Relaxed);
    assert!(reader.join().unwrap() > 0);
}

/// A TCP SYN from host `i`'s port `port` to 192.0.2.1:80.
fn syn(i: u32, port: u16) -> FlowKey {
    key(0x0a00_0000 + i, port, 0xc000_0201, 80, TCP, SYN)
}

#[test]
fn only_a_syn_opens_a_tcp_session_and_the_rest_are_counted() {
    let s = Sessions::new(1, 1024, Timeouts::default());
    s.enable();
    let t = &s.tables()[0];
    // ACK, SYN-ACK, RST, FIN-ACK, no flags, SYN+FIN, PSH-ACK, SYN+RST.
    let refused = [ACK, SYN | ACK, 0x04, 0x11, 0, 0x03, 0x18, 0x06];
    for (i, &flags) in refused.iter().enumerate() {
        let k = key(1, 1000 + i as u16, 2, 80, TCP, flags);
        let p = s.prepare(0, &k, 0).unwrap();
        assert_eq!(
            s.open_prepared(0, &p, flags, 0),
            Err(Refused::NotSyn),
            "{flags:#x}"
        );
        assert_eq!(s.lookup(0, &k, 0), Lookup::Miss);
    }
    assert_eq!(t.stats.not_syn.load(Relaxed), refused.len() as u64);
    assert_eq!(t.stats.entries.load(Relaxed), 0);
    // A SYN opens, with ECN's ECE and CWR too (RFC 3168 6.1.1); other protocols need none.
    assert!(s.open(0, &key(1, 2000, 2, 80, TCP, SYN), 0));
    assert!(s.open(0, &key(1, 2001, 2, 80, TCP, 0xc0 | SYN), 0));
    assert!(s.open(0, &key(1, 2000, 2, 53, UDP, 0x10), 0));
    assert_eq!(t.stats.created.load(Relaxed), 3);
    assert_eq!(t.stats.not_syn.load(Relaxed), refused.len() as u64);
}

#[test]
fn a_full_table_of_transient_sessions_admits_a_new_syn_by_evicting_the_oldest() {
    let s = Sessions::new(1, 64, Timeouts::default());
    s.enable();
    let t = &s.tables()[0];
    let cap = t.capacity();
    // Unanswered SYNs, one a millisecond: ten times what the table holds, all admitted.
    let n = 10 * cap as u32;
    for i in 0..n {
        assert!(s.open(0, &syn(i, 1), i as u64), "SYN {i} refused");
        assert_eq!(s.lookup(0, &syn(i, 1), i as u64), Lookup::Hit);
    }
    let held = t.stats.entries.load(Relaxed);
    assert_eq!(t.stats.evicted.load(Relaxed) + held, n as u64);
    assert_eq!(t.stats.table_full.load(Relaxed), 0);
    assert!(held as usize * 10 >= cap * 8, "{held} of {cap}");
    // A new SYN whose two buckets are full evicts the least recently used of their sixteen.
    let now = n as u64;
    let (_, live) = t.live(now, &s.timeouts, usize::MAX);
    let place = |k: &SessionKey| t.find(k, k.hash(s.seed)).unwrap().bucket;
    let full = (n..).map(|i| syn(i, 2)).find_map(|k| {
        let (sk, _) = SessionKey::of(&k, 0).unwrap();
        let (b1, b2, _) = t.places(sk.hash(s.seed));
        let pair: Vec<_> = live
            .iter()
            .filter(|v| [b1, b2].contains(&place(&v.key)))
            .collect();
        (pair.len() == 2 * SLOTS).then_some((k, pair))
    });
    let (k, pair) = full.unwrap();
    let oldest = pair.iter().max_by_key(|v| v.idle_ms).unwrap();
    let evicted = t.stats.evicted.load(Relaxed);
    assert!(s.open(0, &k, now));
    assert_eq!(t.stats.evicted.load(Relaxed), evicted + 1);
    for v in &pair {
        let there = t.find(&v.key, v.key.hash(s.seed)).is_some();
        assert_eq!(there, v.key != oldest.key, "{v:?}");
    }
}

#[test]
fn established_sessions_survive_a_flood_of_syns() {
    let s = Sessions::new(1, 64, Timeouts::default());
    s.enable();
    let t = &s.tables()[0];
    let cap = t.capacity() as u32;
    // Half the table established (SYN, SYN-ACK back).
    let established: Vec<FlowKey> = (0..cap / 2).map(|i| syn(i, 1)).collect();
    for k in &established {
        assert!(s.open(0, k, 0));
        assert_eq!(s.lookup(0, &reply(k, SYN | ACK), 0), Lookup::Hit);
    }
    // Then SYNs of new flows from everywhere, far more than the table holds.
    let mut admitted = 0;
    for i in 0..20 * cap {
        admitted += s.open(0, &syn(100_000 + i, 2), 1 + i as u64) as u32;
    }
    let now = 1 + 20 * cap as u64;
    for k in &established {
        assert_eq!(s.lookup(0, k, now), Lookup::Hit, "{k:?} evicted");
    }
    let (_, live) = t.live(now, &s.timeouts, usize::MAX);
    let kept = live.iter().filter(|v| v.state() == "established").count();
    assert_eq!(kept, established.len());
    // Most SYNs found a transient session to evict; a SYN whose two buckets held only
    // established sessions was refused and counted.
    let (evicted, full) = (
        t.stats.evicted.load(Relaxed),
        t.stats.table_full.load(Relaxed),
    );
    assert!(admitted > 19 * cap, "{admitted}");
    assert_eq!(admitted as u64 + full, 20 * cap as u64);
    assert!(evicted > 0);
    // A table all established refuses every new SYN.
    let s = Sessions::new(1, 64, Timeouts::default());
    s.enable();
    let t = &s.tables()[0];
    for i in 0..4 * cap {
        let k = syn(i, 1);
        if s.open(0, &k, 0) {
            assert_eq!(s.lookup(0, &reply(&k, SYN | ACK), 0), Lookup::Hit);
        }
    }
    let full = t.stats.table_full.load(Relaxed);
    assert!(full > 0);
    assert_eq!(t.stats.evicted.load(Relaxed), 0);
}

#[test]
fn a_source_holds_at_most_per_source_sessions() {
    let s = Sessions::new(1, 1024, Timeouts::default()).with_per_source(3);
    s.enable();
    let t = &s.tables()[0];
    assert_eq!(t.per_source(), 3);
    // 198.51.100.9 (above its peers: side b of each session) opens five flows: three made.
    let from = |src: u32, port: u16| key(src, port, 0x0a00_0001, 53, UDP, 0);
    let big = 0xc633_6409;
    let opened: Vec<bool> = (0..5).map(|p| s.open(0, &from(big, p), 0)).collect();
    assert_eq!(opened, [true, true, true, false, false]);
    assert_eq!(t.stats.source_limit.load(Relaxed), 2);
    // Another source, and the same address in another routing table, are not limited by it.
    assert!(s.open(0, &from(0x0a00_0002, 9), 0));
    let p = s.prepare(0, &from(big, 9), 7).unwrap();
    assert_eq!(s.open_prepared(0, &p, 0, 0), Ok(()));
    // Replies are lookups, not opens: they pass.
    assert_eq!(s.lookup(0, &reply(&from(big, 0), 0), 1), Lookup::Hit);
    // The peer of a session is not its source: it opens its own.
    assert!(s.open(0, &key(0x0a00_0001, 7, big, 7, UDP, 0), 1));
    // Once its sessions are freed the source may open again.
    let later = 1_000_000;
    for _ in 0..t.buckets.len() / SWEEP_BUCKETS {
        s.sweep(0, SWEEP_BUCKETS, later);
    }
    assert_eq!(t.stats.entries.load(Relaxed), 0);
    let opened: Vec<bool> = (10..14).map(|p| s.open(0, &from(big, p), later)).collect();
    assert_eq!(opened, [true, true, true, false]);
    assert_eq!(t.stats.source_limit.load(Relaxed), 3);
}
