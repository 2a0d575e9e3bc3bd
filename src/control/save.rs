//! `save [FILE]`: the running configuration as a config file that `sluice run -c` starts
//! the same dataplane from.
//!
//! Each section of the file is written by one function of this file (`section` picks it by
//! the section's name, in the order of `docs/config.md`), from the state the dataplane holds
//! now, not from the file it started with: interfaces' admin state and addresses,
//! sub-interfaces and BVIs, cross-connects, receive-queue placement and handoff, bridge
//! domains with their static MACs and ARP entries, routing tables, the static routes of the
//! config and the CLI, ACLs and the interfaces they check. What the CLI cannot change
//! ([dataplane], [control], [metrics], [fib], [sessions], [punt], and each interface's driver keys
//! and MTU) is written as the start-up file had it. The routes of `[fib] route-file` stay in
//! their file: the key is kept, the routes are not written out one by one.
//!
//! The daemon writes FILE itself (an absolute path; through a temporary file in the same
//! directory, mode 0600, renamed over FILE), so `save` works the same from `sluice ctl`,
//! `--batch` or any client of the socket, and the file lands where the daemon, which will
//! read it on its next start, sees files. Without FILE the text is the reply.

use super::cli::{Arg, Args, Command, Output};
use super::exec::Control;
use crate::config::emit::{self, Entry};
use crate::config::reference::Section;
use crate::dataplane::BVI_DRIVER;
use crate::l2::bridge::DEFAULT_PORT_MAC_LIMIT;
use crate::router::{SavedHop, SavedRoute};
use crate::subif::TagMatch;
use serde_json::json;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use toml::Value;

pub const COMMANDS: &[Command] = &[Command {
    words: &["save"],
    syntax: "[<FILE>]",
    help: "write the running configuration as a config file for `sluice run -c` (FILE: an absolute path the daemon writes, mode 0600, replaced whole; none: print it)",
    example: "save /etc/sluice/sluice.toml",
    args: &[Arg::Optional("FILE")],
    run: save,
}];

fn save(c: &mut Control, a: &Args) -> Result<Output, String> {
    let text = running_config(c)?;
    match a.get("FILE") {
        None => Ok(Output::Shown(text.clone(), json!({ "config": text }))),
        Some(file) => {
            let path = Path::new(file);
            write_file(path, &text)?;
            Ok(Output::Shown(
                format!("saved to {file}\n"),
                json!({ "file": file, "bytes": text.len() }),
            ))
        }
    }
}

/// The running configuration as config text, checked by the config parser.
pub fn running_config(c: &Control) -> Result<String, String> {
    let state = State::gather(c);
    let text = emit::document(&header(), |sec| section(&state, sec), &notes(c))?;
    crate::config::Config::parse(&text, "the saved configuration").map_err(|e| {
        format!("the running configuration does not make a valid file (not saved): {e}")
    })?;
    Ok(text)
}

/// The comment lines at the top: what wrote the file, and when.
fn header() -> Vec<String> {
    vec![
        format!(
            "The running configuration of sluice {}, saved by `sluice ctl save` on {}.",
            env!("CARGO_PKG_VERSION"),
            utc_now()
        ),
        "`sluice run -c` on this file starts the same interfaces, bridge domains, tables, \
         routes and ACLs."
            .into(),
    ]
}

/// The sections the daemon writes from its state: every section of the reference has a
/// function here, so a new section is one more arm.
fn section(st: &State, sec: &Section) -> Result<Vec<Entry>, String> {
    match sec.name {
        "dataplane" | "control" | "metrics" | "watchdog" | "neighbors" | "fib" | "sessions"
        | "punt" => Ok(as_started(st, sec)),
        "interface" => interfaces(st, sec),
        "subinterface" => subinterfaces(st),
        "xconnect" => xconnects(st),
        "rx-placement" => rx_placements(st),
        "handoff" => handoffs(st),
        "bridge-domain" => bridge_domains(st),
        "l2fib" => static_macs(st),
        "bvi" => bvis(st),
        "ip-table" => tables(st),
        "route" => routes(st),
        "acl" => acls(st),
        "acl-input" => acl_bindings(st, false),
        "acl-output" => acl_bindings(st, true),
        "lcp" => lcps(st),
        other => Err(format!(
            "sluice does not know how to save section [{other}] (src/control/save.rs)"
        )),
    }
}

