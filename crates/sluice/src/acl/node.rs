//! acl-ip4-in and acl-ip6-in: the input ACL of the interface a packet came in on, as a
//! feature of the ip4-unicast / ip6-unicast arcs (between ip*-input and ip*-lookup);
//! acl-ip4-out and acl-ip6-out: the output ACL of the interface it leaves by, as a feature
//! of the ip4-output / ip6-output arcs (between ip*-rewrite and interface-output).
//!
//! Each packet's flow key is read from its IP header on and classified by the interface's
//! list; a permit (or permit+reflect: sessions come later) sends it to the next feature of
//! the arc or to the lookup, a deny drops it with a counter, and a packet no rule matches is
//! denied (as VPP does; a list ends with `permit` to pass the rest). A packet whose headers
//! cannot give a key is a counted drop with its reason.

use crate::acl::control::AppliedList;
use crate::acl::key::{flow_key4, flow_key6, KeyError};
use crate::acl::session::{
    now_ms, Lookup, Prepared, Refused, Sessions, Timeouts, PACKETS_PER_SWEPT_BUCKET,
};
use crate::acl::Action;
use crate::acl::FlowKey;
use crate::graph::features::{
    self, SharedFeatures, IP4_OUTPUT, IP4_UNICAST, IP6_OUTPUT, IP6_UNICAST,
};
use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::wire::EtherType;
use arc_swap::ArcSwap;
use std::sync::Arc;

pub const ACL_IP4_IN: &str = "acl-ip4-in";
pub const ACL_IP6_IN: &str = "acl-ip6-in";
pub const ACL_IP4_OUT: &str = "acl-ip4-out";
pub const ACL_IP6_OUT: &str = "acl-ip6-out";

/// Which list checks what each interface receives, by interface index.
#[derive(Default)]
pub struct AclView {
    pub input: Vec<Option<Arc<AppliedList>>>,
    /// Which list checks what each interface sends, by interface index.
    pub output: Vec<Option<Arc<AppliedList>>>,
    /// A list in use has a permit+reflect rule: packets look for their flow's session
    /// before they are classified, and reflect rules open sessions.
    pub stateful: bool,
}

pub type SharedAclView = Arc<ArcSwap<AclView>>;

/// What the routing nodes filter with: the feature arcs and the ACLs they run.
#[derive(Clone)]
pub struct Filters {
    pub features: SharedFeatures,
    pub acls: SharedAclView,
    /// The workers' session tables (made when a reflect rule is first applied).
    pub sessions: Arc<Sessions>,
    /// The routing tables: a session is kept per table (VRF) of the interface checked.
    pub tables: crate::router::SharedTables,
    /// The NAT's configuration and the workers' tables (`nat44`), run on the same arcs.
    pub nat: Arc<crate::nat44::shared::Nat44Shared>,
}

impl Filters {
    /// No feature on, no ACL; room for `sessions` sessions per worker once needed.
    pub fn new(sessions: Sessions) -> Filters {
        Filters {
            features: features::shared(features::FeatureView::new()),
            acls: Arc::new(ArcSwap::from_pointee(AclView::default())),
            sessions: Arc::new(sessions),
            tables: Default::default(),
            nat: crate::nat44::shared::Nat44Shared::new(1),
        }
    }

    /// No feature on, no ACL, one worker's small session table once needed (tests).
    pub fn none() -> Filters {
        Filters::new(Sessions::new(1, 1024, Timeouts::default()))
    }
}

error_counters! {
    pub enum Error {
        Denied = "acl: denied by a rule",
        NoMatch = "acl: no rule matched (denied)",
        BadIpHeader = "acl: IP header invalid",
        TruncatedTransport = "acl: transport header truncated",
        BadExtensions = "acl: IPv6 extension headers invalid or too many",
        NotSyn = "acl: reflect: TCP without a session, not a SYN",
        SessionTableFull = "acl: reflect: session table full",
        SourceLimit = "acl: reflect: source at its session limit",
    }
    impl From<Refused> {
        NotSyn,
        TableFull => SessionTableFull,
        SourceLimit,
    }
    impl From<KeyError> {
        BadIpHeader,
        TruncatedTransport,
        BadExtensions,
    }
}

pub struct AclIn {
    ipv6: bool,
    /// An output ACL (the list of the interface a packet leaves by), else input.
    output: bool,
    arc: usize,
    /// This node's place among the arc's features.
    me: usize,
    filters: Filters,
    /// Packets handled since the session sweep last ran.
    sweep_credit: usize,
    /// The frame between passes (kept to reuse its memory).
    preps: Vec<(u32, Prep)>,
}

impl AclIn {
    /// The input node of a family.
    pub fn decl(ipv6: bool, filters: Filters) -> NodeDecl {
        Self::decl_for(ipv6, false, filters)
    }

    /// The output node of a family.
    pub fn decl_output(ipv6: bool, filters: Filters) -> NodeDecl {
        Self::decl_for(ipv6, true, filters)
    }

