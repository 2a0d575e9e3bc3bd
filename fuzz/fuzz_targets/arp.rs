//! ARP parsing on arbitrary bytes: never panics, and what parses emits back to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::wire::arp::{ArpPacket, ARP_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ArpPacket::parse(data) {
        let mut out = [0u8; ARP_LEN];
        p.emit(&mut out).unwrap();
        assert_eq!(&out[..], &data[..ARP_LEN]);
    }
});