/// What the sections are written from, read once.
struct State<'a> {
    c: &'a Control,
    /// Interface names by index; `None` for a deleted one.
    names: Vec<Option<String>>,
}

impl State<'_> {
    fn gather(c: &Control) -> State<'_> {
        let names =
            c.dp.interfaces
                .list
                .iter()
                .map(|i| (!i.is_deleted()).then(|| i.name.clone()))
                .collect();
        State { c, names }
    }

    fn name(&self, index: u32) -> Result<&str, String> {
        self.names
            .get(index as usize)
            .and_then(Option::as_deref)
            .ok_or_else(|| format!("interface index {index} is deleted"))
    }

    /// The table of the start-up file called `name`, if it had one.
    fn started(&self, name: &str) -> Option<&Value> {
        self.c.started.get(name)
    }
}

fn s(text: &str) -> Value {
    Value::String(text.to_string())
}

fn int(n: impl Into<i64>) -> Value {
    Value::Integer(n.into())
}

/// A count or index as a TOML integer (they are far below 2^63).
fn uint(n: usize) -> Value {
    Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// [dataplane], [control], [metrics], [fib], [sessions], [punt]: as the start-up file had them (the
/// CLI changes none of them); left out when it had none.
fn as_started(st: &State, sec: &Section) -> Vec<Entry> {
    match st.started(sec.name) {
        Some(Value::Table(t)) => vec![Entry::from_table(sec, t)],
        _ => Vec::new(),
    }
}

/// The addresses of interface `index`, as text.
fn addresses(st: &State, index: u32) -> Vec<String> {
    let r = st.c.dp.router.lock().unwrap_or_else(|p| p.into_inner());
    r.addresses(index)
}

fn state_word(up: bool) -> Value {
    s(if up { "up" } else { "down" })
}

/// [[interface]]: the driver keys and MTU of the start-up file; the admin state and the
/// addresses as they are now.
fn interfaces(st: &State, sec: &Section) -> Result<Vec<Entry>, String> {
    let started: Vec<&toml::Table> = match st.started("interface") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_table).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for itf in &st.c.dp.interfaces.list[..st.c.dp.hardware] {
        let written = started
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(itf.name.as_str()))
            .ok_or_else(|| format!("interface {} is not in the start-up file", itf.name))?;
        let mut e = Entry::from_table(sec, written);
        e.remove("address");
        e.set("state", state_word(itf.is_up()));
        let addrs = addresses(st, itf.index);
        if !addrs.is_empty() {
            e.set("address", addrs);
        }
        out.push(e);
    }
    Ok(out)
}

/// The live sub-interfaces (`bvi` false) or BVIs, in index order.
fn soft_interfaces(st: &State, bvi: bool) -> Vec<crate::subif::SubIf> {
    let table = st.c.dp.subifs.load();
    let mut v: Vec<_> = table
        .all()
        .filter(|x| x.bvi == bvi && !x.interface.is_deleted())
        .cloned()
        .collect();
    v.sort_by_key(|x| x.interface.index);
    v
}

/// [[subinterface]].
fn subinterfaces(st: &State) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for sub in soft_interfaces(st, false) {
        let parent = st.name(sub.parent)?;
        let name = &sub.interface.name;
        let id: u32 = name
            .strip_prefix(parent)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| format!("sub-interface {name} is not named {parent}.ID"))?;
        let mut e = Entry::default();
        e.set("parent", parent).set("id", int(id));
        match sub.tags {
            TagMatch::Dot1q { vid, exact } => {
                e.set("dot1q", int(vid));
                if exact {
                    e.set("exact-match", true);
                }
            }
            TagMatch::Qinq {
                outer,
                inner,
                outer_ad,
            } => {
                let key = if outer_ad {
                    "outer-dot1ad"
                } else {
                    "outer-dot1q"
                };
                e.set(key, int(outer)).set("inner-dot1q", int(inner));
            }
            TagMatch::Default => {
                e.set("default", true);
            }
            TagMatch::Untagged => {
                e.set("untagged", true);
            }
        }
        e.set("state", state_word(sub.interface.is_up()));
        let addrs = addresses(st, sub.interface.index);
        if !addrs.is_empty() {
            e.set("address", addrs);
        }
        out.push(e);
    }
    Ok(out)
}

