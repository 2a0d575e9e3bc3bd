//! The ACLs of a running dataplane: named rule lists, the interface each one checks, per-rule
//! hit counters, and what the workers see of it (published whole, one pointer swap).
//!
//! The configuration (`[[acl]]`, `[[acl-input]]`) and the CLI (`acl add`, `set acl-plugin
//! interface`) both go through `AclControl`, so a list is compiled and applied in one place.

use super::{Action, Classifier, Rule};
use crate::acl::node::{AclView, Filters, ACL_IP4_IN, ACL_IP4_OUT, ACL_IP6_IN, ACL_IP6_OUT};
use crate::graph::features::{IP4_OUTPUT, IP4_UNICAST, IP6_OUTPUT, IP6_UNICAST};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Rules a list may hold.
pub const MAX_RULES: usize = 65_536;
/// Lists that may exist at once.
pub const MAX_LISTS: usize = 4_096;

/// How often each rule of a list matched, one row per worker so that no two workers write
/// the same counter (a row ends with one slot for "no rule matched", then padding so that
/// the next row's counters are on other cache lines).
pub struct RuleHits {
    rows: Box<[Box<[AtomicU64]>]>,
    rules: usize,
}

impl RuleHits {
    fn new(threads: usize, rules: usize) -> RuleHits {
        let row = || (0..rules + 1 + 8).map(|_| AtomicU64::new(0)).collect();
        RuleHits {
            rows: (0..threads.max(1)).map(|_| row()).collect(),
            rules,
        }
    }

    /// One hit of rule `rule` (`None`: no rule matched) by worker `thread`.
    #[inline]
    pub fn count(&self, thread: usize, rule: Option<usize>) {
        let slot = rule.unwrap_or(self.rules).min(self.rules);
        // A thread past the rows (never made so by the dataplane) shares the last row; the
        // add is atomic, so nothing is lost either way.
        if let Some(row) = self.rows.get(thread).or(self.rows.last()) {
            if let Some(c) = row.get(slot) {
                c.fetch_add(1, Relaxed);
            }
        }
    }

    /// Per rule, then "no rule matched": the sum over the workers.
    pub fn totals(&self) -> Vec<u64> {
        (0..=self.rules)
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| r.get(i).map_or(0, |c| c.load(Relaxed)))
                    .sum()
            })
            .collect()
    }
}

/// A list as the workers use it.
pub struct AppliedList {
    pub name: String,
    pub classifier: Classifier,
    pub hits: RuleHits,
    /// It has a permit+reflect rule.
    pub reflects: bool,
}

struct List {
    /// Each rule as it was given.
    texts: Vec<String>,
    rules: Vec<Rule>,
    applied: Arc<AppliedList>,
}

/// One list as `show acl` reports it.
#[derive(Debug)]
pub struct ListReport {
    pub name: String,
    /// (rule text, hits).
    pub rules: Vec<(String, u64)>,
    /// Packets no rule matched (denied).
    pub no_match: u64,
    /// Interface indices it checks the input of.
    pub input: Vec<u32>,
    /// Interface indices it checks the output of.
    pub output: Vec<u32>,
    /// Classifier groups (probes per packet at most).
    pub groups: usize,
}

pub struct AclControl {
    lists: BTreeMap<String, List>,
    /// Interface index -> the list checking what it receives.
    input: BTreeMap<u32, String>,
    /// Interface index -> the list checking what it sends.
    output: BTreeMap<u32, String>,
    filters: Filters,
    threads: usize,
}

/// A list name: 1 to 64 letters, digits, '-', '_' or '.'.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' is not an ACL name (1 to 64 letters, digits, '-', '_' or '.')"
        ))
    }
}

impl AclControl {
    /// No lists; `threads` workers will count hits.
    pub fn new(filters: Filters, threads: usize) -> AclControl {
        AclControl {
            lists: BTreeMap::new(),
            input: BTreeMap::new(),
            output: BTreeMap::new(),
            filters,
            threads,
        }
    }

    pub fn filters(&self) -> &Filters {
        &self.filters
    }

