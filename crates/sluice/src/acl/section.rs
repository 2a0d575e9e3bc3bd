//! The ACL's config sections: [[acl]], [[acl-input]] and [[acl-output]] (their keys and
//! checks in `config/acl.rs`): `start` applies them when the dataplane starts, and
//! `sluice ctl save` writes them back from the running lists.

use crate::acl::control::AclControl;
use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::config::Config;
use crate::control::save::{s, State};
use crate::router::Router;
use toml::Value;

/// [[acl]].
pub static ACL: Saved = Saved(&crate::acl::config::ACL, acls);

/// [[acl-input]] (`output` false) or [[acl-output]].
pub static ACL_INPUT: Saved = Saved(&crate::acl::config::ACL_INPUT, |st| acl_bindings(st, false));

/// [[acl-output]].
pub static ACL_OUTPUT: Saved = Saved(&crate::acl::config::ACL_OUTPUT, |st| acl_bindings(st, true));

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

/// The start step of the ACLs: the configuration's lists, compiled once each, and the
/// interfaces they check.
pub fn start(cfg: &Config, router: &Router, threads: usize) -> Result<AclControl, String> {
    let sessions =
        crate::acl::session::Sessions::new(threads, cfg.sessions.per_worker, cfg.sessions.timeouts)
            .with_per_source(cfg.sessions.per_source);
    let mut filters = crate::acl::node::Filters::new(sessions);
    filters.tables = router.tables();
    filters.nat = crate::nat44::shared::Nat44Shared::new(threads);
    let mut acls = AclControl::new(filters, threads);
    for a in &cfg.acls {
        let rules = a
            .texts
            .iter()
            .cloned()
            .zip(a.rules.iter().cloned())
            .collect();
        acls.add(&a.name, rules)
            .map_err(|e| format!("acl {}: {e}", a.name))?;
    }
    for input in &cfg.acl_inputs {
        let index = router.interface_index(&input.interface)?;
        acls.set_input(index, Some(&input.acl))?;
    }
    for output in &cfg.acl_outputs {
        let index = router.interface_index(&output.interface)?;
        acls.set_output(index, Some(&output.acl))?;
    }
    Ok(acls)
}
