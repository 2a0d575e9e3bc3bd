//! `sluice bench graph`: how the dataplane scales with workers when no I/O is in the way.
//! Two null interfaces (`driver = "null"`: frames made on receive, freed on transmit)
//! cross-connected both ways, 64-byte frames, and the real dataplane — its workers, their
//! graphs, the shared buffer pool — started once per worker count with each worker pinned
//! to a CPU of its own. The rate is the frames the interfaces sent per second, after a
//! warm-up.

use crate::config::Config;
use crate::dataplane::Dataplane;
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
}

/// The configuration measured with `workers` workers.
pub fn config(workers: u32) -> String {
    let cores: Vec<String> = (0..workers).map(|c| c.to_string()).collect();
    format!(
        "[dataplane]\nworkers = {workers}\nworker-cores = [{}]\nbuffers = {}\nhugepages = \"auto\"\n\
         [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
         [[interface]]\nname = \"n1\"\ndriver = \"null\"\n\
         [[xconnect]]\nrx = \"n0\"\ntx = \"n1\"\n\
         [[xconnect]]\nrx = \"n1\"\ntx = \"n0\"\n",
        cores.join(", "),
        16384 * workers.max(1),
    )
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
pub fn measure(workers: u32, seconds: f64) -> Result<Measured, String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if workers as usize > cpus {
        return Err(format!(
            "{workers} workers: this machine has {cpus} CPUs, and each worker needs one"
        ));
    }
    let cfg = Config::parse(&config(workers), "bench graph").map_err(|e| e.to_string())?;
    let dp = Dataplane::start(&cfg)?;
    std::thread::sleep(Duration::from_millis(500));
    let (t0, n0, r0) = (Instant::now(), sent(&dp), dp.pool.report());
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let (elapsed, n1, r1) = (t0.elapsed().as_secs_f64(), sent(&dp), dp.pool.report());
    dp.stop();
    Ok(Measured {
        workers,
        pps: (n1 - n0) as f64 / elapsed,
        free_list_locks: r1.free_list_locks - r0.free_list_locks,
        free_list_contended: r1.free_list_contended - r0.free_list_contended,
    })
}

pub fn main(args: GraphArgs) -> Result<(), String> {
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(format!("--seconds {}: from above 0 to 3600", args.seconds));
    }
    let mut results = Vec::new();
    for &w in &args.workers {
        let m = measure(w, args.seconds)?;
        if !args.json {
            let base = results.first().map(|b: &Measured| b.pps / b.workers as f64);
            let scale = base.map_or(String::new(), |b| {
                format!("  {:.2}x one worker's rate", m.pps / b)
            });
            println!(
                "graph, null driver, cross-connect, 64 B: {w} worker(s) {:.2} Mpps{scale}; \
                 buffer free list taken {} times, {} waiting",
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
                serde_json::json!({
                    "workers": m.workers,
                    "pps": m.pps.round(),
                    "free_list_locks": m.free_list_locks,
                    "free_list_contended": m.free_list_contended,
                })
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
            let c = Config::parse(&config(w), "t").unwrap();
            assert_eq!(c.dataplane.workers, w as usize);
            assert_eq!(c.interfaces.len(), 2);
            assert!(c.interfaces.iter().all(|i| i.driver.name() == "null"));
        }
    }
}
