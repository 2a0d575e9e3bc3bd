//! icmp4-error: sends the ICMP error another node asked for (in `BufferMeta::aux`) about the
//! packet it could not deliver, then drops that packet. The error is a new packet from the
//! address of the interface the original came in by (the one facing its sender), routed back
//! through ip4-lookup like any other. RFC 1812 4.3.2.7 says when not to send one; a
//! per-worker token bucket (4.3.2.8) keeps a flood of bad packets from becoming a flood of
//! errors.

use super::IcmpErrorRequest;
use crate::ip::icmp_error::{icmp_error_counters, ErrorBuilder, IcmpError, Original};
use crate::ip::V4;
use crate::router::adjacency::L3View;
use crate::wire::icmp4::{self, build_error, error_forbidden, MAX_ERROR_LEN};
use crate::wire::ipv4::Ipv4View;

pub const NAME: &str = "icmp4-error";

icmp_error_counters! {
    sent {
        SentUnreachable = "sent unreachable",
        SentFragmentationNeeded = "sent fragmentation needed",
        SentOther = "sent other ICMP error",
    }
    not_sent {
        Forbidden = "not sent (RFC 1812 forbids)",
        NoAddress = "not sent: no IPv4 address on the receiving interface",
        NotIpv4 = "not sent: original is not an IPv4 packet",
    }
}

/// The ICMP error node of IPv4 (`nodes::ip::icmp_error`, with the rules above).
pub type Icmp4Error = IcmpError<V4>;

impl ErrorBuilder for V4 {
    type Counter = Error;
    type Addr = u32;
    const NOT_OF_FAMILY: Error = Error::NotIpv4;
    const MAX_LEN: usize = MAX_ERROR_LEN;

    fn source(view: &L3View, orig: &Original) -> Result<u32, Error> {
        // A link-layer broadcast or multicast is the one case error_forbidden cannot see.
        if orig.link_group || error_forbidden(orig.ip) {
            return Err(Error::Forbidden);
        }
        // error_forbidden found a whole IPv4 header.
        let orig_src = Ipv4View::of(orig.ip).ok_or(Error::NotIpv4)?.source();
        let from = view
            .interface(orig.rx_if)
            .map_or(0, |itf| itf.v4_towards(orig_src));
        if from == 0 {
            return Err(Error::NoAddress);
        }
        Ok(from)
    }

    fn build(out: &mut [u8], orig: &Original, from: u32) -> Option<usize> {
        let req = orig.req;
        build_error(out, orig.ip, req.kind, req.code, req.arg as u32, from)
    }

    fn sent(req: IcmpErrorRequest) -> Error {
        match (req.kind, req.code) {
            (icmp4::TIME_EXCEEDED, _) => Error::SentTimeExceeded,
            (icmp4::DEST_UNREACHABLE, icmp4::CODE_FRAGMENTATION_NEEDED) => {
                Error::SentFragmentationNeeded
            }
            (icmp4::DEST_UNREACHABLE, _) => Error::SentUnreachable,
            _ => Error::SentOther,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};
    use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
    use crate::ip::icmp_error::testing;
    use crate::ip::ip4::rewrite::test_support::*;
    use crate::nodes::testing::Outcome;
    use crate::wire::ipv4::{checksum, Ipv4Header};

    const TIME_EXCEEDED: IcmpErrorRequest = IcmpErrorRequest::new(11, 0, 0);
    const FRAG_NEEDED: IcmpErrorRequest = IcmpErrorRequest::new(3, 4, 1400);
    const PORT_UNREACHABLE: IcmpErrorRequest = IcmpErrorRequest::new(3, 3, 0);

    fn run(frames: &[Vec<u8>], req: IcmpErrorRequest, rx_if: u32, burst: u64) -> Outcome {
        testing::run::<V4>(view(), frames, req, rx_if, burst)
    }

    /// The error built about `frame`, as bytes, or why none was.
    fn build(frame: &[u8], req: IcmpErrorRequest, rx_if: u32) -> Result<(Vec<u8>, Error), Error> {
        testing::build::<V4>(view(), frame, req, rx_if)
    }

    /// Checks a built error: placeholder Ethernet header, IP from `from` back to the sender,
    /// both checksums, and the quote of `frame`'s IP packet.
    fn assert_error(out: &[u8], frame: &[u8], from: u32, req: IcmpErrorRequest, quoted: usize) {
        assert_eq!(&out[..14], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0]);
        let h = Ipv4Header::parse(&out[14..]).unwrap();
        assert_eq!(h.total_len(), out.len() - 14);
        assert_eq!(h.source(), from);
        assert_eq!(h.destination().to_be_bytes(), frame[26..30]);
        assert_eq!((h.ttl(), h.protocol()), (64, 1));
        let icmp = &out[34..];
        assert_eq!(checksum(icmp), 0);
        assert_eq!((icmp[0], icmp[1]), (req.kind, req.code));
        assert_eq!(&icmp[4..8], &(req.arg as u32).to_be_bytes());
        assert_eq!(icmp.len() - 8, quoted);
        assert_eq!(&icmp[8..], &frame[14..14 + quoted]);
    }

