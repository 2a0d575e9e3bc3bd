//! Carrying out CLI commands: the control plane's state (the dataplane and the baselines
//! the clear commands keep) and the step from a matched line to a reply. The handlers live
//! with their areas (interfaces.rs, l2.rs, runtime.rs, trace.rs, routing.rs).

use super::cli::{self, Output};
use super::runtime::{error_values, Baseline};
use crate::dataplane::Dataplane;
use crate::interface::Interface;
use serde_json::Value;
use std::sync::Arc;

/// The control plane's state: the dataplane and the baselines of the clear commands.
pub struct Control {
    pub dp: Dataplane,
    /// What `clear runtime` remembered, so `show runtime` reports the difference.
    pub(super) runtime: Baseline,
    /// What `clear errors` remembered, per worker, node and reason.
    pub(super) errors: Vec<Vec<Vec<u64>>>,
    /// What `clear errors` remembered of the XDP fast path's reasons.
    pub(super) xdp_errors: Vec<u64>,
    /// The config file the daemon started from, as written: `save` keeps what the CLI
    /// cannot change from it (empty when there was none, as in tests).
    pub started: toml::Table,
    /// Where the command being run comes from, for the events it causes: "cli" (a client's
    /// line or request), or "config" while `apply` (or SIGHUP) runs a file's lines.
    pub source: &'static str,
    /// The kernel id of the thread that made this (the daemon's main thread; commands run
    /// on the control socket's client threads).
    pub main_tid: i32,
}

/// A reply: text for people, or JSON.
pub enum Reply {
    Text(String),
    Json(Value),
}

impl Control {
    pub fn new(dp: Dataplane) -> Control {
        let mut errors = error_values(&dp);
        for v in errors.iter_mut().flatten().flatten() {
            *v = 0;
        }
        Control {
            runtime: Baseline::zero(&dp),
            errors,
            xdp_errors: crate::drivers::af_xdp::fastpath::reason_totals(),
            dp,
            started: toml::Table::new(),
            source: "cli",
            main_tid: crate::sys::cpu::current_thread_id(),
        }
    }

    /// Parse and carry out one command line.
    pub fn handle_line(&mut self, line: &str) -> Result<Reply, String> {
        let req = cli::parse(line)?;
        let out = (req.command.run)(self, &req.args);
        after_command(req.command);
        Ok(match out? {
            Output::Shown(_, v) if req.json => Reply::Json(v),
            Output::Shown(t, _) | Output::Text(t) => Reply::Text(t),
        })
    }

    /// The interface called `name`, or an error naming the known ones.
    pub(crate) fn interface(&self, name: &str) -> Result<&Arc<Interface>, String> {
        self.dp.interfaces.by_name(name).ok_or_else(|| {
            format!(
                "no interface named '{name}' (known: {})",
                self.dp.interfaces.names().join(", ")
            )
        })
    }

    /// The interface called `name`, or all of them.
    pub(crate) fn interfaces(&self, name: Option<&str>) -> Result<Vec<Arc<Interface>>, String> {
        match name {
            Some(n) => Ok(vec![self.interface(n)?.clone()]),
            None => Ok(self.dp.interfaces.live().cloned().collect()),
        }
    }
}

/// After a command ran (or failed half way): one that may have changed what the graph
/// decides makes what was learnt from packets (the XDP fast path's flows, the cross-connect
/// patches) stale, once the change is published.
pub fn after_command(command: &cli::Command) {
    if command.effect == cli::Effect::Changes {
        crate::graph::epoch::bump();
    }
}