    /// Appends `rules` (text, parsed) to list `name`, making it if new. A list in use is
    /// recompiled and republished; its hit counters start again from zero.
    pub fn add(&mut self, name: &str, rules: Vec<(String, Rule)>) -> Result<(), String> {
        self.put(name, rules, true)
    }

    /// Replaces the rules of list `name` with `rules`, making it if new (`ctl apply` of a
    /// changed [[acl]]): the interfaces using it switch to the new rules in one publish.
    pub fn replace(&mut self, name: &str, rules: Vec<(String, Rule)>) -> Result<(), String> {
        self.put(name, rules, false)
    }

    fn put(&mut self, name: &str, rules: Vec<(String, Rule)>, append: bool) -> Result<(), String> {
        check_name(name)?;
        if rules.is_empty() {
            return Err("no rule given".into());
        }
        if !self.lists.contains_key(name) && self.lists.len() >= MAX_LISTS {
            return Err(format!("{MAX_LISTS} ACLs exist already"));
        }
        let (mut texts, mut all) = self
            .lists
            .get(name)
            .filter(|_| append)
            .map(|l| (l.texts.clone(), l.rules.clone()))
            .unwrap_or_default();
        if all.len() + rules.len() > MAX_RULES {
            return Err(format!(
                "{name} would have {} rules; a list holds at most {MAX_RULES}",
                all.len() + rules.len()
            ));
        }
        for (t, r) in rules {
            texts.push(t);
            all.push(r);
        }
        let applied = Arc::new(AppliedList {
            name: name.to_string(),
            classifier: Classifier::new(&all),
            hits: RuleHits::new(self.threads, all.len()),
            reflects: all.iter().any(|r| r.action == Action::PermitReflect),
        });
        self.lists.insert(
            name.to_string(),
            List {
                texts,
                rules: all,
                applied,
            },
        );
        self.publish();
        Ok(())
    }

    /// Removes list `name`; refused while an interface uses it.
    pub fn delete(
        &mut self,
        name: &str,
        interface_name: impl Fn(u32) -> String,
    ) -> Result<(), String> {
        if !self.lists.contains_key(name) {
            return Err(self.unknown(name));
        }
        let users: Vec<String> = [("input", &self.input), ("output", &self.output)]
            .into_iter()
            .flat_map(|(dir, m)| {
                m.iter()
                    .filter(|(_, l)| l.as_str() == name)
                    .map(move |(&i, _)| (i, dir))
            })
            .map(|(i, dir)| format!("{} {dir}", interface_name(i)))
            .collect();
        if !users.is_empty() {
            return Err(format!(
                "ACL {name} is in use ({}): take it off first",
                users.join(", ")
            ));
        }
        self.lists.remove(name);
        Ok(())
    }

    /// Makes list `name` check what `interface` receives (`None`: no list).
    pub fn set_input(&mut self, interface: u32, name: Option<&str>) -> Result<(), String> {
        self.set(false, interface, name)
    }

    /// Makes list `name` check what `interface` sends (`None`: no list).
    pub fn set_output(&mut self, interface: u32, name: Option<&str>) -> Result<(), String> {
        self.set(true, interface, name)
    }

    fn set(&mut self, output: bool, interface: u32, name: Option<&str>) -> Result<(), String> {
        let map = if output {
            &mut self.output
        } else {
            &mut self.input
        };
        if let Some(n) = name {
            if !self.lists.contains_key(n) {
                return Err(self.unknown(n));
            }
            map.insert(interface, n.to_string());
        } else {
            map.remove(&interface);
        }
        // The list before the features that lead to it: a packet sent to the ACL node finds
        // its list (the node passes what it finds no list for).
        self.publish();
        let mut features = (**self.filters.features.load()).clone();
        let on = name.is_some();
        let arcs = if output {
            [(IP4_OUTPUT, ACL_IP4_OUT), (IP6_OUTPUT, ACL_IP6_OUT)]
        } else {
            [(IP4_UNICAST, ACL_IP4_IN), (IP6_UNICAST, ACL_IP6_IN)]
        };
        for (arc, feature) in arcs {
            features.set(arc, interface, feature, on)?;
        }
        self.filters.features.store(Arc::new(features));
        if !on {
            self.publish();
        }
        Ok(())
    }

