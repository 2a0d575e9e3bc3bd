//! The control plane: the CLI socket, its commands, and the client that talks to it.

pub mod cli;
pub mod client;
pub mod exec;
pub mod routing;
pub mod server;
