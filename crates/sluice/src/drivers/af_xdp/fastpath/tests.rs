//! The fast path's program run by the kernel (BPF_PROG_TEST_RUN) for every action and every
//! miss reason, with the maps as the program sees them.

use super::maps::{Key, Maps, Value};
use super::program::{fast_path_program, Reason, XDP_PASS, XDP_REDIRECT};
use crate::sys::bpf::{load_xdp_program, map_create, prog_test_run_action, MapKind, TestRun};

const LO: u32 = 1;

/// The program over fresh maps, or None where BPF is not allowed (not root) outside CI.
fn setup() -> Option<(Maps, crate::sys::bpf::BpfMap, crate::sys::bpf::BpfFd)> {
    let maps = match Maps::create(64) {
        Ok(m) => m,
        Err(e) if std::env::var_os("CI").is_none() && e.contains("CAP_BPF") => return None,
        Err(e) => panic!("{e}"),
    };
    let xsks = map_create(MapKind::XskMap, 4, 4, 1).unwrap();
    let insns = fast_path_program(&maps, xsks.raw_fd()).unwrap();
    let prog = load_xdp_program(&insns, "sluice_fp_test").unwrap();
    Some((maps, xsks, prog))
}

/// One run on a 60-byte frame received on lo's queue 0: the action.
fn run(prog: &crate::sys::bpf::BpfFd) -> u32 {
    run_frame(prog, &[0x5au8; 60])
}

fn run_frame(prog: &crate::sys::bpf::BpfFd, frame: &[u8]) -> u32 {
    let len = frame.len() as u32;
    let mut ctx = [0u8; 24];
    ctx[4..8].copy_from_slice(&len.to_ne_bytes()); // data_end
    ctx[12..16].copy_from_slice(&LO.to_ne_bytes()); // ingress_ifindex
    let mut out = vec![0u8; frame.len()];
    let (action, _) = prog_test_run_action(
        prog,
        TestRun {
            data_in: frame,
            data_out: Some(&mut out),
            ctx_in: Some(&ctx),
            repeat: 1,
            flags: 0,
        },
    )
    .unwrap();
    action
}

#[test]
fn each_action_and_miss_reason() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(7).unwrap();
    let reasons = |maps: &Maps| maps.reason_counts();
    // No entry: to the socket, whose map has none for the queue: the fallback, XDP_PASS.
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::NoEntry as usize], 1);

    let key = Key::xconnect(LO);
    let mut value = Value {
        epoch: 7,
        out_slot: 3,
        in_stat: 1,
        out_stat: 2,
        last_ns: 0,
    };
    // An entry whose egress is not in the devmap.
    maps.insert(&key, &value).unwrap();
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::NoEgress as usize], 1);

    // The egress known: redirected, counted on both interfaces, the flow stamped.
    maps.set_egress(3, LO).unwrap();
    assert_eq!(run(&prog), XDP_REDIRECT as u32);
    assert_eq!(run(&prog), XDP_REDIRECT as u32);
    assert_eq!(reasons(&maps)[Reason::Hit as usize], 2);
    // What the graph treats apart goes to it even so: a short frame, tagged frames.
    assert_eq!(run_frame(&prog, &[0x5a; 59]), XDP_PASS as u32);
    for tpid in [[0x81, 0x00], [0x88, 0xa8]] {
        let mut tagged = [0x5au8; 64];
        tagged[12..14].copy_from_slice(&tpid);
        assert_eq!(run_frame(&prog, &tagged), XDP_PASS as u32);
    }
    assert_eq!(reasons(&maps)[Reason::Graph as usize], 3);
    let rx = maps.interface_counts(1);
    let tx = maps.interface_counts(2);
    assert_eq!((rx.rx_packets, rx.rx_bytes, rx.tx_packets), (2, 120, 0));
    assert_eq!((tx.tx_packets, tx.tx_bytes, tx.rx_packets), (2, 120, 0));
    let flows = maps.flows(10);
    assert_eq!(flows.len(), 1);
    assert!(flows[0].1.last_ns > 0, "{flows:?}");

    // A change of epoch makes the entry stale: to the socket again.
    maps.set_epoch(8).unwrap();
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::Stale as usize], 1);
    value.epoch = 8;
    maps.insert(&key, &value).unwrap();
    assert_eq!(run(&prog), XDP_REDIRECT as u32);

    // Removed: no entry.
    assert!(maps.remove(&key));
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::NoEntry as usize], 2);
}
