//! The RFC 2544 throughput search (section 26.1): the highest offered rate at which the
//! device under test forwards every frame (NDR), and the highest at which it loses no more
//! than a small ratio (PDR, 0.5 % as FD.io CSIT defines it), each found by bisection between
//! a rate known to pass and one known to fail, to a chosen resolution.

/// One trial: traffic at a fixed rate for a fixed time.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Trial {
    /// Offered rate asked of the generator, packets per second.
    pub rate_asked: f64,
    pub tx_packets: u64,
    pub rx_packets: u64,
    /// Whether the generator actually offered the asked rate; a trial where it did not
    /// measures the generator, not the DUT, and must not decide the search.
    pub rate_reached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Latency>,
}

/// Latency summary of a trial.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Latency {
    pub min: u64,
    pub median: u64,
    pub p99: u64,
    pub max: u64,
}

impl Trial {
    pub fn lost(&self) -> u64 {
        self.tx_packets.saturating_sub(self.rx_packets)
    }

    /// Lost packets over sent packets (0 when nothing was sent).
    pub fn loss_ratio(&self) -> f64 {
        if self.tx_packets == 0 {
            0.0
        } else {
            self.lost() as f64 / self.tx_packets as f64
        }
    }
}

/// Runs trials: the lab's generator against a DUT, or a model in tests.
pub trait TrialRunner {
    fn trial(&mut self, rate_pps: f64) -> Result<Trial, String>;
}

#[derive(Clone, Debug)]
pub struct SearchConfig {
    /// Lowest rate searched (pps).
    pub min_rate: f64,
    /// Highest rate searched (pps), normally the link's line rate or the generator's limit.
    pub max_rate: f64,
    /// Stop when the pass/fail bracket is narrower than this (pps).
    pub resolution: f64,
    /// Loss ratio allowed for PDR.
    pub pdr_loss_ratio: f64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            min_rate: 10_000.0,
            max_rate: 14_880_952.0,
            resolution: 10_000.0,
            pdr_loss_ratio: 0.005,
        }
    }
}

/// The outcome: the rates found and every trial that found them.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SearchResult {
    /// Highest rate with zero loss; `None` when even `min_rate` lost packets.
    pub ndr: Option<f64>,
    /// Highest rate with loss within `pdr_loss_ratio`.
    pub pdr: Option<f64>,
    /// True when a trial's generator missed its rate, so the result is bounded by the
    /// generator and not the DUT.
    pub generator_limited: bool,
    pub trials: Vec<Trial>,
}

/// Bisection for the highest rate whose trial satisfies `passes`, given a rate known to pass
/// (`lo`, or `None`) and one known to fail (`hi`).
fn bisect(
    runner: &mut dyn TrialRunner,
    cfg: &SearchConfig,
    trials: &mut Vec<Trial>,
    generator_limited: &mut bool,
    mut lo: Option<f64>,
    mut hi: f64,
    passes: &dyn Fn(&Trial) -> bool,
) -> Result<Option<f64>, String> {
    loop {
        let floor = lo.unwrap_or(cfg.min_rate);
        if hi - floor <= cfg.resolution {
            if lo.is_none() {
                // Nothing passed yet: try the floor itself once.
                let t = runner.trial(cfg.min_rate)?;
                let ok = passes(&t) && t.rate_reached;
                trials.push(t);
                return Ok(ok.then_some(cfg.min_rate));
            }
            return Ok(lo);
        }
        let rate = (floor + hi) / 2.0;
        let t = runner.trial(rate)?;
        if !t.rate_reached {
            // The generator cannot offer this rate: nothing above it can be measured.
            *generator_limited = true;
            trials.push(t);
            hi = rate;
            continue;
        }
        if passes(&t) {
            lo = Some(rate);
        } else {
            hi = rate;
        }
        trials.push(t);
    }
}

