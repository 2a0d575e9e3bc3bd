//! The transmit ring on a veth pair in a namespace of the test's own: what goes into the ring
//! on one end comes out byte for byte on the other, and frames the kernel will not send are
//! counted by reason without losing the ring's place.

use super::*;
use crate::drivers::af_packet::netdev;
use crate::drivers::af_packet::socket::{RingLayout, RxOptions, RxRing};
use std::process::Command;
use std::time::{Duration, Instant};

/// A test ethertype (IEEE local experimental), so stray frames are easy to tell apart.
const ETHERTYPE: [u8; 2] = [0x88, 0xb5];

/// Whether we may make namespaces. Without root: under CI the test fails (a test that did
/// not run must not pass); elsewhere it says it is skipped.
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "CI=true and not root: cannot make a network namespace");
    eprintln!("SKIPPED (not under CI): root, to create network namespaces");
    false
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip");
    assert!(
        o.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A namespace holding veth pair `ta` – `tb` with `mtu`, both up; deleted on drop.
struct Ns(String);

impl Ns {
    fn new(tag: &str, mtu: u32) -> Ns {
        let ns = Ns(format!("sl-txr-{tag}-{}", std::process::id()));
        let _ = Command::new("ip").args(["netns", "del", &ns.0]).output();
        ip(&["netns", "add", &ns.0]);
        let m = mtu.to_string();
        ns.ip(&[
            "link", "add", "ta", "mtu", &m, "type", "veth", "peer", "name", "tb", "mtu", &m,
        ]);
        ns.ip(&["link", "set", "ta", "up"]);
        ns.ip(&["link", "set", "tb", "up"]);
        ns
    }

    fn ip(&self, args: &[&str]) {
        let mut a = vec!["-n", self.0.as_str()];
        a.extend_from_slice(args);
        ip(&a);
    }

    /// Run `f` on a thread inside the namespace (sockets it opens belong to it).
    fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::sys::netns::enter(&self.0).unwrap();
                f()
            })
            .join()
            .unwrap()
        })
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// Frame `seq` of `len` bytes, every byte of it telling it apart from the others.
fn frame(seq: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    f.extend_from_slice(&ETHERTYPE);
    f.extend_from_slice(&seq.to_be_bytes());
    let mut k = seq as u32;
    while f.len() < len {
        k = k.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        f.push((k >> 16) as u8);
    }
    f.truncate(len);
    f
}

fn send(ring: &mut TxRing, frames: &[Vec<u8>]) -> RingSend {
    ring.send(frames.len(), |i, slot| {
        slot[..frames[i].len()].copy_from_slice(&frames[i]);
        frames[i].len()
    })
}

/// A receive ring on `dev` for frames of up to `max_frame` bytes.
fn receiver(dev: &str, max_frame: usize) -> RxRing {
    let opts = RxOptions {
        layout: RingLayout::frames(max_frame, 512),
        promiscuous: true,
        ..RxOptions::default()
    };
    RxRing::open(netdev::index(dev).unwrap(), &opts).unwrap()
}

