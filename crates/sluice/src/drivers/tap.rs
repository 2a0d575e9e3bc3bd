//! A Linux tap device that sluice holds open: the host side of an lcp pair (`src/lcp/`).
//! Frames written to the descriptor are received by Linux on the tap; what Linux sends on the
//! tap is read from it. The device lives as long as the descriptor (it is not persistent), so
//! a stopped daemon leaves no tap behind.
//!
//! A tap can be made in another network namespace (`ip netns add NS`): a short-lived thread
//! enters it, makes the device and a control socket there, and leaves; both stay bound to
//! that namespace whichever thread uses them later.

use super::af_packet::netdev::{ifreq, ioctl_on};
use crate::wire::MacAddress;
use std::ffi::CString;
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An open tap device.
pub struct Tap {
    name: String,
    ifindex: u32,
    netns: Option<String>,
    /// The tap's descriptor: reads and writes are whole frames.
    file: std::fs::File,
    /// A datagram socket in the tap's namespace, for its flags.
    control: OwnedFd,
    /// Addresses Linux would not put on the tap, with why.
    pub refused: Vec<String>,
}

impl Tap {
    /// Make tap `name` (in namespace `netns`, else this thread's) with `mac` and `mtu`, up,
    /// holding `addresses` (sluice's addresses of the interface, so that Linux accepts what
    /// is punted to it). An address Linux refuses (IPv6 turned off there) does not stop the
    /// tap: it is named in `Tap::refused`.
    pub fn create(
        name: &str,
        mac: MacAddress,
        mtu: u32,
        netns: Option<&str>,
        addresses: &[(IpAddr, u8)],
    ) -> io::Result<Tap> {
        crate::sys::netns::run_in(netns, || {
            Tap::open(name, netns)?.configure(mac, mtu, addresses)
        })
    }

    /// Makes tap `name` in this thread's namespace (`netns` names it for later changes).
    fn open(name: &str, netns: Option<&str>) -> io::Result<Tap> {
        let mut r = ifreq(name)?;
        let path = CString::new("/dev/net/tun").expect("no NUL in a constant");
        // SAFETY: plain open(2) of a NUL-terminated path; the result is checked.
        let raw = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("/dev/net/tun: {e}")));
        }
        // SAFETY: `raw` is a descriptor we just opened and own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        r.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes the ifreq `r` points to, a valid ifreq with a
        // NUL-terminated name; the kernel touches nothing else.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut r) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot make tap '{name}': {e}"),
            ));
        }
        // SAFETY: plain socket(2) call; the result is checked.
        let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `s` is a descriptor we just opened and own from here on.
        let control = unsafe { OwnedFd::from_raw_fd(s) };
        let ifindex = {
            let c = CString::new(name).map_err(|_| io::Error::other("NUL in a name"))?;
            // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
            unsafe { libc::if_nametoindex(c.as_ptr()) }
        };
        Ok(Tap {
            name: name.to_string(),
            ifindex,
            netns: netns.map(str::to_string),
            file: std::fs::File::from(fd),
            control,
            refused: Vec::new(),
        })
    }

    /// Gives the new tap `mac`, `mtu` and `addresses`, and sets it up.
    fn configure(
        mut self,
        mac: MacAddress,
        mtu: u32,
        addresses: &[(IpAddr, u8)],
    ) -> io::Result<Tap> {
        let mut r = ifreq(&self.name)?;
        // SAFETY: ifreq was zeroed by `ifreq`, so the hwaddr member of the union is a valid
        // (all-zero) sockaddr to fill in.
        let hw = unsafe { &mut r.ifr_ifru.ifru_hwaddr };
        hw.sa_family = libc::ARPHRD_ETHER;
        for (d, s) in hw.sa_data.iter_mut().zip(mac.0) {
            *d = s as libc::c_char;
        }
        self.ioctl(libc::SIOCSIFHWADDR, &mut r, "set its MAC")?;
        let mut r = ifreq(&self.name)?;
        r.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        self.ioctl(libc::SIOCSIFMTU, &mut r, "set its MTU")?;
        self.set_up(true)?;
        for &(addr, len) in addresses {
            if let Err(e) = crate::sys::rtnetlink::add_address(self.ifindex, addr, len) {
                self.refused.push(format!("{addr}/{len}: {e}"));
            }
        }
        Ok(self)
    }

    /// Put `addr/len` on the tap (`add`) or take it off, in the tap's namespace: sluice's
    /// address changes after the tap was made.
    pub fn set_address(&self, addr: IpAddr, len: u8, add: bool) -> io::Result<()> {
        let ifindex = self.ifindex;
        crate::sys::netns::run_in(self.netns.as_deref(), || {
            if add {
                crate::sys::rtnetlink::add_address(ifindex, addr, len)
            } else {
                crate::sys::rtnetlink::delete_address(ifindex, addr, len)
            }
        })
    }

    fn ioctl(&self, request: libc::c_ulong, r: &mut libc::ifreq, what: &str) -> io::Result<()> {
        ioctl_on(self.control.as_raw_fd(), request, r).map_err(|e| {
            io::Error::new(e.kind(), format!("tap '{}': cannot {what}: {e}", self.name))
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn netns(&self) -> Option<&str> {
        self.netns.as_deref()
    }

    /// The descriptor, for poll(2).
    pub fn raw_fd(&self) -> libc::c_int {
        self.file.as_raw_fd()
    }

    /// The device's IFF_* flags.
    pub fn flags(&self) -> io::Result<i32> {
        let mut r = ifreq(&self.name)?;
        self.ioctl(libc::SIOCGIFFLAGS, &mut r, "read its flags")?;
        // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
        Ok(unsafe { r.ifr_ifru.ifru_flags } as i32)
    }

    /// Set the device administratively up or down (what `ip link set NAME up|down` does).
    pub fn set_up(&self, up: bool) -> io::Result<()> {
        let flags = self.flags()?;
        let want = if up {
            flags | libc::IFF_UP
        } else {
            flags & !libc::IFF_UP
        };
        if want == flags {
            return Ok(());
        }
        let mut r = ifreq(&self.name)?;
        r.ifr_ifru.ifru_flags = want as libc::c_short;
        self.ioctl(libc::SIOCSIFFLAGS, &mut r, "set its flags")
    }

    /// Carrier on or off: Linux sees the link up or down (NO-CARRIER) as sluice's port is.
    pub fn set_carrier(&self, on: bool) -> io::Result<()> {
        let v: libc::c_int = on.into();
        // SAFETY: TUNSETCARRIER reads one int from the pointer it is given, `v`, which lives
        // for the call.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), libc::TUNSETCARRIER as _, &v) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("tap '{}': cannot set carrier: {e}", self.name),
            ));
        }
        Ok(())
    }

    /// Read one frame Linux sent on the tap; `Ok(None)` when there is none.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match (&self.file).read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Hand one frame to Linux, as if the tap had received it (one write is one frame).
    pub fn write(&self, frame: &[u8]) -> io::Result<()> {
        (&self.file).write(frame).map(|_| ())
    }
}
