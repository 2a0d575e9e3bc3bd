use super::*;
use std::net::Ipv4Addr;

const MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 9]);
const OTHER: MacAddress = MacAddress([2, 0, 0, 0, 0, 10]);
const SOLICITED: Answer = Answer {
    solicited: true,
    override_: true,
};
const UNSOLICITED: Answer = Answer {
    solicited: false,
    override_: true,
};

fn key(i: u32) -> Key {
    (0, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)))
}

fn small(max: usize) -> Nud {
    Nud::new(Times {
        max_entries: max,
        ..Times::default()
    })
}

fn state(n: &Nud, k: Key) -> Option<State> {
    n.get(&k).map(|e| e.state)
}

/// Ticks with nothing used, collecting probes and effects.
fn tick(n: &mut Nud, now: Instant) -> (Vec<Key>, Vec<(Key, Effect)>) {
    let (mut probes, mut effects) = (Vec::new(), Vec::new());
    n.tick(
        now,
        |_| false,
        |k, _| probes.push(k),
        |k, e| effects.push((k, e)),
    );
    (probes, effects)
}

#[test]
fn an_answer_nobody_asked_for_creates_nothing() {
    let mut n = small(8);
    let t = Instant::now();
    assert_eq!(
        n.answer(key(1), MAC, SOLICITED, t),
        Err(Refusal::Unsolicited)
    );
    assert_eq!(
        n.answer(key(1), MAC, UNSOLICITED, t),
        Err(Refusal::Unsolicited)
    );
    assert!(n.is_empty());
    // A request for another host (gratuitous ARP) updates only what we have.
    assert_eq!(n.request(key(1), MAC, false, t), Err(Refusal::Unsolicited));
    assert!(n.is_empty());
}

#[test]
fn a_resolution_answered_is_reachable_then_stale() {
    let mut n = small(8);
    let t = Instant::now();
    n.solicit(key(1), t).unwrap();
    assert_eq!(state(&n, key(1)), Some(State::Incomplete));
    let e = n.answer(key(1), MAC, SOLICITED, t).unwrap();
    assert_eq!(
        e,
        Effect::Publish {
            mac: MAC,
            confirmed: true
        }
    );
    assert_eq!(state(&n, key(1)), Some(State::Reachable));
    tick(&mut n, t + Duration::from_secs(14));
    assert_eq!(
        state(&n, key(1)),
        Some(State::Reachable),
        "at least half of 30 s"
    );
    tick(&mut n, t + Duration::from_secs(46));
    assert_eq!(
        state(&n, key(1)),
        Some(State::Stale),
        "at most 1.5 times 30 s"
    );
}

#[test]
fn a_request_for_us_makes_a_stale_entry_that_ages_out_unused() {
    let mut n = small(8);
    let t = Instant::now();
    let e = n.request(key(1), MAC, true, t).unwrap();
    assert_eq!(
        e,
        Effect::Publish {
            mac: MAC,
            confirmed: false
        }
    );
    assert_eq!(state(&n, key(1)), Some(State::Stale));
    let (_, effects) = tick(&mut n, t + Duration::from_secs(61));
    assert_eq!(effects, vec![(key(1), Effect::Withdraw)]);
    assert!(n.is_empty());
    assert_eq!(n.expired, 1);
}

#[test]
fn a_used_stale_entry_is_probed_and_fails_without_answer() {
    let mut n = small(8);
    let t = Instant::now();
    n.request(key(1), MAC, true, t).unwrap();
    let slot = n.get(&key(1)).unwrap().slot;
    let mut probes = Vec::new();
    n.tick(t, |s| s == slot, |k, _| probes.push(k), |_, _| {});
    assert_eq!(state(&n, key(1)), Some(State::Delay));
    let (p, _) = tick(&mut n, t + Duration::from_secs(5));
    assert_eq!(p, vec![key(1)], "first probe after the delay");
    assert_eq!(state(&n, key(1)), Some(State::Probe));
    let mut now = t + Duration::from_secs(5);
    for _ in 0..2 {
        now += Duration::from_secs(1);
        assert_eq!(tick(&mut n, now).0, vec![key(1)]);
    }
    now += Duration::from_secs(1);
    let (p, effects) = tick(&mut n, now);
    assert!(p.is_empty(), "three probes in all");
    assert_eq!(effects, vec![(key(1), Effect::Withdraw)]);
    assert_eq!(state(&n, key(1)), Some(State::Failed));
    tick(&mut n, now + Duration::from_secs(3));
    assert_eq!(state(&n, key(1)), None, "failed entries go");
}

