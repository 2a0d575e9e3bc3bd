//! `sluice fib bench`: the FIB's memory, build time, batched lookup rates and route changes
//! per second (with a reader looking up meanwhile), and the previous FIB's (`--fib dir24`:
//! DIR-24-8 and the IPv6 stride trie, left-right) measured in the same process on the same
//! addresses, with the ratio and a check that both give the same answers.
//!
//! One phase a module, in the order they run: `build` (read the routes, build each FIB and
//! say what it costs), `lookups` (rates on the destination sets), `updates` (route changes
//! per second while another thread looks up).

use super::cli::Error;
use serde_json::{Map, Value};
use sluice::fib::parse::IpPrefix;
use sluice::fib::prefix::{Prefix4, Prefix6};
use std::io::Write;
use std::time::Duration;

/// Prints a line of the text report, unless JSON is asked for (the JSON collects the same
/// figures).
macro_rules! say {
    ($r:expr, $($t:tt)*) => {
        if !$r.json {
            // A closed pipe (`| head`) ends the printing, not the process.
            let _ = writeln!(std::io::stdout(), $($t)*);
        }
    };
}

mod build;
mod lookups;
mod updates;

/// Addresses per measured set (the `hot` set has `destinations::HOT`).
const SET_SIZE: usize = 1 << 20;
/// Turns each FIB takes at a figure, its time split among them.
const SLICES: u32 = 5;
/// Route changes the update figure makes (each a delete and an add), a commit every 64.
const CHANGES: usize = 20_000;

/// A batched lookup of one FIB.
type Look<'a, A> = &'a dyn Fn(&[A], &mut [u32]);

/// Which FIBs `fib bench` measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FibKind {
    /// The dataplane's: compressed tries, one copy.
    Poptrie,
    /// The previous one: DIR-24-8 and the IPv6 stride trie, two copies.
    Dir24,
    /// The dataplane's IPv6 trie built without blocks (every slot's root a node, as before
    /// 2026-11-25), beside the poptrie.
    NoBlocks,
    /// The dataplane's IPv6 trie built with the shortcut (a hash table to the nodes where a
    /// /48 ends; not the dataplane's), beside the poptrie.
    Shortcut,
}

/// The FIBs a run measures, from `--fib` (none named: the poptrie).
#[derive(Clone, Copy)]
struct Kinds {
    poptrie: bool,
    dir24: bool,
    no_blocks: bool,
    shortcut: bool,
}

impl Kinds {
    fn of(kinds: &[FibKind]) -> Kinds {
        let no_blocks = kinds.contains(&FibKind::NoBlocks);
        let shortcut = kinds.contains(&FibKind::Shortcut);
        Kinds {
            poptrie: kinds.contains(&FibKind::Poptrie) || no_blocks || shortcut || kinds.is_empty(),
            dir24: kinds.contains(&FibKind::Dir24),
            no_blocks,
            shortcut,
        }
    }
}

/// The report being made: the text, unless JSON is asked for, and the JSON document that
/// collects the same figures (the previous FIB's under `dir24`, added at the end).
struct Report {
    json: bool,
    doc: Map<String, Value>,
    dir24: Map<String, Value>,
}

/// The file's routes by family (leaves are indices into the file's routes), how many are
/// longer than a /24 and a /48, and the resident growth of their route tables alone.
struct Routes {
    v4: Vec<(Prefix4, u32)>,
    v6: Vec<(Prefix6, u32)>,
    long4: usize,
    long6: usize,
    tables_rss: Option<usize>,
}

impl Routes {
    fn of(routes: &[sluice::fib::parse::Route]) -> Routes {
        let mut v4: Vec<(Prefix4, u32)> = Vec::new();
        let mut v6: Vec<(Prefix6, u32)> = Vec::new();
        for (i, r) in routes.iter().enumerate() {
            match r.prefix {
                IpPrefix::V4(p) => v4.push((p, i as u32)),
                IpPrefix::V6(p) => v6.push((p, i as u32)),
            }
        }
        let long4 = v4.iter().filter(|p| p.0.len() > 24).count();
        let long6 = v6.iter().filter(|p| p.0.len() > 48).count();
        Routes {
            v4,
            v6,
            long4,
            long6,
            tables_rss: None,
        }
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

pub(super) fn bench_cmd(
    file: &str,
    seconds: f64,
    json: bool,
    kinds: &[FibKind],
) -> Result<(), Error> {
    if !(0.01..=3600.0).contains(&seconds) {
        return Err(Error::Usage("--seconds must be 0.01 to 3600".into()));
    }
    let kinds = Kinds::of(kinds);
    let mut r = Report {
        json,
        doc: Map::new(),
        dir24: Map::new(),
    };
    let routes = build::read(file, &r)?;
    let bad = |e: sluice::fib::FibError| Error::Failed(format!("{file}: {e}"));
    let mut fibs = build::build(&routes, kinds, &mut r).map_err(bad)?;
    let time = Duration::from_secs_f64(seconds);
    let hit4 = lookups::lookups(&routes, &fibs, seconds, &mut r);
    updates::updates(&routes, &mut fibs, kinds, time, &hit4, &mut r).map_err(bad)?;
    if fibs.old.is_some() {
        let dir24 = std::mem::take(&mut r.dir24);
        r.doc.insert("dir24".into(), dir24.into());
    }
    if json {
        let _ = writeln!(std::io::stdout(), "{}", Value::Object(r.doc));
    }
    Ok(())
}
