//! A hostile memif client that tries to stall sluice's worker through the interrupt eventfd
//! (issue 33, item 9). The eventfd is one open file description shared by both sides, and
//! O_NONBLOCK is a flag of that description: the peer fills the counter to 2^64 - 2 (a
//! write of 1 then sleeps until somebody reads) and flips O_NONBLOCK off and on, so that a
//! check of the flag before the write does not protect the writer. The peer asks sluice for
//! interrupts on the ring sluice transmits into and keeps buffers posted there, so sluice
//! wants to interrupt it after every burst. The one worker also forwards a bystander pair,
//! p0 -> p1: it must keep forwarding through every round, and the daemon must take the peer
//! back after each one and stop cleanly at the end.
//!
//! (A file of its own: tests/memif_hostile.rs is past the 600 lines a file may have.)
//!
//! Needs no root and no namespace: memif is unix sockets and shared memory.

mod common;
use common::*;
use sluice::drivers::memif::connection::{self, Settings, POOL_REGION};
use sluice::drivers::memif::shm::{memfd, Desc, Region};
use sluice::drivers::memif::socket::Channel;
use sluice::drivers::pcap::file::Writer;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SLOTS: u16 = 64;
const BUF: usize = 2048;
/// Each round is a fresh chance for the peer to win the race a check-then-write loses.
const ROUNDS: usize = 30;

fn write_feed(path: &Path) {
    let mut f = vec![7u8; 60];
    f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let mut w = Writer::create(path).unwrap();
    w.write(1_700_000_000_000_000_000, &f).unwrap();
    w.flush().unwrap();
}

/// One worker: the bystander p0 -> p1, and p2 -> m0 (sluice's memif server) so that sluice
/// transmits into the hostile client's rings all the time.
fn config(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let (ctl, cfg, sock) = (
        dir.join("ctl.sock"),
        dir.join("sluice.toml"),
        dir.join("m0.sock"),
    );
    let feed = dir.join("feed.pcap");
    write_feed(&feed);
    let text = format!(
        "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{ctl}\"\n\
         [[interface]]\nname = \"p0\"\ndriver = \"pcap\"\nrx-file = \"{feed}\"\nloop = true\n\
         [[interface]]\nname = \"p1\"\ndriver = \"pcap\"\ntx-file = \"/dev/null\"\n\
         [[interface]]\nname = \"p2\"\ndriver = \"pcap\"\nrx-file = \"{feed}\"\nloop = true\n\
         [[interface]]\nname = \"m0\"\ndriver = \"memif\"\nsocket = \"{sock}\"\nrole = \"server\"\n\
         [[xconnect]]\nrx = \"p0\"\ntx = \"p1\"\n\
         [[xconnect]]\nrx = \"p2\"\ntx = \"m0\"\n",
        ctl = ctl.display(),
        feed = feed.display(),
        sock = sock.display(),
    );
    std::fs::write(&cfg, text).unwrap();
    (cfg, ctl, sock)
}

fn count(ctl: &Path, name: &str, field: &str) -> u64 {
    ctl_json(ctl, &format!("show interface {name}"))[0][field]
        .as_u64()
        .unwrap()
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn set_flags(fd: i32, flags: i32) {
    // SAFETY: plain fcntl on a descriptor the test holds.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
}

/// One round: connect, ask for interrupts, fill the counter, then flip O_NONBLOCK while
/// keeping buffers posted for `hold` or until sluice hangs up; then hang up. Returns whether the handshake worked.
fn round(sock: &Path, hold: Duration) -> bool {
    let pool = Arc::new(
        Region::map(
            memfd("hostile-pool", SLOTS as usize * BUF).unwrap(),
            SLOTS as usize * BUF,
            true,
        )
        .unwrap(),
    );
    let settings = Settings {
        id: 0,
        secret: None,
        name: "hostile-irq".into(),
        queues: 1,
        log2_ring_size: 6,
        pool: Some((pool.fd().unwrap(), SLOTS as usize * BUF)),
    };
    let Ok(ch) = Channel::connect(sock) else {
        return false;
    };
    let Ok(conn) = connection::connect(&ch, &settings) else {
        return false;
    };
    let ring = &conn.s2c[0];
    for slot in 0..SLOTS {
        ring.set_desc(
            slot,
            Desc {
                flags: 0,
                region: POOL_REGION,
                length: BUF as u32,
                offset: slot as u32 * BUF as u32,
                metadata: 0,
            },
        );
    }
    ring.set_flags(0); // interrupt me after every burst
    ring.set_head(SLOTS);
    let fd = conn.s2c_irq[0].as_raw_fd();
    let full = (u64::MAX - 1).to_ne_bytes();
    // SAFETY: an 8-byte write to the eventfd the test holds (non-blocking still).
    let n = unsafe { libc::write(fd, full.as_ptr() as *const libc::c_void, 8) };
    assert_eq!(n, 8, "filling the counter");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Mostly non-blocking, now and then blocking for a moment: a writer that looked
            // at the flag just before is caught by its write.
            while !stop.load(Ordering::Relaxed) {
                set_flags(fd, 0);
                set_flags(fd, libc::O_NONBLOCK);
                for _ in 0..200 {
                    std::hint::spin_loop();
                }
            }
        });
        let end = Instant::now() + hold;
        // Until sluice hangs up (it may see the flag cleared: a violation) or time is up.
        while Instant::now() < end && !ch.wait(0) {
            // Hand every filled buffer back at once: sluice always has room to send.
            ring.set_head(ring.tail().wrapping_add(SLOTS));
            std::thread::sleep(Duration::from_micros(200));
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Leave the descriptor blocking with its counter full: whoever writes to it now sleeps.
    set_flags(fd, 0);
    true
}

#[test]
fn a_peer_that_makes_its_eventfd_block_does_not_stall_the_worker() {
    let dir = tmpdir("memif-hostile-irq");
    let (cfg, ctl, sock) = config(&dir);
    let mut daemon = Daemon::start_here(&cfg, &ctl);
    let mut rounds = 0;
    for _ in 0..ROUNDS {
        let sent_before = count(&ctl, "m0", "tx_packets");
        if round(&sock, Duration::from_millis(300)) {
            rounds += 1;
        }
        // The worker moved on: the bystander forwards and m0 still transmits after the round.
        let last = count(&ctl, "p1", "tx_packets");
        wait_for("the bystander to forward", 5, || {
            count(&ctl, "p1", "tx_packets") > last + 1000
        });
        assert!(count(&ctl, "m0", "tx_packets") >= sent_before);
    }
    assert!(
        rounds >= ROUNDS / 2,
        "only {rounds} of {ROUNDS} rounds connected"
    );
    let sent = count(&ctl, "m0", "tx_packets");
    assert!(sent > 0, "sluice never transmitted to the hostile peer");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
