//! A hostile memif peer, played by the test with sluice's own protocol code: as a client
//! towards sluice's server interface `m0` and as a server towards its client interface `m1`.
//! Each connection first behaves (a frame goes through), then breaks the protocol one way:
//! ring indices past what was posted, descriptors outside the region or not the buffer
//! posted, regions that could shrink, messages out of order, bad ring sizes, a pipe for an
//! eventfd. sluice must count each under its name, disconnect that peer, keep forwarding
//! between two other interfaces, and end with every buffer accounted for.
//!
//! Needs no root and no namespace: memif is unix sockets and shared memory.

mod common;
use common::*;
use sluice::drivers::memif::connection::{self, Connection, Settings, POOL_REGION};
use sluice::drivers::memif::proto::{AddRegion, AddRing, Hello, Init, Msg, VERSION};
use sluice::drivers::memif::shm::{memfd, Desc, Region};
use sluice::drivers::memif::socket::Channel;
use sluice::drivers::memif::violation::Violation;
use sluice::drivers::pcap::file::Writer;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FRAME_LEN: usize = 60;
/// The hostile client's own buffer region: 64 buffers of 2048 bytes.
const POOL: usize = 64 * 2048;

fn frame(seed: u8) -> Vec<u8> {
    let mut f = vec![seed; FRAME_LEN];
    f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    f
}

fn write_pcap(path: &Path, seed: u8) {
    let mut w = Writer::create(path).unwrap();
    w.write(1_700_000_000_000_000_000, &frame(seed)).unwrap();
    w.flush().unwrap();
}

/// sluice with a bystander pair p0 -> p1 (looping replay into /dev/null) that must keep
/// forwarding, and the two memif interfaces under attack, each fed by a looping pcap (so
/// sluice transmits into the hostile rings) and drained into a sink.
fn config(dir: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let (ctl, cfg) = (dir.join("ctl.sock"), dir.join("sluice.toml"));
    let (s0, s1) = (dir.join("m0.sock"), dir.join("m1.sock"));
    let feed = dir.join("feed.pcap");
    write_pcap(&feed, 7);
    let pcap_rx = |name: &str| {
        format!(
            "[[interface]]\nname = \"{name}\"\ndriver = \"pcap\"\nrx-file = \"{}\"\nloop = true\nstate = \"down\"\n",
            feed.display()
        )
    };
    let sink = |name: &str| {
        format!("[[interface]]\nname = \"{name}\"\ndriver = \"pcap\"\ntx-file = \"/dev/null\"\n")
    };
    let memif = |name: &str, role: &str, sock: &Path| {
        format!(
            "[[interface]]\nname = \"{name}\"\ndriver = \"memif\"\nsocket = \"{}\"\nrole = \"{role}\"\nring-size = 256\n",
            sock.display()
        )
    };
    let xc = |rx: &str, tx: &str| format!("[[xconnect]]\nrx = \"{rx}\"\ntx = \"{tx}\"\n");
    let text = [
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n",
            ctl.display()
        ),
        pcap_rx("p0"),
        sink("p1"),
        pcap_rx("p2"),
        pcap_rx("p3"),
        sink("p4"),
        memif("m0", "server", &s0),
        memif("m1", "client", &s1),
        xc("p0", "p1"),
        xc("p2", "m0"),
        xc("p3", "m1"),
        xc("m0", "p4"),
        xc("m1", "p4"),
    ]
    .concat();
    std::fs::write(&cfg, text).unwrap();
    (cfg, ctl, s0, s1)
}

