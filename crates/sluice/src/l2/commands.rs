//! The layer-2 commands: cross-connects, bridge domains and their ports, the MAC table.

use crate::control::cli::{Arg, Args, Command, Effect, Output};
use crate::control::exec::Control;
use crate::dataplane::L2Mode;
use crate::l2::bridge::Bridges;
use crate::wire::MacAddress;
use serde_json::json;
use std::fmt::Write as _;
use std::sync::MutexGuard;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["set", "interface", "l2", "xconnect"],
        effect: Effect::Changes,
        syntax: "<RX> <TX>",
        help: "send everything received on RX out of TX",
        example: "set interface l2 xconnect d0 d1",
        args: &[Arg::Value("RX"), Arg::Value("TX")],
        run: set_xconnect,
    },
    Command {
        words: &["set", "interface", "l2", "bridge"],
        effect: Effect::Changes,
        syntax: "<IF> <BD> [shg <N>] [mac-limit <M>] | <IF> <BD> bvi",
        help: "make IF a port of bridge domain BD (split-horizon group N: no forwarding \
               between ports of one group; M: learnt addresses behind IF at most, default \
               8192; bvi: IF, a BVI, is the domain's routed interface)",
        example: "set interface l2 bridge d2 10",
        args: &[Arg::Value("IF"), Arg::Value("BD"), Arg::Rest],
        run: set_bridge,
    },
    Command {
        words: &["bvi", "create"],
        effect: Effect::Changes,
        syntax: "[instance <N>] [mac <MAC>]",
        help: "a bridge-virtual interface bviN: a bridge domain's routed interface",
        example: "bvi create instance 0",
        args: &[Arg::Rest],
        run: create_bvi,
    },
    Command {
        words: &["bvi", "delete"],
        effect: Effect::Changes,
        syntax: "<bviN>",
        help: "delete a BVI (out of its bridge domain, without addresses)",
        example: "bvi delete bvi0",
        args: &[Arg::Value("IF")],
        run: |c, a| {
            let name = a.value("IF");
            let itf = c.interface(name)?;
            if itf.driver != crate::dataplane::BVI_DRIVER {
                return Err(format!("{name} is not a BVI"));
            }
            c.dp.delete_subif(name)?;
            Output::done()
        },
    },
    Command {
        words: &["set", "interface", "l3"],
        effect: Effect::Changes,
        syntax: "<IF>",
        help: "take IF out of its cross-connect or bridge domain (it routes if it has addresses)",
        example: "set interface l3 d2",
        args: &[Arg::Value("IF")],
        run: set_l3,
    },
    Command {
        words: &["create", "bridge-domain"],
        effect: Effect::Changes,
        syntax: "<BD> [learn on|off] [flood on|off] [uu-flood on|off] [arp-term on|off] \
                 [mac-age <MIN>|<N>s] [mac-limit <N>] [group-fwd-mask <MASK>] [del]",
        help: "create or change a bridge domain (del: delete it; MASK, as Linux's \
               group_fwd_mask: bit N forwards the reserved group 01:80:c2:00:00:0N)",
        example: "create bridge-domain 10 learn on mac-age 5",
        args: &[Arg::Value("BD"), Arg::Rest],
        run: create_bridge_domain,
    },
    Command {
        words: &["set", "bridge-domain", "arp", "entry"],
        effect: Effect::Changes,
        syntax: "<BD> <IP> <MAC> [del]",
        help: "an IPv4 address the domain answers ARP requests for (with arp-term on)",
        example: "set bridge-domain arp entry 10 192.0.2.10 02:00:00:00:00:10",
        args: &[
            Arg::Flag("del"),
            Arg::Value("BD"),
            Arg::Value("IP"),
            Arg::Optional("MAC"),
        ],
        run: set_arp_entry,
    },
    Command {
        words: &["show", "bridge-domain"],
        effect: Effect::Reads,
        syntax: "[<BD> [detail]]",
        help: "bridge domains: settings, ports, MAC entries and learning counters",
        example: "show bridge-domain 10 detail",
        args: &[Arg::Rest],
        run: show_bridge_domain,
    },
    Command {
        words: &["l2fib", "add"],
        effect: Effect::Changes,
        syntax: "<MAC> <BD> <IF> [static]",
        help: "a MAC entry (static: never ages, never moves)",
        example: "l2fib add 02:00:00:00:00:10 10 d2 static",
        args: &[
            Arg::Value("MAC"),
            Arg::Value("BD"),
            Arg::Value("IF"),
            Arg::Flag("static"),
        ],
        run: l2fib_add,
    },
    Command {
        words: &["l2fib", "del|delete"],
        effect: Effect::Changes,
        syntax: "<MAC> <BD>",
        help: "remove a MAC entry",
        example: "l2fib del 02:00:00:00:00:10 10",
        args: &[Arg::Value("MAC"), Arg::Value("BD")],
        run: l2fib_del,
    },
    Command {
        words: &["show", "l2fib"],
        effect: Effect::Reads,
        syntax: "[bd <BD>] [count]",
        help: "the MAC table: address, bridge domain, interface, static, age",
        example: "show l2fib bd 10",
        args: &[Arg::Rest],
        run: show_l2fib,
    },
    Command {
        words: &["clear", "l2fib"],
        effect: Effect::Changes,
        syntax: "[bd <BD>]",
        help: "forget learnt MAC entries (static ones stay)",
        example: "clear l2fib bd 10",
        args: &[Arg::Rest],
        run: clear_l2fib,
    },
];

