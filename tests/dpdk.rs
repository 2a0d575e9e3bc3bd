//! The dpdk driver on DPDK's virtual devices, through the daemon (EAL starts once per
//! process): two net_null ports cross-connected by two workers forward both ways with every
//! buffer accounted; a capture replayed through net_pcap leaves by another net_pcap port
//! byte for byte, jumbo frames (buffer chains, multi-segment mbufs) included; net_af_xdp on
//! veths runs on sluice's buffer region as its UMEM.

mod common;
use common::frames::{frame, write_pcap};
use common::*;
use sluice::drivers::pcap::file::read_file;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// DPDK's development files and the PMDs the tests use: then `sluice` was built with the
/// driver (build.rs finds DPDK the same way).
fn dpdk_present() -> bool {
    let dev = Command::new("pkg-config")
        .args(["--exists", "libdpdk"])
        .status()
        .is_ok_and(|s| s.success());
    let pmds = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0";
    let have = |p: &str| Path::new(&format!("{pmds}/librte_net_{p}.so.23")).exists();
    prerequisite(
        dev && have("null") && have("pcap"),
        "DPDK 22.11 with its null and pcap PMDs (apt-get install dpdk-dev librte-net-pcap23)",
    )
}

/// The head of a test daemon's config: `workers` and `buffers` in normal pages, its control
/// socket at `socket`.
fn daemon((workers, buffers): (u32, u32), socket: &Path) -> String {
    format!(
        "[dataplane]\nworkers = {workers}\nbuffers = {buffers}\nhugepages = \"never\"\n\
         [control]\nsocket = \"{}\"\n",
        socket.display()
    )
}

/// `GET /metrics` from the daemon's endpoint on 127.0.0.1:`port`.
fn scrape(port: u32) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    text
}

