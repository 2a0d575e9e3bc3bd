//! `linux-nat`: the kernel as a NAT44 edge router, the peer of sluice's NAT in the lab.
//! linux-router (addresses, routes, fixed neighbours, forwarding) plus nftables `snat` of
//! what leaves by d1 to the lab's pool, with conntrack sized for a million sessions. The
//! generator's sources (198.18/16, behind t0) leave from pool addresses; its answering far
//! side (`--reply`, which a NAT DUT implies) answers them, and conntrack translates the
//! answers back.
//!
//! conntrack's limit and hash size are the kernel's, not a namespace's (a namespace reads
//! them only): the DUT raises them for its run in the initial namespace, where they are
//! lower than a million, and puts back what it found when it stops.

use super::linux::{start_router, LinuxRouter};
use super::{on_path, Dut, DutSpec};
use crate::gen::frame::Family;
use crate::lab::netns::{in_ns, DUT};
use crate::lab::table::TableFiles;

/// The sessions the kernel's conntrack is sized for.
pub const SESSIONS: u64 = 1 << 20;
/// nftables table of the NAT in the DUT namespace.
const NFT_TABLE: &str = "sluice_lab_nat";
/// The kernel's conntrack limit (written in the initial namespace only).
const MAX_KEY: &str = "/proc/sys/net/netfilter/nf_conntrack_max";
/// The kernel's conntrack hash buckets (nf_conntrack's module parameter).
const HASHSIZE: &str = "/sys/module/nf_conntrack/parameters/hashsize";

/// `linux-nat`: linux-router translating the inside's sources to d1's address.
pub const NAT_DUT: DutSpec = DutSpec {
    routes: true,
    translates: true,
    unavailable: || (!on_path("nft")).then(|| "nft is not on the PATH (nftables)".into()),
    ..DutSpec::new("linux-nat", |s| Ok(Box::new(start_nat(s.table, s.family)?)))
};

/// The NAT ruleset: conntrack on, every new flow leaving by d1 translated to the lab's NAT
/// pool (as sluice-nat's: one address holds 64 512 ports, too few for a million flows).
fn nft_rules() -> String {
    let pool = crate::lab::plan::NAT_POOL;
    format!(
        "table ip {NFT_TABLE} {{\n  chain post {{\n    type nat hook postrouting priority \
         srcnat; policy accept;\n    oifname \"d1\" snat to {pool}\n  }}\n}}\n"
    )
}

/// Load `nft_rules` into the DUT namespace (replacing an earlier run's).
fn nft_load() -> Result<(), String> {
    let _ = in_ns(DUT, "nft", &["delete", "table", "ip", NFT_TABLE]);
    let file = std::env::temp_dir().join(format!("sluice-lab-nat-{}.nft", std::process::id()));
    std::fs::write(&file, nft_rules()).map_err(|e| format!("{}: {e}", file.display()))?;
    let r = in_ns(DUT, "nft", &["-f", &file.display().to_string()]);
    let _ = std::fs::remove_file(&file);
    r.map(|_| ())
}

fn read_u64(path: &str) -> Result<u64, String> {
    let s = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    s.trim()
        .parse()
        .map_err(|e| format!("{path}: '{}': {e}", s.trim()))
}

fn write_u64(path: &str, v: u64) -> Result<(), String> {
    std::fs::write(path, v.to_string()).map_err(|e| format!("{path}: {e}"))
}

/// The kernel's conntrack limit and hash size as found, to put back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConntrackSize {
    pub max: u64,
    pub buckets: u64,
}

/// What to raise conntrack's limit and buckets to, if anything, so that `SESSIONS` fit
/// with one bucket a session (the kernel's own default ratio); never lower.
pub fn raised(found: ConntrackSize) -> Option<ConntrackSize> {
    let want = ConntrackSize {
        max: found.max.max(SESSIONS),
        buckets: found.buckets.max(SESSIONS),
    };
    (want != found).then_some(want)
}

/// Raise the kernel's conntrack limit and hash size for `SESSIONS` (nf_conntrack is loaded:
/// the ruleset needs it); returns what they were when changed.
fn size_conntrack() -> Result<Option<ConntrackSize>, String> {
    let found = ConntrackSize {
        max: read_u64(MAX_KEY)?,
        buckets: read_u64(HASHSIZE)?,
    };
    let Some(want) = raised(found) else {
        return Ok(None);
    };
    write_u64(HASHSIZE, want.buckets)?;
    write_u64(MAX_KEY, want.max)?;
    Ok(Some(found))
}

/// The kernel routing and masquerading between d0 and d1.
pub struct LinuxNat {
    router: LinuxRouter,
    /// conntrack's size before the run, when the run raised it.
    found: Option<ConntrackSize>,
}

/// linux-router's setup (IPv4: the NAT is NAT44), then the NAT and conntrack's size.
pub fn start_nat(table: Option<&TableFiles>, family: Family) -> Result<LinuxNat, String> {
    if family != Family::Ipv4 {
        return Err("linux-nat translates IPv4 (NAT44): no --family ipv6".into());
    }
    let router = start_router(table, None, family)?;
    let mut dut = LinuxNat {
        router,
        found: None,
    };
    nft_load()?;
    dut.found = size_conntrack()?;
    if let Some(f) = dut.found {
        eprintln!(
            "linux-nat: conntrack raised for {SESSIONS} sessions (nf_conntrack_max {} -> {}, \
             hashsize {} -> {}) until the run ends",
            f.max,
            f.max.max(SESSIONS),
            f.buckets,
            f.buckets.max(SESSIONS)
        );
    }
    Ok(dut)
}

impl Dut for LinuxNat {
    fn gen_args(&self) -> Vec<String> {
        let mut a = self.router.gen_args();
        // Frames reach t1 from d1's address and a port conntrack chose.
        a.push("--translated".into());
        a
    }

    fn table_load_s(&self) -> Option<f64> {
        self.router.table_load_s()
    }

    /// The NAT's table gone, linux-router's setup undone, conntrack's size put back.
    fn stop(&mut self) {
        let _ = in_ns(DUT, "nft", &["delete", "table", "ip", NFT_TABLE]);
        self.router.stop();
        if let Some(f) = self.found.take() {
            let _ = write_u64(MAX_KEY, f.max);
            let _ = write_u64(HASHSIZE, f.buckets);
        }
    }
}

impl Drop for LinuxNat {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conntrack_is_raised_to_a_million_never_lowered() {
        let c = |max, buckets| ConntrackSize { max, buckets };
        assert_eq!(
            raised(c(262_144, 65_536)),
            Some(c(1 << 20, 1 << 20)),
            "both raised"
        );
        assert_eq!(raised(c(4 << 20, 1 << 20)), None, "both large enough");
        assert_eq!(raised(c(4 << 20, 1024)), Some(c(4 << 20, 1 << 20)));
    }

    #[test]
    fn the_ruleset_translates_what_leaves_by_d1_to_the_pool() {
        let r = nft_rules();
        assert!(
            r.contains("type nat hook postrouting priority srcnat"),
            "{r}"
        );
        assert!(r.contains("oifname \"d1\" snat to 198.51.100.128-"), "{r}");
    }
}
