//! Linux network device facts and settings through ioctl: index, flags, MTU, MAC address.

use std::ffi::CString;
use std::io;

/// A datagram socket to issue interface ioctls on.
struct IoctlSocket(libc::c_int);

impl IoctlSocket {
    fn new() -> io::Result<IoctlSocket> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(IoctlSocket(fd))
    }
}

impl Drop for IoctlSocket {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

pub(crate) fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{name}' is not a valid interface name"),
        ));
    }
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(r)
}

fn ioctl(request: libc::c_ulong, r: &mut libc::ifreq) -> io::Result<()> {
    let s = IoctlSocket::new()?;
    ioctl_on(s.0, request, r)
}

/// An interface ioctl on socket `fd` (whose network namespace names the interface).
pub(crate) fn ioctl_on(
    fd: libc::c_int,
    request: libc::c_ulong,
    r: &mut libc::ifreq,
) -> io::Result<()> {
    // SAFETY: `r` is a valid ifreq with a NUL-terminated name, as every SIOC[GS]IF* request
    // used here expects; the kernel writes only inside it, or, for SIOCETHTOOL, inside the
    // command block `ifr_data` points to, which `driver` keeps alive and sizes for its command.
    let rc = unsafe { libc::ioctl(fd, request as _, r as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The interface's index, or `None` when there is no such interface.
pub fn index(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

pub fn flags(name: &str) -> io::Result<i32> {
    let mut r = ifreq(name)?;
    ioctl(libc::SIOCGIFFLAGS, &mut r)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    Ok(unsafe { r.ifr_ifru.ifru_flags } as i32)
}

pub fn is_up(name: &str) -> io::Result<bool> {
    Ok(flags(name)? & libc::IFF_UP != 0)
}

pub fn is_promiscuous(name: &str) -> io::Result<bool> {
    Ok(flags(name)? & libc::IFF_PROMISC != 0)
}

pub fn mtu(name: &str) -> io::Result<u32> {
    let mut r = ifreq(name)?;
    ioctl(libc::SIOCGIFMTU, &mut r)?;
    // SAFETY: SIOCGIFMTU filled the mtu member of the union.
    Ok(unsafe { r.ifr_ifru.ifru_mtu } as u32)
}

pub fn set_mtu(name: &str, mtu: u32) -> io::Result<()> {
    let mut r = ifreq(name)?;
    r.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    ioctl(libc::SIOCSIFMTU, &mut r)
}

pub fn mac(name: &str) -> io::Result<[u8; 6]> {
    let mut r = ifreq(name)?;
    ioctl(libc::SIOCGIFHWADDR, &mut r)?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member of the union.
    let sa = unsafe { r.ifr_ifru.ifru_hwaddr };
    let mut m = [0u8; 6];
    for (d, s) in m.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    Ok(m)
}

/// The name of the interface's driver ("veth", "virtio_net", "ixgbe"...), as `ethtool -i`
/// shows it (ETHTOOL_GDRVINFO).
pub fn driver(name: &str) -> io::Result<String> {
    // struct ethtool_drvinfo: cmd (u32), then driver[32], version[32], fw_version[32],
    // bus_info[32], erom_version[32], reserved2[12] and five u32 counts: 196 bytes.
    const ETHTOOL_GDRVINFO: u32 = 3;
    let mut info = [0u8; 196];
    info[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
    let mut r = ifreq(name)?;
    r.ifr_ifru.ifru_data = info.as_mut_ptr() as *mut libc::c_char;
    ioctl(libc::SIOCETHTOOL, &mut r)?;
    let field = &info[4..36];
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    Ok(String::from_utf8_lossy(&field[..end]).into_owned())
}

/// Puts an interface's MTU back when dropped.
pub struct MtuGuard {
    pub name: String,
    pub old: u32,
}

impl Drop for MtuGuard {
    fn drop(&mut self) {
        if let Err(e) = set_mtu(&self.name, self.old) {
            eprintln!(
                "sluice: could not restore MTU {} on {}: {e}",
                self.old, self.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_facts_and_bad_names() {
        assert!(index("lo").is_some());
        assert!(index("sl-no-such-if").is_none());
        assert!(mtu("lo").unwrap() >= 1500);
        assert!(ifreq("this-name-is-much-too-long-for-linux").is_err());
        assert!(ifreq("").is_err());
        assert!(flags("sl-no-such-if").is_err());
        assert!(driver("sl-no-such-if").is_err());
    }
}
