//! Which receive queues an interface has, which of them to capture, and the socket filter
//! that keeps one queue's packets.
//!
//! The kernel keeps a packet's queue in `skb->queue_mapping`, but not every driver stores the
//! same number there. A NIC driver records receive queue K as K + 1
//! (`skb_record_rx_queue`), leaving 0 for "no queue recorded". A veth stores the index of
//! the receive queue the packet was put on as it is: the sender's transmit queue K lands on
//! the peer's receive queue K with `queue_mapping == K` (measured on Linux 6.18 with a
//! 4-queue veth pair; see `tests/capture_ns.rs`). [`Numbering`] says which an interface uses.

use crate::sys::bpf::{
    ClassicInsn, CLASSIC_JEQ_K, CLASSIC_LD_W_ABS, CLASSIC_RET_K, SKF_AD_OFF, SKF_AD_QUEUE,
};
use std::path::Path;

/// `-q`: every receive queue, or the listed ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueSelection {
    All,
    List(Vec<u32>),
}

/// Most queues a list may name (the kernel allows 4096 per device; a list past that is a
/// typo).
const MAX_QUEUE: u32 = 4095;

/// `-q all|LIST`: `all`, or queue numbers and ranges separated by commas (`0,2`, `0-3,6`);
/// sorted, each queue once.
pub fn parse_selection(v: &str) -> Result<QueueSelection, String> {
    if v == "all" {
        return Ok(QueueSelection::All);
    }
    let number = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n <= MAX_QUEUE)
            .ok_or_else(|| format!("'{s}' is not a queue number (0-{MAX_QUEUE})"))
    };
    let mut queues = Vec::new();
    for part in v.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("'{part}' is an empty range"));
                }
                queues.extend(a..=b);
            }
            None => queues.push(number(part)?),
        }
    }
    queues.sort_unstable();
    queues.dedup();
    Ok(QueueSelection::List(queues))
}

impl QueueSelection {
    /// The queues to capture on an interface with `count` receive queues, or the reason
    /// the list does not fit it.
    pub fn resolve(&self, interface: &str, count: u32) -> Result<Vec<u32>, String> {
        match self {
            QueueSelection::All => Ok((0..count).collect()),
            QueueSelection::List(list) => match list.iter().find(|&&q| q >= count) {
                Some(q) if count == 1 => {
                    Err(format!("queue {q}: {interface} has 1 receive queue (0)"))
                }
                Some(q) => Err(format!(
                    "queue {q}: {interface} has {count} receive queues (0-{})",
                    count - 1
                )),
                None => Ok(list.clone()),
            },
        }
    }
}