/// [[xconnect]]: every interface that sends what it receives out of another.
fn xconnects(st: &State) -> Result<Vec<Entry>, String> {
    let modes = st.c.dp.modes.load();
    let mut out = Vec::new();
    for (rx, tx) in modes.xconnect.iter().enumerate() {
        let Some(tx) = tx else { continue };
        let Ok(rx) = st.name(rx as u32) else { continue };
        let mut e = Entry::default();
        e.set("rx", rx).set("tx", st.name(*tx)?);
        out.push(e);
    }
    Ok(out)
}

/// [[lcp]]: the interfaces' taps, as they are now.
fn lcps(st: &State) -> Result<Vec<Entry>, String> {
    let pairs = st.c.dp.lcp.as_ref().map(|l| l.view()).unwrap_or_default();
    Ok(pairs
        .iter()
        .map(|p| {
            let mut e = Entry::default();
            e.set("interface", p.interface.as_str())
                .set("host-if", p.host_if.as_str());
            if let Some(ns) = &p.netns {
                e.set("netns", ns.as_str());
            }
            e
        })
        .collect())
}

/// [[rx-placement]]: the queues not on the worker they start on by default (queue mod
/// workers).
fn rx_placements(st: &State) -> Result<Vec<Entry>, String> {
    let workers = st.c.dp.workers.len().max(1);
    let mut homes = st.c.dp.rx_placement.homes();
    homes.sort_by_key(|h| (h.interface_index, h.queue));
    Ok(homes
        .iter()
        .filter(|h| h.worker != h.queue % workers)
        .map(|h| {
            let mut e = Entry::default();
            e.set("interface", h.interface.as_str())
                .set("queue", uint(h.queue))
                .set("worker", uint(h.worker));
            e
        })
        .collect())
}

/// [[handoff]]: the interfaces whose packets are spread over workers.
fn handoffs(st: &State) -> Result<Vec<Entry>, String> {
    let spreads = st.c.dp.handoff.spreads();
    let mut out = Vec::new();
    for (i, spread) in spreads.iter().enumerate() {
        let Some(spread) = spread else { continue };
        let workers: Vec<Value> = spread.workers.iter().map(|&w| uint(w)).collect();
        let mut e = Entry::default();
        e.set("interface", st.name(i as u32)?)
            .set("workers", workers)
            .set("key", spread.key.name());
        out.push(e);
    }
    Ok(out)
}

fn lock_bridges<'a>(st: &State<'a>) -> std::sync::MutexGuard<'a, crate::l2::bridge::Bridges> {
    st.c.dp.bridges.lock().unwrap_or_else(|p| p.into_inner())
}

/// [[bridge-domain]]: settings, members (a BVI joins by [[bvi]]) and ARP entries.
fn bridge_domains(st: &State) -> Result<Vec<Entry>, String> {
    let b = lock_bridges(st);
    let mut out = Vec::new();
    for d in b.report(None)? {
        let bvi = b.bvi_of(d.id);
        let mut members = Vec::new();
        for p in &d.ports {
            if Some(p.interface) == bvi {
                continue;
            }
            let name = st.name(p.interface)?;
            let limit = (p.mac_limit != DEFAULT_PORT_MAC_LIMIT).then_some(p.mac_limit);
            members.push(if p.shg == 0 && limit.is_none() {
                s(name)
            } else {
                let mut t = toml::Table::new();
                t.insert("interface".into(), s(name));
                if p.shg != 0 {
                    t.insert("shg".into(), int(p.shg));
                }
                if let Some(l) = limit {
                    t.insert("mac-limit".into(), uint(l));
                }
                Value::Table(t)
            });
        }
        let set = d.settings;
        let mut e = Entry::default();
        e.set("id", int(d.id))
            .set("learn", set.learn)
            .set("flood", set.flood)
            .set("uu-flood", set.uu_flood)
            .set(
                "mac-age",
                if set.mac_age_s % 60 == 0 {
                    int(set.mac_age_s / 60)
                } else {
                    s(&format!("{}s", set.mac_age_s))
                },
            )
            .set("mac-limit", uint(set.mac_limit))
            .set("group-fwd-mask", int(set.group_fwd_mask))
            .set("members", members)
            .set("arp-term", set.arp_term);
        if !d.arp_entries.is_empty() {
            let entries: Vec<Value> = d
                .arp_entries
                .iter()
                .map(|(ip, mac)| {
                    let mut t = toml::Table::new();
                    t.insert("ip".into(), s(ip));
                    t.insert("mac".into(), s(mac));
                    Value::Table(t)
                })
                .collect();
            e.set("arp-entries", entries);
        }
        out.push(e);
    }
    Ok(out)
}