/// Find NDR and PDR.
pub fn search(runner: &mut dyn TrialRunner, cfg: &SearchConfig) -> Result<SearchResult, String> {
    if !(cfg.min_rate > 0.0 && cfg.max_rate > cfg.min_rate && cfg.resolution > 0.0) {
        return Err(format!(
            "bad search bounds: min {} max {} resolution {}",
            cfg.min_rate, cfg.max_rate, cfg.resolution
        ));
    }
    let mut trials = Vec::new();
    let mut limited = false;
    // First trial at the top: a DUT that forwards everything there needs no search.
    let top = runner.trial(cfg.max_rate)?;
    let top_reached = top.rate_reached;
    let top_zero = top.lost() == 0 && top_reached;
    let top_pdr = top.loss_ratio() <= cfg.pdr_loss_ratio && top_reached;
    limited |= !top_reached;
    trials.push(top);
    let pdr_ok = |t: &Trial| t.loss_ratio() <= cfg.pdr_loss_ratio;
    let zero_ok = |t: &Trial| t.lost() == 0;
    let ndr = if top_zero {
        Some(cfg.max_rate)
    } else {
        bisect(
            runner,
            cfg,
            &mut trials,
            &mut limited,
            None,
            cfg.max_rate,
            &zero_ok,
        )?
    };
    let pdr = if top_pdr {
        Some(cfg.max_rate)
    } else {
        // PDR is at least NDR; the lowest trial above NDR that failed PDR bounds it above.
        let hi = trials
            .iter()
            .filter(|t| t.rate_reached && !pdr_ok(t))
            .map(|t| t.rate_asked)
            .fold(cfg.max_rate, f64::min);
        let lo = trials
            .iter()
            .filter(|t| t.rate_reached && pdr_ok(t) && t.rate_asked < hi)
            .map(|t| t.rate_asked)
            .fold(ndr, |acc: Option<f64>, r| Some(acc.map_or(r, |a| a.max(r))));
        bisect(runner, cfg, &mut trials, &mut limited, lo, hi, &pdr_ok)?
    };
    Ok(SearchResult {
        ndr,
        pdr,
        generator_limited: limited,
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DUT that forwards up to `capacity` pps and drops the excess, with a band above
    /// capacity where it loses a little; the generator tops out at `gen_limit`.
    struct Model {
        capacity: f64,
        gen_limit: f64,
        calls: usize,
    }

    impl TrialRunner for Model {
        fn trial(&mut self, rate: f64) -> Result<Trial, String> {
            self.calls += 1;
            let offered = rate.min(self.gen_limit);
            let tx = offered as u64;
            // Up to 1 % above capacity, loss grows slowly (0.1 % per 0.2 % of overload).
            let rx = if offered <= self.capacity {
                tx
            } else if offered <= self.capacity * 1.01 {
                let over = offered / self.capacity - 1.0;
                (tx as f64 * (1.0 - over / 2.0)) as u64
            } else {
                self.capacity as u64
            };
            Ok(Trial {
                rate_asked: rate,
                tx_packets: tx,
                rx_packets: rx,
                rate_reached: offered >= rate * 0.999,
                latency_ns: None,
            })
        }
    }

    #[test]
    fn finds_ndr_and_pdr_within_resolution() {
        let mut m = Model {
            capacity: 1_234_567.0,
            gen_limit: 1e9,
            calls: 0,
        };
        let cfg = SearchConfig {
            min_rate: 10_000.0,
            max_rate: 14_880_952.0,
            resolution: 5_000.0,
            pdr_loss_ratio: 0.005,
        };
        let r = search(&mut m, &cfg).unwrap();
        let ndr = r.ndr.unwrap();
        let pdr = r.pdr.unwrap();
        assert!(
            ndr <= m.capacity && m.capacity - ndr <= cfg.resolution,
            "ndr {ndr}"
        );
        // Loss reaches 0.5 % at 1 % over capacity.
        let pdr_true = m.capacity * 1.01;
        assert!(
            pdr <= pdr_true && pdr_true - pdr <= cfg.resolution,
            "pdr {pdr}"
        );
        assert!(pdr >= ndr);
        assert!(!r.generator_limited);
        assert_eq!(r.trials.len(), m.calls);
        // Bisection: about log2(range / resolution) trials per search.
        assert!(m.calls < 30, "{} trials", m.calls);
    }

    #[test]
    fn a_dut_faster_than_the_top_rate_needs_one_trial() {
        let mut m = Model {
            capacity: 1e9,
            gen_limit: 1e9,
            calls: 0,
        };
        let r = search(&mut m, &SearchConfig::default()).unwrap();
        assert_eq!(r.ndr, Some(14_880_952.0));
        assert_eq!(m.calls, 1);
    }

    #[test]
    fn generator_limit_is_reported_not_mistaken_for_the_dut() {
        let mut m = Model {
            capacity: 5e6,
            gen_limit: 700_000.0,
            calls: 0,
        };
        let r = search(&mut m, &SearchConfig::default()).unwrap();
        assert!(r.generator_limited);
        assert!(r.ndr.unwrap() <= 700_000.0);
        for t in &r.trials {
            if t.rate_asked > 700_000.0 {
                assert!(!t.rate_reached);
            }
        }
    }

    #[test]
    fn a_dut_that_always_loses_has_no_ndr() {
        struct Lossy;
        impl TrialRunner for Lossy {
            fn trial(&mut self, rate: f64) -> Result<Trial, String> {
                Ok(Trial {
                    rate_asked: rate,
                    tx_packets: 1000,
                    rx_packets: 900,
                    rate_reached: true,
                    latency_ns: None,
                })
            }
        }
        let r = search(&mut Lossy, &SearchConfig::default()).unwrap();
        assert_eq!(r.ndr, None);
        assert_eq!(r.pdr, None);
    }

    #[test]
    fn bad_bounds_are_errors() {
        let mut m = Model {
            capacity: 1.0,
            gen_limit: 1.0,
            calls: 0,
        };
        let cfg = SearchConfig {
            min_rate: 10.0,
            max_rate: 5.0,
            ..SearchConfig::default()
        };
        assert!(search(&mut m, &cfg).is_err());
    }
}
