//! Tuple-space search with merged tuples (after TupleMerge, Daly and Torng): the first
//! matching rule of a list without scanning it.
//!
//! Rules are grouped by a coarse shape — family, source and destination prefix lengths rounded
//! down to a multiple of 8 bits (16 for IPv6), and whether the protocol is given — and each
//! group is a hash table from the (source, destination, protocol) masked to the group's
//! lengths to the rules there, in list order. A lookup masks the packet once per group and
//! probes; within a bucket, the first rule that matches in full (its own prefix lengths,
//! ports, ICMP type/code, TCP flags) is the group's answer, and the lowest rule index over all
//! groups wins. Groups are visited in the order of their first rule, so a lookup stops as soon
//! as no later group can hold an earlier rule than the one found.
//!
//! The cost follows the number of shapes, not of rules: 10 000 host-route deny rules and a
//! final `permit any` are two groups, two probes; IPv4 rules of any prefix lengths make at most
//! 5 × 5 × 2 = 50. Rules that fall into one bucket are checked one by one there.

use super::rule::{mask, FlowKey, Rule};
use crate::sys::fasthash::FastBuild;
use std::collections::HashMap;

/// A prefix length rounded down to the group granularity: 8 bits for IPv4, 16 for IPv6.
fn coarse(len: u8, ipv6: bool) -> u8 {
    let step = if ipv6 { 16 } else { 8 };
    len / step * step
}

/// The exact-match part of a rule or a masked packet.
type Key = (u128, u128, u8);

/// Rules of one shape.
struct Group {
    ipv6: bool,
    src_len: u8,
    dst_len: u8,
    /// Whether the protocol is part of the key (else it is any).
    proto: bool,
    /// The group's lowest rule index: a lookup that already has an earlier rule skips it.
    first: u32,
    table: HashMap<Key, Vec<u32>, FastBuild>,
}

/// A rule list compiled for lookups. Rebuilt when the list changes (a list is replaced whole,
/// as VPP's `acl_add_replace` does).
pub struct Classifier {
    rules: Vec<Rule>,
    groups: Vec<Group>,
}