fn counter(socket: &Path, name: &str, key: &str) -> u64 {
    let v = ctl_json(socket, &format!("show interface {name}"));
    v[0][key].as_u64().unwrap_or(0)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn null_ports_cross_connected_forward_both_ways_with_every_buffer_accounted() {
    if !dpdk_present() {
        return;
    }
    let dir = tmpdir("dpdk-null");
    let socket = dir.join("cli.sock");
    let cfg = dir.join("null.toml");
    let port = 20_000 + std::process::id() % 20_000;
    std::fs::write(
        &cfg,
        daemon((2, 16384), &socket)
            + &format!("[metrics]\nlisten = \"127.0.0.1:{port}\"\n")
            + r#"
[[interface]]
name = "n0"
driver = "dpdk"
devargs = "net_null0"
[[interface]]
name = "n1"
driver = "dpdk"
devargs = "net_null1"
[[xconnect]]
rx = "n0"
tx = "n1"
[[xconnect]]
rx = "n1"
tx = "n0"
"#,
    )
    .unwrap();
    let mut d = Daemon::start_here(&cfg, &socket);
    wait_for("traffic both ways", || {
        counter(&socket, "n0", "tx_packets") > 50_000
            && counter(&socket, "n1", "tx_packets") > 50_000
    });
    for n in ["n0", "n1"] {
        let i = &ctl_json(&socket, &format!("show interface {n}"))[0];
        assert_eq!(i["driver"], "dpdk", "{i}");
        assert_eq!(i["rx_queues"], 2, "{i}");
        assert_eq!(i["tx_queues"], 3, "{i}");
        assert_eq!(i["tx_errors"], 0, "{i}");
    }
    // Both workers received: one queue each, RSS or not.
    let runtime = ctl_json(&socket, "show runtime");
    let per_worker = vectors_by_worker(&runtime, "dpdk-input");
    assert!(
        per_worker.len() == 2 && per_worker.iter().all(|&v| v > 0),
        "{per_worker:?}"
    );
    let hw = ctl(&socket, "show hardware n0").unwrap();
    assert!(hw.contains("net_null") && hw.contains("zero copy"), "{hw}");
    // The port's extended statistics reach the metrics endpoint.
    let metrics = scrape(port);
    assert!(
        metrics.contains("interfaces_device_total{interface=\"n0\",counter=\"rx_good_packets\"}"),
        "{metrics}"
    );
    // Traffic stopped (admin down: the ports are not polled), every frame received was sent
    // and the buffers lent to DPDK are counted as the driver's: none is lost.
    for n in ["n0", "n1"] {
        ctl(&socket, &format!("set interface state {n} down")).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    // (What arrived while the other port was already down is a counted drop.)
    let rx = |n: &str| counter(&socket, n, "rx_packets");
    let out = |n: &str, to: &str| counter(&socket, n, "drops") + counter(&socket, to, "tx_packets");
    assert_eq!((rx("n0"), rx("n1")), (out("n0", "n1"), out("n1", "n0")));
    let b = ctl_json(&socket, "show buffers");
    assert_eq!(b["unaccounted"], 0, "{b}");
    assert!(b["in_drivers"].as_u64().unwrap() > 0, "{b}");
    // The frames took the cross-connect patch, on both workers.
    let runtime = ctl_json(&socket, "show runtime");
    let patched = vectors_by_worker(&runtime, "l2-patch");
    assert!(patched.iter().all(|&v| v > 0), "{patched:?}");
    let runtime = format!("/var/run/dpdk/sluice{}", d.child.id());
    assert!(d.stop(), "the daemon did not stop cleanly");
    assert!(!Path::new(&runtime).exists(), "EAL's {runtime} left behind");
}

#[test]
fn a_capture_replayed_through_net_pcap_leaves_byte_for_byte() {
    if !dpdk_present() {
        return;
    }
    let dir = tmpdir("dpdk-pcap");
    // Small and full-size frames, and jumbo ones that span buffers.
    let frames: Vec<Vec<u8>> = (0..300u32)
        .map(|i| {
            let len = match i % 5 {
                0 => 60,
                1 => 61 + (i as usize * 7) % 1400,
                2 => 1514,
                3 => 4000,
                _ => 9014,
            };
            frame(len, i)
        })
        .collect();
    let (sent, _) = replayed(&dir, &frames, true, 0);
    assert_eq!(sent.len(), frames.len());
    for (i, (got, want)) in sent.iter().zip(&frames).enumerate() {
        assert_eq!(got.len(), want.len(), "frame {i}: length");
        assert!(got == want, "frame {i} differs");
    }
}

/// What a net_pcap port sends when `frames` are replayed into another that is
/// cross-connected to it, with the cross-connect patch on or off, and the vectors l2-patch
/// counted; the trace of `trace` frames runs from the start when it is not 0.
fn replayed(dir: &Path, frames: &[Vec<u8>], patch: bool, trace: usize) -> (Vec<Vec<u8>>, u64) {
    std::fs::create_dir_all(dir).unwrap();
    let socket = dir.join("cli.sock");
    let (input, empty) = (dir.join("in.pcap"), dir.join("empty.pcap"));
    let (out, back) = (dir.join("out.pcap"), dir.join("back.pcap"));
    write_pcap(&input, frames);
    write_pcap(&empty, &[]);
    let cfg = dir.join("pcap.toml");
    std::fs::write(
        &cfg,
        daemon((1, 8192), &socket)
            + &format!(
                r#"
[dpdk]
patch = {patch}
[[interface]]
name = "p0"
driver = "dpdk"
devargs = "net_pcap0,rx_pcap={input},tx_pcap={back}"
mtu = 9000
state = "down"
[[interface]]
name = "p1"
driver = "dpdk"
devargs = "net_pcap1,rx_pcap={empty},tx_pcap={out}"
mtu = 9000
[[xconnect]]
rx = "p0"
tx = "p1"
"#,
                input = input.display(),
                empty = empty.display(),
                back = back.display(),
                out = out.display(),
            ),
    )
    .unwrap();
    let mut d = Daemon::start_here(&cfg, &socket);
    if trace > 0 {
        ctl(&socket, &format!("trace add dpdk-input {trace}")).unwrap();
    }
    ctl(&socket, "set interface state p0 up").unwrap();
    let rx = |n: &str| counter(&socket, n, "rx_packets");
    wait_for("the replay", || rx("p0") >= frames.len() as u64);
    let forwarded = frames.iter().filter(|f| tags(f) <= 2).count() as u64;
    wait_for("the replay to leave p1", || {
        counter(&socket, "p1", "tx_packets") >= forwarded
    });
    assert_eq!(rx("p0"), frames.len() as u64);
    let runtime = ctl_json(&socket, "show runtime");
    let patched = vectors_by_worker(&runtime, "l2-patch").iter().sum();
    let b = ctl_json(&socket, "show buffers");
    assert_eq!(b["unaccounted"], 0, "{b}");
    assert!(d.stop(), "the daemon did not stop cleanly");
    let sent = read_file(&out)
        .unwrap()
        .into_iter()
        .map(|p| p.data)
        .collect();
    (sent, patched)
}

/// The VLAN tags at the head of frame `f`.
fn tags(f: &[u8]) -> usize {
    let mut n = 0;
    while f.len() >= 14 + 4 * n && matches!(&f[12 + 4 * n..14 + 4 * n], [0x81, 0x00] | [0x88, 0xa8])
    {
        n += 1;
    }
    n
}

/// The cross-connect patch sends what the graph would, in the order the graph would: a replay
/// of normal frames among runts (which the graph pads), tagged frames, frames with three tags
/// (which it drops) and jumbo chains leaves a net_pcap port the same with the patch on and
/// off, byte for byte; with it on frames took it, and with a trace running none did.
#[test]
fn the_patch_sends_what_the_graph_would_in_the_same_order() {
    if !dpdk_present() {
        return;
    }
    let frames: Vec<Vec<u8>> = (0..6000u32)
        .map(|i| {
            let mut f = frame(60 + (i as usize * 13) % 1455, i);
            match i % 97 {
                0 => f.truncate(42),
                1 => f.splice(12..12, [0x81, 0x00, 0x00, 0x07]).for_each(drop),
                2 => f
                    .splice(12..12, [0x88, 0xa8, 0, 1, 0x81, 0, 0, 2, 0x81, 0, 0, 3])
                    .for_each(drop),
                3 => f = frame(4000, i),
                _ => {}
            }
            f
        })
        .collect();
    let dir = tmpdir("dpdk-patch");
    let (graph, none) = replayed(&dir.join("graph"), &frames, false, 0);
    let (patch, patched) = replayed(&dir.join("patch"), &frames, true, 0);
    assert_eq!(none, 0, "l2-patch with patch = false");
    // A burst takes the patch up to its first frame that needs the graph: here one in 24.
    assert!(
        patched as usize >= frames.len() / 10,
        "{patched} of {} patched",
        frames.len()
    );
    // What the graph sends: every frame but the triple-tagged ones, runts padded with zeros.
    let mut want: Vec<Vec<u8>> = frames.iter().filter(|f| tags(f) <= 2).cloned().collect();
    for f in want.iter_mut().filter(|f| f.len() < 60) {
        f.resize(60, 0);
    }
    assert_eq!(graph.len(), want.len());
    assert!(
        graph == want,
        "the graph's output is not the frames as expected"
    );
    assert_eq!(patch.len(), want.len());
    for (i, (got, want)) in patch.iter().zip(&want).enumerate() {
        assert!(
            got == want,
            "frame {i}: the patch sent another frame than the graph"
        );
    }
    let (_, traced) = replayed(&dir.join("trace"), &frames, true, 100_000);
    assert_eq!(traced, 0, "frames took the patch while a trace ran");
}

/// sluice's dpdk driver on DPDK's net_memif (the server) and sluice's own memif driver (the
/// client) in another daemon: a capture looped into the client's memif reaches a net_pcap
/// port of the first daemon unchanged and in order.
#[test]
fn net_memif_talks_to_sluices_own_memif() {
    if !dpdk_present() {
        return;
    }
    let dir = tmpdir("dpdk-memif");
    let (sock_a, sock_b) = (dir.join("a.sock"), dir.join("b.sock"));
    let (memif, input, empty, out) = (
        dir.join("memif.sock"),
        dir.join("in.pcap"),
        dir.join("empty.pcap"),
        dir.join("out.pcap"),
    );
    let frames: Vec<Vec<u8>> = (0..50u32)
        .map(|i| frame(60 + (i as usize * 29) % 1400, i))
        .collect();
    write_pcap(&input, &frames);
    write_pcap(&empty, &[]);
    let a = dir.join("a.toml");
    std::fs::write(
        &a,
        daemon((1, 8192), &sock_a)
            + &format!(
                r#"
[[interface]]
name = "m0"
driver = "dpdk"
devargs = "net_memif0,role=server,socket={memif},socket-abstract=no"
[[interface]]
name = "p0"
driver = "dpdk"
devargs = "net_pcap0,rx_pcap={empty},tx_pcap={out}"
[[xconnect]]
rx = "m0"
tx = "p0"
"#,
                memif = memif.display(),
                empty = empty.display(),
                out = out.display(),
            ),
    )
    .unwrap();
    let b = dir.join("b.toml");
    std::fs::write(
        &b,
        daemon((1, 8192), &sock_b)
            + &format!(
                r#"
[[interface]]
name = "m0"
driver = "memif"
socket = "{memif}"
role = "client"
id = 0
[[interface]]
name = "p0"
driver = "pcap"
rx-file = "{input}"
loop = true
[[xconnect]]
rx = "p0"
tx = "m0"
"#,
                memif = memif.display(),
                input = input.display(),
            ),
    )
    .unwrap();
    let mut da = Daemon::start_here(&a, &sock_a);
    let mut db = Daemon::start_here(&b, &sock_b);
    wait_for("frames through the memif", || {
        counter(&sock_a, "p0", "tx_packets") >= 500
    });
    assert!(db.stop(), "the memif client did not stop cleanly");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        counter(&sock_a, "m0", "rx_packets"),
        counter(&sock_a, "p0", "tx_packets")
    );
    assert!(da.stop(), "the daemon with net_memif did not stop cleanly");
    // Every frame out is one of the capture's, byte for byte, in the capture's order (the
    // client's full ring may drop some, counted on its side: a gap, never a change).
    let sent = read_file(&out).unwrap();
    assert!(sent.len() >= 500, "{}", sent.len());
    let at = |i: usize| {
        frames
            .iter()
            .position(|f| *f == sent[i].data)
            .unwrap_or_else(|| panic!("frame {i} out is none of the capture's"))
    };
    let mut in_order = 0;
    for i in 1..sent.len() {
        in_order += usize::from(at(i) == (at(i - 1) + 1) % frames.len());
    }
    assert!(
        in_order * 100 >= sent.len() * 95,
        "{in_order} of {} in order",
        sent.len()
    );
}

/// DPDK's net_af_xdp PMD on two veths, its UMEM sluice's buffer region (each pool's one
/// memory chunk): 20 000 frames of mixed sizes between two namespaces arrive intact, the
/// counters match, no buffer is lost, and the PMD's XDP programs leave with the daemon.
#[test]
fn net_af_xdp_on_veths_uses_sluices_buffers_as_its_umem() {
    if !dpdk_present() || !needs_root() {
        return;
    }
    let pmd = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_net_af_xdp.so.23";
    if !prerequisite(
        Path::new(pmd).exists(),
        "DPDK's af_xdp PMD (librte-net-af-xdp23)",
    ) {
        return;
    }
    let l = Lab::new("dxt", "dxd", 2, 1500, "dpdk-af-xdp");
    let socket = l.dir.join("cli.sock");
    let cfg = l.dir.join("af_xdp.toml");
    let mut text = daemon((1, 16384), &socket);
    for k in 0..2 {
        text += &format!(
            "[[interface]]\nname = \"d{k}\"\ndriver = \"dpdk\"\ndevargs = \"net_af_xdp{k},iface=d{k}\"\n"
        );
    }
    text += "[[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n";
    std::fs::write(&cfg, text).unwrap();
    let mut d = Daemon::start(&l.dut, &cfg, &socket);
    let hw = ctl(&socket, "show hardware d0").unwrap();
    assert!(hw.contains("net_af_xdp"), "{hw}");
    let count = 20_000u64;
    let gen = gen_mixed_sizes(&l.tester, ("t0", "t1"), count, 20000);
    // The tester, on a loaded machine, may miss frames in its own receive ring, and says so.
    let seen = gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap();
    let errors = ctl(&socket, "show errors").unwrap_or_default();
    assert_eq!(seen, count, "{gen}\n{errors}");
    assert_eq!(gen["rx_corrupt"], 0, "byte-identical: {gen}");
    assert_eq!(counter(&socket, "d0", "rx_packets"), count);
    assert_eq!(counter(&socket, "d1", "tx_packets"), count);
    assert_eq!(counter(&socket, "d1", "tx_errors"), 0);
    let b = ctl_json(&socket, "show buffers");
    assert_eq!(b["unaccounted"], 0, "{b}");
    assert!(d.stop(), "the daemon did not stop cleanly");
    let link = String::from_utf8_lossy(&l.dut.ip(&["link", "show", "d0"]).stdout).into_owned();
    assert!(
        !link.contains("prog/xdp"),
        "the PMD's program left with it: {link}"
    );
    std::fs::remove_dir_all(&l.dir).ok();
}