fn start_daemon(cfg: &Path, ctl: &Path) -> Daemon {
    let child = Command::new(BIN)
        .args(["run", "-c", cfg.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let d = Daemon { child };
    wait_for("the daemon", 15, || {
        common::ctl(ctl, "show version").is_ok()
    });
    d
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interface(ctl: &Path, name: &str) -> serde_json::Value {
    ctl_json(ctl, &format!("show interface {name}"))[0].clone()
}

fn count(ctl: &Path, name: &str, field: &str) -> u64 {
    interface(ctl, name)[field].as_u64().unwrap()
}

fn link_up(ctl: &Path, name: &str) -> bool {
    interface(ctl, name)["link"] == "up"
}

/// The violation counter of interface `name` (absent while zero).
fn violations(ctl: &Path, name: &str, v: Violation) -> u64 {
    let hw = ctl_json(ctl, &format!("show hardware {name}"));
    hw[0]["details"][format!("violation: {}", v.name())]
        .as_str()
        .map_or(0, |n| n.parse().unwrap())
}

/// Read until sluice's DISCONNECT (skipping ACKs and the like); its reason.
fn disconnect_reason(ch: &Channel) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match ch.recv() {
            Ok((Msg::Disconnect { reason, .. }, _)) => return reason,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => panic!("the socket failed before a DISCONNECT: {e}"),
        }
    }
    panic!("no DISCONNECT from sluice");
}

/// What each attack must leave behind.
struct Watch<'a> {
    ctl: &'a Path,
    /// The bystander's forwarded count when last checked.
    forwarded: u64,
}

impl Watch<'_> {
    /// sluice counted `v` once more on `iface`, told the peer, took the link down, and the
    /// bystander pair kept forwarding meanwhile.
    fn expect(&mut self, what: &str, iface: &str, v: Violation, before: u64, reason: &str) {
        assert!(
            reason.contains(v.name()),
            "{what}: sluice's reason '{reason}' does not name '{}'",
            v.name()
        );
        wait_for(&format!("{what}: counter '{}'", v.name()), 5, || {
            violations(self.ctl, iface, v) == before + 1
        });
        wait_for(&format!("{what}: {iface} down"), 5, || {
            !link_up(self.ctl, iface)
        });
        let ctl = self.ctl;
        let last = self.forwarded;
        wait_for(&format!("{what}: the bystander to forward"), 5, || {
            count(ctl, "p1", "tx_packets") > last
        });
        self.forwarded = count(ctl, "p1", "tx_packets");
        println!("{what}: counted as '{}', peer disconnected", v.name());
    }
}

/// `watch memif` on the control socket: the events as they come, until the daemon stops.
fn watch_memif(ctl: &Path) -> std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>> {
    use std::io::{BufRead, BufReader, Write};
    let s = std::os::unix::net::UnixStream::connect(ctl).unwrap();
    (&s).write_all(b"watch memif\n").unwrap();
    let mut r = BufReader::new(s);
    let mut first = String::new();
    r.read_line(&mut first).unwrap();
    assert!(first.contains("\"ok\":true"), "{first}");
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = events.clone();
    std::thread::spawn(move || {
        for line in r.lines().map_while(Result::ok) {
            if let Ok(e) = serde_json::from_str(&line) {
                into.lock().unwrap().push(e);
            }
        }
    });
    // The watcher's first look is its baseline.
    std::thread::sleep(Duration::from_millis(300));
    events
}

// ---------------------------------------------------------------- hostile client (m0)

fn eventfd() -> OwnedFd {
    // SAFETY: plain eventfd creation, checked and owned right away.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: just created.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A memfd of `len` bytes that may shrink (no seals).
fn unsealed_memfd(len: usize) -> OwnedFd {
    let name = std::ffi::CString::new("hostile-unsealed").unwrap();
    // SAFETY: a test memfd, checked and owned right away.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: just created, and ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: plain ftruncate of our descriptor.
    assert_eq!(
        unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) },
        0
    );
    fd
}

/// A client that went through the whole handshake with sluice's own client code, over a
/// buffer region of its own (region 1).
struct HostileClient {
    ch: Channel,
    conn: Connection,
    pool: Arc<Region>,
    /// Next C2S slot to fill.
    head: u16,
}

impl HostileClient {
    fn connect(sock: &Path) -> HostileClient {
        let pool = Arc::new(Region::map(memfd("hostile-pool", POOL).unwrap(), POOL, true).unwrap());
        let settings = Settings {
            id: 0,
            secret: None,
            name: "hostile-client".into(),
            queues: 1,
            log2_ring_size: 6,
            pool: Some((pool.fd().unwrap(), POOL)),
        };
        let ch = Channel::connect(sock).unwrap();
        let conn = connection::connect(&ch, &settings).unwrap();
        HostileClient {
            ch,
            conn,
            pool,
            head: 0,
        }
    }

