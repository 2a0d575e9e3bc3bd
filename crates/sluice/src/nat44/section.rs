//! The NAT's config sections: `start` applies them when the dataplane starts, and `sluice
//! ctl save` writes them back from the running NAT.

use super::config::{Nat44Config, NAT44 as NAT44_DOC, NAT44_INTERFACE as IF_DOC};
use super::control::Nat44Control;
use super::packet::proto_name;
use super::Role;
use crate::acl::node::Filters;
use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::config::Config;
use crate::control::save::State;
use crate::router::Router;
use std::net::Ipv4Addr;
use toml::Value;

pub static NAT44: Saved = Saved(&NAT44_DOC, nat44);
pub static NAT44_INTERFACE: Saved = Saved(&IF_DOC, interfaces);
pub static NAT44_STATIC: Saved = Saved(&super::config::NAT44_STATIC, statics);

fn control<'a>(st: &'a State) -> std::sync::MutexGuard<'a, Nat44Control> {
    st.c.dp.nat44.lock().unwrap_or_else(|p| p.into_inner())
}

/// [nat44], when the NAT has interfaces, addresses or static mappings, or a limit or a
/// timeout that is not the default.
fn nat44(st: &State) -> Result<Vec<Entry>, String> {
    let n = control(st);
    let used =
        !(n.roles().is_empty() && n.config.addresses.is_empty() && n.config.statics.is_empty());
    let c = &n.config;
    let d = Nat44Config::default();
    let mut e = Entry::default();
    if !c.addresses.is_empty() {
        let list: Vec<Value> = c
            .addresses
            .iter()
            .map(|a| Value::String(Ipv4Addr::from(*a).to_string()))
            .collect();
        e.set("addresses", list);
    }
    let int = |v: u64| Value::Integer(v as i64);
    for (key, v, default) in [
        ("max-sessions", c.max_sessions as u64, d.max_sessions as u64),
        (
            "max-sessions-per-host",
            c.per_host as u64,
            d.per_host as u64,
        ),
        ("udp-timeout", c.timeouts.udp as u64, d.timeouts.udp as u64),
        (
            "tcp-established-timeout",
            c.timeouts.tcp_established as u64,
            d.timeouts.tcp_established as u64,
        ),
        (
            "tcp-transitory-timeout",
            c.timeouts.tcp_transitory as u64,
            d.timeouts.tcp_transitory as u64,
        ),
        (
            "icmp-timeout",
            c.timeouts.icmp as u64,
            d.timeouts.icmp as u64,
        ),
    ] {
        if v != default {
            e.set(key, int(v));
        }
    }
    if !used && e.keys.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![e])
}

fn interfaces(st: &State) -> Result<Vec<Entry>, String> {
    let roles = control(st).roles();
    let mut out = Vec::new();
    for (i, role) in roles {
        let Ok(name) = st.name(i) else { continue };
        let mut e = Entry::default();
        let role = match role {
            Role::Inside => "inside",
            Role::Outside => "outside",
        };
        e.set("interface", name).set("role", role);
        out.push(e);
    }
    Ok(out)
}

fn statics(st: &State) -> Result<Vec<Entry>, String> {
    let n = control(st);
    let ep = |(a, p): (u32, u16)| format!("{}:{p}", Ipv4Addr::from(a));
    Ok(n.config
        .statics
        .iter()
        .map(|s| {
            let mut e = Entry::default();
            e.set("protocol", proto_name(s.proto))
                .set("local", ep(s.local).as_str())
                .set("external", ep(s.external).as_str());
            e
        })
        .collect())
}

/// The start step of the NAT: its configuration, and the roles of its interfaces.
pub fn start(cfg: &Config, router: &Router, filters: &Filters) -> Result<Nat44Control, String> {
    let mut nat = Nat44Control::new(filters.nat.clone(), filters.features.clone());
    let Some(c) = &cfg.nat44 else {
        return Ok(nat);
    };
    nat.config = c.clone();
    nat.config.interfaces.clear();
    nat.publish(false);
    for (name, inside) in &c.interfaces {
        let index = router.interface_index(name)?;
        let role = if *inside { Role::Inside } else { Role::Outside };
        nat.set_role(index, Some(role))?;
    }
    Ok(nat)
}
