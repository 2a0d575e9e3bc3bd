//! The build phase: the route file read, the route tables alone measured, then each FIB
//! built, its build time and memory said.

use super::{mib, Kinds, Report, Routes};
use crate::fib::cli::Error;
use crate::fib::legacy::StrideFibWriter;
use crate::fib::measure;
use serde_json::json;
use sluice::fib::parse::read_route_file;
use sluice::fib::poptrie_writer::{PoptrieWriter, BLOCK_MIN, NO_BLOCKS, NO_SHORTCUT, SHORT_LEVELS};
use sluice::fib::routes::RouteTable;
use sluice::fib::{FibError, FibWriter};
use std::io::Write;
use std::time::Instant;

/// The FIBs measured: the dataplane's (`pop`), its IPv6 trie without blocks (`flat6`) and
/// with the shortcut (`short6`) beside it, and the previous FIB (`old`); each only if asked.
pub(super) struct Fibs {
    pub(super) pop: Option<FibWriter>,
    pub(super) flat6: Option<PoptrieWriter<u128>>,
    pub(super) short6: Option<PoptrieWriter<u128>>,
    pub(super) old: Option<StrideFibWriter>,
}

/// Resident memory (and huge-page) growth while `build` runs.
fn measured<T>(build: impl FnOnce() -> T) -> (T, f64, Option<usize>, Option<usize>) {
    let (rss, huge) = (measure::resident_bytes(), measure::huge_page_bytes());
    let t = Instant::now();
    let built = build();
    let secs = t.elapsed().as_secs_f64();
    let grew = |before: Option<usize>, after: Option<usize>| {
        before.zip(after).map(|(b, a)| a.saturating_sub(b))
    };
    (
        built,
        secs,
        grew(rss, measure::resident_bytes()),
        grew(huge, measure::huge_page_bytes()),
    )
}

/// Reads `file`'s routes and says how many there are, then what their route tables alone
/// cost.
pub(super) fn read(file: &str, r: &Report) -> Result<Routes, Error> {
    let t = Instant::now();
    let routes = read_route_file(file.as_ref()).map_err(|e| Error::Failed(e.to_string()))?;
    let read_s = t.elapsed().as_secs_f64();
    let mut routes = Routes::of(&routes);
    let (v4, v6) = (&routes.v4, &routes.v6);
    let (long4, long6) = (routes.long4, routes.long6);
    say!(
        r,
        "routes: {} IPv4 ({long4} longer than /24), {} IPv6 ({long6} longer than /48) (read in \
         {read_s:.3} s)",
        v4.len(),
        v6.len(),
    );
    // The route tables alone, measured: what the control-plane truth really costs.
    let (tables, _, tables_rss, _) = measured(|| {
        // As `FibWriter::with_routes` builds them.
        (
            RouteTable::from_routes(v4.iter().copied()),
            RouteTable::from_routes(v6.iter().copied()),
        )
    });
    let estimate = tables.0.approx_memory_bytes() + tables.1.approx_memory_bytes();
    drop(tables);
    say!(
        r,
        "route tables (prefix -> next hop, ordered): {} measured (resident growth while built \
         alone), {:.1} MiB estimated",
        tables_rss.map_or("unknown".into(), |b| format!("{:.1} MiB", mib(b))),
        mib(estimate)
    );
    routes.tables_rss = tables_rss;
    Ok(routes)
}

/// Builds the FIBs `kinds` asks for, in turn, saying what each costs.
pub(super) fn build(routes: &Routes, kinds: Kinds, r: &mut Report) -> Result<Fibs, FibError> {
    let pop = poptrie(routes, kinds.poptrie, r)?;
    // The IPv6 trie as it was before blocks (every slot's root a node), measured beside it.
    let flat6 = pop
        .as_ref()
        .filter(|_| kinds.no_blocks)
        .map(|w| PoptrieWriter::build_shortcut(w.routes6(), NO_BLOCKS, NO_SHORTCUT));
    // The IPv6 trie with the shortcut, measured beside it.
    let short6 = pop
        .as_ref()
        .filter(|_| kinds.shortcut)
        .map(|w| PoptrieWriter::build_shortcut(w.routes6(), BLOCK_MIN, SHORT_LEVELS));
    if let Some(f) = &short6 {
        let m = f.memory();
        say!(
            r,
            "  IPv6 with the shortcut (to the nodes of bits 42-48): {:.1} MiB ({} nodes, {} \
             leaves; {:.1} MiB written)",
            mib(m.bytes),
            m.nodes,
            m.leaves,
            mib(m.bytes_used)
        );
        r.doc["v6"]["memory_bytes_with_shortcut"] = m.bytes.into();
    }
    if let Some(f) = &flat6 {
        let m = f.memory();
        say!(
            r,
            "  IPv6 without blocks (each slot's root a node, as before 2026-11-25): {:.1} MiB \
             ({} nodes, {} leaves; {:.1} MiB written)",
            mib(m.bytes),
            m.nodes,
            m.leaves,
            mib(m.bytes_used)
        );
        r.doc["v6"]["memory_bytes_without_blocks"] = m.bytes.into();
    }
    let old = dir24(routes, kinds.dir24, r)?;
    Ok(Fibs {
        pop,
        flat6,
        short6,
        old,
    })
}

