//! Software interfaces: sub-interfaces on a hardware one, each matching frames by their VLAN
//! tags (802.1Q, QinQ, a default for unmatched tags, or untagged frames), and bridge-virtual
//! interfaces (BVIs, a bridge domain's routed port). Each has its own index, counters, admin
//! state and mode. The workers read them from a table the control plane publishes whole:
//! ethernet-input classifies each frame to its sub-interface in one lookup and removes the
//! matched tags; interface-output puts them back on the way out and sends the frame by the
//! parent, or hands a BVI's packet to its bridge domain.

use crate::buffer::WorkerBuffers;
use crate::interface::Interface;
use arc_swap::ArcSwap;
use std::sync::Arc;

/// VLAN ids are 12 bits.
pub const VLAN_IDS: usize = 4096;
/// No sub-interface in a classifier slot.
const NONE: u32 = u32::MAX;

/// The tags a sub-interface matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "match")]
pub enum TagMatch {
    /// One 802.1Q tag; unless `exact`, also double-tagged frames with this outer tag that no
    /// QinQ sub-interface takes (their inner tag stays on).
    Dot1q { vid: u16, exact: bool },
    /// Two tags: outer (802.1ad when `outer_ad`, else 802.1Q) and inner 802.1Q.
    Qinq {
        outer: u16,
        inner: u16,
        outer_ad: bool,
    },
    /// Tagged frames no other sub-interface of the parent takes (tags left on).
    Default,
    /// Frames without a tag, when the parent has other sub-interfaces.
    Untagged,
}

impl TagMatch {
    /// Tags removed on input and put back on output.
    pub fn tag_count(self) -> usize {
        match self {
            TagMatch::Dot1q { .. } => 1,
            TagMatch::Qinq { .. } => 2,
            TagMatch::Default | TagMatch::Untagged => 0,
        }
    }

    /// The tag bytes written after the MAC addresses on output, outermost first.
    fn tag_bytes(self) -> ([u8; 8], u8) {
        let tag = |tpid: u16, vid: u16| {
            let mut t = [0u8; 4];
            t[..2].copy_from_slice(&tpid.to_be_bytes());
            t[2..].copy_from_slice(&vid.to_be_bytes());
            t
        };
        let mut b = [0u8; 8];
        match self {
            TagMatch::Dot1q { vid, .. } => {
                b[..4].copy_from_slice(&tag(0x8100, vid));
                (b, 4)
            }
            TagMatch::Qinq {
                outer,
                inner,
                outer_ad,
            } => {
                b[..4].copy_from_slice(&tag(if outer_ad { 0x88a8 } else { 0x8100 }, outer));
                b[4..].copy_from_slice(&tag(0x8100, inner));
                (b, 8)
            }
            TagMatch::Default | TagMatch::Untagged => (b, 0),
        }
    }
}

impl std::fmt::Display for TagMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            TagMatch::Dot1q { vid, exact } => {
                write!(f, "dot1q {vid}{}", if exact { " exact-match" } else { "" })
            }
            TagMatch::Qinq {
                outer,
                inner,
                outer_ad,
            } => write!(
                f,
                "{} {outer} inner-dot1q {inner}",
                if outer_ad { "dot1ad" } else { "dot1q" }
            ),
            TagMatch::Default => f.write_str("default"),
            TagMatch::Untagged => f.write_str("untagged"),
        }
    }
}

/// One software interface as the workers see it: a sub-interface, or a BVI (`bvi`; its
/// parent is itself and it matches no tags).
#[derive(Clone)]
pub struct SubIf {
    pub interface: Arc<Interface>,
    pub parent: u32,
    pub tags: TagMatch,
    pub bvi: bool,
    /// What interface-output writes after the MACs, and how many bytes of it.
    push: [u8; 8],
    push_len: u8,
}

impl SubIf {
    pub fn new(interface: Arc<Interface>, parent: u32, tags: TagMatch) -> SubIf {
        let (push, push_len) = tags.tag_bytes();
        SubIf {
            interface,
            parent,
            tags,
            bvi: false,
            push,
            push_len,
        }
    }