/// The test frames that reach `rx`, until `want` have come or 5 s have passed (a bound so
/// that a lost frame fails the test instead of hanging it, not a speed check).
fn receive(rx: &mut RxRing, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    while got.len() < want && Instant::now() < until {
        match rx.next_frame() {
            Some(f) if f.data.get(12..14) == Some(&ETHERTYPE[..]) => got.push(f.data.to_vec()),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    got
}

#[test]
fn frames_written_to_the_ring_arrive_byte_for_byte_jumbo_included() {
    if !is_root() {
        return;
    }
    let ns = Ns::new("bytes", 9000);
    ns.run(|| {
        let mut rx = receiver("tb", 9018);
        // 64 slots, so the 150-frame burst below wraps the ring twice within one send.
        let mut ring = TxRing::open(netdev::index("ta").unwrap(), 9018, 64).unwrap();
        assert_eq!(ring.frame_count, 64);
        assert!(ring.max_frame() >= 9018, "{}", ring.max_frame());
        assert!(ring
            .describe()
            .starts_with("TPACKET_V2 ring, 64 frames of 16384 B"));
        let mut frames: Vec<Vec<u8>> = [60, 64, 1514, 9014]
            .iter()
            .enumerate()
            .map(|(i, &len)| frame(i as u16, len))
            .collect();
        let first = send(&mut ring, &frames);
        let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
        assert_eq!(
            first,
            RingSend {
                sent: 4,
                bytes,
                ..RingSend::default()
            }
        );
        let burst: Vec<Vec<u8>> = (0..150)
            .map(|i| frame(100 + i, [64, 128, 1514][i as usize % 3]))
            .collect();
        let second = send(&mut ring, &burst);
        assert_eq!((second.sent, second.queue_full, second.errors), (150, 0, 0));
        frames.extend(burst);
        let got = receive(&mut rx, frames.len());
        assert_eq!(got.len(), frames.len(), "frames lost");
        for (i, (g, f)) in got.iter().zip(&frames).enumerate() {
            assert!(
                g == f,
                "frame {i}: {} bytes sent, {} received",
                f.len(),
                g.len()
            );
        }
    });
}

#[test]
fn a_frame_the_device_refuses_is_counted_wrong_format_and_the_rest_still_go() {
    if !is_root() {
        return;
    }
    let ns = Ns::new("wrong", 1500);
    ns.run(|| {
        let mut rx = receiver("tb", 1518);
        let mut ring = TxRing::open(netdev::index("ta").unwrap(), 1518, 64).unwrap();
        // The MTU drops under the open ring: a 1400-byte frame no longer fits the device.
        ns.ip(&["link", "set", "ta", "mtu", "1280"]);
        let frames = [frame(0, 64), frame(1, 1400), frame(2, 64), frame(3, 100)];
        let r = send(&mut ring, &frames);
        assert_eq!(
            r,
            RingSend {
                sent: 3,
                bytes: 228,
                wrong_format: 1,
                ..RingSend::default()
            }
        );
        // The ring's place is kept: later frames go out too.
        let more = [frame(4, 64), frame(5, 1200)];
        assert_eq!(send(&mut ring, &more).sent, 2);
        let got = receive(&mut rx, 5);
        let want = [&frames[0], &frames[2], &frames[3], &more[0], &more[1]];
        assert_eq!(got.len(), want.len(), "frames lost");
        for (g, w) in got.iter().zip(want) {
            assert!(g == w, "{} bytes sent, {} received", w.len(), g.len());
        }
    });
}

#[test]
fn a_device_that_cannot_send_is_back_pressure_and_the_ring_recovers() {
    if !is_root() {
        return;
    }
    let ns = Ns::new("busy", 1500);
    ns.run(|| {
        let mut rx = receiver("tb", 1518);
        let mut ring = TxRing::open(netdev::index("ta").unwrap(), 1518, 64).unwrap();
        // The peer down: ta has no carrier and the kernel drops what it is handed.
        ns.ip(&["link", "set", "tb", "down"]);
        let lost: Vec<Vec<u8>> = (0..5).map(|i| frame(i, 64)).collect();
        let r = send(&mut ring, &lost);
        assert_eq!(
            r,
            RingSend {
                queue_full: 5,
                ..RingSend::default()
            }
        );
        ns.ip(&["link", "set", "tb", "up"]);
        // Nothing of the refused burst is left in the ring to go out late: these are all.
        let frames: Vec<Vec<u8>> = (10..13).map(|i| frame(i, 80)).collect();
        let r = send(&mut ring, &frames);
        assert_eq!((r.sent, r.bytes), (3, 240));
        let got = receive(&mut rx, 3);
        assert_eq!(got, frames);
    });
}
