//! Route files (plain, `ip route`, `birdc`) on arbitrary text: errors, never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = sluice::fib::parse::parse_routes(&text, "fuzz");
});
