//! `sluice bench graph`: how the dataplane scales with workers when no I/O is in the way.
//! Two null interfaces (`driver = "null"`: frames made on receive, freed on transmit)
//! cross-connected both ways, 64-byte frames, and the real dataplane — its workers, their
//! graphs, the shared buffer pool — started once per worker count with each worker pinned
//! to a CPU of its own. The rate is the frames the interfaces sent per second, after a
//! warm-up.

use sluice::config::Config;
use sluice::dataplane::Dataplane;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug, Clone)]
pub struct GraphArgs {
    /// Worker counts to measure, a comma list; each worker is pinned to CPU 0, 1, ...
    #[arg(long, value_name = "N,..", default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: Vec<u32>,
    /// Seconds measured per worker count (after half a second of warm-up)
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub seconds: f64,
    /// One JSON document: {"results": [{"workers": N, "pps": ...}, ...]}
    #[arg(long)]
    pub json: bool,
    /// Hand both interfaces' packets to all workers by flow hash ([[handoff]]) and report
    /// the clocks per packet of worker-handoff and handoff-input
    #[arg(long)]
    pub handoff: bool,
}

/// One worker count's result.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub workers: u32,
    pub pps: f64,
    /// Takes of the buffer pool's shared free list during the measurement, and those that
    /// waited for another worker.
    pub free_list_locks: u64,
    pub free_list_contended: u64,
    /// With handoff: clocks per packet of worker-handoff (hash, choice, ring push) and of
    /// handoff-input (ring pop), over all workers.
    pub handoff_clocks: Option<(f64, f64)>,
}

/// The configuration measured with `workers` workers (with `handoff`, both interfaces'
/// packets are spread over all of them).
pub fn config(workers: u32, handoff: bool) -> String {
    let cores: Vec<String> = (0..workers).map(|c| c.to_string()).collect();
    let spread = if handoff {
        let all = cores.join(", ");
        format!(
            "[[handoff]]\ninterface = \"n0\"\nworkers = [{all}]\n\
             [[handoff]]\ninterface = \"n1\"\nworkers = [{all}]\n"
        )
    } else {
        String::new()
    };
    let base = format!(
        "[dataplane]\nworkers = {workers}\nworker-cores = [{}]\nbuffers = {}\nhugepages = \"auto\"\n\
         [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
         [[interface]]\nname = \"n1\"\ndriver = \"null\"\n\
         [[xconnect]]\nrx = \"n0\"\ntx = \"n1\"\n\
         [[xconnect]]\nrx = \"n1\"\ntx = \"n0\"\n",
        cores.join(", "),
        16384 * workers.max(1),
    );
    base + &spread
}

/// Clocks and vectors of `node`, summed over the workers.
fn node_clocks(dp: &Dataplane, node: &str) -> (u64, u64) {
    dp.workers
        .iter()
        .fold((0, 0), |(c, v), w| match w.graph.node_index(node) {
            Some(i) => (
                c + w.graph.stats[i].0.clocks.get(),
                v + w.graph.stats[i].0.vectors.get(),
            ),
            None => (c, v),
        })
}

/// Frames the interfaces have sent so far.
fn sent(dp: &Dataplane) -> u64 {
    dp.interfaces
        .list
        .iter()
        .map(|i| i.totals().tx_packets)
        .sum()
}

/// Start the dataplane with `workers` workers and measure it for `seconds`.
pub fn measure(workers: u32, seconds: f64, handoff: bool) -> Result<Measured, String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if workers as usize > cpus {
        return Err(format!(
            "{workers} workers: this machine has {cpus} CPUs, and each worker needs one"
        ));
    }
    let cfg = Config::parse(&config(workers, handoff), "bench graph").map_err(|e| e.to_string())?;
    let dp = Dataplane::start(&cfg)?;
    std::thread::sleep(Duration::from_millis(500));
    let nodes = |dp: &Dataplane| {
        [
            node_clocks(dp, sluice::handoff::node::WORKER_HANDOFF),
            node_clocks(dp, sluice::handoff::node::HANDOFF_INPUT),
        ]
    };
    let (t0, n0, r0, h0) = (Instant::now(), sent(&dp), dp.pool.report(), nodes(&dp));
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let (elapsed, n1, r1, h1) = (
        t0.elapsed().as_secs_f64(),
        sent(&dp),
        dp.pool.report(),
        nodes(&dp),
    );
    dp.stop();
    let per_packet = |k: usize| {
        let (c, v) = (h1[k].0 - h0[k].0, h1[k].1 - h0[k].1);
        if v > 0 {
            c as f64 / v as f64
        } else {
            0.0
        }
    };
    Ok(Measured {
        workers,
        pps: (n1 - n0) as f64 / elapsed,
        free_list_locks: r1.free_list_locks - r0.free_list_locks,
        free_list_contended: r1.free_list_contended - r0.free_list_contended,
        handoff_clocks: handoff.then(|| (per_packet(0), per_packet(1))),
    })
}

pub fn main(args: GraphArgs) -> Result<(), String> {
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(format!("--seconds {}: from above 0 to 3600", args.seconds));
    }
    let mut results = Vec::new();
    for &w in &args.workers {
        let m = measure(w, args.seconds, args.handoff)?;
        if !args.json {
            let base = results.first().map(|b: &Measured| b.pps / b.workers as f64);
            let scale = base.map_or(String::new(), |b| {
                format!("  {:.2}x one worker's rate", m.pps / b)
            });
            let handoff = m.handoff_clocks.map_or(String::new(), |(out, into)| {
                format!("; handoff: worker-handoff {out:.1} clk/pkt, handoff-input {into:.1}")
            });
            println!(
                "graph, null driver, cross-connect, 64 B: {w} worker(s) {:.2} Mpps{scale}; \
                 buffer free list taken {} times, {} waiting{handoff}",
                m.pps / 1e6,
                m.free_list_locks,
                m.free_list_contended
            );
        }
        results.push(m);
    }
    if args.json {
        let rows: Vec<serde_json::Value> = results
            .iter()
            .map(|m| {
                let mut row = serde_json::json!({
                    "workers": m.workers,
                    "pps": m.pps.round(),
                    "free_list_locks": m.free_list_locks,
                    "free_list_contended": m.free_list_contended,
                });
                if let Some((out, into)) = m.handoff_clocks {
                    row["worker_handoff_clocks_per_packet"] = out.into();
                    row["handoff_input_clocks_per_packet"] = into.into();
                }
                row
            })
            .collect();
        println!("{}", serde_json::json!({ "results": rows }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configurations_parse() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        for w in 1..=cpus.min(8) {
            let c = Config::parse(&config(w, false), "t").unwrap();
            assert_eq!(c.dataplane.workers, w as usize);
            assert_eq!(c.interfaces.len(), 2);
            assert!(c.interfaces.iter().all(|i| i.driver.name() == "null"));
            assert!(c.handoffs.is_empty());
            let c = Config::parse(&config(w, true), "t").unwrap();
            assert_eq!(c.handoffs.len(), 2);
            assert_eq!(c.handoffs[1].workers.len(), w as usize);
        }
    }
}
