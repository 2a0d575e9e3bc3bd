//! The control plane: the CLI socket, its commands, and the client that talks to it.
//!
//! `cli` holds the command table and its matcher; every area declares its commands next to
//! their handlers in a `COMMANDS` slice that `cli::AREAS` gathers: the subsystems in their
//! folders (`interface/commands.rs`, `l2/commands.rs`, `router/commands.rs`,
//! `acl/commands.rs`, `lcp/commands.rs`) and the dataplane-wide ones here (`queues`,
//! `runtime`, `trace`, `save`). `exec` keeps the control plane's
//! state and runs a matched line; `save` writes the running configuration as a config file; `apply` applies a changed one;
//! `request` takes typed JSON requests for the same commands and `schema` describes them
//! (`docs/api-schema.json`); `watch` is the request that streams events (crate::events);
//! `server` is the socket, `client` is `sluice ctl` (`monitor` its live view of `show queues`); `metrics` is the Prometheus endpoint
//! (`[metrics] listen`), which reads the same counters on a thread of its own; `health` adds
//! the watchdog's and the control socket's metrics and the debug command that stalls a worker.

pub mod access;
pub mod apply;
pub mod audit;
pub mod cli;
pub mod client;
pub mod exec;
pub mod health;
pub mod metrics;
pub mod monitor;
pub mod queues;
pub mod request;
pub mod runtime;
pub mod save;
pub mod schema;
pub mod server;
pub mod trace;
pub mod watch;
