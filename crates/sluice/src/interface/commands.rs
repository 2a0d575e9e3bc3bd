//! The interface commands: `show interface`, `show hardware`, `set interface state`,
//! `clear interfaces`, `create sub-interface`, `delete sub-interface`, `show interface
//! rx-placement`, `set interface rx-placement`.

use crate::control::cli::{Arg, Args, Command, Effect, Output};
use crate::control::exec::Control;
use crate::interface::Interface;
use serde_json::{json, Value};
use std::fmt::Write as _;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "interface", "rx-placement"],
        effect: Effect::Reads,
        syntax: "",
        help: "which worker polls each receive queue, and by which input node",
        example: "show interface rx-placement",
        args: &[],
        run: |c, _| Ok(show_rx_placement(c)),
    },
    Command {
        words: &["set", "interface", "rx-placement"],
        effect: Effect::Changes,
        syntax: "<IF> queue <Q> worker <W>",
        help: "move receive queue Q of IF to worker W while traffic runs (af_packet, pcap \
               and null queues; af_xdp and memif queues stay where they were placed at start)",
        example: "set interface rx-placement d0 queue 0 worker 1",
        args: &[Arg::Value("IF"), Arg::Rest],
        run: set_rx_placement,
    },
    Command {
        words: &["show", "interface"],
        effect: Effect::Reads,
        syntax: "[<IF>]",
        help: "interface state and counters",
        example: "show interface d0",
        args: &[Arg::Optional("IF")],
        run: |c, a| show_interface(c, a.get("IF")),
    },
    Command {
        words: &["show", "hardware|hardware-interfaces"],
        effect: Effect::Reads,
        syntax: "[<IF>]",
        help: "driver facts: host device, modes, queues, rings",
        example: "show hardware d0",
        args: &[Arg::Optional("IF")],
        run: |c, a| show_hardware(c, a.get("IF")),
    },
    Command {
        words: &["set", "interface", "state"],
        effect: Effect::Changes,
        syntax: "<IF> up|down",
        help: "admin state",
        example: "set interface state d0 up",
        args: &[Arg::Value("IF"), Arg::Choice("state", &["up", "down"])],
        run: set_state,
    },
    Command {
        words: &["clear", "interfaces"],
        effect: Effect::Changes,
        syntax: "",
        help: "restart the interface counters",
        example: "clear interfaces",
        args: &[],
        run: |c, _| {
            for i in &c.dp.interfaces.list {
                i.clear();
            }
            Output::done()
        },
    },
    Command {
        words: &["create", "sub-interface"],
        effect: Effect::Changes,
        syntax: "<IF> <ID> [dot1q <VID> [exact-match] | dot1q|dot1ad <VID> inner-dot1q <VID> \
                 | default | untagged]",
        help: "a VLAN sub-interface IF.ID (no tags named: dot1q ID exact-match), up",
        example: "create sub-interface d0 100 dot1q 100",
        args: &[Arg::Value("IF"), Arg::Value("ID"), Arg::Rest],
        run: create_subif,
    },
    Command {
        words: &["delete", "sub-interface"],
        effect: Effect::Changes,
        syntax: "<IF.ID>",
        help: "delete a sub-interface (out of its bridge or cross-connect, without addresses)",
        example: "delete sub-interface d0.100",
        args: &[Arg::Value("IF")],
        run: |c, a| {
            c.dp.delete_subif(a.value("IF"))?;
            Output::done()
        },
    },
];

fn create_subif(c: &mut Control, a: &Args) -> Result<Output, String> {
    let id: u32 = a
        .value("ID")
        .parse()
        .map_err(|_| format!("'{}' is not a sub-interface id", a.value("ID")))?;
    let tags = crate::subif::parse_tags(id, &a.rest())?;
    let index = c.dp.create_subif(a.value("IF"), id, tags, true)?;
    let name = format!("{}.{id}", a.value("IF"));
    Ok(Output::Shown(
        format!("{name}\n"),
        json!({ "name": name, "index": index }),
    ))
}

fn set_state(c: &mut Control, a: &Args) -> Result<Output, String> {
    c.interface(a.value("IF"))?.set_up(a.value("state") == "up");
    Output::done()
}

