//! The flow key of a packet: what ACL rules (and sessions) look at, read from the IP header
//! on. Safe code, bounds-checked everywhere, property-tested on arbitrary bytes.
//!
//! - Ports for TCP and UDP (and UDP-Lite, SCTP, DCCP, which put them in the same place), ICMP
//!   and ICMPv6 type and code in the port fields, TCP flags.
//! - A fragment other than the first carries no transport header: its key has ports 0 and
//!   `later_fragment` set, and it matches only rules that do not look at ports or flags
//!   (as iptables' port matches never match such fragments).
//! - IPv6 extension headers (hop-by-hop, routing, destination options, fragment, AH) are
//!   walked to the transport header, at most `MAX_EXTENSIONS` of them.

use super::rule::{FlowKey, TCP};
use crate::wire::ipv4::Ipv4View;
use crate::wire::tcp;

/// Extension headers walked at most before the key is refused.
pub const MAX_EXTENSIONS: usize = 8;

/// Why a packet has no flow key: each becomes a counted drop where keys are needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The IP header is cut short or not of the family.
    BadIpHeader,
    /// The transport header the protocol needs is cut short.
    TruncatedTransport,
    /// An extension header is cut short, or more than `MAX_EXTENSIONS` of them.
    BadExtensions,
}

impl KeyError {
    pub fn reason(self) -> &'static str {
        match self {
            KeyError::BadIpHeader => "acl: IP header invalid",
            KeyError::TruncatedTransport => "acl: transport header truncated",
            KeyError::BadExtensions => "acl: IPv6 extension headers invalid or too many",
        }
    }
}

const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMP6: u8 = 58;

/// Protocols whose first four bytes are the source and destination port.
fn has_ports(proto: u8) -> bool {
    matches!(proto, TCP | UDP | 33 | 132 | 136) // DCCP, SCTP, UDP-Lite
}

/// Fill the key's transport fields from `l4`, the bytes after the IP headers.
fn transport(key: &mut FlowKey, l4: &[u8]) -> Result<(), KeyError> {
    let p = key.proto;
    if has_ports(p) {
        let b = l4.get(..4).ok_or(KeyError::TruncatedTransport)?;
        key.sport = u16::from_be_bytes([b[0], b[1]]);
        key.dport = u16::from_be_bytes([b[2], b[3]]);
        if p == TCP {
            key.tcp_flags = *l4
                .get(tcp::FLAGS_OFFSET)
                .ok_or(KeyError::TruncatedTransport)?;
        }
    } else if p == ICMP || p == ICMP6 {
        let b = l4.get(..2).ok_or(KeyError::TruncatedTransport)?;
        (key.sport, key.dport) = (b[0] as u16, b[1] as u16);
    }
    Ok(())
}

/// The key of an IPv4 packet, `ip` from its header on.
pub fn flow_key4(ip: &[u8]) -> Result<FlowKey, KeyError> {
    let h = Ipv4View::of(ip).ok_or(KeyError::BadIpHeader)?;
    let hl = h.header_len();
    if h.version() != 4 || hl < 20 || hl > ip.len() {
        return Err(KeyError::BadIpHeader);
    }
    let mut key = FlowKey {
        ipv6: false,
        src: (h.source() as u128) << 96,
        dst: (h.destination() as u128) << 96,
        proto: h.protocol(),
        ..FlowKey::default()
    };
    if !h.first_fragment() {
        key.later_fragment = true;
        return Ok(key);
    }
    transport(&mut key, &ip[hl..])?;
    Ok(key)
}