/// The dataplane's FIB, if `with`: its build time, memory and nodes per family.
fn poptrie(routes: &Routes, with: bool, r: &mut Report) -> Result<Option<FibWriter>, FibError> {
    let (v4, v6) = (&routes.v4, &routes.v6);
    let empty = FibWriter::new().memory();
    r.doc.insert(
        "empty_fib_bytes".into(),
        (empty.v4.bytes + empty.v6.bytes).into(),
    );
    let (pop, pop_s, pop_rss, pop_huge) =
        measured(|| with.then(|| FibWriter::with_routes(v4.iter().copied(), v6.iter().copied())));
    let pop = pop.transpose()?;
    let Some(w) = &pop else {
        return Ok(pop);
    };
    let m = w.memory();
    // Each family's build alone, for the per-family figure.
    let t = Instant::now();
    drop(PoptrieWriter::build(w.routes4()));
    let build4 = t.elapsed().as_secs_f64();
    let t = Instant::now();
    drop(PoptrieWriter::build(w.routes6()));
    let build6 = t.elapsed().as_secs_f64();
    say!(
        r,
        "poptrie (the dataplane's FIB), one copy, built in {pop_s:.3} s: IPv4 {:.1} MiB \
         ({} nodes, {} leaves; {:.1} MiB of it written, the rest room for updates), IPv6 \
         {:.1} MiB ({} nodes, {} leaves; {:.1} MiB written); route tables ~{:.1} MiB; an \
         empty FIB {:.1} KiB",
        mib(m.v4.bytes),
        m.v4.nodes,
        m.v4.leaves,
        mib(m.v4.bytes_used),
        mib(m.v6.bytes),
        m.v6.nodes,
        m.v6.leaves,
        mib(m.v6.bytes_used),
        mib(m.routes),
        (empty.v4.bytes + empty.v6.bytes) as f64 / 1024.0
    );
    if let Some(grew) = pop_rss {
        say!(
            r,
            "  resident memory grew by {:.1} MiB while it was built (VmRSS, route tables \
             included), {} in transparent huge pages",
            mib(grew),
            pop_huge.map_or("unknown".into(), |h| format!("{:.1} MiB", mib(h)))
        );
    }
    let tables = (
        w.routes4().approx_memory_bytes(),
        w.routes6().approx_memory_bytes(),
    );
    for (family, t, routes, long, build, table) in [
        (
            "v4",
            m.v4,
            v4.len(),
            ("longer_than_24", routes.long4),
            build4,
            tables.0,
        ),
        (
            "v6",
            m.v6,
            v6.len(),
            ("longer_than_48", routes.long6),
            build6,
            tables.1,
        ),
    ] {
        r.doc.insert(
            family.into(),
            json!({
                "routes": routes, long.0: long.1, "memory_bytes": t.bytes,
                "memory_written_bytes": t.bytes_used, "copies": 1, "nodes": t.nodes,
                "leaves": t.leaves, "build_s": build, "route_table_bytes": table,
            }),
        );
    }
    r.doc.insert("fib".into(), "poptrie".into());
    r.doc.insert("route_table_bytes".into(), m.routes.into());
    r.doc.insert(
        "route_table_resident_bytes".into(),
        json!(routes.tables_rss),
    );
    r.doc.insert("build_s".into(), pop_s.into());
    r.doc.insert("resident_growth_bytes".into(), json!(pop_rss));
    Ok(pop)
}

/// The previous FIB, if `with`: its build time and memory (each table held twice).
fn dir24(routes: &Routes, with: bool, r: &mut Report) -> Result<Option<StrideFibWriter>, FibError> {
    let (v4, v6) = (&routes.v4, &routes.v6);
    let (old, old_s, old_rss, _) = measured(|| {
        with.then(|| StrideFibWriter::with_routes(v4.iter().copied(), v6.iter().copied()))
    });
    let mut old = old.transpose()?;
    if let Some(w) = &mut old {
        let m = w.memory();
        say!(
            r,
            "dir24 (the previous FIB), built in {old_s:.3} s: IPv4 DIR-24-8 {:.1} MiB, IPv6 \
             stride trie {:.1} MiB, each held twice (left-right); writer depths {:.1} + {:.1} \
             MiB; resident memory grew by {}",
            mib(m.v4_table),
            mib(m.v6_table),
            mib(m.v4_builder),
            mib(m.v6_builder),
            old_rss.map_or("unknown".into(), |g| format!("{:.1} MiB", mib(g)))
        );
        r.dir24.insert("build_s".into(), old_s.into());
        r.dir24
            .insert("resident_growth_bytes".into(), json!(old_rss));
        for (family, table, writer) in [
            ("v4", m.v4_table, m.v4_builder),
            ("v6", m.v6_table, m.v6_builder),
        ] {
            r.dir24.insert(
                family.into(),
                json!({"memory_bytes": 2 * table, "copies": 2, "writer_bytes": writer}),
            );
        }
    }
    Ok(old)
}