/// `show l2fib` lists at most this many entries (a MAC flood fills a million).
const SHOW_LIMIT: usize = 1000;

fn lock(c: &Control) -> MutexGuard<'_, Bridges> {
    c.dp.bridges.lock().unwrap_or_else(|p| p.into_inner())
}

fn bd_id(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a bridge domain id (0-4294967295)"))
}

fn set_xconnect(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rx = c.interface(a.value("RX"))?.index;
    let tx = c.interface(a.value("TX"))?.index;
    c.dp.set_l2_mode(rx, L2Mode::Xconnect(tx))?;
    Output::done()
}

fn set_bridge(c: &mut Control, a: &Args) -> Result<Output, String> {
    let itf = c.interface(a.value("IF"))?.clone();
    let bd = bd_id(a.value("BD"))?;
    let (mut shg, mut bvi, mut limit) = (0, false, None);
    let rest = a.rest();
    let mut words = rest.iter();
    while let Some(&w) = words.next() {
        match (w, words.next()) {
            ("bvi", None) if rest.len() == 1 => bvi = true,
            ("shg", Some(n)) => {
                shg = n
                    .parse::<u8>()
                    .map_err(|_| format!("'{n}' is not a split-horizon group (0-255)"))?
            }
            ("mac-limit", Some(n)) => {
                limit = Some(
                    n.parse::<usize>()
                        .map_err(|_| format!("'{n}' is not a number of entries"))?,
                )
            }
            _ => {
                return Err(format!(
                    "unexpected '{}': expected shg <N>, mac-limit <M>, or bvi alone",
                    rest.join(" ")
                ))
            }
        }
    }
    // A BVI routes by design; any other port must stop routing first.
    let is_bvi = itf.driver == crate::dataplane::BVI_DRIVER;
    if lock(c).exists(bd) && !bvi && !is_bvi {
        let routed = c.dp.router.lock().unwrap_or_else(|p| p.into_inner()).view();
        if routed
            .load()
            .interface(itf.index)
            .is_some_and(|i| i.routed())
        {
            return Err(format!(
                "interface {} has IP addresses: delete them before bridging it",
                itf.name
            ));
        }
    }
    c.dp.set_l2_mode(itf.index, L2Mode::Bridge { bd, shg, bvi })?;
    lock(c).set_port_limit(itf.index, limit);
    Output::done()
}

fn create_bvi(c: &mut Control, a: &Args) -> Result<Output, String> {
    let mut instance = None;
    let mut address = None;
    let rest = a.rest();
    let mut words = rest.iter();
    while let Some(&w) = words.next() {
        let v = words.next().ok_or_else(|| format!("{w} takes a value"))?;
        match w {
            "instance" => {
                instance = Some(
                    v.parse::<u32>()
                        .map_err(|_| format!("'{v}' is not an instance number"))?,
                )
            }
            "mac" => address = Some(mac(v)?),
            other => return Err(format!("unexpected '{other}': expected instance or mac")),
        }
    }
    let instance = match instance {
        Some(n) => n,
        None => (0..)
            .find(|n| c.dp.interfaces.by_name(&format!("bvi{n}")).is_none())
            .unwrap_or(0),
    };
    let index = c.dp.create_bvi(instance, address)?;
    let name = format!("bvi{instance}");
    Ok(Output::Shown(
        format!("{name}\n"),
        json!({ "name": name, "index": index }),
    ))
}

fn set_l3(c: &mut Control, a: &Args) -> Result<Output, String> {
    let i = c.interface(a.value("IF"))?.index;
    c.dp.set_l2_mode(i, L2Mode::L3)?;
    Output::done()
}

fn on_off(word: &str, value: Option<&&str>) -> Result<bool, String> {
    match value {
        Some(&"on") => Ok(true),
        Some(&"off") => Ok(false),
        _ => Err(format!("{word} takes on or off")),
    }
}

