//! ethernet-input's parser on arbitrary bytes: it must never panic, and what it accepts must
//! point inside the frame.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::wire::ethernet::Repr;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Repr::parse(data) {
        assert!(r.l3_offset as usize <= data.len());
        assert!(r.vlan_count <= 2);
    }
});
