//! [[rx-placement]]: which worker polls a receive queue from the start.
//!
//! ```toml
//! [[rx-placement]]
//! interface = "d0"
//! queue = 1
//! worker = 0
//! ```
//!
//! A queue no [[rx-placement]] names goes to worker queue mod workers. At run time
//! `set interface rx-placement` moves queues (docs/architecture.md).

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use toml::Spanned;

/// [[rx-placement]] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "rx-placement",
    array: true,
    file: "dataplane/config/placement.rs",
    doc: "The worker that polls one receive queue of an interface from the start (a queue no \
          entry names goes to worker queue mod workers). Any driver's queues; at run time \
          `set interface rx-placement` moves af_packet, pcap and null queues.",
    accepted: crate::config::reference::serde_fields::<PlacementKeys>,
    aliases: &[],
    keys: &[
        Key::required(
            "interface",
            "string",
            "an [[interface]] (sub-interfaces have no queues of their own)",
            "\"d0\"",
        ),
        Key::required(
            "queue",
            "integer",
            "its receive queue, from 0; named once (a queue the driver does not open is an error \
             at start)",
            "0",
        ),
        Key::required(
            "worker",
            "integer",
            "the worker, from 0 to workers - 1",
            "0",
        ),
    ],
};

/// A checked [[rx-placement]].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxPlacementConfig {
    pub interface: String,
    pub queue: usize,
    pub worker: usize,
}

/// An [[rx-placement]] as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlacementKeys {
    interface: Spanned<String>,
    queue: Spanned<u32>,
    worker: Spanned<u32>,
}

/// Each entry names an [[interface]], a worker that exists, and a queue no other entry names.
pub(crate) fn check(
    keys: Vec<PlacementKeys>,
    hardware: &[&str],
    workers: usize,
    c: &Checker<'_>,
) -> Result<Vec<RxPlacementConfig>, ConfigError> {
    let mut out: Vec<RxPlacementConfig> = Vec::new();
    for k in keys {
        c.known_interface(&k.interface, "interface", hardware)?;
        let name = k.interface.get_ref();
        let worker = *k.worker.get_ref() as usize;
        if worker >= workers {
            return Err(c.err(
                k.worker.span(),
                "worker",
                format!(
                    "worker {worker}: [dataplane] has {workers} worker(s), 0 to {}",
                    workers - 1
                ),
            ));
        }
        let queue = *k.queue.get_ref() as usize;
        if out.iter().any(|p| p.interface == *name && p.queue == queue) {
            return Err(c.err(
                k.queue.span(),
                "queue",
                format!("queue {queue} of '{name}' is placed twice"),
            ));
        }
        out.push(RxPlacementConfig {
            interface: name.clone(),
            queue,
            worker,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::{interface_with, Config};

    fn placed(workers: u32, lines: &str) -> String {
        format!(
            "[dataplane]\nworkers = {workers}\n{}[[rx-placement]]\n{lines}",
            interface_with("null", "")
        )
    }

    error_tests! {
        unknown_interface: placed(2, "interface = \"zz\"\nqueue = 0\nworker = 1\n")
            => "t.toml:7: key 'interface': no interface named 'zz' (defined: a)";
        worker_out_of_range: placed(2, "interface = \"a\"\nqueue = 0\nworker = 2\n")
            => "t.toml:9: key 'worker': worker 2: [dataplane] has 2 worker(s), 0 to 1";
        placed_twice: format!("{}[[rx-placement]]\ninterface = \"a\"\nqueue = 0\nworker = 0\n", placed(2, "interface = \"a\"\nqueue = 0\nworker = 1\n"))
            => "t.toml:12: key 'queue': queue 0 of 'a' is placed twice";
        unknown_key: placed(2, "interface = \"a\"\nqueue = 0\nworker = 1\ncore = 3\n")
            => "t.toml:10: unknown field `core`, expected one of `interface`, `queue`, `worker`";
    }

    #[test]
    fn placements_are_kept_in_order() {
        let src = format!(
            "{}[[rx-placement]]\ninterface = \"a\"\nqueue = 0\nworker = 0\n",
            placed(2, "interface = \"a\"\nqueue = 1\nworker = 0\n")
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        let got: Vec<_> = c
            .rx_placements
            .iter()
            .map(|p| (p.interface.as_str(), p.queue, p.worker))
            .collect();
        assert_eq!(got, [("a", 1, 0), ("a", 0, 0)]);
    }
}
