//! The RSS flow of arbitrary bytes: never panics, never longer than the key covers, and a
//! frame with a flow hashes as its input says.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::rss::{flow_input, Toeplitz, MAX_INPUT, STANDARD_KEY};

fuzz_target!(|data: &[u8]| {
    let (input, len) = flow_input(data);
    assert!(matches!(len, 0 | 8 | 12 | 32 | 36) && len <= MAX_INPUT);
    let t = Toeplitz::new(&STANDARD_KEY);
    assert_eq!(t.frame(data), t.hash(&input[..len]));
});
