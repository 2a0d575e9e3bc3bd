//! What a memif client shows its server (issue 33, item 10): by default only a region made
//! for that link, never the buffer pool. The test plays the server with sluice's own protocol
//! code while sluice forwards a bystander pair, p0 -> p1, whose frames carry a marker; the
//! marker must not appear in anything sluice's client mapped for the server. (Lending the
//! pool, as sluice did before, showed the server every interface's packets.)
//!
//! Needs no root and no namespace: memif is unix sockets and shared memory.

mod common;
use common::*;
use sluice::drivers::memif::connection::{self, Settings};
use sluice::drivers::memif::socket::Channel;
use sluice::drivers::pcap::file::Writer;
use std::time::{Duration, Instant};

const MARKER: &[u8] = b"bystander-secret-payload";

#[test]
fn a_copying_client_shows_its_server_no_other_interface_s_packets() {
    let dir = tmpdir("memif-client-region");
    let (ctl, cfg, sock, feed) = (
        dir.join("ctl.sock"),
        dir.join("sluice.toml"),
        dir.join("m0.sock"),
        dir.join("feed.pcap"),
    );
    let mut f = vec![0u8; 14];
    f.copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    f.extend_from_slice(MARKER);
    f.resize(128, 0);
    let mut w = Writer::create(&feed).unwrap();
    w.write(1_700_000_000_000_000_000, &f).unwrap();
    w.flush().unwrap();
    let listener = Channel::listen(&sock).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"p0\"\ndriver = \"pcap\"\nrx-file = \"{}\"\nloop = true\n\
             [[interface]]\nname = \"p1\"\ndriver = \"pcap\"\ntx-file = \"/dev/null\"\n\
             [[interface]]\nname = \"m0\"\ndriver = \"memif\"\nsocket = \"{}\"\nrole = \"client\"\n\
             [[xconnect]]\nrx = \"p0\"\ntx = \"p1\"\n",
            ctl.display(),
            feed.display(),
            sock.display()
        ),
    )
    .unwrap();
    let mut daemon = Daemon::start_here(&cfg, &ctl);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listener.wait(100) {
        assert!(Instant::now() < deadline, "sluice's client did not come");
    }
    let ch = listener.accept().unwrap();
    let settings = Settings {
        id: 0,
        secret: None,
        name: "curious-server".into(),
        queues: 1,
        log2_ring_size: 10,
        pool: None,
    };
    let conn = connection::serve(&ch, &settings).unwrap();
    // Let the bystander's frames go round the pool many times over.
    let forwarded = || {
        ctl_json(&ctl, "show interface p1")[0]["tx_packets"]
            .as_u64()
            .unwrap()
    };
    let start = Instant::now();
    while forwarded() < 100_000 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "bystander too slow"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for (k, region) in conn.regions.iter().enumerate() {
        let mut bytes = vec![0u8; region.len()];
        assert!(region.read(0, &mut bytes));
        assert!(
            !bytes.windows(MARKER.len()).any(|w| w == MARKER),
            "region {k} ({} bytes) shows the server a bystander's packet",
            region.len()
        );
    }
    drop(ch);
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