    /// A bridge domain's routed interface.
    pub fn bvi(interface: Arc<Interface>) -> SubIf {
        let index = interface.index;
        SubIf {
            bvi: true,
            ..SubIf::new(interface, index, TagMatch::Untagged)
        }
    }

    /// The tag bytes to put back on output.
    #[inline(always)]
    pub fn push_bytes(&self) -> &[u8] {
        &self.push[..self.push_len as usize]
    }
}

/// The tag words of `create sub-interface IF ID ...` (nothing: `dot1q ID exact-match`).
pub fn parse_tags(id: u32, words: &[&str]) -> Result<TagMatch, String> {
    let vid = |w: Option<&&str>| -> Result<u16, String> {
        let w = w.ok_or("a VLAN id (1-4094) is missing")?;
        w.parse::<u16>()
            .ok()
            .filter(|v| (1..=4094).contains(v))
            .ok_or_else(|| format!("'{w}' is not a VLAN id (1-4094)"))
    };
    match words {
        [] => {
            let vid = u16::try_from(id)
                .ok()
                .filter(|v| (1..=4094).contains(v))
                .ok_or_else(|| {
                    format!("sub-interface {id} is not a VLAN id: name the tags (dot1q VID)")
                })?;
            Ok(TagMatch::Dot1q { vid, exact: true })
        }
        ["default"] => Ok(TagMatch::Default),
        ["untagged"] => Ok(TagMatch::Untagged),
        [outer @ ("dot1q" | "dot1ad"), rest @ ..] => {
            let o = vid(rest.first())?;
            match &rest[1..] {
                [] if *outer == "dot1q" => Ok(TagMatch::Dot1q {
                    vid: o,
                    exact: false,
                }),
                ["exact-match"] if *outer == "dot1q" => Ok(TagMatch::Dot1q {
                    vid: o,
                    exact: true,
                }),
                ["inner-dot1q", i] | ["inner-dot1q", i, "exact-match"] => Ok(TagMatch::Qinq {
                    outer: o,
                    inner: vid(Some(i))?,
                    outer_ad: *outer == "dot1ad",
                }),
                _ => Err(format!(
                    "after {outer} {o}: expected inner-dot1q VID{}",
                    if *outer == "dot1q" {
                        " or exact-match"
                    } else {
                        ""
                    }
                )),
            }
        }
        other => Err(format!(
            "unexpected '{}': expected dot1q VID [exact-match], dot1q|dot1ad VID inner-dot1q \
             VID, default or untagged",
            other.join(" ")
        )),
    }
}

/// Take `tags` VLAN tags off the frame in `bi` (the MAC addresses move up over them).
/// False, with nothing changed, when the frame is too short to hold them.
#[inline(always)]
pub fn pop_tags(bufs: &mut WorkerBuffers, bi: u32, tags: usize) -> bool {
    let n = 4 * tags;
    let (m, d) = bufs.meta_data_mut(bi);
    if d.len() < 12 + n {
        return false;
    }
    d.copy_within(0..12, n);
    m.advance(n)
}

/// Put `tags` (whole tags, outermost first) after the frame's MAC addresses, in the
/// buffer's headroom. False, with nothing changed, when there is no room.
#[inline(always)]
pub fn push_tags(bufs: &mut WorkerBuffers, bi: u32, tags: &[u8]) -> bool {
    let n = tags.len();
    if n == 0 {
        return true;
    }
    let m = bufs.meta_mut(bi);
    if m.len < 12 || !m.prepend(n) {
        return false;
    }
    // Only a segment whose metadata overruns its buffer is short here (and is dropped).
    let Some(d) = bufs.data_mut(bi).get_mut(..n + 12) else {
        return false;
    };
    d.copy_within(n..n + 12, 0);
    d[12..12 + n].copy_from_slice(tags);
    true
}

/// Where ethernet-input sends a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classified {
    /// The parent has no sub-interfaces, or none takes untagged frames: the frame stays on
    /// the interface it came in by.
    Parent,
    /// Sub-interface `index`; `pop` tags come off.
    Sub { index: u32, pop: u8 },
    /// Tagged, and no sub-interface of the parent takes those tags.
    NoMatch,
}

