//! Feature arcs: optional processing a packet goes through between two fixed nodes, switched
//! on per interface at run time (VPP's `vnet_feature_enable_disable`).
//!
//! An arc has a start node (which decides where a packet goes first), an end node, and an
//! ordered list of features (node names) in `ARCS`: adding a feature is one line there, not
//! an edit of the start node's next list. A `FeatureView`, published to the workers, holds per
//! arc and interface the set of enabled features as a bit mask, so the next node of a packet
//! is a mask load and a count of trailing zeros; an interface with nothing enabled goes
//! straight to the end node.
//!
//! ip4-input and ip6-input start the unicast arcs, whose features are the ACL input nodes;
//! ip4-rewrite and ip6-rewrite start the output arcs (ending at interface-output), whose
//! features are the ACL output nodes. NAT44 runs after the input ACL (which sees the
//! addresses as they arrived) and before the output ACL (which sees them translated), as
//! in Linux, where filtering sees packets between DNAT and SNAT.

use crate::acl::node as acl;
use crate::ip::ip4;
use crate::ip::ip6;
use crate::nat44::node as nat44;
use crate::nodes::interface_output;
use arc_swap::ArcSwap;
use std::sync::Arc;

/// The feature set as the workers read it: republished whole when it changes.
pub type SharedFeatures = Arc<ArcSwap<FeatureView>>;

/// `view` ready to hand to the workers.
pub fn shared(view: FeatureView) -> SharedFeatures {
    Arc::new(ArcSwap::from_pointee(view))
}

/// One arc: where it starts and ends and its features, in the order a packet visits them.
#[derive(Debug)]
pub struct ArcDef {
    pub name: &'static str,
    pub start: &'static str,
    pub end: &'static str,
    pub features: &'static [&'static str],
}

/// The arcs, by index (`IP4_UNICAST` …).
pub static ARCS: [ArcDef; 4] = [
    ArcDef {
        name: "ip4-unicast",
        start: ip4::input::NAME,
        end: ip4::lookup::NAME,
        features: &[acl::ACL_IP4_IN, nat44::NAT44_IN],
    },
    ArcDef {
        name: "ip6-unicast",
        start: ip6::input::NAME,
        end: ip6::lookup::NAME,
        features: &[acl::ACL_IP6_IN],
    },
    ArcDef {
        name: "ip4-output",
        start: ip4::rewrite::NAME,
        end: interface_output::NAME,
        features: &[nat44::NAT44_OUT, acl::ACL_IP4_OUT],
    },
    ArcDef {
        name: "ip6-output",
        start: ip6::rewrite::NAME,
        end: interface_output::NAME,
        features: &[acl::ACL_IP6_OUT],
    },
];

pub const IP4_UNICAST: usize = 0;
pub const IP6_UNICAST: usize = 1;
pub const IP4_OUTPUT: usize = 2;
pub const IP6_OUTPUT: usize = 3;

/// The slot of a start node whose next list begins with the arc's end and has the arc's
/// features from slot `base` on (the rewrite nodes: interface-output first, as before the
/// arc): where a packet leaving for `interface` goes.
#[inline(always)]
pub fn start_slot(view: &FeatureView, arc: usize, interface: u32, base: usize) -> usize {
    let s = view.next_slot(arc, interface, None);
    if s >= ARCS[arc].features.len() {
        0
    } else {
        base + s
    }
}

/// The features of `arc` as next names, for a start node that lists the end itself.
pub fn feature_names(arc: usize) -> Vec<String> {
    ARCS[arc].features.iter().map(|s| s.to_string()).collect()
}

/// The arc called `name`.
pub fn arc_by_name(name: &str) -> Option<usize> {
    ARCS.iter().position(|a| a.name == name)
}

/// The index of `feature` in `arc`'s list (a feature node's own place, for `next_slot`).
pub fn feature_index(arc: usize, feature: &str) -> Option<usize> {
    ARCS.get(arc)?.features.iter().position(|f| *f == feature)
}

