//! The [dataplane] section: the workers, their CPUs, the buffer pool.

use crate::buffer::HugePages;
use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError, MAX_WORKERS};
use serde::Deserialize;
use toml::Spanned;

/// [dataplane] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "dataplane",
    array: false,
    file: "dataplane/config/workers.rs",
    doc: "The worker threads, their CPUs and the buffer pool.",
    accepted: crate::config::reference::serde_fields::<DataplaneKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "workers",
            ty: "integer",
            default: "1",
            doc: "worker threads, 1 to 64; each polls the receive queues placed on it and runs the graph to completion",
            example: "1",
        },
        Key {
            name: "worker-cores",
            ty: "list of integers",
            default: "none (the scheduler places them)",
            doc: "the CPU of each worker, one per worker; each must exist",
            example: "[1]",
        },
        Key {
            name: "main-core",
            ty: "integer",
            default: "none",
            doc: "the CPU of the main (control) thread",
            example: "0",
        },
        Key {
            name: "buffers",
            ty: "integer",
            default: "32768",
            doc: "packet buffers in the pool (2304 bytes each: 256 of headroom, 2048 of data), at least 1024",
            example: "16384",
        },
        Key {
            name: "hugepages",
            ty: "string",
            default: "\"auto\"",
            doc: "auto: the pool in 2 MiB huge pages when reserved, else normal pages | require: fail without them | never",
            example: "\"auto\"",
        },
        Key {
            name: "min-frame",
            ty: "integer",
            default: "60",
            doc: "switched (cross-connected, bridged) frames shorter than this are padded to it, as virtual links may carry them short",
            example: "60",
        },
        Key {
            name: "worker-nice",
            ty: "integer",
            default: "-5",
            doc: "the workers' nice value, -20 to 19: their weight against the kernel threads that fill their rings on the same CPU",
            example: "-5",
        },
    ],
};

/// The [dataplane] section, checked.
#[derive(Debug)]
pub struct Dataplane {
    /// Worker threads.
    pub workers: usize,
    /// The CPU of each worker.
    pub worker_cores: Option<Vec<usize>>,
    /// The CPU of the main thread.
    pub main_core: Option<usize>,
    /// Packet buffers in the pool.
    pub buffers: u32,
    pub hugepages: HugePages,
    /// Switched (cross-connected, bridged) frames shorter than this are padded to it.
    pub min_frame: usize,
    /// The workers' nice value (-20..=19).
    pub worker_nice: i32,
}

/// The workers' default nice value. A worker shares its CPU with the kernel threads that
/// fill its rings (a veth's NAPI thread); on equal terms the scheduler halves the CPU between
/// them in overload, and the kernel thread spends its half on frames that the full rings then
/// drop. A higher weight gives the worker the CPU it needs to drain them (3:1 here), and costs
/// the kernel thread nothing at lower load: an idle worker yields the CPU at once.
pub const DEFAULT_WORKER_NICE: i32 = -5;

/// The [dataplane] section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct DataplaneKeys {
    #[serde(default = "one")]
    workers: Spanned<usize>,
    #[serde(default)]
    worker_cores: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    main_core: Option<Spanned<usize>>,
    #[serde(default = "default_buffers")]
    buffers: Spanned<u32>,
    #[serde(default = "default_hugepages")]
    hugepages: Spanned<String>,
    #[serde(default = "default_min_frame")]
    min_frame: Spanned<usize>,
    #[serde(default = "default_worker_nice")]
    worker_nice: Spanned<i32>,
}

impl Default for DataplaneKeys {
    fn default() -> Self {
        DataplaneKeys {
            workers: one(),
            worker_cores: None,
            main_core: None,
            buffers: default_buffers(),
            hugepages: default_hugepages(),
            min_frame: default_min_frame(),
            worker_nice: default_worker_nice(),
        }
    }
}

fn default_worker_nice() -> Spanned<i32> {
    Spanned::new(0..0, DEFAULT_WORKER_NICE)
}

fn one() -> Spanned<usize> {
    Spanned::new(0..0, 1)
}
fn default_buffers() -> Spanned<u32> {
    Spanned::new(0..0, 32768)
}
fn default_hugepages() -> Spanned<String> {
    Spanned::new(0..0, "auto".into())
}
fn default_min_frame() -> Spanned<usize> {
    Spanned::new(0..0, crate::wire::ethernet::MIN_FRAME_LEN)
}