    #[test]
    fn time_exceeded_quotes_the_packet_from_the_rx_interface_address() {
        let f = udp([192, 0, 2, 1], 1, false, 100);
        let (out, counter) = build(&f, TIME_EXCEEDED, 0).unwrap();
        assert_eq!(counter, Error::SentTimeExceeded);
        assert_error(&out, &f, if_addr(0), TIME_EXCEEDED, 100);
        // From if1 the error comes from if1's address.
        let (out, _) = build(&f, TIME_EXCEEDED, 1).unwrap();
        assert_error(&out, &f, if_addr(1), TIME_EXCEEDED, 100);
    }

    #[test]
    fn frag_needed_carries_the_mtu_and_quotes_up_to_576_bytes() {
        let f = udp([192, 0, 2, 1], 64, true, 1500);
        let (out, counter) = build(&f, FRAG_NEEDED, 0).unwrap();
        assert_eq!(counter, Error::SentFragmentationNeeded);
        assert_eq!(out.len(), 14 + 576);
        assert_error(&out, &f, if_addr(0), FRAG_NEEDED, 576 - 28);
    }

    #[test]
    fn vlan_tagged_original_is_quoted_from_its_ip_header() {
        let f = udp([192, 0, 2, 1], 64, false, 60);
        let (out, counter) = build(&tagged(&f), PORT_UNREACHABLE, 0).unwrap();
        assert_eq!(counter, Error::SentUnreachable);
        assert_error(&out, &f, if_addr(0), PORT_UNREACHABLE, 60);
    }

