use super::*;
use crate::nat44::packet::UDP;
use crate::wire::tcp::{ACK, FIN, SYN};

const A: u32 = 0x0a00_0002;
const B: u32 = 0x0a00_0003;
const R: u32 = 0xc633_6402;
const R2: u32 = 0xc633_6403;
const E: u32 = 0xcb00_7101;

fn table(sessions: usize, per_host: u32) -> Table {
    Table::new(0, 1, Limits { sessions, per_host })
}

fn udp(src: u32, sport: u16, dst: u32, dport: u16) -> Tuple {
    Tuple {
        proto: UDP,
        src,
        dst,
        sport,
        dport,
    }
}

#[test]
fn a_mapping_is_endpoint_independent_and_keeps_its_port() {
    let stats = Stats::default();
    let mut t = table(100, 100);
    let first = udp(A, 40000, R, 53);
    let (_, x1) = t.open(first, (Source::Map(E), None), (0, &stats)).unwrap();
    assert_eq!((x1.src, x1.sport), (E, 40000), "port preserved");
    // A second destination from the same endpoint: the same outside port (EIM).
    let (_, x2) = t
        .open(udp(A, 40000, R2, 53), (Source::Map(E), None), (0, &stats))
        .unwrap();
    assert_eq!((x2.src, x2.sport), (E, 40000));
    // Another inside host with the same port to the same destination: another port.
    let (_, x3) = t
        .open(udp(B, 40000, R, 53), (Source::Map(E), None), (0, &stats))
        .unwrap();
    assert_eq!(x3.src, E);
    assert_ne!(x3.sport, 40000);
    // The reply finds the session, in the reply direction, and leaves as the reverse of orig.
    let (i, dir) = t.find(&x1.reversed()).unwrap();
    assert_eq!(dir, Dir::Reply);
    assert_eq!(t.used(i, dir, 0, 1), Some(first.reversed()));
    // A packet from another remote to the mapped port is not let in (APDF).
    assert!(t.find(&udp(R2, 53, E, x3.sport)).is_none());
    assert_eq!(stats.sessions(), 3);
}