impl DataplaneKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<Dataplane, ConfigError> {
        let workers = *self.workers.get_ref();
        if workers == 0 || workers > MAX_WORKERS {
            return Err(c.err(
                self.workers.span(),
                "workers",
                format!("must be between 1 and {MAX_WORKERS}, not {workers}"),
            ));
        }
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        if let Some(cores) = &self.worker_cores {
            if cores.get_ref().len() != workers {
                return Err(c.err(
                    cores.span(),
                    "worker-cores",
                    format!(
                        "lists {} cores for {workers} workers",
                        cores.get_ref().len()
                    ),
                ));
            }
            if let Some(bad) = cores.get_ref().iter().find(|&&k| k >= cpus) {
                return Err(c.err(
                    cores.span(),
                    "worker-cores",
                    format!("CPU {bad} does not exist (this machine has {cpus})"),
                ));
            }
        }
        if let Some(m) = &self.main_core {
            if *m.get_ref() >= cpus {
                return Err(c.err(
                    m.span(),
                    "main-core",
                    format!(
                        "CPU {} does not exist (this machine has {cpus})",
                        m.get_ref()
                    ),
                ));
            }
        }
        if !(-20..=19).contains(self.worker_nice.get_ref()) {
            return Err(c.err(
                self.worker_nice.span(),
                "worker-nice",
                format!(
                    "must be a nice value in -20..=19, not {}",
                    self.worker_nice.get_ref()
                ),
            ));
        }
        if *self.buffers.get_ref() < 1024 {
            return Err(c.err(
                self.buffers.span(),
                "buffers",
                "must be at least 1024".into(),
            ));
        }
        let hugepages = c.one_of(
            &self.hugepages,
            "hugepages",
            &[
                ("auto", HugePages::Auto),
                ("require", HugePages::Require),
                ("never", HugePages::Never),
            ],
        )?;
        Ok(Dataplane {
            workers,
            worker_cores: self.worker_cores.map(Spanned::into_inner),
            main_core: self.main_core.map(Spanned::into_inner),
            buffers: self.buffers.into_inner(),
            hugepages,
            min_frame: self.min_frame.into_inner(),
            worker_nice: self.worker_nice.into_inner(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error_tests;

    fn cpus() -> usize {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    }

    error_tests! {
        no_workers: "[dataplane]\nworkers = 0\n"
            => "t.toml:2: key 'workers': must be between 1 and 64, not 0";
        too_many_workers: "[dataplane]\n\nworkers = 65\n"
            => "t.toml:3: key 'workers': must be between 1 and 64, not 65";
        worker_cores_of_the_wrong_count: "[dataplane]\nworkers = 2\nworker-cores = [0]\n"
            => "t.toml:3: key 'worker-cores': lists 1 cores for 2 workers";
        worker_core_that_does_not_exist: "[dataplane]\nworker-cores = [4096]\n"
            => format!("t.toml:2: key 'worker-cores': CPU 4096 does not exist (this machine has {})", cpus());
        main_core_that_does_not_exist: "[dataplane]\nmain-core = 4096\n"
            => format!("t.toml:2: key 'main-core': CPU 4096 does not exist (this machine has {})", cpus());
        too_few_buffers: "[dataplane]\nbuffers = 1000\n"
            => "t.toml:2: key 'buffers': must be at least 1024";
        unknown_hugepages_choice: "[dataplane]\nhugepages = \"maybe\"\n"
            => "t.toml:2: key 'hugepages': 'maybe' is not one of auto, require, never";
        nice_out_of_range: "[dataplane]\nworker-nice = -21\n"
            => "t.toml:2: key 'worker-nice': must be a nice value in -20..=19, not -21";
    }

    #[test]
    fn defaults_and_choices() {
        let c = crate::config::Config::parse("", "t.toml")
            .unwrap()
            .dataplane;
        assert_eq!(
            (c.workers, c.buffers, c.hugepages),
            (1, 32768, HugePages::Auto)
        );
        assert_eq!(c.worker_nice, DEFAULT_WORKER_NICE);
        let src =
            "[dataplane]\nworkers = 2\nhugepages = \"never\"\nmin-frame = 64\nworker-nice = 0\n";
        let c = crate::config::Config::parse(src, "t.toml")
            .unwrap()
            .dataplane;
        assert_eq!(
            (c.workers, c.hugepages, c.min_frame, c.worker_nice),
            (2, HugePages::Never, 64, 0)
        );
    }
}
