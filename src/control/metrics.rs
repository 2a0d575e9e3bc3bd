//! The Prometheus endpoint (`[metrics] listen = "127.0.0.1:9482"`): `GET /metrics` over
//! HTTP/1.1, answered in the Prometheus text exposition format (version 0.0.4), encoded by
//! the `prometheus-client` crate.
//!
//! A scrape reads the counters `show interface`, `show runtime`, `show errors` and `show
//! buffers` read — the workers' single-writer atomics and the buffer pool's counts — so it
//! takes no lock a worker takes while forwarding and never slows the dataplane. It reports
//! totals since the daemon started: the `clear` commands move the CLI's baselines, not these.
//! Names follow VPP's exporter (`vpp_prometheus_export v2`): `interfaces_rx_packets`,
//! `nodes_calls`, `err`, `buffer_pools_used`, with the `_total` suffix the format gives
//! counters.
//!
//! The server is one thread that answers one connection at a time; a client has
//! `HEAD_TIMEOUT` to send its request head and `WRITE_TIMEOUT` per write, so a slow or broken
//! one delays the next scrape at most that long and never the daemon. The thread checks the
//! stop flag between connections and while it waits for a request, and ends when the daemon
//! stops.

use crate::buffer::{BufferPool, BufferReport};
use crate::dataplane::placement::RxPlacement;
use crate::dataplane::queues::{queue_totals, QueueTotals};
use crate::dataplane::Dataplane;
use crate::graph::GraphShared;
use crate::interface::{IfTotals, Interface};
use crate::subif::SharedSubIfs;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a client has to send its whole request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write of the answer may block.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest request head read; a longer one is answered 431.
const MAX_HEAD: usize = 8192;
/// How often the idle server looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// The buffer pool's label value (sluice has one pool; VPP names its pools per NUMA node).
const POOL: &str = "default";

