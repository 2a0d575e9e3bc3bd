//! NAT entries: the frame the program writes is the one the graph writes, to the bit, for
//! any tuple and any checksum; what moves a session's state stays the graph's.

use super::maps::{Key, RouteRewrite, Value};
use super::nat::rewrite_of;
use super::program::{Reason, XDP_PASS, XDP_REDIRECT};
use super::tests::{run_out, setup, LO};
use crate::nat44::packet::{rewrite, Tuple, TCP, UDP};
use crate::wire::ipv4::{checksum, decrement_ttl};

const OURS: [u8; 6] = [2, 0, 0, 0, 0, 0xd0];
const ROUTE: RouteRewrite = RouteRewrite {
    dst_mac: [2, 0, 0, 0, 0, 0x22],
    src_mac: [2, 0, 0, 0, 0, 0xd1],
    max_len: 1514,
    in_mac: OURS,
    use_slot: 0,
};

/// xorshift64: cases that vary, the same in every run.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A 16-bit value, the checksums' edge values often.
    fn word(&mut self) -> u16 {
        match self.next() % 8 {
            0 => 0,
            1 => 0xffff,
            2 => 0xfffe,
            _ => self.next() as u16,
        }
    }
}

/// A 60-byte frame of `t` for our MAC: TTL `ttl`, TCP `flags`, transport checksum `l4_sum`
/// (not checked on the way, so any), a valid IPv4 header checksum.
fn frame(t: &Tuple, ttl: u8, flags: u8, l4_sum: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&OURS);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x11]);
    f[12..14].copy_from_slice(&[8, 0]);
    f[14..24].copy_from_slice(&[0x45, 0, 0, 46, 0, 1, 0x40, 0, ttl, t.proto]);
    f[26..30].copy_from_slice(&t.src.to_be_bytes());
    f[30..34].copy_from_slice(&t.dst.to_be_bytes());
    f[34..36].copy_from_slice(&t.sport.to_be_bytes());
    f[36..38].copy_from_slice(&t.dport.to_be_bytes());
    let sum_at = if t.proto == TCP {
        f[46] = 0x50;
        f[47] = flags;
        50
    } else {
        f[38..40].copy_from_slice(&26u16.to_be_bytes());
        40
    };
    f[sum_at..sum_at + 2].copy_from_slice(&l4_sum.to_be_bytes());
    let sum = checksum(&f[14..34]);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f
}

/// What the graph makes of `f`: ip4-rewrite's Ethernet header and TTL, then the NAT's
/// rewrite of `from` into `to`.
fn graphs(f: &[u8], from: &Tuple, to: &Tuple) -> Vec<u8> {
    let mut g = f.to_vec();
    g[..6].copy_from_slice(&ROUTE.dst_mac);
    g[6..12].copy_from_slice(&ROUTE.src_mac);
    decrement_ttl(&mut g[14..]);
    rewrite(&mut g[14..], 20, from, to);
    g
}

/// A translation as nat44 makes them: the source mapped (a forward packet), the
/// destination (a reply or a port forward), or both (hairpin); ports kept at times.
fn translation(c: &mut Cases) -> (Tuple, Tuple) {
    let proto = if c.next().is_multiple_of(2) { TCP } else { UDP };
    let from = Tuple {
        proto,
        src: c.next() as u32 | 0x0100_0000,
        dst: c.next() as u32 | 0x0100_0000,
        sport: c.word(),
        dport: c.word(),
    };
    let mut to = from;
    let how = c.next() % 3;
    if how != 1 {
        to.src = c.next() as u32;
        if !c.next().is_multiple_of(4) {
            to.sport = c.word();
        }
    }
    if how != 0 {
        to.dst = c.next() as u32;
        if !c.next().is_multiple_of(4) {
            to.dport = c.word();
        }
    }
    // Within the program's own checks: not a martian, not a refused destination.
    for a in [&mut to.src, &mut to.dst] {
        *a = (*a & 0x00ff_ffff) | 0x0a00_0000;
    }
    let fix = |a: u32| (a & 0x00ff_ffff) | 0xc600_0000;
    (
        Tuple {
            src: fix(from.src),
            dst: fix(from.dst),
            ..from
        },
        to,
    )
}

