//! `show xdp flows`: the flows the XDP fast path forwards, its counters by reason and by
//! interface, and what its installer did.

use super::maps::{
    kinds_in_map_of, Key, Maps, Value, KIND_BRIDGE, KIND_NAT4, KIND_ROUTE4, KIND_ROUTE6,
    KIND_XCONNECT, MAX_NAT_ENTRIES,
};
use super::program::REASONS;
use super::{active, IDLE, INSTALLS_PER_SEC, MAX_FLOWS};
use crate::control::cli::{Command, Effect, Output};
use crate::control::exec::Control;
use crate::wire::MacAddress;
use serde_json::json;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

pub const COMMANDS: &[Command] = &[Command {
    words: &["show", "xdp", "flows"],
    effect: Effect::Reads,
    syntax: "",
    help: "the flows the XDP fast path forwards in the kernel (fast-path = \"on\"), its \
           counters by reason and by interface, and its installer's",
    example: "show xdp flows",
    args: &[],
    run: |c, _| Ok(show_flows(c)),
}];

fn show_flows(c: &Control) -> Output {
    let Some(fp) = active() else {
        return Output::Shown(
            "the XDP fast path is off (no af_xdp interface has fast-path = \"on\")\n".into(),
            json!({"enabled": false}),
        );
    };
    let epoch = fp.epoch();
    let mut t = String::new();
    let mut flows = Vec::new();
    let Listed {
        entries,
        by_kind,
        total,
        exact,
    } = listed(&fp);
    let counted = if exact {
        ""
    } else {
        " (counted at the sweep's last read of each map)"
    };
    let _ = writeln!(
        t,
        "epoch {epoch}, {total} flows{counted} (at most {MAX_FLOWS} of each kind, \
         {MAX_NAT_ENTRIES} NAT; {INSTALLS_PER_SEC} installs/s; idle after {} s)",
        IDLE.as_secs()
    );
    if entries.len() > SHOW_ROWS || !exact {
        let kinds = serde_json::Value::Object(by_kind.clone());
        let _ = writeln!(t, "the first {SHOW_ROWS} listed; by kind: {kinds}");
    }
    let _ = writeln!(
        t,
        "{:<16}{:<12}{:<16}{:>8}{:>10}",
        "Ingress", "Kind", "Egress", "Epoch", "Idle s"
    );
    for (k, v) in entries.iter().take(SHOW_ROWS) {
        let ingress = fp
            .port_name(k.ifindex)
            .unwrap_or_else(|| format!("ifindex {}", k.ifindex));
        let egress = fp
            .slot_name(v.out_slot)
            .unwrap_or_else(|| format!("slot {}", v.out_slot));
        let kind = kind_name(k.kind);
        let idle = fp.idle_seconds(v);
        let state = if v.epoch == epoch { "" } else { " (stale)" };
        let mut flow = json!({
            "ingress": ingress, "kind": kind, "egress": egress, "epoch": v.epoch,
            "current": v.epoch == epoch, "idle_seconds": idle,
        });
        let mut route = String::new();
        if let (Some(r), Some(n)) = (&v.route, &v.nat) {
            let (from, mac) = (k.nat_tuple(), MacAddress(r.dst_mac).to_string());
            let to = crate::nat44::packet::Tuple {
                proto: from.proto,
                ..n.to
            };
            route = format!("  {from} => {to} -> {mac}");
            flow["session"] = json!(from.to_string());
            flow["translated"] = json!(to.to_string());
            flow["next_hop_mac"] = json!(mac);
            flow["max_frame"] = json!(r.max_len);
        } else if k.kind == KIND_BRIDGE {
            let mac = |at: usize| MacAddress(k.addr[at..at + 6].try_into().unwrap_or_default());
            let (dst, src) = (mac(0).to_string(), mac(6).to_string());
            route = format!("  {src} -> {dst}");
            flow["source_mac"] = json!(src);
            flow["destination_mac"] = json!(dst);
        } else if let Some(r) = &v.route {
            let dst = if k.kind == KIND_ROUTE6 {
                std::net::IpAddr::from(k.addr)
            } else {
                std::net::IpAddr::from([k.addr[0], k.addr[1], k.addr[2], k.addr[3]])
            };
            let mac = MacAddress(r.dst_mac).to_string();
            route = format!("  {dst}/{} -> {mac}, frames up to {} B", k.plen, r.max_len);
            flow["destination"] = json!(dst.to_string());
            flow["prefix_len"] = json!(k.plen);
            flow["next_hop_mac"] = json!(mac);
            flow["max_frame"] = json!(r.max_len);
        }
        let _ = writeln!(
            t,
            "{ingress:<16}{kind:<12}{egress:<16}{:>8}{idle:>10.1}{state}{route}",
            v.epoch
        );
        flows.push(flow);
    }
    let counts = fp.maps.reason_counts();
    let mut reasons = serde_json::Map::new();
    let _ = writeln!(t, "frames by reason:");
    for ((_, what), n) in REASONS.iter().zip(&counts) {
        let _ = writeln!(t, "  {n:>14}  {what}");
        reasons.insert(what.to_string(), json!(n));
    }
    let mut interfaces = Vec::new();
    let _ = writeln!(t, "forwarded in XDP, by interface:");
    for i in c.dp.interfaces.live() {
        if let (Some(n), Some(port)) = (i.fast_path_counts(), i.fast_path) {
            // The kernel dropped frames redirected to it: not an egress for a while.
            let backed_off = fp.backed_off.get(port.slot as u32);
            let note = if backed_off {
                " (backed off: its kernel did not send frames redirected to it)"
            } else {
                ""
            };
            let _ = writeln!(
                t,
                "  {:<16} rx {} packets {} bytes, tx {} packets {} bytes{note}",
                i.name, n.rx_packets, n.rx_bytes, n.tx_packets, n.tx_bytes
            );
            interfaces.push(json!({
                "name": i.name, "rx_packets": n.rx_packets, "rx_bytes": n.rx_bytes,
                "tx_packets": n.tx_packets, "tx_bytes": n.tx_bytes, "backed_off": backed_off,
            }));
        }
    }
    let s = &fp.stats;
    let installer = json!({
        "installed": s.installed.load(Ordering::Relaxed),
        "offers_lost_queue_full": s.offers_queue_full.load(Ordering::Relaxed),
        "offers_lost_queue_busy": s.offers_queue_busy.load(Ordering::Relaxed),
        "longest_tick_us": s.longest_tick_micros.load(Ordering::Relaxed),
        "refused_stale": s.stale.load(Ordering::Relaxed),
        "refused_full": s.full.load(Ordering::Relaxed),
        "rate_limited": s.rate_limited.load(Ordering::Relaxed),
        "refused_no_sources": s.no_sources.load(Ordering::Relaxed),
        "refused_egress_backed_off": s.egress_refused.load(Ordering::Relaxed),
        "egress_backoffs": s.backoffs.load(Ordering::Relaxed),
        "egress_lost": s.egress_lost.load(Ordering::Relaxed),
        "swept_backoff": s.swept_backoff.load(Ordering::Relaxed),
        "swept_stale": s.swept_stale.load(Ordering::Relaxed),
        "swept_idle": s.swept_idle.load(Ordering::Relaxed),
        "nat_withdrawn": s.nat_withdrawn.load(Ordering::Relaxed),
        "last_sweep_entries": s.swept_entries.load(Ordering::Relaxed),
        "last_sweep_us": s.sweep_micros.load(Ordering::Relaxed),
        "last_sweep_cpu_us": s.sweep_cpu_micros.load(Ordering::Relaxed),
    });
    let _ = writeln!(t, "installer: {installer}");
    Output::Shown(
        t,
        json!({
            "enabled": true, "epoch": epoch, "flows": flows, "by_kind": by_kind,
            "total": total, "counts_exact": exact, "reasons": reasons,
            "interfaces": interfaces, "installer": installer,
        }),
    )
}