fn create_bridge_domain(c: &mut Control, a: &Args) -> Result<Output, String> {
    let bd = bd_id(a.value("BD"))?;
    let rest = a.rest();
    let mut b = lock(c);
    if rest.as_slice() == ["del"] {
        b.delete(bd)?;
    } else {
        let mut s = b
            .report(Some(bd))
            .ok()
            .and_then(|r| r.first().map(|d| d.settings))
            .unwrap_or_default();
        let mut words = rest.iter();
        while let Some(&w) = words.next() {
            match w {
                "learn" => s.learn = on_off(w, words.next())?,
                "flood" => s.flood = on_off(w, words.next())?,
                "uu-flood" => s.uu_flood = on_off(w, words.next())?,
                "arp-term" => s.arp_term = on_off(w, words.next())?,
                "mac-age" => {
                    let v = words.next().ok_or("mac-age takes minutes, or <N>s")?;
                    s.mac_age_s = crate::config::parse_mac_age(v)?;
                }
                "mac-limit" => {
                    let v = words.next().ok_or("mac-limit takes a number")?;
                    s.mac_limit = v
                        .parse()
                        .map_err(|_| format!("'{v}' is not a number of entries"))?;
                }
                "group-fwd-mask" => {
                    let v = words.next().ok_or("group-fwd-mask takes a number")?;
                    let n = match v.strip_prefix("0x") {
                        Some(hex) => u16::from_str_radix(hex, 16),
                        None => v.parse(),
                    };
                    s.group_fwd_mask =
                        n.map_err(|_| format!("'{v}' is not a 16-bit mask (like 0x4008)"))?;
                }
                other => {
                    return Err(format!(
                        "unexpected '{other}': expected learn, flood, uu-flood, arp-term, \
                         mac-age, mac-limit, group-fwd-mask or del"
                    ))
                }
            }
        }
        b.create(bd, s)?;
    }
    c.dp.publish_bridges(&b);
    Output::done()
}

fn show_bridge_domain(c: &mut Control, a: &Args) -> Result<Output, String> {
    let (id, detail) = match a.rest().as_slice() {
        [] => (None, false),
        [bd] => (Some(bd_id(bd)?), false),
        [bd, "detail"] => (Some(bd_id(bd)?), true),
        other => {
            return Err(format!(
                "unexpected '{}': expected <BD> [detail]",
                other.join(" ")
            ))
        }
    };
    let b = lock(c);
    let reports = b.report(id)?;
    let lost = b.learns_lost();
    drop(b);
    let name = |i: u32| {
        c.dp.interfaces
            .list
            .get(i as usize)
            .map_or_else(|| i.to_string(), |itf| itf.name.clone())
    };
    let onoff = |v: bool| if v { "on" } else { "off" };
    let mut t = format!(
        "{:>6} {:>5} {:>5} {:>5} {:>8} {:>8} {:>9} {:>8} {:>5}\n",
        "BD-ID", "Index", "Learn", "Flood", "UU-Flood", "MAC-age", "MAC-limit", "Entries", "Ports"
    );
    let mut arr = Vec::new();
    for r in &reports {
        let age = match r.settings.mac_age_s {
            0 => "off".to_string(),
            s if s % 60 == 0 => format!("{}m", s / 60),
            s => format!("{s}s"),
        };
        let _ = writeln!(
            t,
            "{:>6} {:>5} {:>5} {:>5} {:>8} {:>8} {:>9} {:>8} {:>5}",
            r.id,
            r.index,
            onoff(r.settings.learn),
            onoff(r.settings.flood),
            onoff(r.settings.uu_flood),
            age,
            r.settings.mac_limit,
            r.entries,
            r.members.len()
        );
        if detail {
            for p in &r.ports {
                let _ = writeln!(
                    t,
                    "    port {:<16} shg {}  mac-limit {}  learnt entries {}  over port limit {}",
                    name(p.interface),
                    p.shg,
                    p.mac_limit,
                    p.learnt_entries,
                    p.over_limit
                );
            }
            let _ = writeln!(
                t,
                "    learnt {}  moves {}  aged {}  over limit {}  over port limit {}  \
                 learnt entries {}",
                r.learnt, r.moves, r.aged, r.over_limit, r.over_port_limit, r.learnt_entries
            );
            let _ = writeln!(t, "    group-fwd-mask {:#06x}", r.settings.group_fwd_mask);
            let _ = writeln!(
                t,
                "    arp-term {}, {} ARP entries",
                onoff(r.settings.arp_term),
                r.arp_entries.len()
            );
            for (ip, m) in &r.arp_entries {
                let _ = writeln!(t, "      {ip:<16} {m}");
            }
        }
        let mut v = serde_json::to_value(r).unwrap_or_default();
        v["members"] = r
            .members
            .iter()
            .map(|(i, shg)| json!({ "interface": name(*i), "shg": shg }))
            .collect();
        for (p, v) in r
            .ports
            .iter()
            .zip(v["ports"].as_array_mut().into_iter().flatten())
        {
            v["interface"] = json!(name(p.interface));
        }
        arr.push(v);
    }
    if detail {
        let _ = writeln!(t, "learn batches lost (learner behind): {lost}");
    }
    Ok(Output::Shown(
        t,
        json!({ "bridge_domains": arr, "learn_batches_lost": lost }),
    ))
}

