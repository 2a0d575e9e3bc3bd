//! Opening the Linux device under an af_packet or af_xdp interface, as both drivers do it:
//! the device must exist and be up, it runs at the configured MTU (the old one is put back
//! when the interface closes), and its ports show its name and MAC first.

use super::af_packet::netdev;
use super::host_link::HostLink;
use super::{DriverPorts, RxQueue, TxQueue};
use std::sync::Arc;

/// The index of device `host`, which must exist and be up.
pub fn index_if_up(host: &str) -> Result<u32, String> {
    let ifindex = netdev::index(host).ok_or_else(|| format!("interface '{host}' not found"))?;
    if !netdev::is_up(host).map_err(|e| format!("interface '{host}': {e}"))? {
        return Err(format!(
            "interface '{host}' is down (ip link set {host} up)"
        ));
    }
    Ok(ifindex)
}

/// Runs `host` at MTU `want` (its current one when `None`) and returns that MTU. `allowed`
/// may refuse it before anything changes (a driver's own limit); a changed MTU gets a guard in
/// `restore` that puts the old one back when dropped.
pub fn set_mtu(
    host: &str,
    want: Option<u32>,
    allowed: impl FnOnce(u32) -> Result<(), String>,
    restore: &mut Vec<Box<dyn Send + Sync>>,
) -> Result<u32, String> {
    let old = netdev::mtu(host).map_err(|e| format!("interface '{host}': {e}"))?;
    let mtu = want.unwrap_or(old);
    allowed(mtu)?;
    if mtu != old {
        netdev::set_mtu(host, mtu)
            .map_err(|e| format!("interface '{host}': cannot set MTU {mtu}: {e}"))?;
        restore.push(Box::new(netdev::MtuGuard {
            name: host.to_string(),
            old,
        }));
    }
    Ok(mtu)
}

/// The ports of an opened host device, whose state `link` follows: `details` (the driver's
/// own, for `show interface`) come after the device's name and MAC.
pub fn ports(
    host: &str,
    link: Arc<HostLink>,
    rx: Vec<Box<dyn RxQueue>>,
    tx: Vec<Box<dyn TxQueue>>,
    mtu: u32,
    restore: Vec<Box<dyn Send + Sync>>,
    details: Vec<(String, String)>,
) -> DriverPorts {
    let mac = netdev::mac(host)
        .map(|m| crate::wire::MacAddress(m).to_string())
        .unwrap_or_else(|_| "?".into());
    let mut all = vec![
        ("host".to_string(), host.to_string()),
        ("mac".to_string(), mac),
    ];
    all.extend(details);
    DriverPorts {
        rx,
        tx,
        mtu,
        details: all,
        restore,
        live: Some(link),
        mac: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_device_is_named() {
        assert_eq!(
            index_if_up("sl-no-such-if"),
            Err("interface 'sl-no-such-if' not found".to_string())
        );
    }

    #[test]
    fn a_refused_mtu_changes_nothing() {
        let before = netdev::mtu("lo").unwrap();
        let mut restore = Vec::new();
        let refuse = |mtu: u32| Err(format!("no {mtu}"));
        assert_eq!(
            set_mtu("lo", Some(before - 1), refuse, &mut restore),
            Err(format!("no {}", before - 1))
        );
        assert!(restore.is_empty());
        assert_eq!(netdev::mtu("lo").unwrap(), before);
        // The current MTU needs no change and no guard.
        assert_eq!(set_mtu("lo", None, |_| Ok(()), &mut restore), Ok(before));
        assert!(restore.is_empty());
    }
}
