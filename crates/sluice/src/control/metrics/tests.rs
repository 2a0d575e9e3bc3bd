//! The exposition: names, labels, order and escaping of every family.

use super::*;

fn snapshot() -> Snapshot {
    Snapshot {
        interfaces: vec![
            (
                "e0".into(),
                IfTotals {
                    rx_packets: 10,
                    rx_bytes: 1000,
                    tx_packets: 7,
                    tx_bytes: 700,
                    drops: 3,
                    tx_errors: 1,
                    tx_peer_full: 1,
                    rx_miss: 2,
                },
            ),
            ("e1.100".into(), IfTotals::default()),
        ],
        device_counters: vec![("e0".into(), "rx_good_packets".into(), 10)],
        nodes: vec![NodeTotals {
            name: "ip4-lookup".into(),
            calls: 4,
            vectors: 9,
            clocks: 1234,
        }],
        errors: vec![
            ErrorTotal {
                node: "ip4-input".into(),
                reason: "ip4 ttl <= 1".into(),
                count: 5,
            },
            ErrorTotal {
                node: "odd\"node\\".into(),
                reason: "line\nbreak".into(),
                count: 0,
            },
        ],
        buffers: None,
        queues: vec![
            QueueTotals {
                interface: "e0".into(),
                queue: 0,
                worker: 0,
                packets: 6,
                bytes: 600,
                drops: 1,
            },
            QueueTotals {
                interface: "e0".into(),
                queue: 1,
                worker: 1,
                packets: 4,
                bytes: 400,
                drops: 0,
            },
        ],
        busy_clocks: vec![100, 0],
        workers: 2,
        tsc_hz: 2.5e9,
        health: Default::default(),
        sessions: Vec::new(),
        netlink: vec![crate::netlink::NetlinkStats {
            netns: Some("ns1".into()),
            routes_refused_table: 3,
            queue_overflows: 1,
            ..Default::default()
        }],
        nat44: Default::default(),
    }
}

#[test]
fn netlink_metrics() {
    let t = encode(snapshot());
    let s = samples(&t);
    for line in [
        "netlink_routes_refused_table_total{netns=\"ns1\"} 3",
        "netlink_queue_overflows_total{netns=\"ns1\"} 1",
        "netlink_overflows_total{netns=\"ns1\"} 0",
    ] {
        assert!(s.contains(&line), "{line} missing from\n{t}");
    }
}

#[test]
fn queue_and_worker_metrics() {
    let t = encode(snapshot());
    let s = samples(&t);
    for line in [
        "queues_rx_packets_total{interface=\"e0\",queue=\"0\"} 6",
        "queues_rx_packets_total{interface=\"e0\",queue=\"1\"} 4",
        "queues_rx_bytes_total{interface=\"e0\",queue=\"0\"} 600",
        "queues_rx_drops_total{interface=\"e0\",queue=\"0\"} 1",
        "queues_worker{interface=\"e0\",queue=\"1\"} 1",
        "sys_worker_busy_clocks_total{worker=\"0\"} 100",
        "sys_worker_busy_clocks_total{worker=\"1\"} 0",
    ] {
        assert!(s.contains(&line), "{line} missing from\n{t}");
    }
}

