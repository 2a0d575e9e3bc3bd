//! Packet trace: `trace add NODE N` marks the next N packets an input node takes in, and
//! every node they pass adds a line to their record.

use crate::buffer::{WorkerBuffers, FLAG_TRACED};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// Most packet records a worker keeps before `clear trace`.
pub const MAX_RECORDS: usize = 10_000;

/// The trace of one packet, node by node.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PacketTrace {
    pub packet: u64,
    pub lines: Vec<String>,
}

/// Trace state other threads see: budgets set by the control plane, finished records.
pub struct TraceShared {
    budgets: Vec<AtomicU32>,
    armed: AtomicBool,
    next_packet: AtomicU64,
    records: Mutex<Vec<PacketTrace>>,
}

impl TraceShared {
    pub fn new(nodes: usize) -> TraceShared {
        TraceShared {
            budgets: (0..nodes).map(|_| AtomicU32::new(0)).collect(),
            armed: AtomicBool::new(false),
            next_packet: AtomicU64::new(0),
            records: Mutex::new(Vec::new()),
        }
    }

    /// Trace the next `count` packets that input node `node` takes in.
    pub fn add(&self, node: usize, count: u32) {
        self.budgets[node].fetch_add(count, Ordering::Relaxed);
        self.armed.store(true, Ordering::Release);
    }

    /// Finished records, oldest first.
    pub fn records(&self) -> Vec<PacketTrace> {
        self.records.lock().unwrap().clone()
    }

    /// Forget records and budgets.
    pub fn clear(&self) {
        for b in &self.budgets {
            b.store(0, Ordering::Relaxed);
        }
        self.armed.store(false, Ordering::Release);
        self.records.lock().unwrap().clear();
    }
}

/// A worker's side of the trace. The `armed` flag is read once per pass, so a worker that
/// traces nothing pays one relaxed load per pass and nodes run their untraced loop.
pub struct Tracer {
    shared: std::sync::Arc<super::GraphShared>,
    active: bool,
    pass: Vec<PacketTrace>,
}

impl Tracer {
    pub fn new(shared: std::sync::Arc<super::GraphShared>) -> Tracer {
        Tracer {
            shared,
            active: false,
            pass: Vec::new(),
        }
    }

    #[inline(always)]
    pub fn active(&self) -> bool {
        self.active
    }

    pub fn begin_pass(&mut self) {
        self.active = self.shared.trace.armed.load(Ordering::Acquire);
    }

    /// Packets are finished by the end of a pass: publish their records.
    pub fn end_pass(&mut self) {
        if self.pass.is_empty() {
            return;
        }
        let mut all = self.shared.trace.records.lock().unwrap();
        let room = MAX_RECORDS.saturating_sub(all.len());
        all.extend(self.pass.drain(..).take(room));
        self.pass.clear();
    }

    pub fn start(&mut self, bufs: &mut WorkerBuffers, node: usize, bi: u32) -> bool {
        if !self.active {
            return false;
        }
        let budget = &self.shared.trace.budgets[node];
        if self.pass.len() >= u16::MAX as usize
            || budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                .is_err()
        {
            return false;
        }
        let packet = self
            .shared
            .trace
            .next_packet
            .fetch_add(1, Ordering::Relaxed);
        let m = bufs.meta_mut(bi);
        m.flags |= FLAG_TRACED;
        m.trace_index = self.pass.len() as u16;
        self.pass.push(PacketTrace {
            packet,
            lines: Vec::new(),
        });
        true
    }

    pub fn add(
        &mut self,
        bufs: &WorkerBuffers,
        node_name: &str,
        bi: u32,
        line: impl std::fmt::Display,
    ) {
        let m = bufs.meta(bi);
        if m.flags & FLAG_TRACED == 0 {
            return;
        }
        if let Some(rec) = self.pass.get_mut(m.trace_index as usize) {
            rec.lines.push(format!("{node_name}: {line}"));
        }
    }
}