#[test]
fn a_probe_answered_is_reachable_again() {
    let mut n = small(8);
    let t = Instant::now();
    n.request(key(1), MAC, true, t).unwrap();
    n.used(key(1), t);
    tick(&mut n, t + Duration::from_secs(5));
    assert_eq!(state(&n, key(1)), Some(State::Probe));
    n.answer(key(1), MAC, SOLICITED, t + Duration::from_secs(5))
        .unwrap();
    assert_eq!(state(&n, key(1)), Some(State::Reachable));
}

#[test]
fn an_answer_without_override_does_not_replace_the_mac() {
    let mut n = small(8);
    let t = Instant::now();
    n.solicit(key(1), t).unwrap();
    n.answer(key(1), MAC, SOLICITED, t).unwrap();
    let no_override = Answer {
        solicited: true,
        override_: false,
    };
    assert_eq!(
        n.answer(key(1), OTHER, no_override, t).unwrap(),
        Effect::Nothing
    );
    assert_eq!(n.get(&key(1)).unwrap().mac, Some(MAC));
    assert_eq!(state(&n, key(1)), Some(State::Stale));
    // With override, the new MAC is taken.
    n.answer(key(1), OTHER, UNSOLICITED, t).unwrap();
    assert_eq!(n.get(&key(1)).unwrap().mac, Some(OTHER));
}

#[test]
fn a_full_table_evicts_stale_entries_oldest_first_never_reachable_or_permanent() {
    let mut n = small(4);
    let t = Instant::now();
    n.set_permanent(key(0), MAC, t).unwrap();
    n.solicit(key(1), t).unwrap();
    n.answer(key(1), MAC, SOLICITED, t).unwrap();
    n.request(key(2), MAC, true, t).unwrap();
    n.request(key(3), MAC, true, t + Duration::from_millis(1))
        .unwrap();
    // A flood of requests: each new one pushes out the oldest stale entry.
    for i in 4..100 {
        n.request(key(i), MAC, true, t + Duration::from_millis(i as u64))
            .unwrap();
        assert_eq!(n.len(), 4);
    }
    assert_eq!(state(&n, key(0)), Some(State::Permanent));
    assert_eq!(state(&n, key(1)), Some(State::Reachable));
    assert_eq!(state(&n, key(98)), Some(State::Stale));
    assert_eq!(state(&n, key(97)), None);
    assert_eq!(n.evicted, 96);
    // A host that appears now is resolved.
    n.solicit(key(1000), t).unwrap();
    n.answer(key(1000), OTHER, SOLICITED, t).unwrap();
    assert_eq!(state(&n, key(1000)), Some(State::Reachable));
}

#[test]
fn nothing_evictable_refuses() {
    let mut n = small(2);
    let t = Instant::now();
    n.set_permanent(key(0), MAC, t).unwrap();
    n.set_permanent(key(1), MAC, t).unwrap();
    assert_eq!(n.request(key(2), MAC, true, t), Err(Refusal::Full));
    assert_eq!(n.solicit(key(2), t), Err(Refusal::Full));
    assert_eq!(n.len(), 2);
}

#[test]
fn slots_are_reused_and_never_shared() {
    let mut n = small(3);
    let t = Instant::now();
    for i in 0..50 {
        n.request(key(i), MAC, true, t + Duration::from_millis(i as u64))
            .unwrap();
        let mut slots: Vec<u32> = n.iter().map(|(_, e)| e.slot).collect();
        slots.sort();
        slots.dedup();
        assert_eq!(slots.len(), n.len());
        assert!(slots.iter().all(|&s| s < 3));
    }
}

#[test]
fn the_candidate_queue_stays_bounded_under_churn() {
    let mut n = small(16);
    let mut t = Instant::now();
    for i in 0..10_000u32 {
        n.request(key(i % 8), if i % 2 == 0 { MAC } else { OTHER }, true, t)
            .unwrap();
        if i % 100 == 0 {
            t += Duration::from_millis(1);
            tick(&mut n, t);
        }
    }
    assert!(n.candidates.len() <= 4 * n.len() + 1024 + 100);
}
