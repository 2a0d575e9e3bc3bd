//! The L3 header views the routing nodes read through, on arbitrary bytes: the unchecked
//! views never panic whatever the header claims (IHL, lengths), exist exactly when the fixed
//! header is present, and a header that passes the checks reads the same through them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::wire::ipv4::{Ipv4Header, Ipv4View, MIN_HEADER_LEN};
use sluice::wire::ipv6::{Ipv6View, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let v4 = Ipv4View::of(data);
    assert_eq!(v4.is_some(), data.len() >= MIN_HEADER_LEN);
    if let Some(v) = v4 {
        let read = (v.header_len(), v.total_len(), v.ttl(), v.protocol(), v.is_fragment());
        let _ = (v.source(), v.destination(), v.first_payload_word());
        if let Ok(h) = Ipv4Header::parse(data) {
            assert_eq!(read, (h.header_len(), h.total_len(), h.ttl(), h.protocol(), h.is_fragment()));
            assert!(h.header_len() <= data.len());
        }
    }
    let v6 = Ipv6View::of(data);
    assert_eq!(v6.is_some(), data.len() >= HEADER_LEN);
    if let Some(v) = v6 {
        assert!(v.payload().len() <= data.len() - HEADER_LEN);
        let _ = (v.source(), v.destination(), v.flow_label(), v.hop_limit());
    }
});
