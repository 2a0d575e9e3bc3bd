//! `driver = "af_xdp"`: a Linux interface through AF_XDP sockets.

use super::{memif, pcap, ring_size};
use crate::config::{Checker, ConfigError};
use crate::drivers::af_xdp::program::XdpMode;
use crate::drivers::af_xdp::xsk::CopyMode;
use crate::drivers::af_xdp::{DEFAULT_RING_SIZE, MAX_MTU};
use crate::interface::config::interface::InterfaceKeys;
use toml::Spanned;

#[derive(Debug)]
pub struct AfXdp {
    /// The Linux interface (default: the interface's name).
    pub host: String,
    /// Where the XDP program runs (None: native if the driver has it).
    pub xdp_mode: Option<XdpMode>,
    /// Zero-copy or copy sockets (None: zero-copy if the driver allows it).
    pub copy_mode: Option<CopyMode>,
    /// Entries of each ring.
    pub ring_size: u32,
    /// Microseconds of preferred busy polling per receive call; 0: the kernel's NAPI
    /// receives on its own.
    pub busy_poll: u32,
    /// `fast-path = "on"`: offloaded flows forwarded by the XDP program.
    pub fast_path: bool,
}

impl AfXdp {
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<AfXdp, ConfigError> {
        pcap::refuse_files(keys, c)?;
        memif::refuse_keys(keys, c)?;
        let xdp_mode = match &keys.xdp_mode {
            Some(v) => c.one_of(
                v,
                "xdp-mode",
                &[
                    ("auto", None),
                    ("native", Some(XdpMode::Native)),
                    ("generic", Some(XdpMode::Generic)),
                ],
            )?,
            None => None,
        };
        let copy_mode = match &keys.socket_mode {
            Some(v) => c.one_of(
                v,
                "socket-mode",
                &[
                    ("auto", None),
                    ("zero-copy", Some(CopyMode::ZeroCopy)),
                    ("copy", Some(CopyMode::Copy)),
                ],
            )?,
            None => None,
        };
        let fast_path = match &keys.fast_path {
            Some(v) => c.one_of(v, "fast-path", &[("on", true), ("off", false)])?,
            None => false,
        };
        Ok(AfXdp {
            fast_path,
            host: keys
                .host
                .clone()
                .unwrap_or_else(|| keys.name.get_ref().clone()),
            xdp_mode,
            copy_mode,
            ring_size: ring_size(keys, (64, 32768), DEFAULT_RING_SIZE, c)?,
            busy_poll: match &keys.busy_poll {
                Some(v) if *v.get_ref() > 1000 => {
                    return Err(c.err(
                        v.span(),
                        "busy-poll",
                        format!(
                            "{} is not a number of microseconds from 0 to 1000",
                            v.get_ref()
                        ),
                    ))
                }
                Some(v) => *v.get_ref(),
                None => 0,
            },
        })
    }
}

/// A frame must fit one buffer.
pub(crate) fn check_mtu(mtu: &Spanned<u32>, c: &Checker<'_>) -> Result<(), ConfigError> {
    let v = *mtu.get_ref();
    if v > MAX_MTU {
        return Err(c.err(
            mtu.span(),
            "mtu",
            format!("{v} is too large for af_xdp (frames must fit one buffer: at most {MAX_MTU})"),
        ));
    }
    Ok(())
}

/// The af_xdp keys on an interface of another driver.
pub(crate) fn refuse_keys(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<(), ConfigError> {
    for (key, v) in [
        ("xdp-mode", &keys.xdp_mode),
        ("socket-mode", &keys.socket_mode),
    ] {
        if let Some(v) = v {
            return Err(c.err(v.span(), key, "belongs to af_xdp interfaces".into()));
        }
    }
    if let Some(v) = &keys.busy_poll {
        return Err(c.err(v.span(), "busy-poll", "belongs to af_xdp interfaces".into()));
    }
    if let Some(v) = &keys.fast_path {
        return Err(c.err(v.span(), "fast-path", "belongs to af_xdp interfaces".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error_tests;

    use crate::config::{interface_with, Config, Driver};

    error_tests! {
        xdp_mode_on_another_driver: interface_with("af_packet", "xdp-mode = \"auto\"\n")
            => "t.toml:4: key 'xdp-mode': belongs to af_xdp interfaces";
        busy_poll_on_another_driver: interface_with("memif", "socket = \"s\"\nbusy-poll = 20\n")
            => "t.toml:5: key 'busy-poll': belongs to af_xdp interfaces";
        busy_poll_too_long: interface_with("af_xdp", "busy-poll = 5000\n")
            => "t.toml:4: key 'busy-poll': 5000 is not a number of microseconds from 0 to 1000";
        socket_mode_on_another_driver: interface_with("memif", "socket = \"s\"\nsocket-mode = \"auto\"\n")
            => "t.toml:5: key 'socket-mode': belongs to af_xdp interfaces";
        unknown_xdp_mode: interface_with("af_xdp", "xdp-mode = \"turbo\"\n")
            => "t.toml:4: key 'xdp-mode': 'turbo' is not one of auto, native, generic";
        unknown_socket_mode: interface_with("af_xdp", "socket-mode = \"fast\"\n")
            => "t.toml:4: key 'socket-mode': 'fast' is not one of auto, zero-copy, copy";
        ring_size_not_a_power_of_two: interface_with("af_xdp", "ring-size = 100\n")
            => "t.toml:4: key 'ring-size': 100 is not a power of two between 64 and 32768";
        ring_size_too_small: interface_with("af_xdp", "ring-size = 32\n")
            => "t.toml:4: key 'ring-size': 32 is not a power of two between 64 and 32768";
        ring_size_too_large: interface_with("af_xdp", "ring-size = 65536\n")
            => "t.toml:4: key 'ring-size': 65536 is not a power of two between 64 and 32768";
        mtu_larger_than_a_buffer: interface_with("af_xdp", &format!("mtu = {}\n", MAX_MTU + 1))
            => format!("t.toml:4: key 'mtu': {} is too large for af_xdp (frames must fit one buffer: at most {MAX_MTU})", MAX_MTU + 1);
    }

    #[test]
    fn modes_and_defaults() {
        let src = interface_with(
            "af_xdp",
            "xdp-mode = \"generic\"\nsocket-mode = \"copy\"\nring-size = 64\n",
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        let Driver::AfXdp(d) = &c.interfaces[0].driver else {
            panic!("{c:?}")
        };
        assert_eq!(
            (d.xdp_mode, d.copy_mode, d.ring_size),
            (Some(XdpMode::Generic), Some(CopyMode::Copy), 64)
        );
        let c =
            Config::parse(&interface_with("af_xdp", "xdp-mode = \"auto\"\n"), "t.toml").unwrap();
        let Driver::AfXdp(d) = &c.interfaces[0].driver else {
            panic!("{c:?}")
        };
        assert_eq!(
            (d.xdp_mode, d.copy_mode, d.ring_size),
            (None, None, DEFAULT_RING_SIZE)
        );
    }
}