    fn decl_for(ipv6: bool, output: bool, filters: Filters) -> NodeDecl {
        let (name, arc) = match (ipv6, output) {
            (false, false) => (ACL_IP4_IN, IP4_UNICAST),
            (true, false) => (ACL_IP6_IN, IP6_UNICAST),
            (false, true) => (ACL_IP4_OUT, IP4_OUTPUT),
            (true, true) => (ACL_IP6_OUT, IP6_OUTPUT),
        };
        // The arc lists this node; a missing entry would be caught by the graph build.
        let me = features::feature_index(arc, name).unwrap_or(0);
        let mut next = features::next_names(arc, Some(me));
        next.push(crate::nodes::error_drop::NAME.to_string());
        let node = AclIn {
            ipv6,
            output,
            arc,
            me,
            filters,
            sweep_credit: 0,
            preps: Vec::new(),
        };
        NodeDecl::internal(name, &[], &Error::REASONS, node).with_next(next)
    }

    /// The drop slot: after the later features and the end.
    fn drop_slot(&self) -> usize {
        features::next_names(self.arc, Some(self.me)).len()
    }

    /// What the first pass finds of a packet: pass it (no list), drop it (its headers give
    /// no key), or check its key (with its session lookup prepared when state is kept).
    fn prepare(
        &self,
        acls: &AclView,
        (interface, table): (u32, u16),
        ip: Option<&[u8]>,
        thread: usize,
    ) -> Prep {
        let lists = if self.output {
            &acls.output
        } else {
            &acls.input
        };
        if lists
            .get(interface as usize)
            .and_then(|c| c.as_ref())
            .is_none()
        {
            // Enabled without a list (never made so by the dataplane): nothing to check.
            return Prep::Pass;
        }
        let Some(ip) = ip else {
            return Prep::Drop(Error::BadIpHeader);
        };
        let key = if self.ipv6 {
            flow_key6(ip)
        } else {
            flow_key4(ip)
        };
        match key {
            Err(e) => Prep::Drop(Error::from(e)),
            Ok(k) => {
                let session = if acls.stateful {
                    self.filters.sessions.prepare(thread, &k, table)
                } else {
                    None
                };
                Prep::Check(k, session)
            }
        }
    }

    /// Whether a packet to check passes (`Err`: the drop reason); the matching rule's hit
    /// counted by worker `thread`.
    fn verdict(
        &self,
        acls: &AclView,
        interface: u32,
        (key, session): (&FlowKey, Option<&Prepared>),
        (thread, now): (usize, u64),
    ) -> Result<(), Error> {
        let lists = if self.output {
            &acls.output
        } else {
            &acls.input
        };
        let Some(list) = lists.get(interface as usize).and_then(|c| c.as_ref()) else {
            return Ok(());
        };
        let sessions = &self.filters.sessions;
        if let Some(p) = session {
            if sessions.lookup_prepared(thread, p, key.tcp_flags, now) == Lookup::Hit {
                return Ok(());
            }
        }
        let rule = list.classifier.classify(key);
        list.hits.count(thread, rule);
        match rule.map(|i| list.classifier.rules()[i].action) {
            Some(Action::Permit) => Ok(()),
            Some(Action::PermitReflect) => match session {
                // A packet that may not open its session, or finds no room for it, is
                // dropped (its reply could not come back), as conntrack and VPP do.
                Some(p) => sessions
                    .open_prepared(thread, p, key.tcp_flags, now)
                    .map_err(Error::from),
                // A later fragment: no session can be told, the rule permits it.
                None => Ok(()),
            },
            Some(Action::Deny) => Err(Error::Denied),
            None => Err(Error::NoMatch),
        }
    }
}

/// A packet between the passes of `AclIn::process`.
enum Prep {
    Pass,
    Drop(Error),
    Check(FlowKey, Option<Prepared>),
}