    /// Put a descriptor on the C2S ring and publish it.
    fn send_desc(&mut self, d: Desc) {
        let ring = &self.conn.c2s[0];
        ring.set_desc(self.head, d);
        self.head = self.head.wrapping_add(1);
        ring.set_head(self.head);
    }

    /// A well-formed frame from buffer 0: sluice must receive it.
    fn send_good(&mut self, ctl: &Path) {
        let before = count(ctl, "m0", "rx_packets");
        assert!(self.pool.write(0, &frame(1)));
        self.send_desc(Desc {
            flags: 0,
            region: POOL_REGION,
            length: FRAME_LEN as u32,
            offset: 0,
            metadata: 0,
        });
        wait_for("a good frame from the hostile client", 5, || {
            count(ctl, "m0", "rx_packets") > before
        });
    }

    /// Post `d` for sluice to fill (S2C); sluice transmits into it when the feed runs.
    fn post(&self, slot: u16, d: Desc) {
        let ring = &self.conn.s2c[0];
        ring.set_desc(slot, d);
        ring.set_head(slot.wrapping_add(1));
    }
}

/// A handshake by hand up to the first ADD_REGION, which carries `region`.
fn hand_init(sock: &Path) -> Channel {
    let ch = Channel::connect(sock).unwrap();
    assert!(matches!(ch.recv().unwrap().0, Msg::Hello(_)));
    ch.send(
        &Msg::Init(Init {
            version: VERSION,
            id: 0,
            mode: 0,
            secret: String::new(),
            name: "hostile-client".into(),
        }),
        None,
    )
    .unwrap();
    assert!(matches!(ch.recv().unwrap().0, Msg::Ack));
    ch
}

fn add_region(ch: &Channel, index: u16, fd: &OwnedFd, size: u64) {
    ch.send(
        &Msg::AddRegion(AddRegion { index, size }),
        Some(fd.as_raw_fd()),
    )
    .unwrap();
}

