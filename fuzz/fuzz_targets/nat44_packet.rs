//! NAT44's packet code on arbitrary bytes: `classify` never panics, and what it accepts
//! `rewrite` / `rewrite_error` translate without panicking. A flow written over with its
//! reversed tuple reads back as that tuple and keeps a right IPv4 header checksum right;
//! written back, it reads as it came. An ICMP error whose quote is translated keeps its
//! outer header checksum right, its ICMP checksum verifies, and its quote reads back as the
//! new tuple.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::nat44::packet::{classify, rewrite, rewrite_error, Kind};
use sluice::wire::ipv4::checksum;

/// Whether the IPv4 header at the start of `ip` has a right checksum (its length is one
/// `classify` accepted).
fn header_ok(ip: &[u8]) -> bool {
    let ihl = (ip[0] & 0x0f) as usize * 4;
    checksum(&ip[..ihl]) == 0
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fuzz_target!(|data: &[u8]| {
    let mut ip = data.to_vec();
    match classify(&ip) {
        Ok(Kind::Flow { tuple, l4, flags }) => {
            let sound = header_ok(&ip);
            let back = tuple.reversed();
            rewrite(&mut ip, l4, &tuple, &back);
            assert_eq!(
                header_ok(&ip),
                sound,
                "header checksum after {tuple} => {back}"
            );
            match classify(&ip) {
                Ok(Kind::Flow {
                    tuple: t,
                    l4: l,
                    flags: f,
                }) => {
                    assert_eq!((t, l, f), (back, l4, flags))
                }
                other => panic!("{tuple} => {back} read back as {other:?}"),
            }
            rewrite(&mut ip, l4, &back, &tuple);
            assert!(
                matches!(classify(&ip), Ok(Kind::Flow { tuple: t, .. }) if t == tuple),
                "written back"
            );
            assert_eq!(header_ok(&ip), sound);
        }
        Ok(Kind::Error { inner, l4, at }) => {
            let sound = header_ok(&ip);
            let new_inner = inner.reversed();
            let (src, dst) = (be32(&ip, 12), be32(&ip, 16));
            rewrite_error(&mut ip, (l4, at), (&inner, &new_inner), (dst, src));
            assert_eq!(header_ok(&ip), sound, "outer header checksum");
            let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            assert_eq!(checksum(&ip[l4..total]), 0, "ICMP checksum");
            match classify(&ip) {
                Ok(Kind::Error {
                    inner: i,
                    l4: l,
                    at: a,
                }) => {
                    assert_eq!((i, l, a), (new_inner, l4, at))
                }
                other => panic!("error quoting {inner} read back as {other:?}"),
            }
        }
        Err(_) => {}
    }
});