/// One parent's sub-interfaces, indexed for a lookup per frame.
#[derive(Clone)]
struct ParentTable {
    /// By outer VLAN id: the 802.1Q sub-interface, or NONE.
    dot1q: Box<[u32]>,
    /// Which of those take only single-tagged frames.
    exact: Box<[bool]>,
    /// (outer, inner) → sub-interface; few per parent, searched in order.
    qinq: Vec<((u16, u16), u32)>,
    default: u32,
    untagged: u32,
}

impl Default for ParentTable {
    fn default() -> Self {
        ParentTable {
            dot1q: vec![NONE; VLAN_IDS].into_boxed_slice(),
            exact: vec![false; VLAN_IDS].into_boxed_slice(),
            qinq: Vec::new(),
            default: NONE,
            untagged: NONE,
        }
    }
}

/// Every sub-interface, published whole: by interface index, and classified by parent.
#[derive(Clone, Default)]
pub struct SubIfs {
    /// Index of the first sub-interface (the hardware interfaces come first).
    first: u32,
    by_index: Vec<Option<SubIf>>,
    parents: Vec<Option<ParentTable>>,
}

/// What the workers hold.
pub type SharedSubIfs = Arc<ArcSwap<SubIfs>>;

impl SubIfs {
    /// A table for `hardware` hardware interfaces and no sub-interfaces yet.
    pub fn new(hardware: u32) -> SubIfs {
        SubIfs {
            first: hardware,
            by_index: Vec::new(),
            parents: Vec::new(),
        }
    }

    /// Sub-interface `index`, if it is one.
    #[inline(always)]
    pub fn get(&self, index: u32) -> Option<&SubIf> {
        self.by_index
            .get(index.checked_sub(self.first)? as usize)?
            .as_ref()
    }

    pub fn all(&self) -> impl Iterator<Item = &SubIf> {
        self.by_index.iter().flatten()
    }

    /// The sub-interface whose tags `vlans` (outermost first) match on `parent`.
    #[inline(always)]
    pub fn classify(&self, parent: u32, vlans: &[u16]) -> Classified {
        let Some(Some(t)) = self.parents.get(parent as usize) else {
            return Classified::Parent;
        };
        let sub = |index: u32, pop: u8| Classified::Sub { index, pop };
        match *vlans {
            [] if t.untagged != NONE => sub(t.untagged, 0),
            [] => Classified::Parent,
            [outer, inner, ..] => {
                if let Some((_, s)) = t.qinq.iter().find(|(k, _)| *k == (outer, inner)) {
                    return sub(*s, 2);
                }
                let d = t.dot1q[outer as usize];
                if d != NONE && !t.exact[outer as usize] {
                    sub(d, 1)
                } else if t.default != NONE {
                    sub(t.default, 0)
                } else {
                    Classified::NoMatch
                }
            }
            [vid] => {
                let d = t.dot1q[vid as usize];
                if d != NONE {
                    sub(d, 1)
                } else if t.default != NONE {
                    sub(t.default, 0)
                } else {
                    Classified::NoMatch
                }
            }
        }
    }

    /// The sub-interface of `parent` already matching `tags`, if any.
    pub fn conflict(&self, parent: u32, tags: TagMatch) -> Option<&SubIf> {
        self.all().find(|s| {
            !s.bvi
                && s.parent == parent
                && match (s.tags, tags) {
                    (TagMatch::Dot1q { vid: a, .. }, TagMatch::Dot1q { vid: b, .. }) => a == b,
                    (
                        TagMatch::Qinq {
                            outer: a, inner: i, ..
                        },
                        TagMatch::Qinq {
                            outer: b, inner: j, ..
                        },
                    ) => (a, i) == (b, j),
                    (a, b) => a == b,
                }
        })
    }

    /// Add `sub` at its interface's index (the caller checked `conflict`).
    pub fn insert(&mut self, sub: SubIf) {
        let at = (sub.interface.index - self.first) as usize;
        if self.by_index.len() <= at {
            self.by_index.resize(at + 1, None);
        }
        self.by_index[at] = Some(sub);
        self.rebuild_parents();
    }

    /// Remove sub-interface `index`.
    pub fn remove(&mut self, index: u32) -> Option<SubIf> {
        let at = index.checked_sub(self.first)? as usize;
        let gone = self.by_index.get_mut(at)?.take();
        self.rebuild_parents();
        gone
    }