/// [[l2fib]]: the static MAC entries (not a BVI's own address, which [[bvi]] makes).
fn static_macs(st: &State) -> Result<Vec<Entry>, String> {
    let b = lock_bridges(st);
    let mut out = Vec::new();
    for m in b.entries(None)? {
        if !m.is_static || b.bvi_of(m.bd) == Some(m.interface) {
            continue;
        }
        let mut e = Entry::default();
        e.set("mac", m.mac.as_str())
            .set("bridge-domain", int(m.bd))
            .set("interface", st.name(m.interface)?);
        out.push(e);
    }
    Ok(out)
}

/// [[bvi]]: each BVI with its domain, its MAC (written out: the default one comes from the
/// interface index, which a restart may change) and its addresses.
fn bvis(st: &State) -> Result<Vec<Entry>, String> {
    // (domain, its BVI's index), taken before the router is locked for the addresses.
    let owners: Vec<(u32, Option<u32>)> = {
        let b = lock_bridges(st);
        let ids: Vec<u32> = b.report(None)?.iter().map(|d| d.id).collect();
        ids.into_iter().map(|d| (d, b.bvi_of(d))).collect()
    };
    let mut out = Vec::new();
    for bvi in soft_interfaces(st, true) {
        let itf = &bvi.interface;
        debug_assert_eq!(itf.driver, BVI_DRIVER);
        let instance: u32 = itf
            .name
            .strip_prefix("bvi")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("BVI {} is not named bviN", itf.name))?;
        let (bd, _) = owners
            .iter()
            .find(|(_, bvi)| *bvi == Some(itf.index))
            .ok_or_else(|| {
                format!(
                    "{} is in no bridge domain, and a [[bvi]] names one: set interface l2 \
                     bridge {} <BD> bvi, or bvi delete {}",
                    itf.name, itf.name, itf.name
                )
            })?;
        let mut e = Entry::default();
        e.set("instance", int(instance))
            .set("bridge-domain", int(*bd))
            .set("mac", itf.mac.to_string());
        let addrs = addresses(st, itf.index);
        if !addrs.is_empty() {
            e.set("address", addrs);
        }
        out.push(e);
    }
    Ok(out)
}

/// [[ip-table]]: the tables besides 0 and the interfaces routing in them. A [[ip-table]]
/// binds both families, so an interface in different tables for IPv4 and IPv6 cannot be
/// saved.
fn tables(st: &State) -> Result<Vec<Entry>, String> {
    let views =
        st.c.dp
            .router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .table_views();
    let live = |names: &[String]| -> Vec<String> {
        names
            .iter()
            .filter(|n| st.names.iter().flatten().any(|l| l == *n))
            .cloned()
            .collect()
    };
    let mut out = Vec::new();
    for v in &views {
        let (four, six) = (live(&v.ip4_interfaces), live(&v.ip6_interfaces));
        if let Some(odd) = four
            .iter()
            .find(|n| !six.contains(n))
            .or_else(|| six.iter().find(|n| !four.contains(n)))
        {
            let (f4, f6) = views.iter().fold((0, 0), |acc, t| {
                (
                    if t.ip4_interfaces.contains(odd) {
                        t.id
                    } else {
                        acc.0
                    },
                    if t.ip6_interfaces.contains(odd) {
                        t.id
                    } else {
                        acc.1
                    },
                )
            });
            return Err(format!(
                "{odd} routes IPv4 in table {f4} and IPv6 in table {f6}; a config file puts \
                 both in one table ([[ip-table]]): set interface ip table / ip6 table alike \
                 before saving"
            ));
        }
        if v.id == 0 {
            continue;
        }
        let mut e = Entry::default();
        e.set("id", int(v.id));
        if !four.is_empty() {
            e.set("interfaces", four);
        }
        out.push(e);
    }
    Ok(out)
}

