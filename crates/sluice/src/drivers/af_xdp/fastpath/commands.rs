//! `show xdp flows`: the flows the XDP fast path forwards, its counters by reason and by
//! interface, and what its installer did.

use super::maps::{
    KIND_BRIDGE, KIND_NAT4, KIND_ROUTE4, KIND_ROUTE6, KIND_XCONNECT, MAX_NAT_ENTRIES,
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
    let entries = fp.maps.flows(MAX_NAT_ENTRIES as usize);
    let _ = writeln!(
        t,
        "epoch {epoch}, {} flows (at most {MAX_FLOWS} of each kind, {MAX_NAT_ENTRIES} NAT; \
         {INSTALLS_PER_SEC} installs/s; idle after {} s)",
        entries.len(),
        IDLE.as_secs()
    );
    let mut by_kind = serde_json::Map::new();
    for (k, _) in &entries {
        let n = by_kind.entry(kind_name(k.kind)).or_insert(json!(0));
        *n = json!(n.as_u64().unwrap_or(0) + 1);
    }
    if entries.len() > SHOW_ROWS {
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
            "total": entries.len(), "reasons": reasons,
            "interfaces": interfaces, "installer": installer,
        }),
    )
}

/// Rows `show xdp flows` lists at most (the counts by kind cover them all).
const SHOW_ROWS: usize = 1000;

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
