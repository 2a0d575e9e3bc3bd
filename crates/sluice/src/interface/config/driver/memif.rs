//! `driver = "memif"`: shared-memory packet interface to another process.

use super::{af_xdp, ring_size};
use crate::config::{Checker, ConfigError};
use crate::drivers::memif::connection::Role;
use crate::drivers::memif::DEFAULT_RING_SIZE;
use crate::interface::config::interface::InterfaceKeys;
use std::path::PathBuf;

/// The protocol's limit on the secret's length.
const MAX_SECRET: usize = 23;

#[derive(Debug)]
pub struct Memif {
    /// The control socket's path.
    pub socket: PathBuf,
    /// Client (owns the memory; the default) or server.
    pub role: Role,
    /// Client: lend the buffer pool to the peer (no copy; for trusted peers).
    pub zero_copy: bool,
    /// The interface id, as the peer names it.
    pub id: u32,
    pub secret: Option<String>,
    /// Descriptors of each ring.
    pub ring_size: u32,
}

impl Memif {
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<Memif, ConfigError> {
        let Some(socket) = &keys.socket else {
            return Err(c.err(
                keys.driver.span(),
                "socket",
                format!(
                    "memif interface '{}' needs socket = \"PATH\"",
                    keys.name.get_ref()
                ),
            ));
        };
        if keys.rx_file.is_some() || keys.tx_file.is_some() || keys.host.is_some() {
            return Err(c.err(
                keys.driver.span(),
                "driver",
                "a memif interface takes socket, role, id, secret, ring-size, zero-copy".into(),
            ));
        }
        let role = match &keys.role {
            None => Role::Client,
            Some(r) => match r.get_ref().as_str() {
                "client" => Role::Client,
                "server" => Role::Server,
                _ => {
                    return Err(c.err(
                        r.span(),
                        "role",
                        format!("'{}' is not client or server", r.get_ref()),
                    ))
                }
            },
        };
        if keys.secret.as_ref().is_some_and(|s| s.len() > MAX_SECRET) {
            return Err(c.err(
                keys.driver.span(),
                "secret",
                format!("a memif secret is at most {MAX_SECRET} bytes"),
            ));
        }
        if let Some(z) = &keys.zero_copy {
            if role == Role::Server && *z.get_ref() {
                return Err(c.err(
                    z.span(),
                    "zero-copy",
                    "a memif server copies (the memory is the client's): zero-copy is for the \
                     client role"
                        .into(),
                ));
            }
        }
        af_xdp::refuse_keys(keys, c)?;
        Ok(Memif {
            socket: socket.clone(),
            role,
            zero_copy: keys.zero_copy.as_ref().is_some_and(|z| *z.get_ref()),
            id: keys.id.unwrap_or(0),
            secret: keys.secret.clone(),
            ring_size: ring_size(keys, (16, 16384), DEFAULT_RING_SIZE, c)?,
        })
    }
}

/// The memif keys on an interface of another driver.
pub(crate) fn refuse_keys(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<(), ConfigError> {
    if let Some(r) = &keys.role {
        return Err(c.err(r.span(), "role", "belongs to memif interfaces".into()));
    }
    if let Some(z) = &keys.zero_copy {
        return Err(c.err(z.span(), "zero-copy", "belongs to memif interfaces".into()));
    }
    if keys.socket.is_some() || keys.id.is_some() || keys.secret.is_some() {
        return Err(c.err(
            keys.driver.span(),
            "socket",
            "socket, id and secret belong to memif interfaces".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error_tests;

    use crate::config::{interface_with, Config, Driver};

    error_tests! {
        role_on_another_driver: interface_with("af_packet", "role = \"client\"\n")
            => "t.toml:4: key 'role': belongs to memif interfaces";
        socket_on_another_driver: interface_with("pcap", "tx-file = \"o\"\nsocket = \"s\"\n")
            => "t.toml:3: key 'socket': socket, id and secret belong to memif interfaces";
        id_on_another_driver: interface_with("af_xdp", "id = 1\n")
            => "t.toml:3: key 'socket': socket, id and secret belong to memif interfaces";
        secret_on_another_driver: interface_with("af_packet", "secret = \"x\"\n")
            => "t.toml:3: key 'socket': socket, id and secret belong to memif interfaces";
        memif_without_socket: interface_with("memif", "")
            => "t.toml:3: key 'socket': memif interface 'a' needs socket = \"PATH\"";
        memif_with_host: interface_with("memif", "socket = \"s\"\nhost = \"h\"\n")
            => "t.toml:3: key 'driver': a memif interface takes socket, role, id, secret, ring-size, zero-copy";
        memif_with_a_file: interface_with("memif", "socket = \"s\"\nrx-file = \"i\"\n")
            => "t.toml:3: key 'driver': a memif interface takes socket, role, id, secret, ring-size, zero-copy";
        zero_copy_on_another_driver: interface_with("af_packet", "zero-copy = true\n")
            => "t.toml:4: key 'zero-copy': belongs to memif interfaces";
        zero_copy_as_server: interface_with("memif", "socket = \"s\"\nrole = \"server\"\nzero-copy = true\n")
            => "t.toml:6: key 'zero-copy': a memif server copies (the memory is the client's): zero-copy is for the client role";
        unknown_role: interface_with("memif", "socket = \"s\"\nrole = \"boss\"\n")
            => "t.toml:5: key 'role': 'boss' is not client or server";
        secret_too_long: interface_with("memif", &format!("socket = \"s\"\nsecret = \"{}\"\n", "s".repeat(24)))
            => "t.toml:3: key 'secret': a memif secret is at most 23 bytes";
        ring_size_too_small: interface_with("memif", "socket = \"s\"\nring-size = 8\n")
            => "t.toml:5: key 'ring-size': 8 is not a power of two between 16 and 16384";
        ring_size_not_a_power_of_two: interface_with("memif", "socket = \"s\"\nring-size = 100\n")
            => "t.toml:5: key 'ring-size': 100 is not a power of two between 16 and 16384";
        ring_size_too_large: interface_with("memif", "socket = \"s\"\nring-size = 32768\n")
            => "t.toml:5: key 'ring-size': 32768 is not a power of two between 16 and 16384";
    }

    #[test]
    fn keys_and_defaults() {
        let src = interface_with(
            "memif",
            "socket = \"s\"\nrole = \"server\"\nid = 3\nsecret = \"x\"\nring-size = 16\n",
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        let Driver::Memif(d) = &c.interfaces[0].driver else {
            panic!("{c:?}")
        };
        assert_eq!(
            (d.role, d.id, d.secret.as_deref(), d.ring_size),
            (Role::Server, 3, Some("x"), 16)
        );
        let c = Config::parse(&interface_with("memif", "socket = \"s\"\n"), "t.toml").unwrap();
        let Driver::Memif(d) = &c.interfaces[0].driver else {
            panic!("{c:?}")
        };
        assert_eq!(
            (d.role, d.id, d.secret.as_deref(), d.ring_size, d.zero_copy),
            (Role::Client, 0, None, DEFAULT_RING_SIZE, false),
            "a client copies unless told"
        );
        let src = interface_with("memif", "socket = \"s\"\nzero-copy = true\n");
        let c = Config::parse(&src, "t.toml").unwrap();
        let Driver::Memif(d) = &c.interfaces[0].driver else {
            panic!("{c:?}")
        };
        assert!(d.zero_copy);
    }
}