/// [[route]]: the static routes of the config and the CLI, next hops as resolved (a route
/// file's routes stay in [fib] route-file).
fn routes(st: &State) -> Result<Vec<Entry>, String> {
    let saved =
        st.c.dp
            .router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .saved_routes();
    saved.iter().map(route).collect()
}

/// One [[route]].
pub fn route(r: &SavedRoute) -> Result<Entry, String> {
    let mut e = Entry::default();
    e.set("prefix", r.prefix.to_string());
    if r.table != 0 {
        e.set("table", int(r.table));
    }
    let what = |why: &str| {
        let t = if r.table == 0 {
            String::new()
        } else {
            format!(" (table {})", r.table)
        };
        format!("route {}{t}: {why}", r.prefix)
    };
    if let Some(SavedHop::Other(kind)) = r.hops.iter().find(|h| matches!(h, SavedHop::Other(_))) {
        return Err(what(&format!("a path of kind {kind} cannot be written")));
    }
    let vias: Vec<(&str, std::net::IpAddr, u32, bool)> = r
        .hops
        .iter()
        .filter_map(|h| match h {
            SavedHop::Via {
                interface,
                addr,
                table,
                by_address,
            } => Some((interface.as_str(), *addr, *table, *by_address)),
            _ => None,
        })
        .collect();
    if vias.is_empty() {
        e.set("drop", true);
        return Ok(e);
    }
    if vias.len() != r.hops.len() {
        return Err(what(
            "it mixes drop with next hops, which a [[route]] cannot say",
        ));
    }
    let nh_table = vias[0].2;
    if vias.iter().any(|v| v.2 != nh_table) {
        return Err(what(
            "its next hops are in different tables; a [[route]] has one next-hop-table",
        ));
    }
    let one_interface = vias.iter().all(|v| v.0 == vias[0].0);
    if !one_interface && !vias.iter().all(|v| v.3) {
        return Err(what(
            "its next hops are on different interfaces, not all found by address; a \
             [[route]] names one interface for all of them",
        ));
    }
    let addrs: Vec<String> = vias.iter().map(|v| v.1.to_string()).collect();
    e.set("via", addrs);
    if one_interface {
        e.set("interface", vias[0].0);
    }
    if nh_table != r.table {
        e.set("next-hop-table", int(nh_table));
    }
    Ok(e)
}

/// [[acl]]: every list with its rules as they were given.
fn acls(st: &State) -> Result<Vec<Entry>, String> {
    let acls = st.c.dp.acls.lock().unwrap_or_else(|p| p.into_inner());
    Ok(acls
        .report(None)?
        .into_iter()
        .map(|l| {
            let rules: Vec<Value> = l.rules.iter().map(|(t, _)| s(t)).collect();
            let mut e = Entry::default();
            e.set("name", l.name.as_str()).set("rules", rules);
            e
        })
        .collect())
}

/// [[acl-input]] (`output` false) or [[acl-output]]: the interfaces ACLs check, in index
/// order.
fn acl_bindings(st: &State, output: bool) -> Result<Vec<Entry>, String> {
    let acls = st.c.dp.acls.lock().unwrap_or_else(|p| p.into_inner());
    let mut bound: Vec<(u32, String)> = Vec::new();
    for l in acls.report(None)? {
        let on = if output { &l.output } else { &l.input };
        bound.extend(on.iter().map(|&i| (i, l.name.clone())));
    }
    bound.sort();
    let mut out = Vec::new();
    for (i, acl) in bound {
        let Ok(name) = st.name(i) else { continue };
        let mut e = Entry::default();
        e.set("interface", name).set("acl", acl.as_str());
        out.push(e);
    }
    Ok(out)
}

/// What the running state has that a config file cannot hold, said at the end of the file.
fn notes(c: &Control) -> Vec<String> {
    let mut notes = Vec::new();
    let neighbors: Vec<String> =
        c.dp.router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .neighbors()
            .into_iter()
            .filter(|n| n.static_entry)
            .map(|n| format!("  set ip neighbor {} {} {}", n.interface, n.ip, n.mac))
            .collect();
    if !neighbors.is_empty() {
        notes.push(
            "Not saved: static neighbours (a config file has no section for them); after \
             a restart, enter them again:"
                .into(),
        );
        notes.extend(neighbors);
    }
    notes
}

