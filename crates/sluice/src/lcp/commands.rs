//! lcp commands: pair an interface with a Linux tap, remove a pair, show the pairs
//! (`src/lcp/`).

use crate::control::cli::{Arg, Args, Command, Effect, Output};
use crate::control::exec::Control;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["lcp", "create"],
        effect: Effect::Changes,
        syntax: "<IF> host-if <NAME> [netns <NS>]",
        help: "make Linux tap NAME (in namespace NS) mirroring IF: its MAC, MTU, addresses and \
               link state; what the router does not answer itself goes up to it, what Linux \
               sends on it leaves by IF",
        example: "lcp create d0 host-if tap-d0",
        args: &[Arg::Value("IF"), Arg::Rest],
        run: create,
    },
    Command {
        words: &["lcp", "delete"],
        effect: Effect::Changes,
        syntax: "<IF>",
        help: "remove IF's tap; nothing more is punted from IF",
        example: "lcp delete d0",
        args: &[Arg::Value("IF")],
        run: delete,
    },
    Command {
        words: &["show", "lcp"],
        effect: Effect::Reads,
        syntax: "",
        help: "the lcp pairs: tap, namespace, its state in Linux, frames to and from Linux; the netlink listeners; the punt policy ([punt])",
        example: "show lcp",
        args: &[],
        run: |c, _| Ok(show(c)),
    },
];

const USAGE: &str = "usage: lcp create <IF> host-if <NAME> [netns <NS>]";

fn create(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let (host, netns) = match rest.as_slice() {
        ["host-if", h] => (*h, None),
        ["host-if", h, "netns", n] => (*h, Some(*n)),
        _ => return Err(USAGE.into()),
    };
    let itf = c.interface(a.value("IF"))?.clone();
    if c.dp.subifs.load().get(itf.index).is_some_and(|s| s.bvi) {
        return Err(format!(
            "'{}' is a BVI; a tap mirrors a port or a sub-interface",
            itf.name
        ));
    }
    let lcp = c.dp.lcp.as_ref().ok_or("the lcp thread is not running")?;
    let mut router = c.dp.router.lock().unwrap();
    let addresses = router.address_list(itf.index);
    let refused = lcp.create(&itf, host, netns, &addresses)?;
    router.set_host(itf.index, true)?;
    router.commit();
    Ok(Output::Text(
        refused
            .iter()
            .map(|r| format!("Linux refused address {r}\n"))
            .collect(),
    ))
}

fn delete(c: &mut Control, a: &Args) -> Result<Output, String> {
    let itf = c.interface(a.value("IF"))?.clone();
    let lcp = c.dp.lcp.as_ref().ok_or("the lcp thread is not running")?;
    let mut router = c.dp.router.lock().unwrap();
    // Stop the punts first, then close the tap.
    router.set_host(itf.index, false)?;
    router.commit();
    lcp.delete(&itf)?;
    Output::done()
}

fn show(c: &Control) -> Output {
    let pairs = c.dp.lcp.as_ref().map(|l| l.view()).unwrap_or_default();
    let mut t = format!(
        "{:<12}{:<16}{:<10}{:<12}{:>12}{:>8}{:>12}{:>8}\n",
        "Interface", "Host", "Netns", "State", "To host", "Errors", "From host", "Drops"
    );
    for p in &pairs {
        let state = match (p.host_up, p.carrier) {
            (true, true) => "up",
            (true, false) => "no-carrier",
            (false, _) => "down",
        };
        t.push_str(&format!(
            "{:<12}{:<16}{:<10}{:<12}{:>12}{:>8}{:>12}{:>8}\n",
            p.interface,
            p.host_if,
            p.netns.as_deref().unwrap_or("-"),
            state,
            p.to_host,
            p.to_host_errors,
            p.from_host,
            p.from_host_drops
        ));
    }
    if pairs.is_empty() {
        t = "no lcp pairs\n".into();
    }
    let unpaired = c.dp.lcp.as_ref().map_or(0, |l| l.unpaired());
    if unpaired > 0 {
        t.push_str(&format!(
            "{unpaired} punted frames dropped: their pair was deleted meanwhile\n"
        ));
    }
    let netlink = c.dp.lcp.as_ref().map(|l| l.netlink()).unwrap_or_default();
    for n in &netlink {
        t.push_str(&format!(
            "netlink ({}): {} messages, routes +{} ~{} -{}, {} refused (table not the namespace's), addresses +{} -{}, neighbours +{} -{}, {} overflows, {} queue overflows, {} resyncs{}\n",
            n.netns.as_deref().unwrap_or("daemon's namespace"),
            n.messages,
            n.routes_added,
            n.routes_replaced,
            n.routes_deleted,
            n.routes_refused_table,
            n.addresses_added,
            n.addresses_deleted,
            n.neighbors_added,
            n.neighbors_deleted,
            n.overflows,
            n.queue_overflows,
            n.resyncs,
            n.last_error
                .as_ref()
                .map(|e| format!(", last error: {e}"))
                .unwrap_or_default()
        ));
    }
    let punt = &c.dp.punt;
    let classes = crate::lcp::punt_class::CLASSES;
    let rates: Vec<String> = classes
        .iter()
        .map(|&k| format!("{} {}/{}", k.name(), punt.rate(k).rate, punt.rate(k).burst))
        .collect();
    t.push_str(&format!(
        "punt policy: allow {}; packets/s per worker/burst by class: {}; peers {}\n",
        punt.allow_text().join(" "),
        rates.join(", "),
        if punt.peers.is_empty() {
            "none".to_string()
        } else {
            punt.peers.text().join(" ")
        }
    ));
    let by_class: serde_json::Map<String, serde_json::Value> = classes
        .iter()
        .map(|&k| {
            let r = punt.rate(k);
            (
                k.name().to_string(),
                serde_json::json!({ "rate": r.rate, "burst": r.burst }),
            )
        })
        .collect();
    let policy = serde_json::json!({
        "classes": by_class,
        "peers": punt.peers.text(),
        "allow": punt.allow.as_ref().map(|_| punt.allow_text()),
    });
    Output::Shown(
        t,
        serde_json::json!({
            "pairs": pairs,
            "unpaired_punts": unpaired,
            "netlink": netlink,
            "punt": policy,
        }),
    )
}