/// Rows `show xdp flows` lists at most (the counts by kind cover them all).
const SHOW_ROWS: usize = 1000;

/// What `show xdp flows` lists: the first rows of every map, and the entries by kind.
struct Listed {
    entries: Vec<(Key, Value)>,
    by_kind: serde_json::Map<String, serde_json::Value>,
    total: u64,
    /// Whether every map was read to its end (else a longer map's count is the sweep's).
    exact: bool,
}

/// The first `SHOW_ROWS` entries of each map, never millions: a map read to its end is
/// counted as read, a longer one by what the sweep kept at its last read of it.
fn listed(fp: &super::FastPath) -> Listed {
    let mut entries = Vec::new();
    let mut counts = [0u64; 6];
    let mut exact = true;
    for (map, kind) in fp.maps.by_kind() {
        let some = Maps::entries(map, kind, SHOW_ROWS + 1);
        let whole = some.len() <= SHOW_ROWS;
        for (k, _) in &some {
            if let Some(n) = counts.get_mut(usize::from(k.kind)) {
                *n += 1;
            }
        }
        if !whole {
            exact = false;
            for &k in kinds_in_map_of(kind) {
                let kept = fp.stats.kept_by_kind[usize::from(k)].load(Ordering::Relaxed);
                counts[usize::from(k)] = counts[usize::from(k)].max(kept);
            }
        }
        entries.extend(some);
    }
    entries.sort_by_key(|(k, _)| (k.bytes(), k.plen));
    entries.dedup_by_key(|(k, _)| *k);
    entries.truncate(SHOW_ROWS + 1);
    let mut by_kind = serde_json::Map::new();
    for k in [
        KIND_XCONNECT,
        KIND_BRIDGE,
        KIND_ROUTE4,
        KIND_ROUTE6,
        KIND_NAT4,
    ] {
        if counts[usize::from(k)] > 0 {
            by_kind.insert(kind_name(k), json!(counts[usize::from(k)]));
        }
    }
    Listed {
        entries,
        by_kind,
        total: counts.iter().sum(),
        exact,
    }
}

fn kind_name(kind: u16) -> String {
    match kind {
        KIND_XCONNECT => "xconnect",
        KIND_BRIDGE => "bridge",
        KIND_ROUTE4 => "route4",
        KIND_ROUTE6 => "route6",
        KIND_NAT4 => "nat4",
        _ => "?",
    }
    .to_string()
}
