//! The pcap reader on arbitrary bytes: errors, never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::drivers::pcap::file::parse(data);
});
