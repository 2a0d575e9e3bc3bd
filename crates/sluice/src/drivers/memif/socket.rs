//! The control channel's socket: unix SOCK_SEQPACKET, one 128-byte message per packet, with
//! at most one descriptor (a region's memfd or a ring's eventfd) passed by SCM_RIGHTS.

use super::proto::{Msg, ProtoError, MSG_SIZE};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// A control connection, or a listening socket.
pub struct Channel {
    fd: OwnedFd,
}

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn sockaddr(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain data; all-zero is a valid value.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.len() >= sa.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("socket path longer than {} bytes", sa.sun_path.len() - 1),
        ));
    }
    for (d, s) in sa.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((sa, len as libc::socklen_t))
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the result is checked and owned.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a descriptor we just created.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Channel {
    /// Listen on `path`, replacing a stale socket file left by an earlier run.
    pub fn listen(path: &Path) -> io::Result<Channel> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_socket() {
                if Channel::connect(path).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        "another process listens on this memif socket",
                    ));
                }
                std::fs::remove_file(path)?;
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "the path exists and is not a socket",
                ));
            }
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let fd = seqpacket()?;
        let (sa, len) = sockaddr(path)?;
        // SAFETY: `sa` is a valid sockaddr_un of `len` bytes.
        cvt(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sa as *const _ as *const libc::sockaddr,
                len,
            )
        })?;
        // SAFETY: plain listen on our socket.
        cvt(unsafe { libc::listen(fd.as_raw_fd(), 4) })?;
        Ok(Channel { fd })
    }

    pub fn connect(path: &Path) -> io::Result<Channel> {
        let fd = seqpacket()?;
        let (sa, len) = sockaddr(path)?;
        // SAFETY: `sa` is a valid sockaddr_un of `len` bytes.
        cvt(unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &sa as *const _ as *const libc::sockaddr,
                len,
            )
        })?;
        let c = Channel { fd };
        c.set_timeout(2)?;
        Ok(c)
    }

    pub fn accept(&self) -> io::Result<Channel> {
        // SAFETY: accept with no address wanted; the result is checked and owned.
        let fd = cvt(unsafe {
            libc::accept4(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        })?;
        // SAFETY: a descriptor accept just gave us.
        let c = Channel {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        };
        c.set_timeout(2)?;
        Ok(c)
    }

    /// Receive timeout, so a silent peer cannot stall the handshake forever.
    fn set_timeout(&self, secs: i64) -> io::Result<()> {
        let tv = libc::timeval {
            tv_sec: secs,
            tv_usec: 0,
        };
        // SAFETY: `tv` is a live timeval and its size is passed.
        cvt(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
        Ok(())
    }

    /// Wait until the socket is readable or closed, at most `ms`. True when it is.
    pub fn wait(&self, ms: i32) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, ms) > 0 }
    }

    /// Send a message, with a descriptor when given.
    pub fn send(&self, msg: &Msg, fd: Option<RawFd>) -> io::Result<()> {
        self.send_bytes(&msg.encode(), fd)
    }

    /// Send raw bytes as one message (tests use it to play a broken peer).
    pub fn send_bytes(&self, bytes: &[u8], fd: Option<RawFd>) -> io::Result<()> {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let mut control = [0u64; 4]; // room for one cmsg with one int, 8-byte aligned
                                     // SAFETY: msghdr is plain data; all-zero is valid.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = &mut iov;
        mh.msg_iovlen = 1;
        if let Some(fd) = fd {
            // SAFETY: CMSG_SPACE is a pure size computation.
            let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) };
            mh.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            mh.msg_controllen = space as usize;
            // SAFETY: the control buffer is large and aligned enough for one cmsg holding one
            // descriptor (space computed above), so CMSG_FIRSTHDR is non-null and in bounds.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&mh);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd);
            }
        }
        // SAFETY: `mh` points at live buffers for the duration of the call.
        let n = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &mh, libc::MSG_NOSIGNAL) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receive one message and the descriptor that came with it. A closed peer is
    /// `UnexpectedEof`; a malformed message is `InvalidData` with the reason.
    pub fn recv(&self) -> io::Result<(Msg, Option<OwnedFd>)> {
        let mut buf = [0u8; MSG_SIZE + 1];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut control = [0u64; 8];
        // SAFETY: msghdr is plain data; all-zero is valid.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = &mut iov;
        mh.msg_iovlen = 1;
        mh.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        mh.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: `mh` points at live buffers whose sizes it states.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut mh, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "peer closed the connection",
            ));
        }
        // Take every descriptor that came, so none leaks; keep the first.
        let mut fds = Vec::new();
        // SAFETY: walking the control buffer the kernel filled, with the libc macros that
        // stay within msg_controllen.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&mh);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c) as *const RawFd;
                    let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                        / std::mem::size_of::<RawFd>();
                    for i in 0..count {
                        let fd = std::ptr::read_unaligned(data.add(i));
                        fds.push(OwnedFd::from_raw_fd(fd));
                    }
                }
                c = libc::CMSG_NXTHDR(&mh, c);
            }
        }
        if mh.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                ProtoError::Other("too many descriptors with one message".into()),
            ));
        }
        // The ProtoError rides inside the io::Error, for `proto_error` to find.
        let msg = Msg::decode(&buf[..n as usize])
            .map_err(|e: ProtoError| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok((msg, fds.into_iter().next()))
    }

    /// The decoding error inside an error `recv` returned, if that was the cause.
    pub fn proto_error(e: &io::Error) -> Option<&ProtoError> {
        e.get_ref()?.downcast_ref::<ProtoError>()
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