    /// The list checking what `interface` receives.
    pub fn input_of(&self, interface: u32) -> Option<&str> {
        self.input.get(&interface).map(String::as_str)
    }

    /// The list checking what `interface` sends.
    pub fn output_of(&self, interface: u32) -> Option<&str> {
        self.output.get(&interface).map(String::as_str)
    }

    /// Every list (or the one named), with its rules, hits and interfaces.
    pub fn report(&self, name: Option<&str>) -> Result<Vec<ListReport>, String> {
        if let Some(n) = name {
            if !self.lists.contains_key(n) {
                return Err(self.unknown(n));
            }
        }
        Ok(self
            .lists
            .iter()
            .filter(|(n, _)| name.is_none_or(|w| w == n.as_str()))
            .map(|(n, l)| {
                let hits = l.applied.hits.totals();
                ListReport {
                    name: n.clone(),
                    rules: l.texts.iter().cloned().zip(hits.iter().copied()).collect(),
                    no_match: hits.last().copied().unwrap_or(0),
                    input: self
                        .input
                        .iter()
                        .filter(|(_, u)| *u == n)
                        .map(|(&i, _)| i)
                        .collect(),
                    output: self
                        .output
                        .iter()
                        .filter(|(_, u)| *u == n)
                        .map(|(&i, _)| i)
                        .collect(),
                    groups: l.applied.classifier.groups(),
                }
            })
            .collect())
    }

    fn unknown(&self, name: &str) -> String {
        if self.lists.is_empty() {
            format!("no ACL named '{name}' (none defined)")
        } else {
            let names: Vec<&str> = self.lists.keys().map(String::as_str).collect();
            format!("no ACL named '{name}' (defined: {})", names.join(", "))
        }
    }

    /// Hands the workers a view of the lists as they are now.
    fn publish(&self) {
        let mut view = AclView::default();
        for (map, lists) in [
            (&self.input, &mut view.input),
            (&self.output, &mut view.output),
        ] {
            for (&i, name) in map {
                let Some(l) = self.lists.get(name) else {
                    continue;
                };
                let i = i as usize;
                if lists.len() <= i {
                    lists.resize(i + 1, None);
                }
                lists[i] = Some(l.applied.clone());
            }
        }
        view.stateful = view
            .input
            .iter()
            .chain(&view.output)
            .flatten()
            .any(|l| l.reflects);
        if view.stateful {
            // The tables before the view that sends packets to them.
            self.filters.sessions.enable();
        }
        self.filters.acls.store(Arc::new(view));
    }
}

