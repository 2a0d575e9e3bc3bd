//! The generator alone: how fast it sends with no DUT forwarding, measured once per lab
//! invocation for each way the lab sends (io, engine, frame size, flows, direction), so that
//! a run's row shows how much headroom the generator had (who set the rate is the run's own
//! evidence: `report::limit`).
//!
//! af_packet, af_xdp and the XDP engine send on t0 (and t1 with --bi) into d0 (d1) with no
//! DUT attached: the DUT namespace's kernel drops the frames (not addressed to it), in the
//! same place as in a run (its NAPI threads on the DUT's CPU, or the sender's context), so
//! when that receive work cannot keep up the figure is the path's limit with no DUT, and a
//! lower bound of the generator's (the calibration says so: `turned_back`). memif
//! has no kernel in the path: a memif server of this process takes each frame and returns its
//! descriptor on the DUT's CPU, the least any DUT must do.

use super::{generate_with, memif_socket, netns, port_mtu, RunOptions};
use crate::gen::port::Io;
use crate::gen::Engine;
use sluice::buffer::{BufferPool, HugePages};
use sluice::drivers::memif::{self, connection::Role, MemifConfig};
use sluice::sys::cpu;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Seconds of a calibration run: short, the generator's rate settles within milliseconds.
pub const SECONDS: &str = "1";

/// What the generator alone sent, for one way of sending.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Calibration {
    /// af_packet, af_xdp, memif, or xdp-live-frames.
    pub io: String,
    pub frame_size: String,
    pub flows: String,
    pub direction: &'static str,
    /// Frames per second sent, all directions together (as a run's offered rate).
    pub tx_pps: f64,
    pub duration_s: f64,
    /// Frames a full queue turned back, per frame sent: above `report::PUSHBACK_SHARE` the
    /// sink, not the generator, set the rate, and `tx_pps` is a lower bound.
    pub turned_back: f64,
    /// Where the frames went.
    pub sink: &'static str,
}

/// How the lab sends: the generator's io or engine.
pub fn io_label(o: &RunOptions) -> String {
    match o.engine {
        Engine::Xdp => "xdp-live-frames".into(),
        Engine::Testpmd => format!("testpmd-{}", o.io.name()),
        Engine::Ports => o.io.name().into(),
    }
}

fn direction(o: &RunOptions) -> &'static str {
    // Two net_null ports each make frames for the other: both ways.
    if o.bi || o.io == crate::gen::port::Io::DpdkNull {
        "bi"
    } else {
        "uni"
    }
}

/// Calibrations measured in this lab invocation, each way of sending measured once.
#[derive(Default)]
pub struct Cache(Vec<Calibration>);

impl Cache {
    /// The calibration for `o`'s way of sending, measured now if not yet. Needs the lab up
    /// and no DUT running.
    pub fn get(&mut self, o: &RunOptions) -> Result<Calibration, String> {
        let same = |c: &Calibration| {
            c.io == io_label(o)
                && c.frame_size == o.size
                && c.flows == o.flows
                && c.direction == direction(o)
        };
        if let Some(c) = self.0.iter().find(|c| same(c)) {
            return Ok(c.clone());
        }
        let c = measure(o)?;
        self.0.push(c.clone());
        Ok(c)
    }
}

/// One calibration run: the generator at full speed for `SECONDS`, nothing forwarding.
pub fn measure(o: &RunOptions) -> Result<Calibration, String> {
    let _mtu = netns::PortMtu::set(port_mtu(o.io))?;
    netns::dut_napi(o.napi_on_dut, o.engine == Engine::Xdp, o.dut_cpu)?;
    let memif = o.io == Io::Memif && o.engine != Engine::Xdp;
    // Dropped (stopped, sockets removed) when the generator is done.
    let _servers = if memif {
        Some(DrainServers::start(if o.bi { 2 } else { 1 }, o.dut_cpu)?)
    } else {
        None
    };
    let c = RunOptions {
        duration: Some(SECONDS.into()),
        count: None,
        rate: None,
        ..o.clone()
    };
    // One direction needs no receiver: nothing comes back. Both directions need the other
    // port named (it sends too); its receiver finds nothing.
    let g = generate_with(&c, o.bi, &[])?;
    Ok(Calibration {
        io: io_label(o),
        frame_size: o.size.clone(),
        flows: o.flows.clone(),
        direction: direction(o),
        tx_pps: g["tx_pps"].as_f64().unwrap_or(0.0),
        duration_s: g["duration_s"].as_f64().unwrap_or(0.0),
        turned_back: g["tx_queue_full"].as_f64().unwrap_or(0.0)
            / g["tx_packets"].as_f64().unwrap_or(0.0).max(1.0),
        sink: if memif {
            "a memif server that only returns the descriptors, on the DUT's CPU"
        } else {
            "the DUT's ports with no DUT: its kernel drops the frames"
        },
    })
}

/// memif servers on the DUT's sockets that take every frame and free it at once: the
/// cheapest peer a memif generator can have.
struct DrainServers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Buffers of the drain servers' pool: a server copies frames out of the client's memory
/// into these, a burst at a time, and frees them at once.
const DRAIN_BUFFERS: u32 = 4096;

impl DrainServers {
    fn start(ports: usize, cpu: usize) -> Result<DrainServers, String> {
        let pool = BufferPool::new(DRAIN_BUFFERS, HugePages::Never)
            .map_err(|e| format!("calibration buffer pool: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut servers = DrainServers {
            stop: stop.clone(),
            threads: Vec::new(),
        };
        for k in 0..ports {
            let socket = memif_socket(k);
            if let Some(dir) = socket.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            let ports = memif::open(
                &MemifConfig {
                    name: format!("calibrate{k}"),
                    socket,
                    role: Role::Server,
                    id: 0,
                    secret: None,
                    ring_size: 2048,
                    zero_copy: false,
                    workers: 1,
                    // The lab's own sink: its connects are not news.
                    log: false,
                },
                &pool,
            )?;
            let (stop, pool) = (stop.clone(), pool.clone());
            let t = std::thread::Builder::new()
                .name(format!("calibrate{k}"))
                .spawn(move || {
                    let _ = cpu::pin_current_thread(cpu);
                    // The interface (control thread, socket) lives as long as this thread.
                    let mut ports = ports;
                    let mut bufs = pool.worker_handle();
                    let mut burst = vec![0u32; 256];
                    while !stop.load(Ordering::Relaxed) {
                        let mut got = 0;
                        for q in ports.rx.iter_mut() {
                            let r = q.rx_burst(&mut bufs, &mut burst);
                            bufs.free_all(&burst[..r.packets]);
                            got += r.packets;
                        }
                        if got == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
                .map_err(|e| format!("calibration thread: {e}"))?;
            servers.threads.push(t);
        }
        Ok(servers)
    }
}

impl Drop for DrainServers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
