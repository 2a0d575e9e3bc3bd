//! The control plane: the CLI socket, its commands, and the client that talks to it.

pub mod client;
