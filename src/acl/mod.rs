//! Stateless access control: rules of 5-tuple fields (prefixes, protocol, port or ICMP
//! type/code ranges, TCP flags) with permit / deny / permit+reflect, and a classifier that
//! finds a packet's first matching rule without scanning the list.
//!
//! - `rule`: `Rule`, `Action`, `FlowKey` (what a packet shows a rule), first-match by a scan
//!   (`first_match`: the reference the classifier is tested against).
//! - `key`: `flow_key4` / `flow_key6`, a packet's key from its IP header on (IPv6 extension
//!   headers walked, later fragments marked).
//! - `parse`: `Rule::parse`, the text of one rule (`permit src 10.0.0.0/8 proto tcp dport 80`).
//! - `classify`: `Classifier`, tuple-space search over merged tuples: rules grouped by a
//!   coarse shape of their prefixes, one hash probe per group.
//!
//! Not yet wired into the dataplane: the ACL nodes and the feature arcs they hang on come
//! next (issue 17).

pub mod classify;
pub mod key;
pub mod parse;
pub mod rule;

pub use classify::Classifier;
pub use rule::{first_match, Action, FlowKey, Rule};
