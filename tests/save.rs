//! `sluice ctl save`: a daemon changed by the CLI saves its running configuration, a second
//! daemon started from the saved file shows the same state, and saving that one again gives
//! the same file. Pcap interfaces only: no namespaces, no root needed.

mod common;

use common::{ctl, save_body, snapshot, tmpdir, Daemon, BIN};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sluice(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn start(cfg: &Path, sock: &Path) -> Daemon {
    Daemon::start_here(cfg, sock)
}

/// Two workers; p0 replays a capture (so it has a receive queue to place), p1-p3 only
/// write; a route file with two routes.
fn config(dir: &Path) -> PathBuf {
    let input = dir.join("in.pcap");
    common::frames::one_frame_pcap(&input);
    std::fs::write(
        dir.join("routes.txt"),
        "10.0.0.0/8 via 192.0.2.2 dev p0\nblackhole 10.1.0.0/16\n",
    )
    .unwrap();
    let cfg = dir.join("start.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"# the start-up file
[dataplane]
workers = 2
hugepages = "never"
buffers = 2048

[control]
socket = "{0}/cli.sock"

[[interface]]
name = "p0"
driver = "pcap"
rx-file = "{0}/in.pcap"
tx-file = "{0}/p0.pcap"
address = ["192.0.2.1/24"]

[[interface]]
name = "p1"
driver = "pcap"
tx-file = "{0}/p1.pcap"
mtu = 1500
address = ["198.51.100.1/24", "2001:db8::1/64"]

[[interface]]
name = "p2"
driver = "pcap"
tx-file = "{0}/p2.pcap"

[[interface]]
name = "p3"
driver = "pcap"
tx-file = "{0}/p3.pcap"

[[bridge-domain]]
id = 10
members = ["p3"]

[[route]]
prefix = "172.16.0.0/12"
via = ["192.0.2.2"]

[fib]
route-file = "{0}/routes.txt"

[sessions]
udp = 60
"#,
            dir.display()
        ),
    )
    .unwrap();
    cfg
}

/// The CLI changes made before the save.
const CHANGES: &[&str] = &[
    "set interface ip address p2 203.0.113.1/24",
    "set interface ip address del p1 2001:db8::1/64",
    "set interface ip address p1 2001:db8:5::1/64",
    "ip route add 198.19.0.0/16 via 192.0.2.2 p0 via 192.0.2.3 p0",
    "ip route add 198.18.0.0/16 via 192.0.2.9 via 198.51.100.9",
    "ip route add 203.0.113.128/25 drop",
    "ip route add 2001:db8:1::/48 via 2001:db8:5::2",
    "ip route del 172.16.0.0/12",
    // Over a route of the file: the CLI's wins, and is saved.
    "ip route add 10.0.0.0/8 via 198.51.100.7",
    "ip table add 7",
    "create sub-interface p2 100 dot1q 100",
    "set interface ip table p2.100 7",
    "set interface ip6 table p2.100 7",
    "set interface ip address p2.100 10.7.0.1/24",
    "ip route add 0.0.0.0/0 table 7 via 10.7.0.254",
    "ip route add 192.0.2.128/25 table 7 via 192.0.2.5 next-hop-table 0",
    "create bridge-domain 10 learn off mac-age 90s",
    "create bridge-domain 20 arp-term on mac-limit 500",
    "create sub-interface p3 5 dot1ad 5 inner-dot1q 6",
    "set interface l2 bridge p3.5 20 shg 2",
    "bvi create instance 20",
    "set interface l2 bridge bvi20 20 bvi",
    "set interface ip address bvi20 172.20.0.1/24",
    "set bridge-domain arp entry 20 172.20.0.9 02:00:00:00:00:09",
    "l2fib add 02:00:00:00:00:42 10 p3 static",
    "acl add edge deny proto icmp, permit proto tcp src 192.0.2.0/24 dport 22, permit",
    "set acl-plugin interface p0 input acl edge",
    "set acl-plugin interface p1 output acl edge",
    "set interface rx-placement p0 queue 0 worker 1",
    "set interface handoff p1 workers 0-1 key standard",
    "set interface state p2 down",
    "set ip neighbor p0 192.0.2.2 02:00:00:00:00:02",
];

