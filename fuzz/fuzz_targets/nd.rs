//! Neighbour discovery parsing on arbitrary IPv6 packets: never a panic, and what it accepts
//! keeps its promises (target not multicast, a solicitation from :: carries no link address).
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::wire::icmp6::{parse_nd, NdMessage};
use sluice::wire::ipv6::{self, Ipv6Header};

fuzz_target!(|data: &[u8]| {
    match parse_nd(data) {
        Ok(NdMessage::Solicit {
            target,
            source_link_addr,
        }) => {
            assert!(!ipv6::is_multicast(target));
            let h = Ipv6Header::parse(data).unwrap();
            assert_eq!(h.hop_limit(), 255);
            if h.source() == 0 {
                assert!(source_link_addr.is_none());
            }
        }
        Ok(NdMessage::Advert { target, .. }) => assert!(!ipv6::is_multicast(target)),
        Err(_) => {}
    }
});
