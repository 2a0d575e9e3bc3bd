//! Which DUTs the lab knows and what each can do. Each DUT declares a `DutSpec` in its own
//! file (its name, what it takes, its start function); the one list at the end of this file
//! makes `DutKind` of them, and `--dut`'s parsing, its "known:" error and every predicate
//! read the specs. Adding a DUT is its file and one line of that list.

use super::{
    linux, linux_nat, sluice, sluice_dpdk, sluice_nat, sluice_xdp, testpmd, vpp, LabAcl, RunningDut,
};
use crate::gen::frame::Family;
use crate::gen::port::Io;
use crate::lab::table::TableFiles;

/// What a DUT is started with (`dut::start` has checked that the DUT takes it).
pub struct Setup<'a> {
    /// The CPU of its worker, if it has one.
    pub dut_cpu: usize,
    pub io: Io,
    /// A router's synthetic table besides its test routes.
    pub table: Option<&'a TableFiles>,
    /// `--vlan` or `--qinq`'s tags (empty without them).
    pub vlans: &'a [u16],
    pub acl: Option<LabAcl>,
    /// `--vrfs`: that many tenants.
    pub vrfs: Option<u16>,
    /// BIRD as the control plane (`--control bird`).
    pub bird: bool,
    /// The frames' address family: a router routes that family's networks.
    pub family: Family,
    /// `--io dpdk-null`: the bytes of each frame its net_null ports make (`--size` less the
    /// FCS); None for net_null's own 64.
    pub null_frame: Option<usize>,
}

/// Starts a DUT.
pub type StartFn = fn(&Setup) -> Result<RunningDut, String>;

/// The io of the veths, which every DUT can forward.
pub const VETH_IO: &[Io] = &[Io::AfPacket, Io::AfXdp];
/// The veths' io and memif: a userspace forwarder that has memif ports.
pub const ANY_IO: &[Io] = &[Io::AfPacket, Io::AfXdp, Io::Memif];
/// A DPDK forwarder: also two net_null ports with no generator.
pub const DPDK_IO: &[Io] = &[Io::AfPacket, Io::AfXdp, Io::Memif, Io::DpdkNull];

/// One DUT: its `--dut` name, what it takes, how it starts.
#[derive(Clone, Copy)]
pub struct DutSpec {
    /// Its `--dut` name, also its name in reports and JSON.
    pub name: &'static str,
    /// It routes (and so takes a route table, and the generator sends it routed frames).
    pub routes: bool,
    /// It is a learning bridge (measured forwarding to a destination it knows).
    pub bridges: bool,
    /// It forwards VLAN-tagged traffic through sub-interfaces of d0 and d1 (`--vlan`,
    /// `--qinq`).
    pub takes_vlans: bool,
    /// It filters what it forwards with the lab's rules (`--acl-rules`).
    pub filters: bool,
    /// It serves tenants in VRFs (`--vrfs`).
    pub takes_vrfs: bool,
    /// It translates the inside's addresses (NAT44): the generator's far side answers
    /// (`--reply`), frames reach it translated, and its row counts its sessions.
    pub translates: bool,
    /// The io its ports can use.
    pub io: &'static [Io],
    /// Why it cannot run here, if it cannot (a program missing from the PATH).
    pub unavailable: fn() -> Option<String>,
    pub start: StartFn,
}

impl DutSpec {
    /// A DUT named `name` started by `start`, on the veths only, taking none of the
    /// options; a DUT's declaration overrides what differs.
    pub const fn new(name: &'static str, start: StartFn) -> DutSpec {
        DutSpec {
            name,
            routes: false,
            bridges: false,
            takes_vlans: false,
            filters: false,
            takes_vrfs: false,
            translates: false,
            io: VETH_IO,
            unavailable: || None,
            start,
        }
    }
}

/// Declares `DutKind` with one variant per DUT of the list, in the list's order (the order
/// the "known:" error names them in).
macro_rules! dut_kinds {
    ($($variant:ident => $spec:path,)*) => {
        /// A DUT of the lab; its `DutSpec` (in its own file) says what it is.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum DutKind {
            $(#[doc = concat!("`", stringify!($spec), "`")] $variant,)*
        }

        impl DutKind {
            pub const ALL: &'static [DutKind] = &[$(DutKind::$variant,)*];

            /// Its declaration.
            pub fn spec(self) -> &'static DutSpec {
                match self {
                    $(DutKind::$variant => &$spec,)*
                }
            }
        }
    };
}

dut_kinds! {
    Sluice => sluice::XCONNECT_DUT,
    SluiceAfXdp => sluice::AF_XDP_DUT,
    SluiceAfPacket => sluice::AF_PACKET_DUT,
    SluiceXdp => sluice_xdp::XDP_FAST_PATH_DUT,
    SluiceBridge => sluice::BRIDGE_DUT,
    SluiceBridgeXdp => sluice_xdp::BRIDGE_FAST_PATH_DUT,
    SluiceDpdk => sluice_dpdk::DPDK_DUT,
    LinuxBridge => linux::BRIDGE_DUT,
    LinuxRouter => linux::ROUTER_DUT,
    LinuxNat => linux_nat::NAT_DUT,
    SluiceRouter => sluice::ROUTER_DUT,
    SluiceRouterXdp => sluice_xdp::ROUTER_FAST_PATH_DUT,
    SluiceNat => sluice_nat::NAT_DUT,
    SluiceNatXdp => sluice_nat::NAT_FAST_PATH_DUT,
    Testpmd => testpmd::IO_FORWARD_DUT,
    Vpp => vpp::XCONNECT_DUT,
    VppRouter => vpp::ROUTER_DUT,
}