impl Node for AclIn {
    /// Three passes when state is kept, so that a frame's session-table misses overlap: keys
    /// and hashes (prefetching each key's buckets), then the slots the buckets' tags point
    /// at (prefetched), then the verdicts.
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let acls = self.filters.acls.load();
        let features = self.filters.features.load();
        let ethertype = if self.ipv6 {
            EtherType::IPV6
        } else {
            EtherType::IPV4
        };
        let drop = self.drop_slot();
        let tracing = cx.tracing();
        let now = if acls.stateful { now_ms() } else { 0 };
        let thread = cx.thread;
        let mut preps = std::mem::take(&mut self.preps);
        preps.clear();
        let tables = self.filters.tables.load();
        for &bi in frame {
            let meta = cx.bufs.meta(bi);
            let interface = if self.output { meta.tx_if } else { meta.rx_if };
            let table = tables.table_of(interface, self.ipv6);
            let ip = crate::nodes::l3_header(cx.bufs, bi, ethertype);
            preps.push((
                interface,
                self.prepare(&acls, (interface, table), ip, thread),
            ));
        }
        if acls.stateful {
            for (_, p) in &preps {
                if let Prep::Check(_, Some(s)) = p {
                    self.filters.sessions.prefetch_slots(thread, s);
                }
            }
        }
        for (&bi, (interface, prep)) in frame.iter().zip(&preps) {
            let interface = *interface;
            let verdict = match prep {
                Prep::Pass => Ok(()),
                Prep::Drop(e) => Err(*e),
                Prep::Check(k, s) => self.verdict(&acls, interface, (k, s.as_ref()), (thread, now)),
            };
            match verdict {
                Ok(()) => {
                    if tracing {
                        cx.trace(bi, "acl: permitted");
                    }
                    cx.enqueue(features.next_slot(self.arc, interface, Some(self.me)), bi);
                }
                Err(e) => {
                    cx.count_error(e as usize, 1);
                    if tracing {
                        cx.trace(bi, e.reason());
                    }
                    cx.enqueue(drop, bi);
                }
            }
        }
        self.preps = preps;
        if acls.stateful {
            // Expired sessions go at the packets' pace (the sweep's reads are not theirs).
            self.sweep_credit += frame.len();
            let buckets = self.sweep_credit / PACKETS_PER_SWEPT_BUCKET;
            if buckets > 0 {
                self.sweep_credit %= PACKETS_PER_SWEPT_BUCKET;
                self.filters.sessions.sweep(thread, buckets, now);
            }
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::control::{parse_rules, AclControl};
    use crate::nodes::testing::Harness;
    use crate::wire::ipv4::checksum;

    fn udp4(src: [u8; 4], dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&46u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&[198, 19, 0, 1]);
        let c = checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f[34..36].copy_from_slice(&1000u16.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    fn filters(rules: &[&str], interface: u32) -> AclControl {
        let mut c = AclControl::new(Filters::none(), 1);
        c.add("t", parse_rules(&rules.join(",")).unwrap()).unwrap();
        c.set_input(interface, Some("t")).unwrap();
        c
    }

    #[test]
    fn acl_node_permits_denies_and_counts() {
        let h = Harness::new(1);
        let c = filters(&["deny src 198.18.0.7/32", "permit proto udp dport 53"], 0);
        let f = c.filters().clone();
        let frames = [
            udp4([198, 18, 0, 7], 53),                // denied by rule 0
            udp4([198, 18, 0, 8], 53),                // permitted by rule 1
            udp4([198, 18, 0, 8], 80),                // no rule: denied
            udp4([198, 18, 0, 8], 53)[..36].to_vec(), // UDP header cut short
        ];
        let out = h.run_node(AclIn::decl(false, f.clone()), &frames, 0);
        // Next slots: nat44-in (off here), the end (ip4-lookup), then error-drop.
        assert_eq!((out.to_next(1), out.to_next(2)), (1, 3));
        assert_eq!(out.errors[Error::Denied as usize], 1);
        assert_eq!(out.errors[Error::NoMatch as usize], 1);
        // The cut frame is too short for its own IPv4 total length too, but the ACL only
        // reads what is there: the UDP header it needs is missing.
        assert_eq!(out.errors[Error::TruncatedTransport as usize], 1);
        // Each rule's hits, and the packet no rule matched.
        let r = &c.report(Some("t")).unwrap()[0];
        let hits: Vec<u64> = r.rules.iter().map(|(_, h)| *h).collect();
        assert_eq!((hits, r.no_match), (vec![1, 1], 1));
        // Another interface has no list: everything passes.
        let out = h.run_node(AclIn::decl(false, f), &frames[..3], 1);
        assert_eq!(out.to_next(1), 3);
    }

    /// A TCP frame from 198.18.0.8:1000 to 198.19.0.1:`dport` with `flags`.
    fn tcp4(dport: u16, flags: u8) -> Vec<u8> {
        let mut f = udp4([198, 18, 0, 8], dport);
        f[14 + 9] = 6;
        f[14 + 10..14 + 12].copy_from_slice(&[0, 0]);
        let c = checksum(&f[14..34]);
        f[14 + 10..14 + 12].copy_from_slice(&c.to_be_bytes());
        f[34 + 12] = 0x50;
        f[34 + 13] = flags;
        f
    }

    #[test]
    fn a_reflect_rule_opens_tcp_on_a_syn_and_drops_the_rest_without_a_session() {
        let h = Harness::new(1);
        let c = filters(&["permit+reflect proto tcp dport 80"], 0);
        let f = c.filters().clone();
        // An ACK and a SYN-ACK of no session: dropped; a SYN opens; its ACK then passes.
        let frames = [
            tcp4(80, 0x10),
            tcp4(80, 0x12),
            tcp4(80, 0x02),
            tcp4(80, 0x10),
        ];
        let out = h.run_node(AclIn::decl(false, f.clone()), &frames, 0);
        assert_eq!((out.to_next(1), out.to_next(2)), (2, 2));
        assert_eq!(out.errors[Error::NotSyn as usize], 2);
        let t = &f.sessions.tables()[0];
        assert_eq!(
            t.stats.not_syn.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
        assert_eq!(
            t.stats.created.load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }
}
