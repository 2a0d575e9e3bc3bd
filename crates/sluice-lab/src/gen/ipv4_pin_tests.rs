//! Item 5 of issue 35: the IPv4/UDP frames of every existing profile are byte for byte what
//! they were before IPv6 and TCP came in. The hashes were taken from main's code (cde908b)
//! before the frame builder changed; a change to any byte of any of these frames fails here.

use super::args::tests::options;
use super::frame::WARMUP_SEQ;
use super::reverse_profile;

/// FNV-1a, 64 bits: small, stable, no dependency.
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// The sequence numbers hashed: the first frames (every size of a mix, every flow of a few),
/// the var2 wrap, the flow pairs' wrap, warm-up frames.
fn seqs() -> Vec<u64> {
    let mut v: Vec<u64> = (0..260).collect();
    v.extend(65_530..65_540);
    v.extend(4_128_760..4_128_772);
    v.extend([WARMUP_SEQ | 5, WARMUP_SEQ | 70_000, (1 << 48) - 1]);
    v
}

/// The command lines pinned and their hashes (forward direction, and reverse with --bi).
const PINNED: &[(&str, u64)] = &[
    ("", 0x326c1a0bb4c9fe09),
    ("--size 1518", 0x1989f4f18dcae5c3),
    ("--size imix", 0x0610bcca18b02f04),
    ("--size simple-imix", 0x5bfb4cbf9350971d),
    ("--size mixed", 0x7aa4523d0d959558),
    ("--size 64,1514,9018", 0xc2b2a4c3ce3db8c7),
    ("--flows 100", 0x7d58ccd3abadd926),
    ("--flows 4128768", 0x948d72b5521a199e),
    ("--flows var2", 0xf4c55e509e16c043),
    ("--flows var2 --size imix", 0xebada79af8972b32),
    (
        "--flows var2 --src-net 16.0 --dst-net 48.0.0.0/16",
        0x8809b5f20319aa0a,
    ),
    ("--vlan 100", 0x4bc70fa1fbcd2d5e),
    ("--qinq 10,20 --size 1518", 0x0b5ef10f9ac6d272),
    ("--flows var2 --vlan 100 --vlans 16", 0x4962eedea3716db6),
    (
        "--flows 1000 --qinq 10,20 --vlans 8 --size imix",
        0xea36c317b30fd069,
    ),
    ("--macs 1000 --flows 10", 0x59304aa61fcfdc04),
    (
        "--src-mac 02:aa:00:00:00:01 --dst-mac 02:bb:00:00:00:02 --routed",
        0x6215638c72844bb5,
    ),
    (
        "--rx t1 --bi --flows 50 --dst-mac-reverse 02:00:00:00:00:09",
        0xe257abe26b726f29,
    ),
];

fn hash_of(args: &str) -> (u64, u64) {
    let o = options(&format!("--tx t0 {args}")).unwrap_or_else(|e| panic!("{args}: {e}"));
    let mut h = (0xcbf2_9ce4_8422_2325u64, 0xcbf2_9ce4_8422_2325u64);
    let rev = reverse_profile(&o);
    let mut f = Vec::new();
    for seq in seqs() {
        let ts = 0x0123_4567_89ab_cdef ^ seq.wrapping_mul(0x9e37_79b9);
        o.profile.build(seq, ts, &mut f);
        fnv(&mut h.0, &(f.len() as u32).to_le_bytes());
        fnv(&mut h.0, &f);
        rev.build(seq, ts, &mut f);
        fnv(&mut h.1, &(f.len() as u32).to_le_bytes());
        fnv(&mut h.1, &f);
    }
    h
}

#[test]
fn ipv4_udp_frames_are_what_they_were() {
    let mut wrong = Vec::new();
    for &(args, want) in PINNED {
        let (fwd, rev) = hash_of(args);
        let got = fwd ^ rev.rotate_left(1);
        if got != want {
            wrong.push(args);
        }
    }
    assert!(wrong.is_empty(), "frames changed for: {wrong:?}");
}
