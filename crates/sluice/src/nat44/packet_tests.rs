use super::*;

const A: u32 = 0x0a00_0002; // 10.0.0.2
const R: u32 = 0xc633_6402; // 198.51.100.2
const E: u32 = 0xcb00_7101; // 203.0.113.1

/// The transport checksum of the packet, pseudo-header included (0 when it verifies).
fn l4_sum(ip: &[u8]) -> u16 {
    let ihl = (ip[0] & 15) as usize * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let seg = &ip[ihl..total];
    let mut b = Vec::new();
    if ip[9] != ICMP {
        b.extend_from_slice(&ip[12..20]);
        b.extend_from_slice(&[0, ip[9]]);
        b.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    }
    b.extend_from_slice(seg);
    checksum(&b)
}

fn finish(mut ip: Vec<u8>) -> Vec<u8> {
    let total = ip.len() as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let at = match ip[9] {
        TCP => 36,
        UDP => 26,
        _ => 22,
    };
    ip[at..at + 2].copy_from_slice(&[0, 0]);
    let c = l4_sum(&ip);
    ip[at..at + 2].copy_from_slice(&c.to_be_bytes());
    ip
}

fn packet(t: &Tuple, payload: usize) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, t.proto, 0, 0];
    ip.extend_from_slice(&t.src.to_be_bytes());
    ip.extend_from_slice(&t.dst.to_be_bytes());
    match t.proto {
        TCP => {
            ip.extend_from_slice(&t.sport.to_be_bytes());
            ip.extend_from_slice(&t.dport.to_be_bytes());
            ip.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
        }
        UDP => {
            ip.extend_from_slice(&t.sport.to_be_bytes());
            ip.extend_from_slice(&t.dport.to_be_bytes());
            ip.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
            ip.extend_from_slice(&[0, 0]);
        }
        _ => {
            ip.extend_from_slice(&[ECHO_REQUEST, 0, 0, 0]);
            ip.extend_from_slice(&t.sport.to_be_bytes());
            ip.extend_from_slice(&[0, 7]);
        }
    }
    ip.extend((0..payload).map(|i| i as u8));
    finish(ip)
}

fn verifies(ip: &[u8]) {
    assert_eq!(checksum(&ip[..20]), 0, "IP header checksum");
    assert_eq!(l4_sum(ip), 0, "transport checksum");
}

#[test]
fn every_protocol_translates_with_valid_checksums() {
    for proto in [TCP, UDP, ICMP] {
        let from = Tuple {
            proto,
            src: A,
            dst: R,
            sport: 40000,
            dport: if proto == ICMP { 40000 } else { 53 },
        };
        let mut ip = packet(&from, 33);
        let Ok(Kind::Flow { tuple, l4, .. }) = classify(&ip) else {
            panic!("{proto}: not a flow");
        };
        assert_eq!(tuple, from);
        let to = Tuple {
            src: E,
            sport: 1234,
            dport: if proto == ICMP { 1234 } else { 53 },
            ..from
        };
        rewrite(&mut ip, l4, &from, &to);
        verifies(&ip);
        assert!(matches!(classify(&ip), Ok(Kind::Flow { tuple, .. }) if tuple == to));
        // And back, as the reply's translation does to the reversed tuple.
        rewrite(&mut ip, l4, &to, &from);
        assert_eq!(ip, packet(&from, 33));
    }
}

#[test]
fn a_udp_datagram_without_checksum_keeps_none() {
    let from = Tuple {
        proto: UDP,
        src: A,
        dst: R,
        sport: 5000,
        dport: 53,
    };
    let mut ip = packet(&from, 4);
    ip[26..28].copy_from_slice(&[0, 0]);
    let to = Tuple { src: E, ..from };
    rewrite(&mut ip, 20, &from, &to);
    assert_eq!(&ip[26..28], &[0, 0]);
    assert_eq!(checksum(&ip[..20]), 0);
}

#[test]
fn an_icmp_error_is_translated_with_its_quote() {
    // The inside host's datagram went out as E:1234 -> R:53; R's port unreachable comes
    // back quoting it, and must reach A quoting A:40000 -> R:53.
    let sent = Tuple {
        proto: UDP,
        src: E,
        dst: R,
        sport: 1234,
        dport: 53,
    };
    let quote = packet(&sent, 0);
    let mut err = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, ICMP, 0, 0];
    err.extend_from_slice(&R.to_be_bytes());
    err.extend_from_slice(&E.to_be_bytes());
    err.extend_from_slice(&[3, 3, 0, 0, 0, 0, 0, 0]);
    err.extend_from_slice(&quote);
    let mut err = finish(err);
    let Ok(Kind::Error { inner, l4, at }) = classify(&err) else {
        panic!("not an error");
    };
    assert_eq!(inner, sent);
    let orig = Tuple {
        src: A,
        sport: 40000,
        ..sent
    };
    rewrite_error(&mut err, (l4, at), (&inner, &orig), (R, A));
    verifies(&err);
    let q = &err[at..];
    verifies(q);
    assert!(matches!(classify(q), Ok(Kind::Flow { tuple, .. }) if tuple == orig));
    assert_eq!(&err[16..20], &A.to_be_bytes());
}

#[test]
fn unfit_packets_say_why() {
    let t = Tuple {
        proto: UDP,
        src: A,
        dst: R,
        sport: 1,
        dport: 2,
    };
    let ip = packet(&t, 0);
    assert_eq!(classify(&ip[..10]), Err(Unfit::BadHeader));
    assert_eq!(classify(&ip[..22]), Err(Unfit::Truncated));
    let mut frag = ip.clone();
    frag[6..8].copy_from_slice(&[0, 5]);
    assert_eq!(classify(&frag), Err(Unfit::Fragment));
    let mut gre = ip.clone();
    gre[9] = 47;
    assert_eq!(classify(&gre), Err(Unfit::Protocol));
    let mut timestamp = packet(&Tuple { proto: ICMP, ..t }, 0);
    timestamp[20] = 13;
    assert_eq!(classify(&timestamp), Err(Unfit::Protocol));
    let mut err = packet(&Tuple { proto: ICMP, ..t }, 0);
    err[20] = 11;
    assert_eq!(classify(&err), Err(Unfit::BadError));
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let base = packet(
        &Tuple {
            proto: ICMP,
            src: R,
            dst: E,
            sport: 9,
            dport: 9,
        },
        40,
    );
    for _ in 0..20000 {
        let mut ip = base.clone();
        for _ in 0..(next() % 6) {
            let i = (next() as usize) % ip.len();
            ip[i] = next() as u8;
        }
        ip.truncate(1 + (next() as usize) % ip.len());
        match classify(&ip) {
            Ok(Kind::Flow { tuple, l4, .. }) => rewrite(&mut ip, l4, &tuple, &tuple.reversed()),
            Ok(Kind::Error { inner, l4, at }) => {
                rewrite_error(&mut ip, (l4, at), (&inner, &inner.reversed()), (A, E))
            }
            Err(_) => {}
        }
    }
}