fn attacks_as_client(ctl: &Path, sock: &Path, w: &mut Watch) {
    let m0 = |v| violations(ctl, "m0", v);

    // 1. The producer index more than a ring ahead of what sluice consumed.
    let mut c = HostileClient::connect(sock);
    wait_for("m0 up", 5, || link_up(ctl, "m0"));
    c.send_good(ctl);
    let before = m0(Violation::HeadPastRing);
    c.conn.c2s[0].set_head(c.head.wrapping_add(64 + 3));
    w.expect(
        "head past the ring",
        "m0",
        Violation::HeadPastRing,
        before,
        &disconnect_reason(&c.ch),
    );

    // 2. A frame whose bytes run past the end of the region, then one in a region that
    //    does not exist, then an offset that only a 32-bit wrap would bring back inside.
    let outside = [
        (POOL_REGION, POOL as u32 - 10),
        (7, 0),
        (POOL_REGION, u32::MAX - 20),
    ];
    for (region, offset) in outside {
        let mut c = HostileClient::connect(sock);
        wait_for("m0 up", 5, || link_up(ctl, "m0"));
        c.send_good(ctl);
        let before = m0(Violation::BadDescriptor);
        c.send_desc(Desc {
            flags: 0,
            region,
            length: FRAME_LEN as u32,
            offset,
            metadata: 0,
        });
        w.expect(
            &format!("C2S descriptor region {region} offset {offset:#x}"),
            "m0",
            Violation::BadDescriptor,
            before,
            &disconnect_reason(&c.ch),
        );
    }

    // Not an attack on a server: the same buffer sent several times. sluice copies each
    // (a zero-copy DPDK client may send one mbuf twice), so they are frames, not a breach.
    let mut c = HostileClient::connect(sock);
    wait_for("m0 up", 5, || link_up(ctl, "m0"));
    let (rx, bad) = (count(ctl, "m0", "rx_packets"), m0(Violation::BadDescriptor));
    assert!(c.pool.write(0, &frame(3)));
    for _ in 0..5 {
        c.send_desc(Desc {
            flags: 0,
            region: POOL_REGION,
            length: FRAME_LEN as u32,
            offset: 0,
            metadata: 0,
        });
    }
    wait_for("five copies of one buffer", 5, || {
        count(ctl, "m0", "rx_packets") == rx + 5
    });
    assert!(link_up(ctl, "m0"));
    assert_eq!(m0(Violation::BadDescriptor), bad);
    drop(c);
    wait_for("m0 down once the client left", 5, || !link_up(ctl, "m0"));

    // 3. A buffer posted for sluice to fill that lies outside the region (its transmit
    //    path), and one that offers no room at all.
    for (offset, length) in [(POOL as u32 - 100, 2048), (0, 0)] {
        let c = HostileClient::connect(sock);
        wait_for("m0 up", 5, || link_up(ctl, "m0"));
        let before = m0(Violation::BadDescriptor);
        c.post(
            0,
            Desc {
                flags: 0,
                region: POOL_REGION,
                length,
                offset,
                metadata: 0,
            },
        );
        w.expect(
            &format!("S2C buffer at {offset:#x} of {length} bytes"),
            "m0",
            Violation::BadDescriptor,
            before,
            &disconnect_reason(&c.ch),
        );
    }

    // 4. A region that could shrink under sluice's mapping: refused when it is added, so
    //    shrinking it afterwards harms nobody. (Sealed, as sluice's own are, it cannot.)
    let before = m0(Violation::RegionUnsealed);
    let ch = hand_init(sock);
    let fd = unsealed_memfd(POOL);
    add_region(&ch, 0, &fd, POOL as u64);
    let reason = disconnect_reason(&ch);
    assert!(reason.contains("sealed"), "{reason}");
    // SAFETY: plain ftruncate of our descriptor.
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 0) }, 0);
    w.expect(
        "unsealed region",
        "m0",
        Violation::RegionUnsealed,
        before,
        &reason,
    );
    let sealed = memfd("hostile-sealed", POOL).unwrap();
    // SAFETY: as above; the seal refuses it.
    assert_ne!(unsafe { libc::ftruncate(sealed.as_raw_fd(), 0) }, 0);

    // 5. Messages out of order: CONNECT before any ring, and a message after CONNECT.
    let before = m0(Violation::OutOfOrder);
    let ch = hand_init(sock);
    ch.send(&Msg::Connect { name: "x".into() }, None).unwrap();
    w.expect(
        "CONNECT before a ring",
        "m0",
        Violation::OutOfOrder,
        before,
        &disconnect_reason(&ch),
    );
    let c = HostileClient::connect(sock);
    wait_for("m0 up", 5, || link_up(ctl, "m0"));
    c.ch.send(
        &Msg::AddRegion(AddRegion {
            index: 2,
            size: 4096,
        }),
        Some(sealed.as_raw_fd()),
    )
    .unwrap();
    w.expect(
        "ADD_REGION after CONNECT",
        "m0",
        Violation::OutOfOrder,
        before + 1,
        &disconnect_reason(&c.ch),
    );

    // 6. Bad rings: 2^15 descriptors (more than HELLO allowed), and a pipe where the
    //    interrupt eventfd belongs.
    let ring = |log2_size| AddRing {
        c2s: true,
        index: 0,
        region: 0,
        offset: 0,
        log2_size,
        private_hdr_size: 0,
    };
    let before = m0(Violation::BadRing);
    let ch = hand_init(sock);
    add_region(&ch, 0, &sealed, POOL as u64);
    assert!(matches!(ch.recv().unwrap().0, Msg::Ack));
    ch.send(&Msg::AddRing(ring(15)), Some(eventfd().as_raw_fd()))
        .unwrap();
    w.expect(
        "ring of 2^15",
        "m0",
        Violation::BadRing,
        before,
        &disconnect_reason(&ch),
    );
    let before = m0(Violation::BadInterrupt);
    let ch = hand_init(sock);
    add_region(&ch, 0, &sealed, POOL as u64);
    assert!(matches!(ch.recv().unwrap().0, Msg::Ack));
    // A ring there must carry the cookie, or the ring check would refuse it first.
    let rings = Arc::new(Region::map(sealed.try_clone().unwrap(), POOL, true).unwrap());
    rings.ring(0, 6).unwrap().init(0);
    let mut pipe = [0; 2];
    // SAFETY: pipe fills the two-int array we pass.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    // SAFETY: both ends are ours from here on.
    let (r, _wr) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    ch.send(&Msg::AddRing(ring(6)), Some(r.as_raw_fd()))
        .unwrap();
    w.expect(
        "pipe as interrupt",
        "m0",
        Violation::BadInterrupt,
        before,
        &disconnect_reason(&ch),
    );
}