#[test]
fn saved_configuration_starts_the_same_dataplane() {
    let dir = tmpdir("save-rt");
    let cfg = config(&dir);
    let sock = dir.join("cli.sock");
    let saved = dir.join("saved.toml");
    let before = {
        let d = start(&cfg, &sock);
        for c in CHANGES {
            ctl(&sock, c).unwrap_or_else(|e| panic!("{c}: {e}"));
        }
        // Bad files: an error, and no file (nor a temporary one) left.
        for (file, want) in [
            ("saved.toml", "not an absolute path"),
            (
                "/nonexistent-dir/x.toml",
                "cannot write /nonexistent-dir/x.toml",
            ),
        ] {
            let e = ctl(&sock, &format!("save {file}")).unwrap_err();
            assert!(e.contains(want), "{file}: {e}");
        }
        let e = ctl(&sock, &format!("save {}", dir.display())).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let plain = dir.join("plain");
        std::fs::write(&plain, "").unwrap();
        let e = ctl(&sock, &format!("save {}/x.toml", plain.display())).unwrap_err();
        assert!(
            e.contains("cannot write") && e.contains("Not a directory"),
            "{e}"
        );
        assert_eq!(std::fs::read(&plain).unwrap(), b"");
        let unwritable = dir.join("ro");
        std::fs::create_dir(&unwritable).unwrap();
        std::fs::set_permissions(&unwritable, std::fs::Permissions::from_mode(0o500)).unwrap();
        let target = unwritable.join("x.toml");
        let r = ctl(&sock, &format!("save {}", target.display()));
        if !common::is_root() {
            // Root writes into a mode 0500 directory anyway.
            assert!(r.unwrap_err().contains("Permission denied"));
            assert_eq!(std::fs::read_dir(&unwritable).unwrap().count(), 0);
        }
        let out = ctl(&sock, &format!("save {}", saved.display())).unwrap();
        assert_eq!(out, format!("saved to {}\n", saved.display()));
        let printed = ctl(&sock, "save").unwrap();
        let snap = snapshot(&sock);
        (snap, printed, d)
    };
    let (snap_a, printed, daemon_a) = before;
    drop(daemon_a);
    // The snapshot has what the changes made (so that comparing it means something).
    let all = serde_json::to_string(&snap_a).unwrap();
    for want in [
        "\"worker\":1",
        "\"name\":\"edge\"",
        "198.19.0.0/16",
        "192.0.2.128/25",
        "\"interface\":\"p3.5\",\"shg\":2",
        "02:00:00:00:00:42",
        "\"key\":\"standard\"",
        "2001:db8:1::/48",
        "172.20.0.9",
    ] {
        assert!(all.contains(want), "{want} in {all}");
    }

    let text = std::fs::read_to_string(&saved).unwrap();
    assert_eq!(save_body(&printed), save_body(&text));
    let mode = std::fs::metadata(&saved).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        text.starts_with("# The running configuration of sluice "),
        "{text}"
    );
    // The route file is named, not written out; its replaced route is a [[route]].
    assert!(text.contains(&format!("route-file = \"{}/routes.txt\"", dir.display())));
    assert!(!text.contains("10.1.0.0/16"), "{text}");
    assert!(
        text.contains("prefix = \"10.0.0.0/8\"\nvia = [\"198.51.100.7\"]"),
        "{text}"
    );
    assert!(!text.contains("172.16.0.0/12"), "{text}");
    // The start-up file's keys the CLI cannot change are kept.
    assert!(text.contains("[sessions]\nudp = 60\n"), "{text}");
    assert!(text.contains("mtu = 1500"), "{text}");
    // Sections in the order of docs/config.md.
    let headers: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']'))
        .collect();
    let order: Vec<&str> = sluice::config::reference::sections()
        .iter()
        .map(|s| s.name)
        .collect();
    let ranks: Vec<usize> = headers
        .iter()
        .map(|h| order.iter().position(|o| o == h).unwrap())
        .collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{headers:?}");

    let o = sluice(&["run", "--check", "-c", saved.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The static neighbour has no section: the file says so and how to enter it again.
    let neighbours: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .collect();
    assert_eq!(
        neighbours,
        ["set ip neighbor p0 192.0.2.2 02:00:00:00:00:02"]
    );

    let d = start(&saved, &sock);
    for n in &neighbours {
        ctl(&sock, n).unwrap();
    }
    let snap_b = snapshot(&sock);
    for ((c, a), (_, b)) in snap_a.iter().zip(&snap_b) {
        assert_eq!(a, b, "{c}: before and after the restart");
    }
    // Saving the saved configuration gives the same file.
    let again = dir.join("again.toml");
    ctl(&sock, &format!("save {}", again.display())).unwrap();
    assert_eq!(
        save_body(&std::fs::read_to_string(&again).unwrap()),
        save_body(&text)
    );
    drop(d);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unsaveable_state_is_an_error_that_says_what_to_change() {
    let dir = tmpdir("save-bad");
    let cfg = config(&dir);
    let sock = dir.join("cli.sock");
    let _d = start(&cfg, &sock);
    ctl(&sock, "ip table add 3").unwrap();
    ctl(&sock, "set interface ip6 table p2 3").unwrap();
    let file = dir.join("x.toml");
    let e = ctl(&sock, &format!("save {}", file.display())).unwrap_err();
    assert!(
        e.contains("p2 routes IPv4 in table 0 and IPv6 in table 3"),
        "{e}"
    );
    assert!(!file.exists());
    ctl(&sock, "set interface ip table p2 3").unwrap();
    ctl(&sock, &format!("save {}", file.display())).unwrap();
    ctl(&sock, "bvi create instance 4").unwrap();
    let e = ctl(&sock, "save").unwrap_err();
    assert!(e.contains("bvi4 is in no bridge domain"), "{e}");
    drop(_d);
    std::fs::remove_dir_all(&dir).ok();
}