/// Rules written one after another, separated by commas, each parsed.
pub fn parse_rules(text: &str) -> Result<Vec<(String, Rule)>, String> {
    text.split(',')
        .map(str::trim)
        .enumerate()
        .map(|(i, t)| {
            if t.is_empty() {
                return Err(format!("rule {}: empty", i + 1));
            }
            Rule::parse(t)
                .map(|r| (t.to_string(), r))
                .map_err(|e| format!("rule {} ('{t}'): {e}", i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control() -> AclControl {
        AclControl::new(Filters::none(), 2)
    }

    #[test]
    fn lists_are_made_appended_applied_and_deleted() {
        let mut c = control();
        assert!(c
            .set_input(1, Some("edge"))
            .unwrap_err()
            .contains("no ACL named 'edge'"));
        c.add("edge", parse_rules("deny proto icmp").unwrap())
            .unwrap();
        c.add("edge", parse_rules("permit, permit ipv6").unwrap())
            .unwrap();
        c.set_input(1, Some("edge")).unwrap();
        let view = c.filters().acls.load();
        let l = view.input[1].as_ref().unwrap();
        assert_eq!(l.classifier.rules().len(), 3);
        let f = c.filters().features.load();
        assert_eq!(f.enabled(IP4_UNICAST, 1), vec![ACL_IP4_IN]);
        assert_eq!(f.enabled(IP6_UNICAST, 1), vec![ACL_IP6_IN]);
        let e = c.delete("edge", |i| format!("if{i}")).unwrap_err();
        assert!(e.contains("in use (if1 input)"), "{e}");
        // The same list on another interface's output.
        c.set_output(2, Some("edge")).unwrap();
        assert_eq!(
            c.filters().features.load().enabled(IP4_OUTPUT, 2),
            vec![ACL_IP4_OUT]
        );
        assert_eq!(c.output_of(2), Some("edge"));
        assert_eq!(c.report(Some("edge")).unwrap()[0].output, vec![2]);
        let e = c.delete("edge", |i| format!("if{i}")).unwrap_err();
        assert!(e.contains("in use (if1 input, if2 output)"), "{e}");
        c.set_output(2, None).unwrap();
        assert!(c.filters().acls.load().output.iter().all(Option::is_none));
        c.set_input(1, None).unwrap();
        assert!(c.filters().acls.load().input.iter().all(Option::is_none));
        assert!(c
            .filters()
            .features
            .load()
            .enabled(IP4_UNICAST, 1)
            .is_empty());
        c.delete("edge", |i| format!("if{i}")).unwrap();
        assert!(c.report(None).unwrap().is_empty());
        assert!(c.delete("edge", |_| String::new()).is_err());
    }

    #[test]
    fn hits_are_counted_per_rule_and_summed_over_workers() {
        let mut c = control();
        c.add("a", parse_rules("deny proto icmp, permit").unwrap())
            .unwrap();
        c.set_input(0, Some("a")).unwrap();
        let view = c.filters().acls.load();
        let l = view.input[0].as_ref().unwrap();
        l.hits.count(0, Some(1));
        l.hits.count(1, Some(1));
        l.hits.count(1, Some(0));
        l.hits.count(7, None); // a thread past the rows still counts
        let r = &c.report(Some("a")).unwrap()[0];
        assert_eq!(
            r.rules,
            vec![
                ("deny proto icmp".to_string(), 1),
                ("permit".to_string(), 2)
            ]
        );
        assert_eq!(r.no_match, 1);
        assert_eq!(r.input, vec![0]);
        // Appending recompiles: the counters start again.
        c.add("a", parse_rules("permit ipv6").unwrap()).unwrap();
        let r = &c.report(Some("a")).unwrap()[0];
        assert!(r.rules.iter().all(|(_, h)| *h == 0));
        assert_eq!(r.rules.len(), 3);
    }

    #[test]
    fn replace_swaps_the_rules_of_a_list_in_use() {
        let mut c = control();
        c.replace("a", parse_rules("deny proto icmp, permit").unwrap())
            .unwrap();
        c.set_input(0, Some("a")).unwrap();
        c.replace("a", parse_rules("permit ipv6").unwrap()).unwrap();
        let r = &c.report(Some("a")).unwrap()[0];
        assert_eq!(r.rules, vec![("permit ipv6".to_string(), 0)]);
        assert_eq!(r.input, vec![0]);
        let view = c.filters().acls.load();
        assert_eq!(view.input[0].as_ref().unwrap().classifier.rules().len(), 1);
        assert!(c.replace("a", Vec::new()).is_err());
    }

    #[test]
    fn bad_names_and_rules_are_refused_with_the_reason() {
        let mut c = control();
        for bad in ["", "a b", "x/y", &"n".repeat(65)] {
            assert!(c.add(bad, parse_rules("permit").unwrap()).is_err(), "{bad}");
        }
        let e = parse_rules("permit, deny src 300.0.0.0/8").unwrap_err();
        assert!(e.starts_with("rule 2 ('deny src 300.0.0.0/8'): "), "{e}");
        assert_eq!(parse_rules("permit,").unwrap_err(), "rule 2: empty");
        assert!(c.report(Some("nope")).unwrap_err().contains("none defined"));
    }
}
