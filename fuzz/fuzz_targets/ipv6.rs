//! The IPv6 header view and the ICMPv6 helpers on arbitrary bytes: never a panic; an accepted
//! header's payload lies inside the bytes; an error built about anything verifies and fits
//! in 1280 bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::wire::icmp6;
use sluice::wire::ipv6::{self, Ipv6Header};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Ipv6Header::parse(data) {
        assert!(h.total_len() <= data.len());
        assert_eq!(h.payload().len(), h.payload_len());
    }
    if let Some((_, at)) = icmp6::upper_layer(data) {
        assert!(at <= data.len());
    }
    let kind = data.first().copied().unwrap_or(3);
    let _ = icmp6::error_forbidden(data, kind, 0);
    let mut out = [0u8; 1500];
    if let Some(n) = icmp6::build_error(&mut out, data, kind, 0, 0, 1) {
        assert!(n <= ipv6::MIN_MTU);
        let h = Ipv6Header::parse(&out[..n]).unwrap();
        let sum = ipv6::upper_layer_checksum(h.source(), h.destination(), 58, h.payload());
        assert_eq!(sum, 0);
    }
    let mut copy = data.to_vec();
    if let Ok(n) = icmp6::echo_request_to_reply(&mut copy, 1) {
        assert!(n <= data.len());
    }
});