/// The number of receive queues of `interface` (index `ifindex`): the `rx-*` entries under
/// `/sys/class/net/IF/queues`. Sysfs shows the namespace it was mounted in (`ip netns exec`
/// mounts the namespace's own), so the interface index there must be ours.
pub fn rx_queue_count(sys_net: &Path, interface: &str, ifindex: u32) -> Result<u32, String> {
    let dir = sys_net.join(interface);
    let sys_index = std::fs::read_to_string(dir.join("ifindex"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    if sys_index != Some(ifindex) {
        return Err(format!(
            "{} does not show this namespace's {interface} (run under `ip netns exec`, which \
             mounts the namespace's own sysfs)",
            sys_net.display()
        ));
    }
    let entries = std::fs::read_dir(dir.join("queues"))
        .map_err(|e| format!("{}: {e}", dir.join("queues").display()))?;
    let count = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .count() as u32;
    Ok(count.max(1))
}

/// How a driver numbers the queue it leaves in `skb->queue_mapping`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbering {
    /// Receive queue K is K + 1; 0 means no queue was recorded (NIC drivers, tun, virtio).
    Recorded,
    /// Receive queue K is K (veth).
    Index,
}

impl Numbering {
    /// The numbering of a driver, by its name (`ethtool -i`).
    pub fn of_driver(driver: &str) -> Numbering {
        match driver {
            "veth" => Numbering::Index,
            _ => Numbering::Recorded,
        }
    }

    /// The `queue_mapping` value of receive queue `q`.
    pub fn value(self, q: u32) -> u32 {
        match self {
            Numbering::Recorded => q + 1,
            Numbering::Index => q,
        }
    }
}

/// The socket filter that keeps queue `q`'s packets, cut to `snaplen` bytes (queue 0's also
/// keeps packets with no queue recorded).
///
/// ```text
/// ld  [SKF_AD_OFF + SKF_AD_QUEUE]      A = skb->queue_mapping
/// jeq #value(q), 0, 1                  our queue: accept
/// ret #snaplen
/// ret #0                               any other: drop
/// ```
///
/// With `catch_all` (queue 0 when all the device's queues are captured) it is the other way
/// round: drop
/// the packets of every other queue and keep the rest, so a packet with no queue recorded,
/// or a number outside the device's queues, still lands in exactly one file.
pub fn queue_filter(
    q: u32,
    queues: u32,
    numbering: Numbering,
    snaplen: u32,
    catch_all: bool,
) -> Vec<ClassicInsn> {
    let ld = ClassicInsn {
        code: CLASSIC_LD_W_ABS,
        jt: 0,
        jf: 0,
        k: SKF_AD_OFF + SKF_AD_QUEUE,
    };
    let jeq = |v: u32| ClassicInsn {
        code: CLASSIC_JEQ_K,
        jt: 0,
        jf: 1,
        k: v,
    };
    let ret = |k: u32| ClassicInsn {
        code: CLASSIC_RET_K,
        jt: 0,
        jf: 0,
        k,
    };
    if !catch_all {
        if q == 0 && numbering == Numbering::Recorded {
            // "No queue recorded" (a driver that records none, like a single-queue NIC's)
            // counts as queue 0.
            return vec![ld, jeq(0), ret(snaplen), jeq(1), ret(snaplen), ret(0)];
        }
        return vec![ld, jeq(numbering.value(q)), ret(snaplen), ret(0)];
    }
    let mut prog = vec![ld];
    for other in (0..queues).filter(|&o| o != q) {
        // Each comparison is followed by its own drop, so no jump is longer than one.
        prog.push(jeq(numbering.value(other)));
        prog.push(ret(0));
    }
    prog.push(ret(snaplen));
    prog
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run a program of the three instructions `queue_filter` uses on a packet whose
    /// `queue_mapping` is `mapping`: what the kernel would return (bytes kept).
    fn run(prog: &[ClassicInsn], mapping: u32) -> u32 {
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            match i.code {
                CLASSIC_LD_W_ABS => {
                    assert_eq!(i.k, SKF_AD_OFF + SKF_AD_QUEUE);
                    a = mapping;
                    pc += 1;
                }
                CLASSIC_JEQ_K => {
                    pc += 1 + if a == i.k { i.jt } else { i.jf } as usize;
                }
                CLASSIC_RET_K => return i.k,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    #[test]
    fn lists_parse_sorted_and_checked() {
        assert_eq!(parse_selection("all"), Ok(QueueSelection::All));
        assert_eq!(
            parse_selection("2,0,1-3"),
            Ok(QueueSelection::List(vec![0, 1, 2, 3]))
        );
        assert!(parse_selection("x").unwrap_err().contains("'x'"));
        assert!(parse_selection("3-1").unwrap_err().contains("empty range"));
        assert!(parse_selection("").is_err());
        assert!(parse_selection("1,,2").is_err());
        assert!(parse_selection("5000").is_err());
        let l = parse_selection("0,2").unwrap();
        assert_eq!(l.resolve("eth0", 4), Ok(vec![0, 2]));
        assert_eq!(
            l.resolve("eth0", 2).unwrap_err(),
            "queue 2: eth0 has 2 receive queues (0-1)"
        );
        assert_eq!(QueueSelection::All.resolve("eth0", 3), Ok(vec![0, 1, 2]));
        assert_eq!(
            l.resolve("lo", 1).unwrap_err(),
            "queue 2: lo has 1 receive queue (0)"
        );
    }

    #[test]
    fn each_queue_filter_keeps_its_queue_only() {
        for numbering in [Numbering::Recorded, Numbering::Index] {
            for q in 0..4 {
                let prog = queue_filter(q, 4, numbering, 128, false);
                for other in 0..4 {
                    let kept = run(&prog, numbering.value(other));
                    assert_eq!(kept, if other == q { 128 } else { 0 }, "{numbering:?}");
                }
                // Nothing recorded: queue 0's, where numbers start at 1.
                let unrecorded = numbering == Numbering::Recorded && q == 0;
                let want = if unrecorded || numbering.value(q) == 0 {
                    128
                } else {
                    0
                };
                assert_eq!(run(&prog, 0), want, "{numbering:?} queue {q}");
                assert_eq!(run(&prog, 99), 0);
            }
        }
    }

    #[test]
    fn with_a_catch_all_every_packet_lands_in_exactly_one_socket() {
        for numbering in [Numbering::Recorded, Numbering::Index] {
            let progs: Vec<_> = (0..4)
                .map(|q| queue_filter(q, 4, numbering, 9000, q == 0))
                .collect();
            // Every value a packet may carry, including none recorded and out of range.
            for mapping in 0..8 {
                let keepers: Vec<usize> = (0..4).filter(|&q| run(&progs[q], mapping) > 0).collect();
                assert_eq!(keepers.len(), 1, "{numbering:?} mapping {mapping}");
                if let Some(q) = (0..4).find(|&q| numbering.value(q) == mapping) {
                    assert_eq!(keepers, vec![q as usize]);
                }
            }
        }
        assert_eq!(Numbering::of_driver("veth"), Numbering::Index);
        assert_eq!(Numbering::of_driver("ixgbe"), Numbering::Recorded);
    }
}
