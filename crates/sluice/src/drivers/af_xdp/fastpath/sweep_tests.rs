//! The sweep against real maps: a NAT entry's frames keep its session alive, and entries no
//! frame takes, or of an older epoch, go.

use super::maps::{Key, NatRewrite, RouteRewrite, Value, KIND_NAT4};
use super::nat::rewrite_of;
use super::sweep::{nat_period, IDLE_SWEEPS};
use super::FastPath;
use crate::nat44::packet::{Tuple, UDP};
use crate::nat44::shared::Nat44Shared;
use crate::nat44::table::{Source, Table};
use crate::nat44::{Limits, NatView, Stats, Timeouts};
use std::sync::atomic::Ordering;

const INSIDE: u32 = 0x0a00_0002;
const REMOTE: u32 = 0xc633_6402;
const OUTSIDE: u32 = 0xcb00_7101;

fn fast_path() -> Option<FastPath> {
    match FastPath::new(64) {
        Ok(fp) => Some(fp),
        Err(e) if std::env::var_os("CI").is_none() && e.contains("CAP_BPF") => None,
        Err(e) => panic!("{e}"),
    }
}

/// Worker 0's session `index`'s forward direction from `from` to `to`, taken by a frame
/// in generation `seen`.
fn entry(fp: &FastPath, (from, to): (Tuple, Tuple), index: u32, seen: u32) -> (Key, Value) {
    let key = Key::nat4(9, &from);
    let value = Value {
        epoch: fp.epoch(),
        out_slot: 0,
        in_stat: 0,
        out_stat: 0,
        hits: 0,
        seen,
        route: Some(RouteRewrite {
            dst_mac: [2, 0, 0, 0, 0, 1],
            src_mac: [2, 0, 0, 0, 0, 2],
            max_len: 1514,
            in_mac: [2, 0, 0, 0, 0, 3],
            use_slot: u32::MAX,
        }),
        nat: Some(NatRewrite {
            worker: 0,
            index,
            ..rewrite_of(&from, &to)
        }),
    };
    fp.maps.insert(&key, &value).unwrap();
    (key, value)
}

fn present(fp: &FastPath, key: &Key) -> bool {
    fp.maps.flows(1 << 12).iter().any(|(k, _)| k == key)
}

#[test]
fn the_sweep_keeps_a_session_its_frames_take_alive_and_removes_idle_and_stale_entries() {
    let Some(fp) = fast_path() else { return };
    let nat = Nat44Shared::new(1);
    // Sessions of 4 s at the shortest: the NAT map is read every sweep.
    let view = NatView {
        timeouts: Timeouts {
            udp: 4,
            ..Timeouts::default()
        },
        ..(**nat.view.load()).clone()
    };
    nat.view.store(std::sync::Arc::new(view));
    fp.set_nat(nat.clone());
    let stats = Stats::default();
    let limits = Limits {
        sessions: 10,
        per_host: 10,
    };
    let mut table = Table::new(0, 1, limits);
    let first = Tuple {
        proto: UDP,
        src: INSIDE,
        dst: REMOTE,
        sport: 40000,
        dport: 53,
    };
    let (i, x) = table
        .open(first, (Source::Map(OUTSIDE), None), (0, &stats))
        .unwrap();
    table.offload(i, crate::nat44::table::Dir::Forward);
    let generation = || fp.generation.load(Ordering::SeqCst);
    let (key, mut value) = entry(&fp, (first, x), i, generation());
    let last = |t: &Table| t.get(i).unwrap().last;

    // Taken in the generation the sweep ends: the session hears of it.
    fp.sweep();
    nat.exchange_offload(0, &mut table, 9_000);
    assert_eq!(last(&table), 9_000);
    // Not taken since: nothing to hear (after the next sweep, which reads the generation
    // the last one ended again: a frame may have marked it after that read).
    fp.sweep();
    nat.exchange_offload(0, &mut table, 10_000);
    fp.sweep();
    nat.exchange_offload(0, &mut table, 12_000);
    assert!(last(&table) < 12_000);
    // A frame takes it again (the program writes the current generation).
    value.seen = generation();
    fp.maps.insert(&key, &value).unwrap();
    fp.sweep();
    nat.exchange_offload(0, &mut table, 13_000);
    assert_eq!(last(&table), 13_000);
    assert_eq!(fp.stats.swept_entries.load(Ordering::Relaxed), 1);
    let kept =
        |fp: &FastPath| fp.stats.kept_by_kind[usize::from(KIND_NAT4)].load(Ordering::Relaxed);
    assert_eq!(kept(&fp), 1);

    // No frame for `IDLE`: the entry goes, and the session no longer hears of it.
    for _ in 0..IDLE_SWEEPS {
        fp.sweep();
        nat.exchange_offload(0, &mut table, 13_000);
        assert!(present(&fp, &key));
    }
    fp.sweep();
    assert!(!present(&fp, &key));
    assert_eq!(fp.stats.swept_idle.load(Ordering::Relaxed), 1);
    assert_eq!(kept(&fp), 0);
    nat.exchange_offload(0, &mut table, 40_000);
    assert_eq!(last(&table), 13_000);

    // An entry of an older epoch goes at the next sweep, even one frames take.
    let (key, _) = entry(&fp, (first, x), i, generation());
    fp.bump_epoch();
    fp.sweep();
    assert!(!present(&fp, &key));
    assert_eq!(fp.stats.swept_stale.load(Ordering::Relaxed), 1);
}

#[test]
fn the_nat_map_is_read_every_quarter_of_the_shortest_offloaded_timeout() {
    let t = |udp, tcp_established| Timeouts {
        udp,
        tcp_established,
        ..Timeouts::default()
    };
    assert_eq!(nat_period(&t(4, 7440)), 1);
    assert_eq!(nat_period(&t(60, 7440)), 15);
    assert_eq!(nat_period(&t(300, 20)), 5);
    // VPP's defaults (UDP 300 s): every 30 s, the most.
    assert_eq!(nat_period(&Timeouts::default()), 30);
}