fn set_arp_entry(c: &mut Control, a: &Args) -> Result<Output, String> {
    let bd = bd_id(a.value("BD"))?;
    let ip: std::net::Ipv4Addr = a
        .value("IP")
        .parse()
        .map_err(|_| format!("'{}' is not an IPv4 address", a.value("IP")))?;
    let m = match (a.flag("del"), a.get("MAC")) {
        (true, _) => None,
        (false, Some(m)) => Some(mac(m)?),
        (false, None) => return Err("a MAC address is missing (or del)".into()),
    };
    let mut b = lock(c);
    b.set_arp_entry(bd, u32::from(ip), m)?;
    c.dp.publish_bridges(&b);
    Output::done()
}

fn mac(text: &str) -> Result<MacAddress, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a MAC address (like 02:00:00:00:00:01)"))
}

fn l2fib_add(c: &mut Control, a: &Args) -> Result<Output, String> {
    let m = mac(a.value("MAC"))?;
    let bd = bd_id(a.value("BD"))?;
    let itf = c.interface(a.value("IF"))?.index;
    lock(c).add_mac(bd, m, itf, a.flag("static"))?;
    Output::done()
}

fn l2fib_del(c: &mut Control, a: &Args) -> Result<Output, String> {
    let m = mac(a.value("MAC"))?;
    let bd = bd_id(a.value("BD"))?;
    lock(c).remove_mac(bd, m)?;
    Output::done()
}

/// `[bd <BD>]` and the words allowed after it.
fn bd_filter<'a>(rest: &[&'a str], extra: &[&str]) -> Result<(Option<u32>, Vec<&'a str>), String> {
    let mut id = None;
    let mut words = Vec::new();
    let mut it = rest.iter();
    while let Some(&w) = it.next() {
        if w == "bd" {
            id = Some(bd_id(it.next().ok_or("bd takes a bridge domain id")?)?);
        } else if extra.contains(&w) {
            words.push(w);
        } else {
            return Err(format!(
                "unexpected '{w}': expected bd <BD> {}",
                extra.join(" ")
            ));
        }
    }
    Ok((id, words))
}

fn show_l2fib(c: &mut Control, a: &Args) -> Result<Output, String> {
    let (id, words) = bd_filter(&a.rest(), &["count"])?;
    let b = lock(c);
    let entries = b.entries(id)?;
    let (total, memory) = b.totals();
    drop(b);
    if words.contains(&"count") {
        let t = format!(
            "{} entries ({total} in all domains, table {memory} bytes)\n",
            entries.len()
        );
        return Ok(Output::Shown(
            t,
            json!({ "entries": entries.len(), "all_domains": total, "memory_bytes": memory }),
        ));
    }
    let mut t = format!(
        "{:<19} {:>6} {:<16} {:>6} {:>7}\n",
        "Mac-Address", "BD-ID", "Interface", "Static", "Age(s)"
    );
    for e in entries.iter().take(SHOW_LIMIT) {
        let itf = c.dp.interfaces.list.get(e.interface as usize);
        let _ = writeln!(
            t,
            "{:<19} {:>6} {:<16} {:>6} {:>7}",
            e.mac,
            e.bd,
            itf.map_or("?", |i| i.name.as_str()),
            if e.is_static { "yes" } else { "no" },
            e.age_s
        );
    }
    if entries.len() > SHOW_LIMIT {
        let _ = writeln!(
            t,
            "... {} more (show l2fib count)",
            entries.len() - SHOW_LIMIT
        );
    }
    let json: Vec<_> = entries
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap_or_default();
            v["interface"] = json!(c
                .dp
                .interfaces
                .list
                .get(e.interface as usize)
                .map_or("?", |i| i.name.as_str()));
            v
        })
        .collect();
    Ok(Output::Shown(t, json!(json)))
}

fn clear_l2fib(c: &mut Control, a: &Args) -> Result<Output, String> {
    let (id, _) = bd_filter(&a.rest(), &[])?;
    lock(c).flush(id)?;
    Output::done()
}