/// What one scrape reports.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// (name, counters since start), in index order.
    pub interfaces: Vec<(String, IfTotals)>,
    /// Per node, summed over workers, in name order.
    pub nodes: Vec<NodeTotals>,
    /// Per node and reason, summed over workers; by node name.
    pub errors: Vec<ErrorTotal>,
    pub buffers: Option<BufferReport>,
    /// Per receive queue, by interface index then queue.
    pub queues: Vec<QueueTotals>,
    /// Per worker: clocks spent in passes that received packets.
    pub busy_clocks: Vec<u64>,
    pub workers: usize,
    /// The rate of the clock `nodes_clocks` counts in.
    pub tsc_hz: f64,
    /// The workers' heartbeats and the control socket's counts (`health.rs`).
    pub health: super::health::HealthSnapshot,
    /// Per worker: the ACL session table (none before a reflect rule made them).
    pub sessions: Vec<crate::acl::session::metrics::SessionTotals>,
    /// Each namespace's netlink listener.
    pub netlink: Vec<crate::netlink::NetlinkStats>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTotals {
    pub name: String,
    pub calls: u64,
    pub vectors: u64,
    pub clocks: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorTotal {
    pub node: String,
    pub reason: String,
    pub count: u64,
}

/// What the metrics thread reads: handles on the dataplane's shared counters, taken once at
/// start (sub-interfaces made later are found through the published sub-interface table).
#[derive(Clone)]
pub struct MetricsSource {
    pool: Arc<BufferPool>,
    hardware: Vec<Arc<Interface>>,
    subifs: SharedSubIfs,
    graphs: Vec<Arc<GraphShared>>,
    placement: Arc<RxPlacement>,
    tsc_hz: f64,
    health: super::health::HealthSource,
    sessions: Arc<crate::acl::session::Sessions>,
    netlink: Option<crate::lcp::NetlinkCounters>,
}

impl MetricsSource {
    pub fn new(dp: &Dataplane) -> MetricsSource {
        MetricsSource {
            pool: dp.pool.clone(),
            hardware: dp.interfaces.list[..dp.hardware].to_vec(),
            subifs: dp.subifs.clone(),
            graphs: dp.workers.iter().map(|w| w.graph.clone()).collect(),
            placement: dp.rx_placement.clone(),
            tsc_hz: dp.tsc_hz,
            health: super::health::HealthSource::new(dp),
            sessions: (dp.acls.lock().unwrap_or_else(|p| p.into_inner()))
                .filters()
                .sessions
                .clone(),
            netlink: dp.lcp.as_ref().map(|l| l.netlink_counters()),
        }
    }

    /// Report the control socket's counters too.
    pub fn with_clients(mut self, clients: Arc<super::server::ClientStats>) -> MetricsSource {
        self.health = self.health.with_clients(clients);
        self
    }

    /// Every counter now.
    pub fn snapshot(&self) -> Snapshot {
        let subifs = self.subifs.load();
        let mut list: Vec<&Arc<Interface>> = self
            .hardware
            .iter()
            .chain(subifs.all().map(|s| &s.interface))
            .filter(|i| !i.is_deleted())
            .collect();
        list.sort_by_key(|i| i.index);
        list.dedup_by_key(|i| i.index);
        let interfaces = list
            .iter()
            .map(|i| (i.name.clone(), i.raw_totals()))
            .collect();

        let mut nodes: Vec<NodeTotals> = Vec::new();
        let mut errors: Vec<ErrorTotal> = Vec::new();
        for g in &self.graphs {
            for (n, name) in g.names.iter().enumerate() {
                let at = match nodes.iter().position(|t| t.name == *name) {
                    Some(at) => at,
                    None => {
                        nodes.push(NodeTotals {
                            name: name.clone(),
                            ..NodeTotals::default()
                        });
                        nodes.len() - 1
                    }
                };
                let s = &g.stats[n];
                let t = &mut nodes[at];
                t.calls = t.calls.wrapping_add(s.calls.get());
                t.vectors = t.vectors.wrapping_add(s.vectors.get());
                t.clocks = t.clocks.wrapping_add(s.clocks.get());
                for (e, reason) in g.error_names[n].iter().enumerate() {
                    let count = g.errors[n][e].get();
                    match errors
                        .iter_mut()
                        .find(|x| x.node == *name && x.reason == *reason)
                    {
                        Some(x) => x.count = x.count.wrapping_add(count),
                        None => errors.push(ErrorTotal {
                            node: name.clone(),
                            reason: reason.to_string(),
                            count,
                        }),
                    }
                }
            }
        }
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        // By node; each node's reasons in the order it declares them.
        errors.sort_by(|a, b| a.node.cmp(&b.node));
        Snapshot {
            interfaces,
            nodes,
            errors,
            buffers: Some(self.pool.report()),
            queues: queue_totals(&self.placement),
            busy_clocks: self.graphs.iter().map(|g| g.busy_clocks.get()).collect(),
            workers: self.graphs.len(),
            tsc_hz: self.tsc_hz,
            health: self.health.snapshot(),
            sessions: crate::acl::session::metrics::totals(&self.sessions),
            netlink: self.netlink.as_ref().map(|n| n.stats()).unwrap_or_default(),
        }
    }
}

type IfField = fn(&IfTotals) -> u64;

/// The interface counters: (name, help, value).
const INTERFACE_COUNTERS: [(&str, &str, IfField); 8] = [
    (
        "interfaces_rx_packets",
        "Packets received on the interface.",
        |c| c.rx_packets,
    ),
    (
        "interfaces_rx_bytes",
        "Bytes received on the interface.",
        |c| c.rx_bytes,
    ),
    (
        "interfaces_tx_packets",
        "Packets sent on the interface.",
        |c| c.tx_packets,
    ),
    ("interfaces_tx_bytes", "Bytes sent on the interface.", |c| {
        c.tx_bytes
    }),
    (
        "interfaces_drops",
        "Packets received on the interface that the graph dropped.",
        |c| c.drops,
    ),
    (
        "interfaces_tx_error",
        "Packets the driver could not send (ring full, send error).",
        |c| c.tx_errors,
    ),
    (
        "interfaces_tx_peer_full",
        "Of the tx errors, packets the peer had no room for.",
        |c| c.tx_peer_full,
    ),
    (
        "interfaces_rx_miss",
        "Packets the kernel or NIC dropped before sluice saw them.",
        |c| c.rx_miss,
    ),
];

type NodeField = fn(&NodeTotals) -> u64;

/// The node statistics: (name, help, value).
const NODE_COUNTERS: [(&str, &str, NodeField); 3] = [
    (
        "nodes_calls",
        "Times the graph ran the node, summed over workers.",
        |n| n.calls,
    ),
    (
        "nodes_vectors",
        "Packets the node handled, summed over workers.",
        |n| n.vectors,
    ),
    (
        "nodes_clocks",
        "TSC ticks spent in the node, summed over workers (sys_tsc_hz per second).",
        |n| n.clocks,
    ),
];

fn gauge_value(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// One scrape's values, written out in a fixed order (a `Collector`: the registry asks it
/// on encoding, so nothing is kept between scrapes).
#[derive(Debug)]
struct Exposition(Snapshot);

impl Collector for Exposition {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        for (name, help, field) in INTERFACE_COUNTERS {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (itf, totals) in &s.interfaces {
                let labels = [("interface", itf.as_str())];
                ConstCounter::new(field(totals)).encode(m.encode_family(&labels)?)?;
            }
        }
        for (name, help, field) in NODE_COUNTERS {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for n in &s.nodes {
                let labels = [("node", n.name.as_str())];
                ConstCounter::new(field(n)).encode(m.encode_family(&labels)?)?;
            }
        }
        let mut m = enc.encode_descriptor(
            "err",
            "Packets a node dropped or flagged, by node and reason, summed over workers.",
            None,
            MetricType::Counter,
        )?;
        for e in &s.errors {
            let labels = [("node", e.node.as_str()), ("error", e.reason.as_str())];
            ConstCounter::new(e.count).encode(m.encode_family(&labels)?)?;
        }
        if let Some(b) = &s.buffers {
            for (name, help, v) in [
                ("buffer_pools_buffers", "Buffers in the pool.", b.total),
                (
                    "buffer_pools_available",
                    "Free buffers in the pool's shared free list.",
                    b.free_in_pool,
                ),
                (
                    "buffer_pools_cached",
                    "Free buffers in the workers' caches.",
                    b.free_in_caches,
                ),
                (
                    "buffer_pools_used",
                    "Buffers in use (in frames, driver rings or elsewhere).",
                    b.in_use,
                ),
            ] {
                let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
                let labels = [("pool", POOL)];
                ConstGauge::new(gauge_value(v)).encode(m.encode_family(&labels)?)?;
            }
            for (name, help, v) in [
                (
                    "buffer_pools_free_list_locks",
                    "Takes of the pool's shared free list (a batch of buffers each).",
                    b.free_list_locks,
                ),
                (
                    "buffer_pools_free_list_contended",
                    "Takes of the shared free list that waited for another thread.",
                    b.free_list_contended,
                ),
            ] {
                let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
                let labels = [("pool", POOL)];
                ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
            }
        }
        type QueueField = fn(&QueueTotals) -> u64;
        let queue_counters: [(&str, &str, QueueField); 3] = [
            (
                "queues_rx_packets",
                "Packets received on the receive queue.",
                |q| q.packets,
            ),
            (
                "queues_rx_bytes",
                "Bytes received on the receive queue.",
                |q| q.bytes,
            ),
            (
                "queues_rx_drops",
                "Frames lost on the receive queue (device misses, no buffer, bad frames).",
                |q| q.drops,
            ),
        ];
        for (name, help, field) in queue_counters {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for q in &s.queues {
                let queue = q.queue.to_string();
                let labels = [("interface", q.interface.as_str()), ("queue", &queue)];
                ConstCounter::new(field(q)).encode(m.encode_family(&labels)?)?;
            }
        }
        let mut m = enc.encode_descriptor(
            "queues_worker",
            "The worker that polls the receive queue.",
            None,
            MetricType::Gauge,
        )?;
        for q in &s.queues {
            let queue = q.queue.to_string();
            let labels = [("interface", q.interface.as_str()), ("queue", &queue)];
            ConstGauge::new(gauge_value(q.worker as u64)).encode(m.encode_family(&labels)?)?;
        }
        let mut m = enc.encode_descriptor(
            "sys_worker_busy_clocks",
            "TSC ticks the worker spent in graph passes that received packets (its busy time; sys_tsc_hz per second).",
            None,
            MetricType::Counter,
        )?;
        for (w, clocks) in s.busy_clocks.iter().enumerate() {
            let worker = w.to_string();
            let labels = [("worker", worker.as_str())];
            ConstCounter::new(*clocks).encode(m.encode_family(&labels)?)?;
        }
        let m = enc.encode_descriptor(
            "sys_num_worker_threads",
            "Worker threads running the graph.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(gauge_value(s.workers as u64)).encode(m)?;
        crate::acl::session::metrics::encode(&mut enc, &s.sessions)?;
        super::metrics_netlink::encode(&s.netlink, &mut enc)?;
        let m = enc.encode_descriptor(
            "sys_tsc_hz",
            "Ticks per second of the clock nodes_clocks counts.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(s.tsc_hz).encode(m)
    }
}

/// The exposition of `s` in the Prometheus text format: interfaces in index order, nodes in
/// name order, error counters by node name.
pub fn encode(mut s: Snapshot) -> String {
    let mut r = Registry::default();
    let health = std::mem::take(&mut s.health);
    r.register_collector(Box::new(Exposition(s)));
    r.register_collector(Box::new(super::health::Exposition(health)));
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_text::encode(&mut text, &r);
    text
}

/// The metrics endpoint's socket, bound before the dataplane starts (so a port in use stops
/// the daemon before it touches an interface).
pub struct MetricsListener {
    listener: TcpListener,
}

impl MetricsListener {
    pub fn bind(addr: SocketAddr) -> Result<MetricsListener, String> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| format!("cannot listen for metrics on {addr}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("metrics socket: {e}"))?;
        Ok(MetricsListener { listener })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve scrapes of `source` on a thread of its own until the server is stopped.
    pub fn serve(self, source: MetricsSource) -> Result<MetricsServer, String> {
        self.serve_with(move || encode(source.snapshot()))
    }

    /// The same with the exposition made by `metrics`.
    fn serve_with(
        self,
        metrics: impl Fn() -> String + Send + 'static,
    ) -> Result<MetricsServer, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sluice_metrics".into())
            .spawn(move || self.run(&metrics, &flag))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        Ok(MetricsServer {
            stop,
            handle: Some(handle),
        })
    }

    fn run(&self, metrics: &dyn Fn() -> String, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    // A client that goes away or stalls costs only its own answer.
                    let _ = answer(stream, metrics, stop);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(STOP_CHECK);
                }
                Err(e) => {
                    eprintln!("sluice: metrics accept: {e}");
                    std::thread::sleep(STOP_CHECK);
                }
            }
        }
    }
}