// ---------------------------------------------------------------- hostile server (m1)

/// A server that went through the whole handshake with sluice's own server code: it maps
/// sluice's rings and its buffer pool (region 1).
struct HostileServer {
    ch: Channel,
    conn: Connection,
    /// Next S2C slot to hand back.
    tail: u16,
}

fn accept(listener: &Channel) -> Channel {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listener.wait(100) {
        assert!(Instant::now() < deadline, "sluice's client did not come");
    }
    listener.accept().unwrap()
}

impl HostileServer {
    fn accept(listener: &Channel, ctl: &Path) -> HostileServer {
        let ch = accept(listener);
        let settings = Settings {
            id: 0,
            secret: None,
            name: "hostile-server".into(),
            queues: 1,
            log2_ring_size: 10,
            pool: None,
        };
        let conn = connection::serve(&ch, &settings).unwrap();
        wait_for("m1 up", 5, || link_up(ctl, "m1"));
        let s = HostileServer { ch, conn, tail: 0 };
        // sluice posts its receive buffers at its first poll of the new rings.
        wait_for("posted buffers", 5, || s.conn.s2c[0].head() != 0);
        s
    }

    /// Fill the next posted buffer with a frame and hand it back: sluice must take it.
    fn deliver_good(&mut self, ctl: &Path) {
        let before = count(ctl, "m1", "rx_packets");
        let ring = &self.conn.s2c[0];
        let d = ring.desc(self.tail);
        assert!(self.conn.regions[d.region as usize].write(d.offset as usize, &frame(2)));
        ring.set_length(self.tail, FRAME_LEN as u32, 0);
        self.tail = self.tail.wrapping_add(1);
        ring.set_tail(self.tail);
        wait_for("a good frame from the hostile server", 5, || {
            count(ctl, "m1", "rx_packets") > before
        });
    }
}

