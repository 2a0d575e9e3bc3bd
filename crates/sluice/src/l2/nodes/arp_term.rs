//! l2-arp-term: ARP termination in a bridge domain. l2-fwd sends here the broadcast ARP
//! requests whose target the domain has an ARP entry for (`set bridge-domain arp entry`);
//! the request is turned into the reply in place and goes back out of the port it came in
//! by, so it is never flooded. A request whose entry went away meanwhile is flooded as usual.

use crate::graph::names::{error_counters, next_nodes};
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::l2::nodes::flood;
use crate::nodes::interface_output;
use crate::wire::arp::{reply_in_place, ArpPacket, OP_REQUEST};
use crate::wire::ethernet::HEADER_LEN;

pub const NAME: &str = "l2-arp-term";

next_nodes! {
    enum Next {
        InterfaceOutput = interface_output::NAME,
        Flood = flood::NAME,
    }
}

error_counters! {
    enum Counter {
        Answered = "ARP requests answered by the bridge domain",
        Flooded = "ARP request flooded: no entry (or no longer a request)",
    }
}

pub struct L2ArpTerm {
    modes: SharedL2Modes,
}

impl L2ArpTerm {
    pub fn decl(modes: SharedL2Modes) -> NodeDecl {
        NodeDecl::internal(NAME, &Next::NAMES, &Counter::REASONS, L2ArpTerm { modes })
    }
}

/// The target of the ARP request in `frame` (untagged: a sub-interface's tags are off), if
/// it is one.
pub fn request_target(frame: &[u8]) -> Option<u32> {
    if frame.get(12..14)? != [0x08, 0x06] {
        return None;
    }
    let arp = ArpPacket::parse(frame.get(HEADER_LEN..)?).ok()?;
    (arp.op == OP_REQUEST).then_some(arp.target_ip)
}

traced_loop_nodes!(L2ArpTerm);

impl TracedLoop for L2ArpTerm {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        for &bi in frame {
            let rx = cx.bufs.meta(bi).rx_if;
            let data = cx.bufs.data(bi);
            let answer = modes.bridge_port(rx).and_then(|(_, domain)| {
                let arp = ArpPacket::parse(data.get(HEADER_LEN..)?).ok()?;
                let mac = *domain.arp.get(&arp.target_ip)?;
                (arp.op == OP_REQUEST).then_some((arp, mac))
            });
            let Some((req, mac)) = answer else {
                cx.count_error(Counter::Flooded as usize, 1);
                cx.enqueue(Next::Flood as usize, bi);
                continue;
            };
            let (meta, data) = cx.bufs.meta_data_mut(bi);
            // The request parsed, so the 28 bytes are there.
            let _ = reply_in_place(data, HEADER_LEN, &req, mac);
            meta.tx_if = rx;
            cx.count_error(Counter::Answered as usize, 1);
            if TRACE {
                cx.trace(
                    bi,
                    format_args!(
                        "{} is at {mac}: answered on if {rx}",
                        std::net::Ipv4Addr::from(req.target_ip)
                    ),
                );
            }
            cx.enqueue(Next::InterfaceOutput as usize, bi);
        }
    }
}