/// The running metrics thread; stopped (and joined) by `stop` or when dropped.
pub struct MetricsServer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl MetricsServer {
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.halt();
    }
}

/// An HTTP answer: status line, content type, body.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    /// Extra header lines, each ending in CRLF.
    headers: &'static str,
    body: String,
    /// HEAD: the headers of the GET answer without its body.
    head_only: bool,
}

impl Answer {
    fn text(status: u16, reason: &'static str, body: &str) -> Answer {
        Answer {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            headers: "",
            body: format!("{body}\n"),
            head_only: false,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
            self.status,
            self.reason,
            self.content_type,
            self.body.len(),
            self.headers
        )
        .into_bytes();
        if !self.head_only {
            out.extend_from_slice(self.body.as_bytes());
        }
        out
    }
}

/// The answer to a request head (everything up to the blank line); `metrics` makes the
/// exposition, only when it is asked for.
fn route(head: &[u8], metrics: impl FnOnce() -> String) -> Answer {
    let Ok(head) = std::str::from_utf8(head) else {
        return Answer::text(400, "Bad Request", "bad request");
    };
    let line = head.lines().next().unwrap_or("");
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Answer::text(400, "Bad Request", "bad request line");
    };
    if !version.starts_with("HTTP/1.") {
        return Answer::text(505, "HTTP Version Not Supported", "HTTP/1.x only");
    }
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return Answer::text(404, "Not Found", "not found: try GET /metrics");
    }
    if method != "GET" && method != "HEAD" {
        let mut a = Answer::text(
            405,
            "Method Not Allowed",
            "method not allowed: GET /metrics",
        );
        a.headers = "Allow: GET, HEAD\r\n";
        return a;
    }
    Answer {
        status: 200,
        reason: "OK",
        content_type: prometheus_text::CONTENT_TYPE,
        headers: "",
        body: metrics(),
        head_only: method == "HEAD",
    }
}