impl DutKind {
    pub fn parse(s: &str) -> Result<DutKind, String> {
        DutKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = DutKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown DUT '{s}' (known: {})", known.join(", "))
            })
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Whether the DUT routes (and so takes a route table).
    pub fn routes(self) -> bool {
        self.spec().routes
    }

    /// Whether the DUT routes the generator's IPv6 networks (`--family ipv6`): the
    /// routers but VPP's, whose lab setup holds IPv4 routes only.
    pub fn routes_ipv6(self) -> bool {
        matches!(
            self,
            DutKind::SluiceRouter | DutKind::SluiceRouterXdp | DutKind::LinuxRouter
        )
    }

    /// Whether the DUT forwards in XDP (sluice's fast path): its frames reach the tester's
    /// ports only in NAPI mode (`netns::tester_napi`).
    pub fn fast_path(self) -> bool {
        matches!(
            self,
            DutKind::SluiceXdp
                | DutKind::SluiceBridgeXdp
                | DutKind::SluiceRouterXdp
                | DutKind::SluiceNatXdp
        )
    }

    /// Whether the DUT is a learning bridge.
    pub fn bridges(self) -> bool {
        self.spec().bridges
    }

    /// Whether the DUT forwards VLAN-tagged traffic through sub-interfaces of d0 and d1
    /// (`--vlan`, `--qinq`).
    pub fn takes_vlans(self) -> bool {
        self.spec().takes_vlans
    }

    /// Whether the DUT filters what it forwards with the lab's rules (`--acl-rules`).
    pub fn filters(self) -> bool {
        self.spec().filters
    }

    /// Whether the DUT serves tenants in VRFs (`--vrfs`).
    pub fn takes_vrfs(self) -> bool {
        self.spec().takes_vrfs
    }

    /// Whether the DUT translates addresses (NAT44): the answering generator is implied.
    pub fn translates(self) -> bool {
        self.spec().translates
    }

    /// Whether the DUT can use `io` for its ports (the kernel's DUTs forward whatever the
    /// veths bring, so any io on the veths suits them).
    pub fn supports(self, io: Io) -> bool {
        self.spec().io.contains(&io)
    }

    /// Why this DUT cannot run here, if it cannot.
    pub fn unavailable(self) -> Option<String> {
        (self.spec().unavailable)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_the_error_lists_them() {
        for &k in DutKind::ALL {
            assert_eq!(DutKind::parse(k.name()), Ok(k));
        }
        assert_eq!(
            DutKind::parse("vpp9"),
            Err(
                "unknown DUT 'vpp9' (known: sluice, sluice-af_xdp, sluice-af_packet, \
                 sluice-xdp, sluice-bridge, sluice-bridge-xdp, sluice-dpdk, linux-bridge, linux-router, linux-nat, sluice-router, sluice-router-xdp, sluice-nat, sluice-nat-xdp, \
                 testpmd, vpp, vpp-router)"
                    .into()
            )
        );
    }

    /// What each DUT takes, as the lab's checks and reports rely on.
    #[test]
    fn what_each_dut_takes() {
        let row = |k: DutKind| {
            let io: String = [Io::AfPacket, Io::AfXdp, Io::Memif, Io::DpdkNull]
                .iter()
                .map(|&io| if k.supports(io) { 'y' } else { '-' })
                .collect();
            let flags = [
                k.routes(),
                k.bridges(),
                k.takes_vlans(),
                k.filters(),
                k.takes_vrfs(),
                k.translates(),
            ];
            let flags: String = flags.iter().map(|&f| if f { 'y' } else { '-' }).collect();
            format!("{} {io} {flags}", k.name())
        };
        let rows: Vec<String> = DutKind::ALL.iter().map(|&k| row(k)).collect();
        // io: af_packet af_xdp memif dpdk-null; routes bridges vlans filters vrfs translates
        assert_eq!(
            rows,
            [
                "sluice yyy- --y---",
                "sluice-af_xdp yy-- --y---",
                "sluice-af_packet yy-- --y---",
                "sluice-xdp -y-- --y---",
                "sluice-bridge yyy- -yy---",
                "sluice-bridge-xdp -y-- -y----",
                "sluice-dpdk yy-y ------",
                "linux-bridge yy-- -y----",
                "linux-router yy-- y--y--",
                "linux-nat yy-- y----y",
                "sluice-router yy-- y--yy-",
                "sluice-router-xdp -y-- y-----",
                "sluice-nat yy-- y----y",
                "sluice-nat-xdp -y-- y----y",
                "testpmd yyyy ------",
                "vpp yyy- ------",
                "vpp-router yy-- y-----",
            ]
        );
    }

    /// `--dut`'s help describes each DUT.
    #[test]
    fn the_dut_help_names_every_dut() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: crate::lab::args::RunArgs,
        }
        let cmd = Cli::command();
        let arg = cmd.get_arguments().find(|a| a.get_id() == "duts");
        let help = arg.and_then(|a| a.get_help()).map(|h| h.to_string());
        let help = help.expect("--dut has a help");
        for &k in DutKind::ALL {
            assert!(help.contains(k.name()), "{} missing from {help}", k.name());
        }
    }
}