fn show_interface(ctl: &Control, name: Option<&str>) -> Result<Output, String> {
    let list = ctl.interfaces(name)?;
    let mut t = format!(
        "{:<16}{:>5}{:>11}{:>8}   {:<20}{:>16}\n",
        "Name", "Idx", "State", "MTU", "Counter", "Count"
    );
    let mut arr = Vec::new();
    for i in &list {
        let c = i.totals();
        let state = i.state();
        let link_counters = i.link_counters();
        let rows = [
            ("rx packets", c.rx_packets),
            ("rx bytes", c.rx_bytes),
            ("tx packets", c.tx_packets),
            ("tx bytes", c.tx_bytes),
            ("drops", c.drops),
            ("tx-error", c.tx_errors),
            ("tx-peer-full", c.tx_peer_full),
            ("rx-miss", c.rx_miss),
        ];
        let mut first = true;
        for (label, v) in rows
            .iter()
            .chain(link_counters.iter())
            .filter(|(_, v)| *v > 0)
        {
            if first {
                let _ = writeln!(
                    t,
                    "{:<16}{:>5}{:>11}{:>8}   {:<20}{:>16}",
                    i.name, i.index, state, i.mtu, label, v
                );
                first = false;
            } else {
                let _ = writeln!(t, "{:<40}   {:<20}{:>16}", "", label, v);
            }
        }
        if first {
            let _ = writeln!(t, "{:<16}{:>5}{:>11}{:>8}", i.name, i.index, state, i.mtu);
        }
        let _ = writeln!(
            t,
            "{:<43}driver {}, rx queues {}, tx queues {}",
            "", i.driver, i.rx_queues, i.tx_queues
        );
        if let Some(l) = i.host_link() {
            let _ = writeln!(
                t,
                "    {:<14} {} (admin {}, {} changes)",
                format!("link {}", l.name()),
                i.link_state(),
                if i.is_up() { "up" } else { "down" },
                l.changes()
            );
        }
        mac_and_addresses(ctl, i, &mut t);
        let mut details = serde_json::Map::new();
        for (k, v) in &i.all_details() {
            details.insert(k.clone(), Value::String(v.clone()));
        }
        let mut v = json!({
            "name": i.name, "index": i.index, "driver": i.driver, "state": state,
            "mtu": i.mtu, "rx_queues": i.rx_queues, "tx_queues": i.tx_queues,
            "admin": if i.is_up() { "up" } else { "down" },
            "link": i.link_state(),
            "rx_packets": c.rx_packets, "rx_bytes": c.rx_bytes,
            "tx_packets": c.tx_packets, "tx_bytes": c.tx_bytes,
            "drops": c.drops, "tx_errors": c.tx_errors, "tx_peer_full": c.tx_peer_full,
            "rx_miss": c.rx_miss,
            "details": details,
        });
        // Link counters as numbers: link_changes, tx_dropped_link_down, ...
        for (k, n) in &link_counters {
            v[k.replace('-', "_")] = json!(n);
        }
        arr.push(v);
    }
    Ok(Output::Shown(t, Value::Array(arr)))
}

/// `show hardware`: what each driver says of its device (VPP's show hardware-interfaces).
fn show_hardware(c: &Control, name: Option<&str>) -> Result<Output, String> {
    let list = c.interfaces(name)?;
    let mut t = String::new();
    let mut arr = Vec::new();
    for i in &list {
        let state = i.state();
        let _ = writeln!(
            t,
            "{:<16}{:>5}  {:<5} driver {}, rx queues {}, tx queues {}",
            i.name, i.index, state, i.driver, i.rx_queues, i.tx_queues
        );
        let addresses = mac_and_addresses(c, i, &mut t);
        let mut details = serde_json::Map::new();
        for (k, v) in &i.all_details() {
            let _ = writeln!(t, "    {k:<14} {v}");
            details.insert(k.clone(), Value::String(v.clone()));
        }
        arr.push(json!({
            "name": i.name, "index": i.index, "driver": i.driver, "state": state,
            "rx_queues": i.rx_queues, "tx_queues": i.tx_queues, "details": details,
            "link": i.link_state(),
            "mac": i.mac.to_string(), "addresses": addresses,
        }));
    }
    Ok(Output::Shown(t, Value::Array(arr)))
}

/// The `mac` and `addresses` lines of an interface; returns the addresses.
fn mac_and_addresses(c: &Control, i: &Interface, t: &mut String) -> Vec<String> {
    let addresses =
        c.dp.router
            .lock()
            .map(|r| r.addresses(i.index))
            .unwrap_or_default();
    let _ = writeln!(t, "    {:<14} {}", "mac", i.mac);
    if !addresses.is_empty() {
        let _ = writeln!(t, "    {:<14} {}", "addresses", addresses.join(" "));
    }
    addresses
}

fn show_rx_placement(c: &Control) -> Output {
    let homes = c.dp.rx_placement.homes();
    let mut t = format!(
        "{:<16}{:>6}{:>8}   {}\n",
        "Interface", "Queue", "Worker", "Node"
    );
    let mut arr = Vec::new();
    for h in &homes {
        let _ = writeln!(
            t,
            "{:<16}{:>6}{:>8}   {}",
            h.interface, h.queue, h.worker, h.node
        );
        arr.push(
            json!({"interface": h.interface, "queue": h.queue, "worker": h.worker, "node": h.node}),
        );
    }
    Output::Shown(t, Value::Array(arr))
}

fn set_rx_placement(c: &mut Control, a: &Args) -> Result<Output, String> {
    let itf = c.interface(a.value("IF"))?.clone();
    let (queue, worker) = match a.rest()[..] {
        ["queue", q, "worker", w] => {
            let n = |what: &str, v: &str| {
                v.parse::<usize>()
                    .map_err(|_| format!("{what} '{v}' is not a number"))
            };
            (n("queue", q)?, n("worker", w)?)
        }
        _ => return Err("expected: queue <Q> worker <W>".into()),
    };
    c.dp.rx_placement
        .place(&itf.name, itf.driver, queue, worker)?;
    Output::done()
}