/// The next-node names a node of `arc` declares for it: for the start node (`from` = None)
/// every feature then the end; for feature `i`, the features after it then the end.
pub fn next_names(arc: usize, from: Option<usize>) -> Vec<String> {
    let a = &ARCS[arc];
    let first = from.map_or(0, |i| i + 1);
    a.features[first.min(a.features.len())..]
        .iter()
        .chain(std::iter::once(&a.end))
        .map(|s| s.to_string())
        .collect()
}

/// The next-slot index for a node leaving `from` (the start node when `None`) when the
/// enabled features of an arc of `n` are `mask`: the first enabled one after `from`, counted
/// from the node's first next (the feature after it), or `n - first` for the end.
#[inline(always)]
fn slot(mask: u64, n: usize, from: Option<usize>) -> usize {
    let first = from.map_or(0, |i| i + 1).min(n);
    let known = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    let later = mask.checked_shr(first as u32).unwrap_or(0) & known >> first.min(63);
    match later {
        0 => n - first,
        m => m.trailing_zeros() as usize,
    }
}

/// Which features of which arc are on, per interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureView {
    /// `masks[arc][interface]`: bit `i` set when `ARCS[arc].features[i]` is enabled.
    masks: Vec<Vec<u64>>,
}

impl FeatureView {
    pub fn new() -> FeatureView {
        FeatureView {
            masks: vec![Vec::new(); ARCS.len()],
        }
    }

    /// Switch `feature` of `arc` on or off for `interface`.
    pub fn set(
        &mut self,
        arc: usize,
        interface: u32,
        feature: &str,
        on: bool,
    ) -> Result<(), String> {
        let a = ARCS
            .get(arc)
            .ok_or_else(|| format!("no feature arc {arc}"))?;
        let bit = a
            .features
            .iter()
            .position(|f| *f == feature)
            .ok_or_else(|| {
                format!(
                    "no feature '{feature}' on arc {} (features: {})",
                    a.name,
                    a.features.join(", ")
                )
            })?;
        let masks = &mut self.masks[arc];
        let i = interface as usize;
        if masks.len() <= i {
            masks.resize(i + 1, 0);
        }
        if on {
            masks[i] |= 1 << bit;
        } else {
            masks[i] &= !(1 << bit);
        }
        Ok(())
    }