/// The request head, up to and without the blank line; `None` when the client closed, sent
/// nothing complete within `HEAD_TIMEOUT`, or `stop` was set meanwhile; `Err(())` when it is
/// longer than `MAX_HEAD`.
fn read_head(stream: &mut TcpStream, stop: &AtomicBool) -> Result<Option<Vec<u8>>, ()> {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match head_end(&head) {
            Some(end) if end <= MAX_HEAD => {
                head.truncate(end);
                return Ok(Some(head));
            }
            Some(_) => return Err(()),
            None if head.len() > MAX_HEAD => return Err(()),
            None => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if stream.set_read_timeout(Some(left.min(STOP_CHECK))).is_err() {
            return Ok(None);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(None),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return Ok(None),
        }
    }
}

/// Where the head ends: the first blank line (CRLF CRLF, or bare LF LF).
fn head_end(buf: &[u8]) -> Option<usize> {
    (0..buf.len()).find(|&i| buf[i..].starts_with(b"\r\n\r\n") || buf[i..].starts_with(b"\n\n"))
}

/// Answer one connection: read the head, write the answer, close.
fn answer(
    mut stream: TcpStream,
    metrics: impl FnOnce() -> String,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let a = match read_head(&mut stream, stop) {
        Ok(Some(head)) => route(&head, metrics),
        Ok(None) => return Ok(()),
        Err(()) => Answer::text(
            431,
            "Request Header Fields Too Large",
            "request head too long",
        ),
    };
    stream.write_all(&a.bytes())?;
    stream.shutdown(Shutdown::Write)?;
    // Read what the client still sends (a body, say) for a moment, so that closing with
    // unread data does not reset the connection before it has read the answer.
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut sink = [0u8; 1024];
    let mut left: usize = 64 * 1024;
    while left > 0 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        Snapshot {
            interfaces: vec![
                (
                    "e0".into(),
                    IfTotals {
                        rx_packets: 10,
                        rx_bytes: 1000,
                        tx_packets: 7,
                        tx_bytes: 700,
                        drops: 3,
                        tx_errors: 1,
                        tx_peer_full: 1,
                        rx_miss: 2,
                    },
                ),
                ("e1.100".into(), IfTotals::default()),
            ],
            nodes: vec![NodeTotals {
                name: "ip4-lookup".into(),
                calls: 4,
                vectors: 9,
                clocks: 1234,
            }],
            errors: vec![
                ErrorTotal {
                    node: "ip4-input".into(),
                    reason: "ip4 ttl <= 1".into(),
                    count: 5,
                },
                ErrorTotal {
                    node: "odd\"node\\".into(),
                    reason: "line\nbreak".into(),
                    count: 0,
                },
            ],
            buffers: None,
            queues: vec![
                QueueTotals {
                    interface: "e0".into(),
                    queue: 0,
                    worker: 0,
                    packets: 6,
                    bytes: 600,
                    drops: 1,
                },
                QueueTotals {
                    interface: "e0".into(),
                    queue: 1,
                    worker: 1,
                    packets: 4,
                    bytes: 400,
                    drops: 0,
                },
            ],
            busy_clocks: vec![100, 0],
            workers: 2,
            tsc_hz: 2.5e9,
            health: Default::default(),
            sessions: Vec::new(),
            netlink: vec![crate::netlink::NetlinkStats {
                netns: Some("ns1".into()),
                routes_refused_table: 3,
                queue_overflows: 1,
                ..Default::default()
            }],
        }
    }

    #[test]
    fn netlink_metrics() {
        let t = encode(snapshot());
        let s = samples(&t);
        for line in [
            "netlink_routes_refused_table_total{netns=\"ns1\"} 3",
            "netlink_queue_overflows_total{netns=\"ns1\"} 1",
            "netlink_overflows_total{netns=\"ns1\"} 0",
        ] {
            assert!(s.contains(&line), "{line} missing from\n{t}");
        }
    }

    #[test]
    fn queue_and_worker_metrics() {
        let t = encode(snapshot());
        let s = samples(&t);
        for line in [
            "queues_rx_packets_total{interface=\"e0\",queue=\"0\"} 6",
            "queues_rx_packets_total{interface=\"e0\",queue=\"1\"} 4",
            "queues_rx_bytes_total{interface=\"e0\",queue=\"0\"} 600",
            "queues_rx_drops_total{interface=\"e0\",queue=\"0\"} 1",
            "queues_worker{interface=\"e0\",queue=\"1\"} 1",
            "sys_worker_busy_clocks_total{worker=\"0\"} 100",
            "sys_worker_busy_clocks_total{worker=\"1\"} 0",
        ] {
            assert!(s.contains(&line), "{line} missing from\n{t}");
        }
    }

    /// The sample lines of `text` (no comments).
    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn interface_counters_carry_vpp_names_and_the_interface_label() {
        let t = encode(snapshot());
        let s = samples(&t);
        for line in [
            "interfaces_rx_packets_total{interface=\"e0\"} 10",
            "interfaces_rx_bytes_total{interface=\"e0\"} 1000",
            "interfaces_tx_packets_total{interface=\"e0\"} 7",
            "interfaces_tx_bytes_total{interface=\"e0\"} 700",
            "interfaces_drops_total{interface=\"e0\"} 3",
            "interfaces_tx_error_total{interface=\"e0\"} 1",
            "interfaces_tx_peer_full_total{interface=\"e0\"} 1",
            "interfaces_rx_miss_total{interface=\"e0\"} 2",
            "interfaces_rx_packets_total{interface=\"e1.100\"} 0",
        ] {
            assert!(s.contains(&line), "{line} missing from\n{t}");
        }
        assert!(
            t.contains("# TYPE interfaces_rx_packets_total counter\n"),
            "{t}"
        );
        assert!(
            t.contains("# HELP interfaces_rx_packets_total Packets received on the interface.\n"),
            "{t}"
        );
        assert!(
            !t.contains(".."),
            "the encoder ends each help with a period: {t}"
        );
    }

    #[test]
    fn node_error_and_system_metrics() {
        let t = encode(snapshot());
        let s = samples(&t);
        for line in [
            "nodes_calls_total{node=\"ip4-lookup\"} 4",
            "nodes_vectors_total{node=\"ip4-lookup\"} 9",
            "nodes_clocks_total{node=\"ip4-lookup\"} 1234",
            "err_total{node=\"ip4-input\",error=\"ip4 ttl <= 1\"} 5",
            "sys_num_worker_threads 2",
            "sys_tsc_hz 2500000000.0",
        ] {
            assert!(s.contains(&line), "{line} missing from\n{t}");
        }
        assert!(t.contains("# TYPE sys_num_worker_threads gauge\n"), "{t}");
        assert!(!t.contains("buffer_pools"), "no pool, no pool metrics: {t}");
    }

    #[test]
    fn series_keep_the_snapshot_order() {
        let t = encode(snapshot_with_input_first());
        let at = |needle: &str| t.find(needle).unwrap_or_else(|| panic!("{needle}: {t}"));
        assert!(at("{interface=\"e0\"} 10") < at("{interface=\"e1.100\"} 0"));
        assert!(
            at("nodes_calls_total{node=\"af-packet-input\"}")
                < at("nodes_calls_total{node=\"ip4-lookup\"}")
        );
        assert!(at("# TYPE interfaces_rx_packets_total") < at("# TYPE nodes_calls_total"));
        assert!(at("# TYPE nodes_clocks_total") < at("# TYPE err_total"));
        assert_eq!(
            t,
            encode(snapshot_with_input_first()),
            "the same values, the same text"
        );
    }

    fn snapshot_with_input_first() -> Snapshot {
        let mut s = snapshot();
        s.nodes.insert(
            0,
            NodeTotals {
                name: "af-packet-input".into(),
                ..NodeTotals::default()
            },
        );
        s
    }

    #[test]
    fn label_values_are_escaped() {
        let t = encode(snapshot());
        let want = r#"err_total{node="odd\"node\\",error="line\nbreak"} 0"#;
        assert!(samples(&t).contains(&want), "{want} missing from\n{t}");
        // Every sample is one line: the newline in the reason did not break it.
        for l in samples(&t) {
            assert!(
                l.rsplit_once(' ')
                    .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
                "{l}"
            );
        }
    }

    #[test]
    fn buffer_pool_gauges() {
        let mut s = snapshot();
        s.buffers = Some(BufferReport {
            total: 16384,
            free_in_pool: 16000,
            free_in_caches: 256,
            in_use: 128,
            in_frames: 0,
            in_drivers: 128,
            unaccounted: 0,
            buffer_size: 2304,
            data_size: 2048,
            region_bytes: 1 << 25,
            huge_pages: false,
            free_list_locks: 7,
            free_list_contended: 2,
        });
        let t = encode(s);
        for line in [
            "buffer_pools_buffers{pool=\"default\"} 16384",
            "buffer_pools_available{pool=\"default\"} 16000",
            "buffer_pools_cached{pool=\"default\"} 256",
            "buffer_pools_used{pool=\"default\"} 128",
            "buffer_pools_free_list_locks_total{pool=\"default\"} 7",
            "buffer_pools_free_list_contended_total{pool=\"default\"} 2",
        ] {
            assert!(samples(&t).contains(&line), "{line} missing from\n{t}");
        }
        assert!(t.contains("# TYPE buffer_pools_used gauge\n"), "{t}");
    }

    fn route_of(head: &str) -> Answer {
        route(head.as_bytes(), || "m 1\n".to_string())
    }

    #[test]
    fn only_get_metrics_is_served() {
        let a = route_of("GET /metrics HTTP/1.1\r\nHost: x");
        assert_eq!((a.status, a.body.as_str()), (200, "m 1\n"));
        assert!(a.content_type.starts_with("text/plain; version=0.0.4"));
        assert_eq!(route_of("GET /metrics?x=1 HTTP/1.0").status, 200);
        let head = route_of("HEAD /metrics HTTP/1.1");
        assert_eq!(head.status, 200);
        let bytes = String::from_utf8(head.bytes()).unwrap();
        assert!(
            bytes.ends_with("Content-Length: 4\r\nConnection: close\r\n\r\n"),
            "{bytes}"
        );
        assert_eq!(route_of("GET / HTTP/1.1").status, 404);
        assert_eq!(route_of("GET /metricsx HTTP/1.1").status, 404);
        let post = route_of("POST /metrics HTTP/1.1");
        assert_eq!(post.status, 405);
        assert_eq!(post.headers, "Allow: GET, HEAD\r\n");
        assert_eq!(route_of("DELETE /metrics HTTP/1.1").status, 405);
        assert_eq!(route_of("GET /metrics HTTP/2.0").status, 505);
        assert_eq!(route_of("GET /metrics").status, 400);
        assert_eq!(route_of("").status, 400);
        assert_eq!(route(b"GET /\xff HTTP/1.1", String::new).status, 400);
    }

    #[test]
    fn the_answer_is_http_1_1_with_a_length() {
        let a = route_of("GET /metrics HTTP/1.1");
        let text = String::from_utf8(a.bytes()).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("\r\nContent-Length: 4\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nm 1\n"), "{text}");
    }

    #[test]
    fn head_ends_at_the_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), Some(20));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(14));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }

    /// A server on an ephemeral loopback port serving a fixed exposition.
    fn serve_fixed() -> (SocketAddr, MetricsServer) {
        let l = MetricsListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        (addr, l.serve_with(|| "m 1\n".to_string()).unwrap())
    }

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn a_stalled_client_does_not_keep_the_next_one_waiting_forever() {
        let (addr, server) = serve_fixed();
        // Connects and sends half a request line, then nothing.
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled.write_all(b"GET /met").unwrap();
        let t0 = Instant::now();
        let out = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("m 1\n"),
            "{out}"
        );
        assert!(t0.elapsed() < HEAD_TIMEOUT + Duration::from_secs(3));
        let out = exchange(
            addr,
            b"PUT /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        );
        assert!(out.starts_with("HTTP/1.1 405 "), "{out}");
        let long = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD)
        );
        let out = exchange(addr, long.as_bytes());
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        drop(stalled);
        let t0 = Instant::now();
        server.stop();
        assert!(t0.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn the_server_stops_while_a_client_stalls() {
        let (addr, server) = serve_fixed();
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        // Let the server take the connection and wait on it.
        std::thread::sleep(Duration::from_millis(300));
        let t0 = Instant::now();
        server.stop();
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        stalled
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut out = String::new();
        let _ = stalled.read_to_string(&mut out);
        assert_eq!(out, "", "no answer to an unfinished request");
    }
}
