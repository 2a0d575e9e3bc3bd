//! `[dpdk]`: DPDK's environment and the queues of every dpdk interface.
//!
//! ```toml
//! [dpdk]
//! eal-args = ["--log-level=lib.eal:debug"]
//! rx-descriptors = 1024
//! tx-descriptors = 1024
//! patch = true
//! ```

use super::DEFAULT_DESCRIPTORS;
use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use toml::Spanned;

pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "dpdk",
    array: false,
    file: "drivers/dpdk/config.rs",
    doc: "DPDK, for the interfaces with driver = \"dpdk\" (binaries built with DPDK; see \
          docs/dpdk.md). sluice starts DPDK's EAL itself: one lcore, no EAL worker threads \
          (sluice's workers move the packets), --in-memory, and --no-huge when the system \
          has no free huge pages; each interface's devargs is passed as --vdev or -a.",
    accepted: crate::config::reference::serde_fields::<DpdkKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "eal-args",
            ty: "list of strings",
            default: "[] (none)",
            doc: "more EAL arguments, after sluice's own (log levels, -d for a PMD outside \
                  the default path); arguments that place lcores or threads are refused",
            example: "[\"--log-level=pmd.net.null:debug\"]",
        },
        Key {
            name: "rx-descriptors",
            ty: "integer",
            default: "1024",
            doc: "descriptors of each receive queue, 64 to 16384 (the port may round them)",
            example: "1024",
        },
        Key {
            name: "tx-descriptors",
            ty: "integer",
            default: "1024",
            doc: "descriptors of each transmit queue, 64 to 16384 (the port may round them)",
            example: "1024",
        },
        Key {
            name: "patch",
            ty: "boolean",
            default: "true",
            doc: "a frame that a cross-connect between two dpdk interfaces sends out as it \
                  came in goes from one port to the other inside the input node, as the mbuf \
                  the port gave, with the interfaces' counters and node l2-patch's clocks \
                  (docs/dpdk.md says when it applies); false sends every frame through the \
                  graph",
            example: "false",
        },
    ],
};

/// [dpdk], checked.
#[derive(Clone, Debug)]
pub struct DpdkSection {
    pub eal_args: Vec<String>,
    pub rx_desc: u16,
    pub tx_desc: u16,
    /// The cross-connect patch between dpdk ports (`patch`).
    pub patch: bool,
}

impl Default for DpdkSection {
    fn default() -> Self {
        DpdkSection {
            eal_args: Vec::new(),
            rx_desc: DEFAULT_DESCRIPTORS,
            tx_desc: DEFAULT_DESCRIPTORS,
            patch: true,
        }
    }
}

/// [dpdk] as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct DpdkKeys {
    #[serde(default)]
    eal_args: Vec<Spanned<String>>,
    rx_descriptors: Option<Spanned<u32>>,
    tx_descriptors: Option<Spanned<u32>>,
    patch: Option<bool>,
}

/// EAL options that would give EAL threads or CPUs of its own: sluice places its threads.
const REFUSED: [&str; 6] = [
    "-l",
    "--lcores",
    "-c",
    "--main-lcore",
    "-s",
    "--service-corelist",
];

impl DpdkKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<DpdkSection, ConfigError> {
        let mut out = DpdkSection::default();
        for a in &self.eal_args {
            let word = a.get_ref().split('=').next().unwrap_or("");
            if REFUSED.contains(&word) {
                return Err(c.err(
                    a.span(),
                    "eal-args",
                    format!(
                        "'{}': sluice places its own threads ([dataplane] workers, cores); \
                         EAL gets no lcores of its own",
                        a.get_ref()
                    ),
                ));
            }
            out.eal_args.push(a.get_ref().clone());
        }
        let desc = |v: &Option<Spanned<u32>>, key: &str| -> Result<u16, ConfigError> {
            match v {
                None => Ok(DEFAULT_DESCRIPTORS),
                Some(d) if (64..=16384).contains(d.get_ref()) => Ok(*d.get_ref() as u16),
                Some(d) => Err(c.err(
                    d.span(),
                    key,
                    format!("{} is not between 64 and 16384", d.get_ref()),
                )),
            }
        };
        out.rx_desc = desc(&self.rx_descriptors, "rx-descriptors")?;
        out.tx_desc = desc(&self.tx_descriptors, "tx-descriptors")?;
        out.patch = self.patch.unwrap_or(true);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;

    error_tests! {
        eal_lcores_refused: "[dpdk]\neal-args = [\"--lcores=0-3\"]\n"
            => "t.toml:2: key 'eal-args': '--lcores=0-3': sluice places its own threads ([dataplane] workers, cores); EAL gets no lcores of its own";
        descriptors_out_of_range: "[dpdk]\nrx-descriptors = 10\n"
            => "t.toml:2: key 'rx-descriptors': 10 is not between 64 and 16384";
    }
}