    #[test]
    fn forbidden_and_impossible_errors_are_not_sent() {
        let mut broadcast_mac = udp([192, 0, 2, 1], 1, false, 60);
        broadcast_mac[..6].copy_from_slice(&[0xff; 6]);
        let mut icmp_error = udp([192, 0, 2, 1], 1, false, 60);
        icmp_error[23] = 1;
        icmp_error[34] = 3;
        let from_zero = frame([0, 0, 0, 0], [192, 0, 2, 1], 17, 1, false, &[0; 8]);
        let to_multicast = frame([198, 18, 0, 1], [239, 1, 1, 1], 17, 1, false, &[0; 8]);
        for f in [broadcast_mac, icmp_error, from_zero, to_multicast] {
            assert_eq!(build(&f, TIME_EXCEEDED, 0).err(), Some(Error::Forbidden));
        }
        let f = udp([192, 0, 2, 1], 1, false, 60);
        assert_eq!(build(&f, TIME_EXCEEDED, 2).err(), Some(Error::NoAddress));
        assert_eq!(build(&f, TIME_EXCEEDED, 99).err(), Some(Error::NoAddress));
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[8, 6]);
        assert_eq!(build(&arp, TIME_EXCEEDED, 0).err(), Some(Error::NotIpv4));
    }

    #[test]
    fn allocation_failure_is_counted() {
        let pool = BufferPool::new(1, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let bi = crate::nodes::testing::received(&mut bufs, &udp([192, 0, 2, 1], 1, false, 60));
        bufs.meta_mut(bi).rx_if = 0;
        bufs.meta_mut(bi).aux = TIME_EXCEEDED.to_aux();
        let v = view();
        let mut node = Icmp4Error::new(v.clone(), 0, 10);
        let r = node.make_error(&v.load(), &mut bufs, bi);
        assert_eq!(r.err(), Some(Error::NoBuffer));
        bufs.free(bi);
    }

    #[test]
    fn node_sends_errors_to_lookup_and_originals_to_drop() {
        let frames = vec![
            udp([192, 0, 2, 1], 1, false, 100),
            udp([192, 0, 2, 1], 1, false, 1500),
        ];
        let out = run(&frames, TIME_EXCEEDED, 0, 10);
        assert_eq!(out.per_next, vec![2, 2]);
        assert_eq!(out.errors[Error::SentTimeExceeded as usize], 2);
        let out = run(&frames, FRAG_NEEDED, 0, 10);
        assert_eq!(out.errors[Error::SentFragmentationNeeded as usize], 2);
        let out = run(&frames, PORT_UNREACHABLE, 2, 10);
        assert_eq!(out.per_next, vec![0, 2]);
        assert_eq!(out.errors[Error::NoAddress as usize], 2);
    }

    #[test]
    fn rate_limit_holds_errors_to_the_burst() {
        let frames: Vec<Vec<u8>> = (0..7).map(|_| udp([192, 0, 2, 1], 1, false, 100)).collect();
        let out = run(&frames, TIME_EXCEEDED, 0, 3);
        assert_eq!(out.per_next, vec![3, 7]);
        assert_eq!(out.errors[Error::SentTimeExceeded as usize], 3);
        assert_eq!(out.errors[Error::RateLimited as usize], 4);
        // Forbidden errors do not spend tokens.
        let mut frames = frames;
        frames.insert(
            0,
            frame([0, 0, 0, 0], [192, 0, 2, 1], 17, 1, false, &[0; 8]),
        );
        let out = run(&frames, TIME_EXCEEDED, 0, 3);
        assert_eq!(out.errors[Error::Forbidden as usize], 1);
        assert_eq!(out.errors[Error::SentTimeExceeded as usize], 3);
    }

    /// Packets that reached a capture node: (node name, bytes).
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(&'static str, Vec<u8>)>>>;

    /// Keeps what reaches it.
    struct Capture {
        name: &'static str,
        seen: Seen,
    }
    impl Node for Capture {
        fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
            for &bi in frame {
                let mut bytes = Vec::new();
                cx.bufs.copy_packet(bi, &mut bytes);
                self.seen.lock().unwrap().push((self.name, bytes));
                cx.bufs.free(bi);
            }
            frame.len()
        }
    }

    struct Feed(Vec<u32>);
    impl Node for Feed {
        fn process(&mut self, cx: &mut NodeCx<'_>, _: &[u32]) -> usize {
            let p = std::mem::take(&mut self.0);
            cx.enqueue_all(0, &p);
            p.len()
        }
    }

    /// ip4-rewrite and ip4-local hand their requests to icmp4-error through `aux`: run
    /// them together and look at the errors that come out.
    #[test]
    fn errors_asked_for_by_rewrite_and_local_come_out_right() {
        use crate::graph::Graph;
        use crate::ip::ip4::{local::Ip4Local, rewrite::Ip4Rewrite};
        let pool = BufferPool::new(256, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let expiring = udp([192, 0, 2, 1], 1, false, 100);
        let too_big = udp([192, 0, 2, 1], 64, true, 1200);
        let to_us = frame(
            [198, 18, 0, 1],
            if_addr(0).to_be_bytes(),
            17,
            64,
            false,
            &[7; 8],
        );
        let mut feed = |frames: &[&Vec<u8>], adj: u32| -> Vec<u32> {
            frames
                .iter()
                .map(|f| {
                    let bi = crate::nodes::testing::received(&mut bufs, f);
                    bufs.meta_mut(bi).rx_if = 0;
                    bufs.meta_mut(bi).adj = adj;
                    bi
                })
                .collect()
        };
        let to_rewrite = feed(&[&expiring, &too_big], ADJ_SMALL_MTU);
        let to_local = feed(&[&to_us], 1);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let v = view();
        let mut decls = vec![
            NodeDecl::new(
                "feed-rewrite",
                NodeKind::Input,
                &[crate::ip::ip4::rewrite::NAME],
                &[],
                Feed(to_rewrite),
            ),
            NodeDecl::new(
                "feed-local",
                NodeKind::Input,
                &[crate::ip::ip4::local::NAME],
                &[],
                Feed(to_local),
            ),
            Ip4Rewrite::decl(v.clone()),
            Ip4Local::decl(v.clone()),
            Icmp4Error::decl(v.clone()),
        ];
        for name in [
            "interface-output",
            "ip4-arp",
            "error-drop",
            "ip4-lookup",
            "acl-ip4-out",
            "nat44-in",
            "nat44-out",
            "host-punt",
        ] {
            decls.push(NodeDecl::new(
                name,
                NodeKind::Output,
                &[],
                &[],
                Capture {
                    name,
                    seen: seen.clone(),
                },
            ));
        }
        let mut g = Graph::build(decls, 0).unwrap();
        g.run_once(&mut bufs);
        drop(bufs);
        assert_eq!(pool.report().in_use, 0);
        let seen = seen.lock().unwrap();
        let errors: Vec<&Vec<u8>> = seen
            .iter()
            .filter(|(n, _)| *n == "ip4-lookup")
            .map(|(_, b)| b)
            .collect();
        assert_eq!(errors.len(), 3);
        assert_eq!(seen.iter().filter(|(n, _)| *n == "error-drop").count(), 3);
        let find = |kind: u8, code: u8| {
            *errors
                .iter()
                .find(|e| e[34] == kind && e[35] == code)
                .expect("error sent")
        };
        let mtu = IcmpErrorRequest::new(3, 4, 1000);
        assert_error(find(11, 0), &expiring, if_addr(0), TIME_EXCEEDED, 100);
        assert_error(find(3, 4), &too_big, if_addr(0), mtu, 576 - 28);
        assert_error(find(3, 3), &to_us, if_addr(0), PORT_UNREACHABLE, 28);
    }
}