    #[inline(always)]
    fn mask(&self, arc: usize, interface: u32) -> u64 {
        self.masks
            .get(arc)
            .and_then(|m| m.get(interface as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Whether every feature of `arc` enabled on `interface` is one of `allowed` (no
    /// allocation: asked per packet by the fast path's offers).
    pub fn only(&self, arc: usize, interface: u32, allowed: &[&str]) -> bool {
        let m = self.mask(arc, interface);
        ARCS.get(arc).is_none_or(|a| {
            let on = |i: usize| m & 1 << i != 0;
            a.features
                .iter()
                .enumerate()
                .all(|(i, f)| !on(i) || allowed.contains(f))
        })
    }

    /// The features of `arc` enabled on `interface`, in visiting order.
    pub fn enabled(&self, arc: usize, interface: u32) -> Vec<&'static str> {
        let m = self.mask(arc, interface);
        ARCS.get(arc).map_or_else(Vec::new, |a| {
            (0..a.features.len())
                .filter(|&i| m & 1 << i != 0)
                .map(|i| a.features[i])
                .collect()
        })
    }

    /// The next-slot index for a packet on `interface` leaving `from` (the start node when
    /// `None`, else feature `from`), in that node's `next_names` order: the next enabled
    /// feature, or the end node.
    #[inline(always)]
    pub fn next_slot(&self, arc: usize, interface: u32, from: Option<usize>) -> usize {
        let n = ARCS.get(arc).map_or(0, |a| a.features.len());
        slot(self.mask(arc, interface), n, from)
    }

    /// Whether any interface has any feature of `arc` on: when not, a start node can send
    /// whole frames to the end.
    pub fn any(&self, arc: usize) -> bool {
        self.masks
            .get(arc)
            .is_some_and(|m| m.iter().any(|&x| x != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_arcs_are_well_formed() {
        for (i, a) in ARCS.iter().enumerate() {
            assert!(a.features.len() < 64, "{}", a.name);
            assert_eq!(arc_by_name(a.name), Some(i));
            assert_eq!(next_names(i, None).last().map(String::as_str), Some(a.end));
        }
        assert_eq!(arc_by_name("frob"), None);
    }

    proptest::proptest! {
        /// Against the plain reading: the first enabled feature after `from`, else the end,
        /// as an index into that node's next names.
        #[test]
        fn features_slot_is_the_next_enabled(mask in 0u64..64, n in 0usize..7, from in proptest::option::of(0usize..6)) {
            let from = from.filter(|&f| f < n);
            let first = from.map_or(0, |i| i + 1);
            let want = (first..n).find(|&j| mask & 1 << j != 0).map_or(n - first, |j| j - first);
            proptest::prop_assert_eq!(slot(mask, n, from), want);
        }
    }

    #[test]
    fn features_next_slots_follow_the_enabled_set() {
        let mut v = FeatureView::new();
        // Nothing on: the start node's slot for the end (after all features).
        let n = ARCS[IP4_UNICAST].features.len();
        assert_eq!(v.next_slot(IP4_UNICAST, 3, None), n);
        assert!(!v.any(IP4_UNICAST));
        v.set(IP4_UNICAST, 3, "acl-ip4-in", true).unwrap();
        assert!(v.any(IP4_UNICAST) && !v.any(IP6_UNICAST));
        assert_eq!(v.enabled(IP4_UNICAST, 3), ["acl-ip4-in"]);
        assert!(v.only(IP4_UNICAST, 3, &["acl-ip4-in", "nat44-in"]));
        assert!(!v.only(IP4_UNICAST, 3, &["nat44-in"]));
        assert!(v.only(IP4_UNICAST, 2, &[]), "nothing on: nothing else");
        assert_eq!(
            next_names(IP4_UNICAST, None)[v.next_slot(IP4_UNICAST, 3, None)],
            "acl-ip4-in"
        );
        // From the feature: its own next list, whose last is the end.
        let from = Some(0);
        let names = next_names(IP4_UNICAST, from);
        assert_eq!(names[v.next_slot(IP4_UNICAST, 3, from)], "ip4-lookup");
        // Other interfaces and the other arc are untouched.
        assert_eq!(v.next_slot(IP4_UNICAST, 2, None), n);
        assert_eq!(
            v.next_slot(IP6_UNICAST, 3, None),
            ARCS[IP6_UNICAST].features.len()
        );
        // The output arc, from a start node that lists its end first.
        assert_eq!(start_slot(&v, IP4_OUTPUT, 3, 4), 0);
        v.set(IP4_OUTPUT, 3, "acl-ip4-out", true).unwrap();
        assert_eq!(start_slot(&v, IP4_OUTPUT, 3, 4), 5);
        assert_eq!(feature_names(IP4_OUTPUT), ["nat44-out", "acl-ip4-out"]);
        assert_eq!(
            next_names(IP4_OUTPUT, Some(1)),
            ["interface-output"],
            "the output feature goes on to interface-output"
        );
        v.set(IP4_UNICAST, 3, "acl-ip4-in", false).unwrap();
        assert_eq!(v.next_slot(IP4_UNICAST, 3, None), n);
        assert!(!v.any(IP4_UNICAST));
        let e = v.set(IP4_UNICAST, 3, "nat44", true).unwrap_err();
        assert!(e.contains("no feature 'nat44' on arc ip4-unicast"), "{e}");
    }
}