    fn rebuild_parents(&mut self) {
        let mut parents: Vec<Option<ParentTable>> = Vec::new();
        for s in self.by_index.iter().flatten().filter(|s| !s.bvi) {
            let p = s.parent as usize;
            if parents.len() <= p {
                parents.resize(p + 1, None);
            }
            let t = parents[p].get_or_insert_with(ParentTable::default);
            let index = s.interface.index;
            match s.tags {
                TagMatch::Dot1q { vid, exact } => {
                    t.dot1q[vid as usize] = index;
                    t.exact[vid as usize] = exact;
                }
                TagMatch::Qinq { outer, inner, .. } => t.qinq.push(((outer, inner), index)),
                TagMatch::Default => t.default = index,
                TagMatch::Untagged => t.untagged = index,
            }
        }
        self.parents = parents;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table(subs: &[TagMatch]) -> SubIfs {
        let mut t = SubIfs::new(2);
        for (k, &tags) in subs.iter().enumerate() {
            let index = 2 + k as u32;
            let itf = Arc::new(Interface::new(index, &format!("d0.{k}"), "sub", 1));
            t.insert(SubIf::new(itf, 0, tags));
        }
        t
    }

    #[test]
    fn classifies_by_tags() {
        let t = table(&[
            TagMatch::Dot1q {
                vid: 100,
                exact: false,
            },
            TagMatch::Dot1q {
                vid: 200,
                exact: true,
            },
            TagMatch::Qinq {
                outer: 100,
                inner: 7,
                outer_ad: true,
            },
        ]);
        let sub = |index, pop| Classified::Sub { index, pop };
        assert_eq!(t.classify(0, &[100]), sub(2, 1));
        assert_eq!(t.classify(0, &[100, 7]), sub(4, 2));
        assert_eq!(
            t.classify(0, &[100, 8]),
            sub(2, 1),
            "not exact: inner stays"
        );
        assert_eq!(t.classify(0, &[200]), sub(3, 1));
        assert_eq!(
            t.classify(0, &[200, 1]),
            Classified::NoMatch,
            "exact: one tag only"
        );
        assert_eq!(t.classify(0, &[300]), Classified::NoMatch);
        assert_eq!(t.classify(0, &[]), Classified::Parent);
        assert_eq!(t.classify(1, &[100]), Classified::Parent, "d1 has none");
    }

    #[test]
    fn default_and_untagged_catch_the_rest() {
        let t = table(&[
            TagMatch::Dot1q {
                vid: 100,
                exact: true,
            },
            TagMatch::Default,
            TagMatch::Untagged,
        ]);
        let sub = |index, pop| Classified::Sub { index, pop };
        assert_eq!(t.classify(0, &[300]), sub(3, 0));
        assert_eq!(t.classify(0, &[100, 5]), sub(3, 0));
        assert_eq!(t.classify(0, &[]), sub(4, 0));
    }

    #[test]
    fn tag_words() {
        assert_eq!(
            parse_tags(100, &[]),
            Ok(TagMatch::Dot1q {
                vid: 100,
                exact: true
            })
        );
        assert_eq!(
            parse_tags(1, &["dot1q", "7"]),
            Ok(TagMatch::Dot1q {
                vid: 7,
                exact: false
            })
        );
        assert_eq!(
            parse_tags(1, &["dot1ad", "7", "inner-dot1q", "9"]),
            Ok(TagMatch::Qinq {
                outer: 7,
                inner: 9,
                outer_ad: true
            })
        );
        assert_eq!(parse_tags(1, &["default"]), Ok(TagMatch::Default));
        for bad in [
            &["dot1q"][..],
            &["dot1q", "0"],
            &["dot1q", "4095"],
            &["dot1ad", "5"],
            &["vlan", "5"],
            &["dot1q", "5", "inner-dot1q"],
        ] {
            assert!(parse_tags(1, bad).is_err(), "{bad:?}");
        }
        assert!(parse_tags(5000, &[]).is_err());
    }

    #[test]
    fn pop_then_push_gives_the_frame_back() {
        let pool = crate::buffer::BufferPool::new(8, crate::buffer::HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let frame: Vec<u8> = (0..64u8).collect();
        let bi = bufs.packet_from_bytes(&frame).unwrap();
        // A fresh buffer starts at the headroom, as a received one does.
        assert!(bufs.meta(bi).offset > 0);
        assert!(pop_tags(&mut bufs, bi, 2));
        let mut out = Vec::new();
        bufs.copy_packet(bi, &mut out);
        assert_eq!(&out[..12], &frame[..12]);
        assert_eq!(&out[12..], &frame[20..]);
        assert!(push_tags(&mut bufs, bi, &frame[12..20]));
        bufs.copy_packet(bi, &mut out);
        assert_eq!(out, frame);
        let short = bufs.packet_from_bytes(&frame[..14]).unwrap();
        assert!(!pop_tags(&mut bufs, short, 1));
        bufs.free(bi);
        bufs.free(short);
    }

    #[test]
    fn output_tags_and_removal() {
        let mut t = table(&[
            TagMatch::Dot1q {
                vid: 0x123,
                exact: false,
            },
            TagMatch::Qinq {
                outer: 5,
                inner: 6,
                outer_ad: true,
            },
        ]);
        assert_eq!(t.get(2).unwrap().push_bytes(), &[0x81, 0, 0x01, 0x23]);
        assert_eq!(
            t.get(3).unwrap().push_bytes(),
            &[0x88, 0xa8, 0, 5, 0x81, 0, 0, 6]
        );
        assert!(t
            .conflict(
                0,
                TagMatch::Dot1q {
                    vid: 0x123,
                    exact: true
                }
            )
            .is_some());
        assert!(t.remove(2).is_some());
        assert_eq!(t.classify(0, &[0x123]), Classified::NoMatch);
        assert!(t.get(2).is_none() && t.get(1).is_none() && t.get(9).is_none());
    }

    proptest! {
        /// Against a model: the first match in the order the rules give (exact QinQ, the
        /// outer dot1q, default), for any set of sub-interfaces and any tags.
        #[test]
        fn matches_a_model(
            dot1q in proptest::collection::vec((0u16..8, any::<bool>()), 0..6),
            qinq in proptest::collection::vec((0u16..8, 0u16..8), 0..6),
            default in any::<bool>(),
            vlans in proptest::collection::vec(0u16..8, 0..3),
        ) {
            let mut subs: Vec<TagMatch> = Vec::new();
            for (vid, exact) in dot1q {
                let m = TagMatch::Dot1q { vid, exact };
                if !subs.iter().any(|s| matches!(s, TagMatch::Dot1q { vid: v, .. } if *v == vid)) {
                    subs.push(m);
                }
            }
            for (outer, inner) in qinq {
                let m = TagMatch::Qinq { outer, inner, outer_ad: false };
                if !subs.contains(&m) {
                    subs.push(m);
                }
            }
            if default {
                subs.push(TagMatch::Default);
            }
            let t = table(&subs);
            let none = subs.is_empty();
            let index_of = |m: &TagMatch| 2 + subs.iter().position(|s| s == m).unwrap() as u32;
            let want = match vlans.as_slice() {
                [] => Classified::Parent,
                [o, i, ..] => subs
                    .iter()
                    .find(|s| matches!(s, TagMatch::Qinq { outer, inner, .. } if (outer, inner) == (o, i)))
                    .map(|s| Classified::Sub { index: index_of(s), pop: 2 })
                    .or_else(|| subs.iter().find(|s| matches!(s, TagMatch::Dot1q { vid, exact: false } if vid == o))
                        .map(|s| Classified::Sub { index: index_of(s), pop: 1 }))
                    .or_else(|| default.then(|| Classified::Sub { index: index_of(&TagMatch::Default), pop: 0 }))
                    .unwrap_or(Classified::NoMatch),
                [v] => subs
                    .iter()
                    .find(|s| matches!(s, TagMatch::Dot1q { vid, .. } if vid == v))
                    .map(|s| Classified::Sub { index: index_of(s), pop: 1 })
                    .or_else(|| default.then(|| Classified::Sub { index: index_of(&TagMatch::Default), pop: 0 }))
                    .unwrap_or(Classified::NoMatch),
            };
            let want = if none { Classified::Parent } else { want };
            prop_assert_eq!(t.classify(0, &vlans), want);
        }
    }
}