/// The program's arithmetic, in Rust: `!fold(!sum + add)`.
fn apply(sum: u16, add: u16) -> u16 {
    let mut s = u32::from(!sum) + u32::from(add);
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[test]
fn the_entrys_sums_update_the_checksums_as_the_graphs_rewrite_does() {
    let mut c = Cases(0x5eed_1234_abcd_0001);
    for case in 0..20_000 {
        let (from, to) = translation(&mut c);
        let l4_sum = c.word();
        let f = frame(&from, 64, 0x10, l4_sum);
        let want = graphs(&f, &from, &to);
        let r = rewrite_of(&from, &to);
        let mut ttl = f[14..].to_vec();
        decrement_ttl(&mut ttl);
        let ip = apply(u16::from_be_bytes([ttl[10], ttl[11]]), r.ip_sum);
        assert_eq!(
            ip.to_be_bytes(),
            [want[24], want[25]],
            "case {case}: {from} => {to}"
        );
        let at = if from.proto == TCP { 50 } else { 40 };
        let l4 = if from.proto == UDP && l4_sum == 0 {
            0
        } else {
            apply(l4_sum, r.l4_sum)
        };
        assert_eq!(
            l4.to_be_bytes(),
            [want[at], want[at + 1]],
            "case {case}: {from} => {to}"
        );
    }
}

/// An entry of epoch 5 translating `from` into `to`, routed out of slot 0 (lo).
fn entry(from: &Tuple, to: &Tuple) -> Value {
    let port = |slot| super::Port { slot, ifindex: LO };
    let mut value = Value::between(5, port(2), port(0), Some(ROUTE));
    value.nat = Some(rewrite_of(from, to));
    value
}

#[test]
fn a_nat_entrys_frame_is_the_graphs_to_the_bit() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(5, 1).unwrap();
    maps.set_egress(0, LO).unwrap();
    let mut c = Cases(0x0123_4567_89ab_cdef);
    for case in 0..400 {
        let (from, to) = translation(&mut c);
        let key = Key::nat4(LO, &from);
        maps.insert(&key, &entry(&from, &to)).unwrap();
        let ttl = 2 + (c.next() % 250) as u8;
        let f = frame(&from, ttl, 0x18, c.word());
        let (action, out) = run_out(&prog, &f);
        assert_eq!(
            action,
            XDP_REDIRECT as u32,
            "case {case}: {:?}",
            maps.reason_counts()
        );
        assert_eq!(out, graphs(&f, &from, &to), "case {case}: {from} => {to}");
        assert!(maps.remove(&key));
    }
}

#[test]
fn what_moves_a_sessions_state_and_other_tuples_stay_the_graphs() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(5, 1).unwrap();
    maps.set_egress(0, LO).unwrap();
    let from = Tuple {
        proto: TCP,
        src: 0xc612_0001,
        dst: 0xc613_0001,
        sport: 1024,
        dport: 80,
    };
    let to = Tuple {
        src: 0xcb00_7101,
        sport: 61_000,
        ..from
    };
    maps.insert(&Key::nat4(LO, &from), &entry(&from, &to))
        .unwrap();
    let action = |f: &[u8]| run_out(&prog, f).0;
    assert_eq!(
        action(&frame(&from, 64, 0x10, 7)),
        XDP_REDIRECT as u32,
        "ACK"
    );
    let graph = maps.reason_counts()[Reason::Graph as usize];
    for flags in [0x02, 0x12, 0x01, 0x11, 0x04, 0x14] {
        assert_eq!(
            action(&frame(&from, 64, flags, 7)),
            XDP_PASS as u32,
            "{flags:#x}"
        );
    }
    assert_eq!(maps.reason_counts()[Reason::Graph as usize] - graph, 6);
    // Another port, or UDP with the same numbers: no entry.
    let no_entry = maps.reason_counts()[Reason::NoEntry as usize];
    let other = Tuple {
        sport: 1025,
        ..from
    };
    assert_eq!(action(&frame(&other, 64, 0x10, 7)), XDP_PASS as u32);
    let udp = Tuple { proto: UDP, ..from };
    assert_eq!(action(&frame(&udp, 64, 0, 7)), XDP_PASS as u32);
    assert_eq!(maps.reason_counts()[Reason::NoEntry as usize] - no_entry, 2);
    // TTL 1 is the graph's (its time exceeded quotes the frame as sent).
    assert_eq!(action(&frame(&from, 1, 0x10, 7)), XDP_PASS as u32);
    // Listed whole.
    let listed = maps.flows(8);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].0.nat_tuple(), from);
    assert_eq!(
        listed[0].1.nat.map(|n| (n.to.src, n.to.sport)),
        Some((to.src, to.sport))
    );
    assert_eq!(listed[0].1.hits, 1);
}