/// Write `text` to `path` whole or not at all: a temporary file in the same directory
/// (mode 0600), synced, then renamed over `path`. An error leaves no temporary file behind.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if !path.is_absolute() {
        return Err(format!(
            "'{}' is not an absolute path: the daemon writes the file, and its working \
             directory is not yours",
            path.display()
        ));
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("'{}' names no file", path.display()));
    };
    if path.is_dir() {
        return Err(format!("{} is a directory", path.display()));
    }
    let tmp = dir.join(format!(
        ".{}.save-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Now in UTC, `2024-05-01 12:34:56 UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// Seconds since 1970 as a UTC date and time (the proleptic Gregorian calendar).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The sections `section` writes, for the test that every section of the reference has a
/// writer.
#[cfg(test)]
const WRITTEN: &[&str] = &[
    "dataplane",
    "control",
    "metrics",
    "watchdog",
    "neighbors",
    "interface",
    "subinterface",
    "xconnect",
    "rx-placement",
    "handoff",
    "bridge-domain",
    "l2fib",
    "bvi",
    "ip-table",
    "route",
    "fib",
    "acl",
    "acl-input",
    "acl-output",
    "sessions",
    "lcp",
    "punt",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::parse::parse_prefix;

    #[test]
    fn every_section_of_the_reference_is_written() {
        let names: Vec<&str> = crate::config::reference::sections()
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, WRITTEN);
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    fn via(itf: &str, addr: &str, table: u32, by_address: bool) -> SavedHop {
        SavedHop::Via {
            interface: itf.into(),
            addr: addr.parse().unwrap(),
            table,
            by_address,
        }
    }

    fn written(r: &SavedRoute) -> Result<String, String> {
        let e = route(r)?;
        Ok(e.keys
            .iter()
            .map(|(k, v)| format!("{k} = {}", emit::value(v)))
            .collect::<Vec<_>>()
            .join("; "))
    }

    #[test]
    fn routes_as_written() {
        let r = |table, hops| SavedRoute {
            table,
            prefix: parse_prefix("10.0.0.0/8").unwrap(),
            hops,
        };
        assert_eq!(
            written(&r(0, vec![SavedHop::Drop])).unwrap(),
            "prefix = \"10.0.0.0/8\"; drop = true"
        );
        assert_eq!(
            written(&r(
                0,
                vec![
                    via("d0", "192.0.2.2", 0, false),
                    via("d0", "192.0.2.3", 0, false)
                ]
            ))
            .unwrap(),
            "prefix = \"10.0.0.0/8\"; via = [\"192.0.2.2\", \"192.0.2.3\"]; interface = \"d0\""
        );
        // ECMP over two interfaces: found by address, so no interface is written.
        assert_eq!(
            written(&r(
                7,
                vec![
                    via("d0", "192.0.2.2", 0, true),
                    via("d1", "198.51.100.2", 0, true)
                ]
            ))
            .unwrap(),
            "prefix = \"10.0.0.0/8\"; table = 7; via = [\"192.0.2.2\", \"198.51.100.2\"]; \
             next-hop-table = 0"
        );
        for (hops, why) in [
            (
                vec![
                    via("d0", "192.0.2.2", 0, true),
                    via("d1", "198.51.100.2", 0, false),
                ],
                "different interfaces",
            ),
            (
                vec![via("d0", "192.0.2.2", 0, true), SavedHop::Drop],
                "mixes drop",
            ),
            (
                vec![
                    via("d0", "192.0.2.2", 0, true),
                    via("d1", "198.51.100.2", 3, true),
                ],
                "different tables",
            ),
            (vec![SavedHop::Other("glean")], "glean"),
        ] {
            let e = written(&r(0, hops)).unwrap_err();
            assert!(
                e.starts_with("route 10.0.0.0/8: ") && e.contains(why),
                "{e}"
            );
        }
    }

    #[test]
    fn write_file_is_whole_or_nothing() {
        let dir = std::env::temp_dir().join(format!("sluice-save-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.toml");
        write_file(&f, "x = 1\n").unwrap();
        write_file(&f, "x = 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "x = 2\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = write_file(Path::new("rel.toml"), "").unwrap_err();
        assert!(e.contains("not an absolute path"), "{e}");
        let e = write_file(&dir.join("no/such/dir.toml"), "").unwrap_err();
        assert!(e.starts_with("cannot write "), "{e}");
        let e = write_file(&dir, "").unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.toml")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
