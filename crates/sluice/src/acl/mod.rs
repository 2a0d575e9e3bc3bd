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
//! - `control`: `AclControl`, the lists of a running dataplane (config and CLI alike), which
//!   interface each checks, per-rule hit counters per worker, publication to the workers.
//!
//! - `session`: `Sessions`, the per-worker tables of flows a permit+reflect rule let through
//!   (both directions pass every input ACL while the session lives).
//!
//! The nodes that use them are `acl-ip4-in` / `acl-ip6-in` (`nodes::acl`).

pub mod classify;
pub mod commands;
pub mod config;
pub mod control;
pub mod key;
pub mod node;
pub mod parse;
pub mod rule;
pub mod section;
pub mod session;

pub use classify::Classifier;
pub use rule::{first_match, Action, FlowKey, Rule};
