//! [[handoff]]: spread an interface's packets over workers by flow hash from the start.
//!
//! ```toml
//! [[handoff]]
//! interface = "d0"
//! workers = [0, 1]
//! key = "symmetric"
//! ```
//!
//! At run time `set interface handoff` changes or removes it (docs/architecture.md).

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use crate::handoff::{HashKey, Spread};
use serde::Deserialize;
use toml::Spanned;

/// [[handoff]] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "handoff",
    array: true,
    file: "handoff/config.rs",
    doc: "Hand the packets an interface receives to workers by the RSS (Toeplitz) hash of \
          their flow, through lock-free rings (VPP's worker handoff): for a device with fewer \
          queues than workers, and to keep each flow on one worker. A full ring drops and \
          counts (`show errors`: worker-handoff congestion drop).",
    accepted: crate::config::reference::serde_fields::<HandoffKeys>,
    aliases: &[],
    keys: &[
        Key::required(
            "interface",
            "string",
            "an [[interface]] (its sub-interfaces' packets follow it); named once",
            "\"d0\"",
        ),
        Key::required(
            "workers",
            "array of integers",
            "the workers to spread over, each from 0 to workers - 1, each once",
            "[0, 1]",
        ),
        Key {
            name: "key",
            ty: "string",
            default: "\"symmetric\"",
            doc: "symmetric: both directions of a flow hash alike (sessions need this); \
                  standard: the Toeplitz key NICs use",
            example: "\"standard\"",
        },
    ],
};

/// A checked [[handoff]].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffConfig {
    pub interface: String,
    pub workers: Vec<usize>,
    pub key: HashKey,
}

/// A [[handoff]] as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HandoffKeys {
    interface: Spanned<String>,
    workers: Spanned<Vec<u32>>,
    #[serde(default)]
    key: Option<Spanned<String>>,
}

pub(crate) fn check(
    keys: Vec<HandoffKeys>,
    hardware: &[&str],
    workers: usize,
    c: &Checker<'_>,
) -> Result<Vec<HandoffConfig>, ConfigError> {
    let mut out: Vec<HandoffConfig> = Vec::new();
    for k in keys {
        c.known_interface(&k.interface, "interface", hardware)?;
        let name = k.interface.get_ref();
        if out.iter().any(|h| h.interface == *name) {
            return Err(c.err(
                k.interface.span(),
                "interface",
                format!("'{name}' has a [[handoff]] already"),
            ));
        }
        let key = match &k.key {
            Some(s) => HashKey::parse(s.get_ref()).map_err(|e| c.err(s.span(), "key", e))?,
            None => HashKey::Symmetric,
        };
        let list: Vec<usize> = k.workers.get_ref().iter().map(|&w| w as usize).collect();
        Spread::new(&list, key, workers).map_err(|e| c.err(k.workers.span(), "workers", e))?;
        out.push(HandoffConfig {
            interface: name.clone(),
            workers: list,
            key,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::{interface_with, Config};
    use crate::handoff::HashKey;

    fn handoff(workers: u32, lines: &str) -> String {
        format!(
            "[dataplane]\nworkers = {workers}\n{}[[handoff]]\n{lines}",
            interface_with("null", "")
        )
    }

    error_tests! {
        unknown_interface: handoff(2, "interface = \"zz\"\nworkers = [0, 1]\n")
            => "t.toml:7: key 'interface': no interface named 'zz' (defined: a)";
        worker_out_of_range: handoff(2, "interface = \"a\"\nworkers = [0, 2]\n")
            => "t.toml:8: key 'workers': worker 2: there are 2 worker(s), 0 to 1";
        no_workers: handoff(2, "interface = \"a\"\nworkers = []\n")
            => "t.toml:8: key 'workers': a handoff needs at least one worker";
        bad_key: handoff(2, "interface = \"a\"\nworkers = [0]\nkey = \"crc\"\n")
            => "t.toml:9: key 'key': key 'crc': symmetric (both directions of a flow on one worker) or standard";
        twice: format!("{}[[handoff]]\ninterface = \"a\"\nworkers = [1]\n", handoff(2, "interface = \"a\"\nworkers = [0]\n"))
            => "t.toml:10: key 'interface': 'a' has a [[handoff]] already";
    }

    #[test]
    fn a_handoff_keeps_its_workers_and_key() {
        let c = Config::parse(
            &handoff(
                2,
                "interface = \"a\"\nworkers = [1, 0]\nkey = \"standard\"\n",
            ),
            "t.toml",
        )
        .unwrap();
        assert_eq!(c.handoffs.len(), 1);
        assert_eq!(c.handoffs[0].workers, [1, 0]);
        assert_eq!(c.handoffs[0].key, HashKey::Standard);
    }
}
