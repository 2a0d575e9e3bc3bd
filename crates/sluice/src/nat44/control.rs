//! The NAT's control plane: the configuration the CLI and the config file change, turned
//! into the `NatView` the workers read and the feature bits of the NAT interfaces.

use super::config::{Nat44Config, MAX_SESSIONS, MAX_TIMEOUT, MIN_SESSIONS};
use super::node::{NAT44_IN, NAT44_OUT};
use super::shared::Nat44Shared;
use super::{Limits, NatView, Role, StaticMapping};
use crate::graph::features::{SharedFeatures, IP4_OUTPUT, IP4_UNICAST};
use std::sync::Arc;

pub struct Nat44Control {
    shared: Arc<Nat44Shared>,
    features: SharedFeatures,
    pub config: Nat44Config,
    /// By interface index.
    roles: Vec<Option<Role>>,
    generation: u64,
}

impl Nat44Control {
    pub fn new(shared: Arc<Nat44Shared>, features: SharedFeatures) -> Nat44Control {
        Nat44Control {
            shared,
            features,
            config: Nat44Config::default(),
            roles: Vec::new(),
            generation: 0,
        }
    }

    pub fn shared(&self) -> &Arc<Nat44Shared> {
        &self.shared
    }

    /// The NAT interfaces by index with their roles.
    pub fn roles(&self) -> Vec<(u32, Role)> {
        self.roles
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (i as u32, r)))
            .collect()
    }

    /// Make interface `index` inside or outside (`None`: neither). The workers' sessions are
    /// closed: a session may have been opened by a role that no longer holds.
    pub fn set_role(&mut self, index: u32, role: Option<Role>) -> Result<(), String> {
        let i = index as usize;
        if self.roles.len() <= i {
            self.roles.resize(i + 1, None);
        }
        self.roles[i] = role;
        // The view first, so that a packet the new feature bit sends to a NAT node finds its
        // role; when a role goes, the bits first.
        if role.is_some() {
            self.publish(true);
        }
        let mut f = (**self.features.load()).clone();
        f.set(IP4_UNICAST, index, NAT44_IN, role.is_some())?;
        f.set(IP4_OUTPUT, index, NAT44_OUT, role == Some(Role::Outside))?;
        self.features.store(Arc::new(f));
        if role.is_none() {
            self.publish(true);
        }
        Ok(())
    }

    /// Add (or with `del` remove) pool addresses.
    pub fn set_addresses(&mut self, addrs: &[u32], del: bool) -> Result<(), String> {
        let pool = &mut self.config.addresses;
        for a in addrs {
            let at = pool.iter().position(|p| p == a);
            match (at, del) {
                (Some(i), true) => {
                    pool.remove(i);
                }
                (None, false) => pool.push(*a),
                (None, true) => {
                    return Err(format!(
                        "{} is not in the pool",
                        std::net::Ipv4Addr::from(*a)
                    ))
                }
                (Some(_), false) => {}
            }
        }
        self.publish(true);
        Ok(())
    }

    /// Add (or remove) a static mapping.
    pub fn set_static(&mut self, m: StaticMapping, del: bool) -> Result<(), String> {
        let statics = &mut self.config.statics;
        let at = statics.iter().position(|s| *s == m);
        match (at, del) {
            (Some(i), true) => {
                statics.remove(i);
            }
            (None, true) => return Err("no such static mapping".into()),
            (None, false) => {
                if statics
                    .iter()
                    .any(|s| s.proto == m.proto && (s.external == m.external || s.local == m.local))
                {
                    return Err("another static mapping has this external or local endpoint".into());
                }
                statics.push(m);
            }
            (Some(_), false) => {}
        }
        self.publish(false);
        Ok(())
    }

    /// Set one session timeout (`udp`, `tcp-established`, `tcp-transitory` or `icmp`), in
    /// seconds. Sessions stay open: the workers read the timeouts afresh on every expiry
    /// check, so a live session expires by the new value.
    pub fn set_timeout(&mut self, kind: &str, secs: u64) -> Result<(), String> {
        if !(1..=MAX_TIMEOUT).contains(&secs) {
            return Err(format!("{secs} s: a timeout is from 1 to {MAX_TIMEOUT} s"));
        }
        let t = &mut self.config.timeouts;
        let field = match kind {
            "udp" => &mut t.udp,
            "tcp-established" => &mut t.tcp_established,
            "tcp-transitory" => &mut t.tcp_transitory,
            "icmp" => &mut t.icmp,
            _ => {
                return Err(format!(
                    "'{kind}': udp, tcp-established, tcp-transitory or icmp"
                ))
            }
        };
        *field = secs as u32;
        self.publish(false);
        Ok(())
    }

    /// Set the daemon's session limit and, when given, the per inside host one. Open sessions
    /// stay: a table above a lowered limit opens nothing new until it falls below it.
    pub fn set_limits(&mut self, sessions: u64, per_host: Option<u64>) -> Result<(), String> {
        if !(MIN_SESSIONS..=MAX_SESSIONS).contains(&sessions) {
            return Err(format!(
                "{sessions} sessions: from {MIN_SESSIONS} to {MAX_SESSIONS}"
            ));
        }
        // A per-host limit kept from before must fit too (or the saved file would not load),
        // unless it is the default, which is never written.
        let kept = self.config.per_host as u64;
        let default = Nat44Config::default().per_host as u64;
        let check = per_host.or((kept != default).then_some(kept));
        if let Some(m) = check {
            if m == 0 || m > sessions {
                return Err(format!(
                    "per-host {m}: from 1 to the session limit ({sessions})"
                ));
            }
            self.config.per_host = m as u32;
        }
        self.config.max_sessions = sessions as usize;
        self.publish(false);
        Ok(())
    }

    /// Publish what the workers read; `reset` closes every session (a new generation).
    pub fn publish(&mut self, reset: bool) {
        if reset {
            self.generation += 1;
        }
        let c = &self.config;
        let workers = self.shared.workers.len().max(1);
        let mut addresses = c.addresses.clone();
        let key = |p: u8, (a, port): (u32, u16)| (p, a, port);
        addresses.extend(c.statics.iter().map(|s| s.external.0));
        addresses.sort_unstable();
        addresses.dedup();
        let view = NatView {
            roles: self.roles.clone(),
            pool: c.addresses.clone(),
            statics_out: c
                .statics
                .iter()
                .map(|s| (key(s.proto, s.external), s.local))
                .collect(),
            statics_in: c
                .statics
                .iter()
                .map(|s| (key(s.proto, s.local), s.external))
                .collect(),
            timeouts: c.timeouts,
            limits: Some(Limits {
                sessions: c.max_sessions.div_ceil(workers),
                per_host: c.per_host,
            }),
            addresses,
            generation: self.generation,
            workers,
        };
        self.shared.view.store(Arc::new(view));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::features::{shared, FeatureView};

    fn control() -> Nat44Control {
        let mut c = Nat44Control::new(Nat44Shared::new(2), shared(FeatureView::new()));
        c.publish(false);
        c
    }

    #[test]
    fn a_timeout_is_published_without_closing_sessions() {
        let mut c = control();
        let before = c.shared().view.load().generation;
        c.set_timeout("udp", 30).unwrap();
        c.set_timeout("tcp-established", 3600).unwrap();
        c.set_timeout("tcp-transitory", 60).unwrap();
        c.set_timeout("icmp", 10).unwrap();
        let view = c.shared().view.load();
        assert_eq!(view.generation, before, "sessions kept");
        let t = view.timeouts;
        assert_eq!(
            (t.udp, t.tcp_established, t.tcp_transitory, t.icmp),
            (30, 3600, 60, 10)
        );
        assert_eq!(c.config.timeouts, t);
        for (kind, secs, words) in [
            ("udp", 0, "from 1 to"),
            ("icmp", MAX_TIMEOUT + 1, "from 1 to"),
            ("sctp", 10, "udp, tcp-established"),
        ] {
            let e = c.set_timeout(kind, secs).unwrap_err();
            assert!(e.contains(words), "{kind} {secs}: {e}");
        }
        assert_eq!(
            c.shared().view.load().timeouts,
            t,
            "a refused value changes nothing"
        );
    }

    #[test]
    fn limits_are_split_over_the_workers_and_keep_sessions() {
        let mut c = control();
        let before = c.shared().view.load().generation;
        c.set_limits(4096, Some(100)).unwrap();
        let view = c.shared().view.load();
        assert_eq!(view.generation, before, "no table made again");
        let l = view.limits.unwrap();
        assert_eq!((l.sessions, l.per_host), (2048, 100));
        c.set_limits(8192, None).unwrap();
        let l = c.shared().view.load().limits.unwrap();
        assert_eq!((l.sessions, l.per_host), (4096, 100), "per-host kept");
        for (n, m, words) in [
            (1000, None, "from 1024"),
            (MAX_SESSIONS + 1, None, "from 1024"),
            (4096, Some(0), "per-host 0"),
            (4096, Some(5000), "per-host 5000"),
        ] {
            let e = c.set_limits(n, m).unwrap_err();
            assert!(e.contains(words), "{n} {m:?}: {e}");
        }
        assert_eq!(c.config.max_sessions, 8192);
        c.set_limits(8192, Some(2000)).unwrap();
        let e = c.set_limits(1024, None).unwrap_err();
        assert!(e.contains("per-host 2000"), "the kept per-host limit: {e}");
        assert_eq!(c.config.max_sessions, 8192);
    }
}
