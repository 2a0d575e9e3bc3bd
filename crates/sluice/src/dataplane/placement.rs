//! Which worker polls each receive queue, and moving a queue to another worker while
//! traffic runs (`set interface rx-placement IF queue Q worker W`, VPP's command).
//!
//! A queue belongs to the input node of its driver on one worker. A move is a request the
//! control thread leaves for the worker that polls the queue: at its next pass that worker's
//! input node takes the queue out of its list and hands it to the destination worker's
//! inbox, whose input node of the same driver takes it in at its next pass. The queue is
//! never polled by two workers, and between the two passes by none (its device keeps the
//! frames that arrive meanwhile). A worker with nothing to move reads one flag a pass.
//!
//! Queues that hold buffers lent to their device by their worker (AF_XDP's fill ring,
//! memif's rings) stay where they were placed at start: their buffers belong to that
//! worker's handle.

use super::open::Opened;
use super::queues::SharedQueueCounters;
use super::PlacedRx;
use crate::config::Config;
use crate::drivers::{NoTx, TxQueue};
use crate::interface::Interface;
use crate::nodes::input::PlacedQueue;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Where one receive queue is polled.
#[derive(Clone, Debug)]
pub struct QueueHome {
    pub interface: String,
    pub interface_index: u32,
    pub queue: usize,
    pub worker: usize,
    /// The input node that polls it (`af-packet-input`, ...).
    pub node: String,
    /// What it has received; the same counters as its `PlacedQueue`'s.
    pub counters: SharedQueueCounters,
}

/// A move the source worker has not made yet.
struct Move {
    interface_index: u32,
    queue: usize,
    to: usize,
}

/// The placement of every receive queue, shared by the control thread and the workers.
pub struct RxPlacement {
    homes: Mutex<Vec<QueueHome>>,
    /// Per worker: moves out of it not yet made.
    outbox: Vec<Mutex<Vec<Move>>>,
    /// Per worker: queues handed to it, not yet taken in.
    inbox: Vec<Mutex<Vec<PlacedQueue>>>,
    /// Per worker: its outbox or inbox has something.
    pending: Vec<AtomicBool>,
}

/// The input node that polls the queues of `driver`.
pub fn input_node_name(driver: &str) -> String {
    format!("{}-input", driver.replace('_', "-"))
}

/// Whether queues of `driver` may move between workers while running.
pub fn movable(driver: &str) -> bool {
    matches!(driver, "af_packet" | "pcap" | "null")
}