fn attacks_as_server(ctl: &Path, sock: &Path, w: &mut Watch) {
    let m1 = |v| violations(ctl, "m1", v);
    let listener = Channel::listen(sock).unwrap();

    // 1. The receive ring's tail past the buffers sluice posted.
    let mut s = HostileServer::accept(&listener, ctl);
    s.deliver_good(ctl);
    let before = m1(Violation::TailPastHead);
    let ring = &s.conn.s2c[0];
    ring.set_tail(ring.head().wrapping_add(5));
    w.expect(
        "S2C tail past head",
        "m1",
        Violation::TailPastHead,
        before,
        &disconnect_reason(&s.ch),
    );

    // 2. The transmit ring's tail past what sluice put on it, but within the ring's size
    //    (the case a check against the size lets through). Its feed is held until then,
    //    so that the head stands still.
    common::ctl(ctl, "set interface state p3 down").unwrap();
    let s = HostileServer::accept(&listener, ctl);
    let ring = &s.conn.c2s[0];
    let before = m1(Violation::TailPastHead);
    ring.set_tail(ring.head().wrapping_add(7));
    common::ctl(ctl, "set interface state p3 up").unwrap();
    w.expect(
        "C2S tail past head",
        "m1",
        Violation::TailPastHead,
        before,
        &disconnect_reason(&s.ch),
    );

    // 3. One buffer handed back twice: the next slot repeats this slot's descriptor.
    let mut s = HostileServer::accept(&listener, ctl);
    s.deliver_good(ctl);
    let before = m1(Violation::NotPosted);
    let ring = &s.conn.s2c[0];
    let d = Desc {
        length: FRAME_LEN as u32,
        ..ring.desc(s.tail)
    };
    ring.set_desc(s.tail, d);
    ring.set_desc(s.tail.wrapping_add(1), d);
    ring.set_tail(s.tail.wrapping_add(2));
    w.expect(
        "descriptor repeated",
        "m1",
        Violation::NotPosted,
        before,
        &disconnect_reason(&s.ch),
    );

    // 4. A length beyond the buffer posted.
    let s = HostileServer::accept(&listener, ctl);
    let before = m1(Violation::BadLength);
    let ring = &s.conn.s2c[0];
    ring.set_length(0, 5000, 0);
    ring.set_tail(1);
    w.expect(
        "length beyond the buffer",
        "m1",
        Violation::BadLength,
        before,
        &disconnect_reason(&s.ch),
    );

    // 5. Out of order: a second HELLO once connected.
    let s = HostileServer::accept(&listener, ctl);
    let before = m1(Violation::OutOfOrder);
    let hello = Hello {
        name: "again".into(),
        min_version: VERSION,
        max_version: VERSION,
        max_region: 15,
        max_c2s_ring: 0,
        max_s2c_ring: 0,
        max_log2_ring_size: 10,
    };
    s.ch.send(&Msg::Hello(hello.clone()), None).unwrap();
    w.expect(
        "HELLO after CONNECT",
        "m1",
        Violation::OutOfOrder,
        before,
        &disconnect_reason(&s.ch),
    );

    // 6. A HELLO that allows only rings of one descriptor.
    let ch = accept(&listener);
    let before = m1(Violation::BadRing);
    ch.send(
        &Msg::Hello(Hello {
            max_log2_ring_size: 0,
            ..hello
        }),
        None,
    )
    .unwrap();
    w.expect(
        "rings of one descriptor",
        "m1",
        Violation::BadRing,
        before,
        &disconnect_reason(&ch),
    );
    // No more peers: sluice's client keeps knocking at a socket nobody listens on.
    drop(listener);
    std::fs::remove_file(sock).ok();
}

#[test]
fn a_hostile_peer_is_counted_and_disconnected_and_leaks_nothing() {
    let dir = tmpdir("memif-hostile");
    let (cfg, ctl, s0, s1) = config(&dir);
    let mut daemon = start_daemon(&cfg, &ctl);
    let idle = ctl_json(&ctl, "show buffers")["in_use"].as_u64().unwrap();
    for p in ["p0", "p2", "p3"] {
        common::ctl(&ctl, &format!("set interface state {p} up")).unwrap();
    }
    let mut w = Watch {
        ctl: &ctl,
        forwarded: 0,
    };
    let events = watch_memif(&ctl);
    attacks_as_client(&ctl, &s0, &mut w);
    attacks_as_server(&ctl, &s1, &mut w);
    // A subscriber saw each violation as a memif event naming it.
    wait_for("violation events for m0 and m1", 5, || {
        let seen = events.lock().unwrap();
        ["m0", "m1"].iter().all(|m| {
            seen.iter().any(|e| {
                e["event"] == "violation" && e["interface"] == *m && e["violation"].is_string()
            })
        })
    });
    // Every violation also counted as a bad descriptor where the receive path saw it.
    let errors = ctl_json(&ctl, "show errors");
    let bad: u64 = errors
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] == "bad descriptor from the device")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert!(bad >= 5, "{errors}");
    // Quiet, every buffer comes home: nothing unaccounted, nothing still in use.
    for p in ["p0", "p2", "p3"] {
        common::ctl(&ctl, &format!("set interface state {p} down")).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let b = ctl_json(&ctl, "show buffers");
        if b["unaccounted"] == 0 && b["in_use"].as_u64().unwrap() <= idle {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "buffers did not come back (idle {idle}): {b}\n{}",
            common::ctl(&ctl, "show buffers").unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
