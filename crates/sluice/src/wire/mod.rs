//! Wire formats as zero-copy views over byte slices, in the smoltcp style: parsing is safe
//! code, never panics, and rejects what is too short with an error instead of reading past it.

pub mod arp;
pub mod ethernet;
pub mod icmp4;
pub mod icmp6;
pub mod ipv4;
pub mod ipv6;
pub mod mac;
pub mod tcp;

pub use ethernet::{EtherType, Frame as EthernetFrame};
pub use mac::MacAddress;

/// Why a header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The buffer ends before the header does.
    Truncated,
}