/// The sample lines of `text` (no comments).
fn samples(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

#[test]
fn interface_counters_carry_vpp_names_and_the_interface_label() {
    let t = encode(snapshot());
    let s = samples(&t);
    for line in [
        "interfaces_rx_packets_total{interface=\"e0\"} 10",
        "interfaces_rx_bytes_total{interface=\"e0\"} 1000",
        "interfaces_tx_packets_total{interface=\"e0\"} 7",
        "interfaces_tx_bytes_total{interface=\"e0\"} 700",
        "interfaces_drops_total{interface=\"e0\"} 3",
        "interfaces_tx_error_total{interface=\"e0\"} 1",
        "interfaces_tx_peer_full_total{interface=\"e0\"} 1",
        "interfaces_rx_miss_total{interface=\"e0\"} 2",
        "interfaces_rx_packets_total{interface=\"e1.100\"} 0",
    ] {
        assert!(s.contains(&line), "{line} missing from\n{t}");
    }
    assert!(
        t.contains("# TYPE interfaces_rx_packets_total counter\n"),
        "{t}"
    );
    assert!(
        t.contains("# HELP interfaces_rx_packets_total Packets received on the interface.\n"),
        "{t}"
    );
    assert!(
        !t.contains(".."),
        "the encoder ends each help with a period: {t}"
    );
}

#[test]
fn node_error_and_system_metrics() {
    let t = encode(snapshot());
    let s = samples(&t);
    for line in [
        "nodes_calls_total{node=\"ip4-lookup\"} 4",
        "nodes_vectors_total{node=\"ip4-lookup\"} 9",
        "nodes_clocks_total{node=\"ip4-lookup\"} 1234",
        "err_total{node=\"ip4-input\",error=\"ip4 ttl <= 1\"} 5",
        "sys_num_worker_threads 2",
        "sys_tsc_hz 2500000000.0",
    ] {
        assert!(s.contains(&line), "{line} missing from\n{t}");
    }
    assert!(t.contains("# TYPE sys_num_worker_threads gauge\n"), "{t}");
    assert!(!t.contains("buffer_pools"), "no pool, no pool metrics: {t}");
}

#[test]
fn series_keep_the_snapshot_order() {
    let t = encode(snapshot_with_input_first());
    let at = |needle: &str| t.find(needle).unwrap_or_else(|| panic!("{needle}: {t}"));
    assert!(at("{interface=\"e0\"} 10") < at("{interface=\"e1.100\"} 0"));
    assert!(
        at("nodes_calls_total{node=\"af-packet-input\"}")
            < at("nodes_calls_total{node=\"ip4-lookup\"}")
    );
    assert!(at("# TYPE interfaces_rx_packets_total") < at("# TYPE nodes_calls_total"));
    assert!(at("# TYPE nodes_clocks_total") < at("# TYPE err_total"));
    assert_eq!(
        t,
        encode(snapshot_with_input_first()),
        "the same values, the same text"
    );
}

fn snapshot_with_input_first() -> Snapshot {
    let mut s = snapshot();
    s.nodes.insert(
        0,
        NodeTotals {
            name: "af-packet-input".into(),
            ..NodeTotals::default()
        },
    );
    s
}

#[test]
fn label_values_are_escaped() {
    let t = encode(snapshot());
    let want = r#"err_total{node="odd\"node\\",error="line\nbreak"} 0"#;
    assert!(samples(&t).contains(&want), "{want} missing from\n{t}");
    // Every sample is one line: the newline in the reason did not break it.
    for l in samples(&t) {
        assert!(
            l.rsplit_once(' ')
                .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
            "{l}"
        );
    }
}

#[test]
fn buffer_pool_gauges() {
    let mut s = snapshot();
    s.buffers = Some(BufferReport {
        total: 16384,
        free_in_pool: 16000,
        free_in_caches: 256,
        in_use: 128,
        in_frames: 0,
        in_drivers: 128,
        unaccounted: 0,
        buffer_size: 2304,
        data_size: 2048,
        region_bytes: 1 << 25,
        huge_pages: false,
        free_list_locks: 7,
        free_list_contended: 2,
    });
    let t = encode(s);
    for line in [
        "buffer_pools_buffers{pool=\"default\"} 16384",
        "buffer_pools_available{pool=\"default\"} 16000",
        "buffer_pools_cached{pool=\"default\"} 256",
        "buffer_pools_used{pool=\"default\"} 128",
        "buffer_pools_free_list_locks_total{pool=\"default\"} 7",
        "buffer_pools_free_list_contended_total{pool=\"default\"} 2",
    ] {
        assert!(samples(&t).contains(&line), "{line} missing from\n{t}");
    }
    assert!(t.contains("# TYPE buffer_pools_used gauge\n"), "{t}");
}

#[test]
fn device_counters_are_one_family_by_interface_and_name() {
    let text = encode(snapshot());
    assert!(
        text.contains("# TYPE interfaces_device_total counter"),
        "{text}"
    );
    assert!(
        text.contains("interfaces_device_total{interface=\"e0\",counter=\"rx_good_packets\"} 10"),
        "{text}"
    );
    // No device counters, no family.
    let none = encode(Snapshot {
        device_counters: Vec::new(),
        ..snapshot()
    });
    assert!(!none.contains("interfaces_device"), "{none}");
}
