//! The ACL's config sections: [[acl]], [[acl-input]] and [[acl-output]] (their keys and
//! checks in `config/acl.rs`), written back from the running lists by `sluice ctl save`.

use crate::config::emit::Entry;
use crate::config::reference::SectionDoc;
use crate::config::section::Section;
use crate::control::save::{s, State};
use toml::Value;

/// [[acl]].
pub struct AclSection;

impl Section for AclSection {
    fn doc(&self) -> &'static SectionDoc {
        &crate::config::acl::ACL
    }

    fn save(&self, st: &State) -> Result<Vec<Entry>, String> {
        acls(st)
    }
}

/// [[acl-input]] (`output` false) or [[acl-output]].
pub struct AclBindingSection {
    pub output: bool,
}

impl Section for AclBindingSection {
    fn doc(&self) -> &'static SectionDoc {
        if self.output {
            &crate::config::acl::ACL_OUTPUT
        } else {
            &crate::config::acl::ACL_INPUT
        }
    }

    fn save(&self, st: &State) -> Result<Vec<Entry>, String> {
        acl_bindings(st, self.output)
    }
}

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