/// The key of an IPv6 packet, `ip` from its header on.
pub fn flow_key6(ip: &[u8]) -> Result<FlowKey, KeyError> {
    let fixed = ip.get(..40).ok_or(KeyError::BadIpHeader)?;
    if fixed[0] >> 4 != 6 {
        return Err(KeyError::BadIpHeader);
    }
    let addr = |at: usize| {
        fixed[at..at + 16]
            .iter()
            .fold(0u128, |a, &b| a << 8 | b as u128)
    };
    let mut key = FlowKey {
        ipv6: true,
        src: addr(8),
        dst: addr(24),
        ..FlowKey::default()
    };
    let mut next = fixed[6];
    let mut at = 40;
    for _ in 0..=MAX_EXTENSIONS {
        let ext = ip.get(at..).unwrap_or(&[]);
        match next {
            // Hop-by-hop, routing, destination options: length in 8-byte units, not
            // counting the first 8.
            0 | 43 | 60 => {
                let h = ext.get(..2).ok_or(KeyError::BadExtensions)?;
                next = h[0];
                at += 8 + 8 * h[1] as usize;
            }
            // Fragment: 8 bytes; a later fragment has no transport header.
            44 => {
                let h = ext.get(..8).ok_or(KeyError::BadExtensions)?;
                next = h[0];
                at += 8;
                if u16::from_be_bytes([h[2], h[3]]) >> 3 != 0 {
                    key.proto = next;
                    key.later_fragment = true;
                    return Ok(key);
                }
            }
            // Authentication header: length in 4-byte units, minus 2.
            51 => {
                let h = ext.get(..2).ok_or(KeyError::BadExtensions)?;
                next = h[0];
                at += 4 * (h[1] as usize + 2);
            }
            proto => {
                key.proto = proto;
                if at > ip.len() {
                    return Err(KeyError::BadExtensions);
                }
                transport(&mut key, &ip[at..])?;
                return Ok(key);
            }
        }
    }
    Err(KeyError::BadExtensions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(proto: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(l4);
        p
    }

    fn v6(next: u8, rest: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[6] = next;
        p[8..10].copy_from_slice(&[0x20, 0x01]);
        p[24..26].copy_from_slice(&[0x20, 0x01]);
        p[39] = 2;
        p.extend_from_slice(rest);
        p
    }

    const TCP_SYN: [u8; 20] = [
        0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn acl_keys_of_ipv4() {
        let k = flow_key4(&v4(6, 0, &TCP_SYN)).unwrap();
        assert_eq!((k.src >> 96, k.dst >> 96), (0x0a00_0001, 0x0a00_0002));
        assert_eq!((k.proto, k.sport, k.dport, k.tcp_flags), (6, 40000, 80, 2));
        let k = flow_key4(&v4(1, 0, &[8, 0, 0, 0])).unwrap();
        assert_eq!((k.sport, k.dport), (8, 0));
        // A later fragment: no ports, marked.
        let k = flow_key4(&v4(17, 185, &[1, 2])).unwrap();
        assert!(k.later_fragment && k.sport == 0);
        // A first fragment (more fragments, offset 0) has its ports.
        let k = flow_key4(&v4(17, 0x2000, &[0, 53, 0, 53])).unwrap();
        assert!(!k.later_fragment && k.dport == 53);
        assert_eq!(
            flow_key4(&v4(6, 0, &TCP_SYN[..10])),
            Err(KeyError::TruncatedTransport)
        );
        assert_eq!(
            flow_key4(&v4(17, 0, &[0, 53])),
            Err(KeyError::TruncatedTransport)
        );
        assert_eq!(flow_key4(&[0x45; 10]), Err(KeyError::BadIpHeader));
        let mut opts = v4(17, 0, &[0, 1, 0, 2]);
        opts[0] = 0x4f; // IHL 60 > the bytes present
        assert_eq!(flow_key4(&opts), Err(KeyError::BadIpHeader));
        // GRE: no ports, a key all the same.
        assert_eq!(flow_key4(&v4(47, 0, &[])).unwrap().sport, 0);
    }

    #[test]
    fn acl_keys_of_ipv6_through_extension_headers() {
        let k = flow_key6(&v6(6, &TCP_SYN)).unwrap();
        assert_eq!((k.proto, k.sport, k.dport, k.tcp_flags), (6, 40000, 80, 2));
        assert_eq!(k.dst & 0xff, 2);
        // Hop-by-hop (8 bytes) then destination options (16 bytes) then UDP.
        let mut rest = vec![60, 0, 0, 0, 0, 0, 0, 0, 17, 1];
        rest.extend([0u8; 14]);
        rest.extend([0, 53, 0, 54]);
        let k = flow_key6(&v6(0, &rest)).unwrap();
        assert_eq!((k.proto, k.sport, k.dport), (17, 53, 54));
        // First fragment: ports; later fragment: marked, no ports.
        let first = [58, 0, 0, 1, 0, 0, 0, 1, 128, 0, 0, 0];
        let k = flow_key6(&v6(44, &first)).unwrap();
        assert_eq!((k.proto, k.sport), (58, 128));
        let later = [17, 0, 0, 8, 0, 0, 0, 1];
        let k = flow_key6(&v6(44, &later)).unwrap();
        assert!(k.later_fragment && k.proto == 17);
        // Nine hop-by-hop headers: too many.
        let mut many = Vec::new();
        for _ in 0..9 {
            many.extend([0u8, 0, 0, 0, 0, 0, 0, 0]);
        }
        assert_eq!(flow_key6(&v6(0, &many)), Err(KeyError::BadExtensions));
        assert_eq!(flow_key6(&v6(0, &[6])), Err(KeyError::BadExtensions));
        assert_eq!(flow_key6(&v6(60, &[6, 9])), Err(KeyError::BadExtensions));
        assert_eq!(
            flow_key6(&v6(17, &[0, 1])),
            Err(KeyError::TruncatedTransport)
        );
        assert_eq!(flow_key6(&[0x60; 39]), Err(KeyError::BadIpHeader));
        assert_eq!(flow_key6(&v4(6, 0, &[0u8; 40])), Err(KeyError::BadIpHeader));
    }

    proptest! {
        /// Any bytes give a key or an error, never a panic.
        #[test]
        fn acl_keys_of_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200), six in any::<bool>()) {
            let mut b = bytes;
            if let Some(first) = b.first_mut() {
                *first = if six { 0x60 | (*first & 0x0f) } else { 0x40 | (*first & 0x0f) };
            }
            let _ = if six { flow_key6(&b) } else { flow_key4(&b) };
        }
    }
}
