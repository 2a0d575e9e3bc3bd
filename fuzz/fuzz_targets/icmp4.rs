//! The ICMPv4 functions on arbitrary bytes: none may panic, a reply must verify, and an
//! error built about anything must be a valid IPv4 packet of at most 576 bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::wire::icmp4::{build_error, echo_request_to_reply, error_forbidden, MAX_ERROR_LEN};
use sluice::wire::ipv4::{checksum, Ipv4Header};

fuzz_target!(|data: &[u8]| {
    let _ = error_forbidden(data);

    let mut out = [0u8; 1500];
    let room = data.first().map_or(0, |&b| b as usize * 4).min(out.len());
    if let Some(n) = build_error(&mut out[..room], data, 11, 0, 0, 0x0a00_0001) {
        assert!(n <= MAX_ERROR_LEN && n <= room);
        let h = Ipv4Header::parse(&out[..n]).expect("error packet header");
        assert_eq!(h.total_len(), n);
        assert_eq!(checksum(&out[20..n]), 0);
    }

    let mut p = data.to_vec();
    if echo_request_to_reply(&mut p, 0x0a00_0001).is_ok() {
        let h = Ipv4Header::parse(&p).expect("reply header");
        assert_eq!(checksum(&p[h.header_len()..h.total_len()]), 0);
    } else {
        assert_eq!(p, data, "a refused request is left unchanged");
    }
});