impl RxPlacement {
    pub fn new(workers: usize, homes: Vec<QueueHome>) -> RxPlacement {
        RxPlacement {
            homes: Mutex::new(homes),
            outbox: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            inbox: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            pending: (0..workers).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Every queue and its worker, by interface then queue.
    pub fn homes(&self) -> Vec<QueueHome> {
        let mut h = self.homes.lock().unwrap().clone();
        h.sort_by_key(|q| (q.interface_index, q.queue));
        h
    }

    /// Ask for queue `queue` of interface `interface` to be polled by `worker`; `Err` says
    /// why not. The move is made by the workers' next passes.
    pub fn place(
        &self,
        interface: &str,
        driver: &str,
        queue: usize,
        worker: usize,
    ) -> Result<(), String> {
        let workers = self.outbox.len();
        if worker >= workers {
            return Err(format!(
                "worker {worker}: there are {workers} worker(s), 0 to {}",
                workers - 1
            ));
        }
        let mut homes = self.homes.lock().unwrap();
        let count = homes.iter().filter(|h| h.interface == interface).count();
        let Some(home) = homes
            .iter_mut()
            .find(|h| h.interface == interface && h.queue == queue)
        else {
            return Err(match count {
                0 => format!("interface {interface} has no receive queue on a worker"),
                n => format!(
                    "queue {queue}: interface {interface} has queues 0 to {}",
                    n - 1
                ),
            });
        };
        if home.worker == worker {
            return Ok(());
        }
        if !movable(driver) {
            return Err(format!(
                "interface {interface} ({driver}): its queues hold buffers their worker lent to \
                 the device, so they stay where they were placed at start (af_packet, pcap \
                 and null queues move)"
            ));
        }
        self.outbox[home.worker].lock().unwrap().push(Move {
            interface_index: home.interface_index,
            queue,
            to: worker,
        });
        self.pending[home.worker].store(true, Ordering::Release);
        home.worker = worker;
        Ok(())
    }

    /// Called by the input node `node` of `worker` at each pass with its queues: gives away
    /// the queues asked for and takes in those handed to it. One flag read when there is
    /// nothing to do.
    #[inline]
    pub fn settle(&self, worker: usize, node: &str, queues: &mut Vec<PlacedQueue>) {
        if !self.pending[worker].load(Ordering::Acquire) {
            return;
        }
        self.settle_slow(worker, node, queues);
    }

    #[cold]
    fn settle_slow(&self, worker: usize, node: &str, queues: &mut Vec<PlacedQueue>) {
        let mut out = self.outbox[worker].lock().unwrap();
        out.retain(|m| {
            let Some(at) = queues
                .iter()
                .position(|q| q.interface.index == m.interface_index && q.queue == m.queue)
            else {
                // Another input node of this worker has it.
                return true;
            };
            let q = queues.remove(at);
            self.inbox[m.to].lock().unwrap().push(q);
            self.pending[m.to].store(true, Ordering::Release);
            false
        });
        let mut inbox = self.inbox[worker].lock().unwrap();
        let mut k = 0;
        while k < inbox.len() {
            if input_node_name(inbox[k].interface.driver) == node {
                queues.push(inbox.remove(k));
            } else {
                k += 1;
            }
        }
        let more = !out.is_empty() || !inbox.is_empty();
        self.pending[worker].store(more, Ordering::Release);
    }
}

/// The opened interfaces' queues, handed out to the threads.
pub(super) struct HandedOut {
    /// Each worker's receive queues.
    pub rx_by_worker: Vec<Vec<PlacedRx>>,
    /// Each worker's transmit queues, one per interface.
    pub tx_by_worker: Vec<Vec<Box<dyn TxQueue>>>,
    /// The main thread's transmit queues (the lcp taps send with them).
    pub main_tx: Vec<Box<dyn TxQueue>>,
    /// Undoes device changes when dropped.
    pub restore: Vec<Box<dyn Send + Sync>>,
    pub interfaces: Vec<Arc<Interface>>,
    pub homes: Vec<QueueHome>,
}

/// The start step of the queues: rx queue k of an interface goes to the worker its
/// [[rx-placement]] names, else to worker k mod workers; tx queue w to worker w, and the last
/// one to the main thread.
pub(super) fn hand_out(
    cfg: &Config,
    opened: Vec<Opened>,
    workers: usize,
) -> Result<HandedOut, String> {
    for p in &cfg.rx_placements {
        let Some(o) = opened.iter().find(|o| o.interface.name == p.interface) else {
            continue;
        };
        let n = o.ports.rx.len();
        if p.queue >= n {
            return Err(format!(
                "[[rx-placement]] {} queue {}: the interface has {n} receive queue(s)",
                p.interface, p.queue
            ));
        }
    }
    let mut rx_by_worker: Vec<Vec<PlacedRx>> = (0..workers).map(|_| Vec::new()).collect();
    let mut tx_by_thread: Vec<Vec<Box<dyn TxQueue>>> = (0..=workers).map(|_| Vec::new()).collect();
    let mut restore = Vec::new();
    let mut interfaces = Vec::new();
    let mut homes = Vec::new();
    for (i, o) in opened.into_iter().enumerate() {
        let Opened { interface, ports } = o;
        for (q, rx) in ports.rx.into_iter().enumerate() {
            let worker = cfg
                .rx_placements
                .iter()
                .find(|p| p.interface == interface.name && p.queue == q)
                .map_or(q % workers, |p| p.worker);
            let counters = SharedQueueCounters::default();
            rx_by_worker[worker].push((i, q, rx, counters.clone()));
            homes.push(QueueHome {
                interface: interface.name.clone(),
                interface_index: i as u32,
                queue: q,
                worker,
                node: input_node_name(interface.driver),
                counters,
            });
        }
        let mut tx = ports.tx.into_iter();
        for queues in tx_by_thread.iter_mut() {
            queues.push(tx.next().unwrap_or_else(|| Box::new(NoTx)));
        }
        restore.extend(ports.restore);
        interfaces.push(Arc::new(interface));
    }
    let main_tx = tx_by_thread.pop().unwrap_or_default();
    Ok(HandedOut {
        rx_by_worker,
        tx_by_worker: tx_by_thread,
        main_tx,
        restore,
        interfaces,
        homes,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::dataplane::Dataplane;

    fn null_config(placement: &str) -> Config {
        let src = format!(
            "[dataplane]\nworkers = 1\nbuffers = 4096\nhugepages = \"never\"\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n{placement}"
        );
        Config::parse(&src, "t.toml").unwrap()
    }

    #[test]
    fn a_placement_of_a_queue_the_driver_lacks_stops_the_start() {
        let cfg = null_config("[[rx-placement]]\ninterface = \"n1\"\nqueue = 3\nworker = 0\n");
        let Err(e) = Dataplane::start(&cfg) else {
            panic!("started with queue 3 of a one-queue interface placed");
        };
        assert_eq!(
            e,
            "[[rx-placement]] n1 queue 3: the interface has 1 receive queue(s)"
        );
    }

    #[test]
    fn queues_start_where_they_are_placed_and_refuse_bad_moves() {
        let dp = Dataplane::start(&null_config(
            "[[rx-placement]]\ninterface = \"n1\"\nqueue = 0\nworker = 0\n",
        ))
        .unwrap();
        let homes = dp.rx_placement.homes();
        let got: Vec<_> = homes
            .iter()
            .map(|h| (h.interface.as_str(), h.queue, h.worker, h.node.as_str()))
            .collect();
        assert_eq!(
            got,
            [("n0", 0, 0, "null-input"), ("n1", 0, 0, "null-input")]
        );
        let p = &dp.rx_placement;
        assert!(p.place("n0", "null", 0, 0).is_ok(), "a move to where it is");
        let e = p.place("n0", "null", 0, 1).unwrap_err();
        assert!(e.contains("there are 1 worker(s)"), "{e}");
        let e = p.place("n0", "null", 1, 0).unwrap_err();
        assert!(e.contains("queues 0 to 0"), "{e}");
        dp.stop();
    }
}