#[test]
fn limits_and_expiry_are_counted() {
    let stats = Stats::default();
    let mut t = table(2, 1);
    t.open(udp(A, 1, R, 53), (Source::Map(E), None), (0, &stats))
        .unwrap();
    assert_eq!(
        t.open(udp(A, 2, R, 53), (Source::Map(E), None), (0, &stats)),
        Err(Refusal::HostLimit)
    );
    t.open(udp(B, 1, R, 53), (Source::Map(E), None), (0, &stats))
        .unwrap();
    assert_eq!(
        t.open(
            udp(R, 9, E, 80),
            (Source::Keep, Some((A, 8080))),
            (0, &stats)
        ),
        Err(Refusal::TableFull)
    );
    let timeouts = Timeouts {
        udp: 2,
        ..Timeouts::default()
    };
    t.sweep(10, 1_999, &timeouts, &stats);
    assert_eq!(t.len(), 2);
    t.sweep(10, 2_000, &timeouts, &stats);
    assert_eq!(t.len(), 0);
    assert_eq!(stats.expired.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert!(t.ports_in_use().iter().all(|(_, n)| *n == 0), "ports freed");
}

#[test]
fn new_limits_keep_the_open_sessions() {
    let stats = Stats::default();
    let mut t = table(4, 4);
    for port in 1..=3 {
        t.open(udp(A, port, R, 53), (Source::Map(E), None), (0, &stats))
            .unwrap();
    }
    t.set_limits(Limits {
        sessions: 2,
        per_host: 4,
    });
    assert_eq!(t.len(), 3, "lowering the limit closes nothing");
    assert_eq!(
        t.open(udp(B, 1, R, 53), (Source::Map(E), None), (0, &stats)),
        Err(Refusal::TableFull)
    );
    t.set_limits(Limits {
        sessions: 8,
        per_host: 4,
    });
    t.open(udp(B, 1, R, 53), (Source::Map(E), None), (0, &stats))
        .unwrap();
    assert_eq!(t.len(), 4);
}

#[test]
fn a_static_mapping_translates_the_destination_and_its_replies() {
    let stats = Stats::default();
    let mut t = table(10, 10);
    let orig = udp(R, 5000, E, 80);
    let (_, x) = t
        .open(orig, (Source::Keep, Some((A, 8080))), (0, &stats))
        .unwrap();
    assert_eq!(x, udp(R, 5000, A, 8080));
    let (i, dir) = t.find(&x.reversed()).unwrap();
    assert_eq!(t.used(i, dir, 0, 0), Some(orig.reversed()));
}

#[test]
fn tcp_states_follow_the_handshake_and_the_close() {
    let stats = Stats::default();
    let mut t = table(10, 10);
    let syn = Tuple {
        proto: TCP,
        ..udp(A, 41000, R, 80)
    };
    let (i, x) = t.open(syn, (Source::Map(E), None), (0, &stats)).unwrap();
    assert_eq!(t.get(i).unwrap().state, State::Open);
    t.used(i, Dir::Reply, SYN | ACK, 1);
    assert_eq!(t.get(i).unwrap().state, State::Open, "SYN+ACK alone");
    t.used(i, Dir::Forward, ACK, 2);
    assert_eq!(t.get(i).unwrap().state, State::Established);
    t.used(i, Dir::Reply, FIN | ACK, 3);
    assert_eq!(t.get(i).unwrap().state, State::Closing);
    assert_eq!(x.sport, 41000);
}

#[test]
fn an_offloaded_session_is_kept_alive_by_touches_and_withdrawn_when_it_ends() {
    let stats = Stats::default();
    let timeouts = Timeouts {
        udp: 10,
        ..Timeouts::default()
    };
    let mut t = table(100, 100);
    let first = udp(A, 40000, R, 53);
    let (i, x) = t.open(first, (Source::Map(E), None), (0, &stats)).unwrap();
    // Each direction's key is the tuple as received, and what it leaves with.
    assert_eq!(t.offload(i, Dir::Forward), Some((first, x)));
    assert_eq!(
        t.offload(i, Dir::Reply),
        Some((x.reversed(), first.reversed()))
    );
    // The fast path carried its frames: touched at 9 s, it lives past 10 s; a touch by a
    // tuple that is not the session's changes nothing.
    t.touch(i, &first, 9_000);
    t.touch(i, &udp(B, 1, R, 53), 30_000);
    t.sweep(10, 15_000, &timeouts, &stats);
    assert_eq!(t.len(), 1);
    assert!(t.take_withdrawn().is_empty());
    // Expired, its entries are withdrawn: both directions' tuples, once.
    t.sweep(10, 19_000, &timeouts, &stats);
    assert_eq!(t.len(), 0);
    assert_eq!(t.take_withdrawn(), vec![first, x.reversed()]);
    assert!(t.take_withdrawn().is_empty());
}

#[test]
fn an_offloaded_tcp_session_is_withdrawn_when_it_begins_closing() {
    let stats = Stats::default();
    let mut t = table(100, 100);
    let syn = Tuple {
        proto: TCP,
        ..udp(A, 40000, R, 80)
    };
    let (i, x) = t.open(syn, (Source::Map(E), None), (0, &stats)).unwrap();
    t.used(i, Dir::Reply, SYN | ACK, 1);
    t.used(i, Dir::Forward, ACK, 2);
    t.offload(i, Dir::Forward);
    t.used(i, Dir::Reply, ACK, 3);
    assert!(t.take_withdrawn().is_empty());
    t.used(i, Dir::Reply, FIN | ACK, 4);
    assert_eq!(t.take_withdrawn(), vec![syn, x.reversed()]);
    // Closed later: nothing more to withdraw (not offloaded since).
    t.clear(&stats);
    assert!(t.take_withdrawn().is_empty());
    // A session never offloaded withdraws nothing.
    let (_, _) = t
        .open(udp(B, 1, R, 53), (Source::Map(E), None), (5, &stats))
        .unwrap();
    t.clear(&stats);
    assert!(t.take_withdrawn().is_empty());
}

#[test]
fn a_direction_is_offered_once_an_epoch_until_the_offer_is_old_or_forgotten() {
    let stats = Stats::default();
    let mut t = table(10, 10);
    let first = udp(A, 40000, R, 53);
    let (i, x) = t.open(first, (Source::Map(E), None), (0, &stats)).unwrap();
    let offer = |t: &mut Table, dir, at| t.offer(i, dir, at, 500);
    assert_eq!(offer(&mut t, Dir::Forward, (3, 1000)), Some((first, x)));
    // Its entry is on its way: not again in the same epoch within 500 ms.
    assert_eq!(offer(&mut t, Dir::Forward, (3, 1499)), None);
    // The other direction is apart.
    let reply = (x.reversed(), first.reversed());
    assert_eq!(offer(&mut t, Dir::Reply, (3, 1499)), Some(reply));
    assert_eq!(offer(&mut t, Dir::Reply, (3, 1499)), None);
    // A new epoch, or 500 ms later, offers it again.
    assert!(offer(&mut t, Dir::Forward, (4, 1499)).is_some());
    assert!(offer(&mut t, Dir::Forward, (4, 1999)).is_some());
    // A forgotten offer is made again at once.
    t.forget_offer(i, Dir::Reply);
    assert_eq!(offer(&mut t, Dir::Reply, (3, 1500)), Some(reply));
    // No such session.
    assert_eq!(t.offer(i + 1, Dir::Forward, (3, 1000), 500), None);
}