impl Classifier {
    pub fn new(rules: &[Rule]) -> Classifier {
        let rules: Vec<Rule> = rules.iter().map(|r| r.normalized()).collect();
        let mut groups: Vec<Group> = Vec::new();
        let mut index: HashMap<(bool, u8, u8, bool), usize> = HashMap::new();
        for (i, r) in rules.iter().enumerate() {
            let (sl, dl) = (coarse(r.src_len, r.ipv6), coarse(r.dst_len, r.ipv6));
            let shape = (r.ipv6, sl, dl, r.proto.is_some());
            let g = *index.entry(shape).or_insert_with(|| {
                groups.push(Group {
                    ipv6: r.ipv6,
                    src_len: sl,
                    dst_len: dl,
                    proto: r.proto.is_some(),
                    first: i as u32,
                    table: HashMap::default(),
                });
                groups.len() - 1
            });
            let key = (mask(r.src, sl), mask(r.dst, dl), r.proto.unwrap_or(0));
            groups[g].table.entry(key).or_default().push(i as u32);
        }
        // Already in order of first rule: a group is made at its first rule.
        Classifier { rules, groups }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Groups (coarse rule shapes): the probes a lookup makes at most.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The index of the first rule that matches `k`, as `first_match` would find it.
    pub fn classify(&self, k: &FlowKey) -> Option<usize> {
        let mut best = u32::MAX;
        for g in &self.groups {
            if g.first >= best {
                break;
            }
            if g.ipv6 != k.ipv6 {
                continue;
            }
            let key = (
                mask(k.src, g.src_len),
                mask(k.dst, g.dst_len),
                if g.proto { k.proto } else { 0 },
            );
            let Some(candidates) = g.table.get(&key) else {
                continue;
            };
            if let Some(&i) = candidates
                .iter()
                .take_while(|&&i| i < best)
                .find(|&&i| self.rules.get(i as usize).is_some_and(|r| r.matches(k)))
            {
                best = i;
            }
        }
        (best != u32::MAX).then_some(best as usize)
    }

    /// `out[i] = classify(keys[i])` for a frame's keys.
    pub fn classify_batch(&self, keys: &[FlowKey], out: &mut [Option<usize>]) {
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.classify(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rule::{first_match, Action, TCP};
    use super::*;
    use proptest::prelude::*;

    const NET: u128 = 0x0a00_0000u128 << 96;

    fn v4(a: u32) -> u128 {
        (a as u128) << 96
    }

    /// Rules over a small space (10.0.0.0/24, protocols 6, 17, 1, ports 0-15) so that they
    /// overlap and packets hit them.
    fn rule() -> impl Strategy<Value = Rule> {
        (
            (0u8..3, any::<u8>(), 20u8..=32, any::<u8>(), 20u8..=32),
            (
                prop::option::of(prop::sample::select(vec![6u8, 17, 1])),
                0u16..16,
                0u16..16,
            ),
            (0u16..16, 0u16..16, any::<u8>(), 0u8..4, any::<bool>()),
        )
            .prop_map(
                |((act, s, sl, d, dl), (proto, p0, p1), (q0, q1, flags, fmask, any_src))| {
                    Rule {
                        action: [Action::Deny, Action::Permit, Action::PermitReflect][act as usize],
                        ipv6: false,
                        src: NET | v4(s as u32),
                        src_len: if any_src { 0 } else { sl },
                        dst: NET | v4(d as u32),
                        dst_len: dl,
                        proto,
                        sport: (p0.min(p1), p0.max(p1)),
                        dport: (q0.min(q1), q0.max(q1)),
                        tcp_flags: (flags & fmask, fmask),
                    }
                    .normalized()
                },
            )
    }

    fn key() -> impl Strategy<Value = FlowKey> {
        (
            any::<u8>(),
            any::<u8>(),
            prop::sample::select(vec![6u8, 17, 1, 47]),
            0u16..16,
            0u16..16,
            0u8..8,
            prop::bool::weighted(0.1),
        )
            .prop_map(|(s, d, proto, sport, dport, tcp_flags, frag)| FlowKey {
                ipv6: false,
                src: NET | v4(s as u32),
                dst: NET | v4(d as u32),
                proto,
                sport: if frag { 0 } else { sport },
                dport: if frag { 0 } else { dport },
                tcp_flags: if frag { 0 } else { tcp_flags },
                later_fragment: frag,
            })
    }

    proptest! {
        #[test]
        fn acl_classifier_is_first_match(
            rules in prop::collection::vec(rule(), 0..120),
            keys in prop::collection::vec(key(), 1..200),
        ) {
            let c = Classifier::new(&rules);
            let norm: Vec<Rule> = rules.iter().map(|r| r.normalized()).collect();
            for k in &keys {
                prop_assert_eq!(c.classify(k), first_match(&norm, k), "{:?}", k);
            }
        }
    }

    #[test]
    fn acl_many_host_rules_are_two_probes() {
        // 10 000 deny rules for single sources, then permit any: two shapes.
        let mut rules: Vec<Rule> = (0..10_000u32)
            .map(|i| Rule {
                src: v4(0xc612_0000 | i),
                src_len: 32,
                ..Rule::any(false, Action::Deny)
            })
            .collect();
        rules.push(Rule::any(false, Action::Permit));
        let c = Classifier::new(&rules);
        assert_eq!(c.groups(), 2);
        let hit = FlowKey {
            src: v4(0xc612_0007),
            ..FlowKey::default()
        };
        let miss = FlowKey {
            src: v4(0x0a00_0001),
            ..FlowKey::default()
        };
        assert_eq!(c.classify(&hit), Some(7));
        assert_eq!(c.classify(&miss), Some(10_000));
        // Families never cross: an IPv6 packet matches no IPv4 rule.
        let six = FlowKey {
            ipv6: true,
            ..FlowKey::default()
        };
        assert_eq!(c.classify(&six), None);
    }

    #[test]
    fn acl_ipv6_lengths_between_group_steps() {
        // /50 and /63 share the /48 group; each still needs its own full length.
        let net = 0x2001_0db8_0000_0000_0000_0000_0000_0000u128;
        let r50 = Rule {
            ipv6: true,
            src: net | 1 << (128 - 50),
            src_len: 50,
            ..Rule::any(true, Action::Deny)
        };
        let r63 = Rule {
            ipv6: true,
            src: net | 1 << (128 - 63),
            src_len: 63,
            ..Rule::any(true, Action::Deny)
        };
        let rules = [r63, r50, Rule::any(true, Action::Permit)];
        let c = Classifier::new(&rules);
        for src in [
            net,
            net | 1 << (128 - 50),
            net | 1 << (128 - 63),
            net | 1 << (128 - 50) | 1 << (128 - 63),
            net | 1 << (128 - 49),
        ] {
            let k = FlowKey {
                ipv6: true,
                src,
                ..FlowKey::default()
            };
            assert_eq!(c.classify(&k), first_match(&rules, &k), "{src:#x}");
        }
    }

    #[test]
    fn acl_later_fragments_match_only_rules_without_ports() {
        let dns = Rule {
            proto: Some(17),
            dport: (53, 53),
            ..Rule::any(false, Action::Deny)
        };
        let udp = Rule {
            proto: Some(17),
            ..Rule::any(false, Action::Permit)
        };
        let c = Classifier::new(&[dns, udp]);
        let frag = FlowKey {
            proto: 17,
            later_fragment: true,
            ..FlowKey::default()
        };
        assert_eq!(c.classify(&frag), Some(1));
    }

    #[test]
    fn acl_ports_flags_and_icmp() {
        let web = Rule {
            proto: Some(TCP),
            dport: (80, 80),
            tcp_flags: (0x02, 0x12), // SYN without ACK
            ..Rule::any(false, Action::Permit)
        };
        let echo = Rule {
            proto: Some(1),
            sport: (8, 8), // ICMP type: echo request
            ..Rule::any(false, Action::Permit)
        };
        let c = Classifier::new(&[web, echo, Rule::any(false, Action::Deny)]);
        let k = |proto, sport, dport, tcp_flags| FlowKey {
            proto,
            sport,
            dport,
            tcp_flags,
            ..FlowKey::default()
        };
        assert_eq!(c.classify(&k(TCP, 40000, 80, 0x02)), Some(0));
        assert_eq!(
            c.classify(&k(TCP, 40000, 80, 0x12)),
            Some(2),
            "SYN+ACK is no new connection"
        );
        assert_eq!(c.classify(&k(TCP, 40000, 81, 0x02)), Some(2));
        assert_eq!(c.classify(&k(1, 8, 0, 0)), Some(1));
        assert_eq!(c.classify(&k(1, 0, 0, 0)), Some(2));
        assert_eq!(c.classify(&k(17, 8, 0, 0)), Some(2));
    }
}
