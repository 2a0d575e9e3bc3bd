//! Who may use the control sockets: `[control]`'s socket paths with each one's owner, group
//! and mode, set on the socket file right after it is bound, and the read-only socket's rule
//! (only commands that change nothing, `Effect::Reads`, and `watch`).
//!
//! ```toml
//! [control]
//! socket = "/run/sluice/cli.sock"      # read-write: root only unless told otherwise
//! group = "sluice"                     # members may reconfigure the router
//! mode = "0660"
//! read-only-socket = "/run/sluice/ro.sock"
//! read-only-group = "monitor"          # members may look, not change
//! read-only-mode = "0660"
//! ```
//!
//! Names are looked up in /etc/passwd and /etc/group when the file is checked (a name from
//! another source, such as LDAP, is given by its numeric id instead).

use super::cli::{Command, Effect};
use crate::config::reference::{serde_fields, Key, SectionDoc};
use crate::config::{Checker, ConfigError, DEFAULT_SOCKET};
use serde::Deserialize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The mode a socket gets when none is given: owner only.
pub const DEFAULT_MODE: u32 = 0o600;

/// [control] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "control",
    array: false,
    file: "control/access.rs",
    doc: "The control sockets that `sluice ctl` talks to: the read-write one, and optionally a \
          read-only one for monitoring, on which only commands that change nothing (`show ...`, \
          `help`, `watch`) are taken and anything else is refused (typed requests: code \
          `read_only`). Each socket is made with mode 0600 and then given its owner, group and \
          mode. An owner or group is a name from /etc/passwd or /etc/group, or a numeric id. \
          Every command that changes state is logged on the daemon's standard error.",
    accepted: serde_fields::<ControlKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "socket",
            ty: "string (path)",
            default: "\"/run/sluice/cli.sock\"",
            doc: "the read-write Unix socket the daemon answers commands on; its directory is \
                  made if missing, and a live socket of another daemon is never replaced",
            example: "\"/run/sluice/cli.sock\"",
        },
        Key {
            name: "owner",
            ty: "string (user) or integer (uid)",
            default: "the daemon's user",
            doc: "the owner of `socket`",
            example: "\"root\"",
        },
        Key {
            name: "group",
            ty: "string (group) or integer (gid)",
            default: "the daemon's group",
            doc: "the group of `socket`: with `mode = \"0660\"` its members may send every \
                  command",
            example: "\"root\"",
        },
        Key {
            name: "mode",
            ty: "string (octal)",
            default: "\"0600\"",
            doc: "the permissions of `socket`, in octal, at most 0770: connecting needs write \
                  permission, and a socket anyone may write to would let every user \
                  reconfigure the router (use `group`, or the read-only socket)",
            example: "\"0660\"",
        },
        Key {
            name: "read-only-socket",
            ty: "string (path)",
            default: "none (no read-only socket)",
            doc: "a second Unix socket that takes only commands that change nothing: `show \
                  ...`, `help` and `watch`; another command, or one it does not know, is \
                  refused with `read-only socket: ...` (a typed request with code \
                  `read_only`)",
            example: "\"/run/sluice/ro.sock\"",
        },
        Key {
            name: "read-only-owner",
            ty: "string (user) or integer (uid)",
            default: "the daemon's user",
            doc: "the owner of `read-only-socket`",
            example: "\"root\"",
        },
        Key {
            name: "read-only-group",
            ty: "string (group) or integer (gid)",
            default: "the daemon's group",
            doc: "the group of `read-only-socket`",
            example: "\"root\"",
        },
        Key {
            name: "read-only-mode",
            ty: "string (octal)",
            default: "\"0600\"",
            doc: "the permissions of `read-only-socket`, in octal, at most 0777 (\"0666\": \
                  every user may look)",
            example: "\"0660\"",
        },
    ],
};

/// The [control] section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct ControlKeys {
    socket: Option<PathBuf>,
    owner: Option<Spanned<toml::Value>>,
    group: Option<Spanned<toml::Value>>,
    mode: Option<Spanned<toml::Value>>,
    read_only_socket: Option<Spanned<PathBuf>>,
    read_only_owner: Option<Spanned<toml::Value>>,
    read_only_group: Option<Spanned<toml::Value>>,
    read_only_mode: Option<Spanned<toml::Value>>,
}

/// The owner, group and mode one socket file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ownership {
    /// `None`: left as bound (the daemon's user).
    pub owner: Option<u32>,
    pub group: Option<u32>,
    pub mode: u32,
}

impl Default for Ownership {
    fn default() -> Self {
        Ownership {
            owner: None,
            group: None,
            mode: DEFAULT_MODE,
        }
    }
}

/// The checked [control] section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    /// The read-write socket.
    pub socket: PathBuf,
    pub access: Ownership,
    /// The read-only socket and its ownership, when there is one.
    pub read_only: Option<(PathBuf, Ownership)>,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            socket: DEFAULT_SOCKET.into(),
            access: Ownership::default(),
            read_only: None,
        }
    }
}

/// Which of the two sockets a client came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    ReadOnly,
}

impl ControlKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<ControlConfig, ConfigError> {
        let socket = self.socket.unwrap_or_else(|| DEFAULT_SOCKET.into());
        let access = Ownership {
            owner: id(c, &self.owner, "owner", Database::Users)?,
            group: id(c, &self.group, "group", Database::Groups)?,
            mode: mode(c, &self.mode, "mode", 0o770)?,
        };
        let ro_access = Ownership {
            owner: id(c, &self.read_only_owner, "read-only-owner", Database::Users)?,
            group: id(
                c,
                &self.read_only_group,
                "read-only-group",
                Database::Groups,
            )?,
            mode: mode(c, &self.read_only_mode, "read-only-mode", 0o777)?,
        };
        let read_only = match self.read_only_socket {
            Some(p) if p.get_ref() == &socket => {
                return Err(c.err(
                    p.span(),
                    "read-only-socket",
                    format!(
                        "'{}' is also `socket`: give it a path of its own",
                        socket.display()
                    ),
                ))
            }
            Some(p) => Some((p.into_inner(), ro_access)),
            None => {
                let set = [
                    ("read-only-owner", &self.read_only_owner),
                    ("read-only-group", &self.read_only_group),
                    ("read-only-mode", &self.read_only_mode),
                ];
                if let Some((key, Some(v))) = set.iter().find(|(_, v)| v.is_some()) {
                    return Err(c.err(
                        v.span(),
                        key,
                        "there is no read-only socket: set read-only-socket too".into(),
                    ));
                }
                None
            }
        };
        Ok(ControlConfig {
            socket,
            access,
            read_only,
        })
    }
}

/// Where a name is looked up.
#[derive(Clone, Copy)]
enum Database {
    Users,
    Groups,
}

impl Database {
    fn file(self) -> &'static str {
        match self {
            Database::Users => "/etc/passwd",
            Database::Groups => "/etc/group",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Database::Users => "user",
            Database::Groups => "group",
        }
    }
}

/// The id of `name` in `text` (the lines of /etc/passwd or /etc/group: `name:x:id:...`).
fn lookup(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        if f.next()? != name {
            return None;
        }
        f.nth(1)?.parse().ok()
    })
}

/// An owner or group key: a name from `db`, or a numeric id.
fn id(
    c: &Checker<'_>,
    v: &Option<Spanned<toml::Value>>,
    key: &str,
    db: Database,
) -> Result<Option<u32>, ConfigError> {
    let Some(v) = v else {
        return Ok(None);
    };
    let bad = |msg: String| c.err(v.span(), key, msg);
    match v.get_ref() {
        toml::Value::Integer(n) => u32::try_from(*n)
            .ok()
            .filter(|n| *n != u32::MAX)
            .map(Some)
            .ok_or_else(|| bad(format!("{n} is not a {} id", db.what()))),
        toml::Value::String(name) => {
            if let Ok(n) = name.parse::<u32>() {
                return Ok(Some(n));
            }
            let text = std::fs::read_to_string(db.file())
                .map_err(|e| bad(format!("cannot read {}: {e}", db.file())))?;
            lookup(&text, name).map(Some).ok_or_else(|| {
                bad(format!(
                    "no {} named '{}' in {} (give a name there, or a numeric id)",
                    db.what(),
                    name.escape_debug(),
                    db.file()
                ))
            })
        }
        other => Err(bad(format!(
            "must be a {} name or a numeric id, not {other}",
            db.what()
        ))),
    }
}

/// A mode key: octal digits as a string ("0660"), at most `max`.
fn mode(
    c: &Checker<'_>,
    v: &Option<Spanned<toml::Value>>,
    key: &str,
    max: u32,
) -> Result<u32, ConfigError> {
    let Some(v) = v else {
        return Ok(DEFAULT_MODE);
    };
    let bad = |msg: String| c.err(v.span(), key, msg);
    let toml::Value::String(s) = v.get_ref() else {
        return Err(bad(format!(
            "must be octal digits in a string, such as \"0660\", not {}",
            v.get_ref()
        )));
    };
    let m = u32::from_str_radix(s, 8)
        .ok()
        .filter(|_| !s.is_empty() && s.len() <= 4)
        .ok_or_else(|| {
            bad(format!(
                "'{}' is not an octal mode such as \"0660\"",
                s.escape_debug()
            ))
        })?;
    if m & !max != 0 {
        let why = if max & 0o007 == 0 {
            "at most 0770: a socket others may write to would let every user reconfigure the \
             router (give a group, or use read-only-socket)"
        } else {
            "at most 0777 (no setuid, setgid or sticky bits)"
        };
        return Err(bad(format!("mode {s} is not allowed: {why}")));
    }
    Ok(m)
}

impl Ownership {
    /// Give the socket file at `path` (just bound, mode 0600) its owner, group and mode.
    /// The owner and group are set while the mode is still 0600, so nobody the final mode
    /// is not meant for can connect in between.
    pub fn apply(&self, path: &Path) -> Result<(), String> {
        if self.owner.is_some() || self.group.is_some() {
            std::os::unix::fs::chown(path, self.owner, self.group).map_err(|e| {
                format!(
                    "cannot give {} owner {} and group {}: {e}",
                    path.display(),
                    shown(self.owner),
                    shown(self.group)
                )
            })?;
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(self.mode)).map_err(|e| {
            format!(
                "cannot set mode {:04o} on {}: {e}",
                self.mode,
                path.display()
            )
        })
    }
}

fn shown(id: Option<u32>) -> String {
    id.map_or_else(|| "unchanged".into(), |n| n.to_string())
}

/// Whether a client on a socket of `access` may run `command` (`None`: the line or request
/// names no command, which counts as a change); the refusal says why.
pub fn permits(access: Access, command: Option<&Command>) -> Result<(), String> {
    match (access, command) {
        (Access::ReadWrite, _) => Ok(()),
        (Access::ReadOnly, Some(c)) if c.effect == Effect::Reads => Ok(()),
        (Access::ReadOnly, Some(c)) => Err(format!(
            "read-only socket: '{}' changes state (this socket takes show commands, help \
             and watch)",
            super::request::name(c)
        )),
        (Access::ReadOnly, None) => Err("read-only socket: not a command it takes (this \
                                         socket takes show commands, help and watch)"
            .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{error_tests, Config};

    fn control(src: &str) -> ControlConfig {
        Config::parse(src, "t.toml").unwrap().control
    }

    #[test]
    fn defaults_are_root_only_and_no_read_only_socket() {
        assert_eq!(control(""), ControlConfig::default());
        assert_eq!(control("[control]\n").access.mode, 0o600);
    }

    #[test]
    fn names_ids_and_modes_are_read() {
        let c = control(
            "[control]\nsocket = \"/x/rw.sock\"\nowner = \"root\"\ngroup = \"nogroup\"\n\
             mode = \"0660\"\nread-only-socket = \"/x/ro.sock\"\nread-only-owner = 7\n\
             read-only-group = \"12\"\nread-only-mode = \"666\"\n",
        );
        assert_eq!(
            c.access,
            Ownership {
                owner: Some(0),
                group: Some(65534),
                mode: 0o660
            }
        );
        let (path, ro) = c.read_only.unwrap();
        assert_eq!(path, PathBuf::from("/x/ro.sock"));
        assert_eq!(
            ro,
            Ownership {
                owner: Some(7),
                group: Some(12),
                mode: 0o666
            }
        );
    }

    #[test]
    fn lookup_reads_the_id_field() {
        let text = "root:x:0:0:root:/root:/bin/sh\nsluice:x:998:997::/:/bin/false\n";
        assert_eq!(lookup(text, "sluice"), Some(998));
        assert_eq!(lookup(text, "sluic"), None);
        assert_eq!(lookup("adm:x:4:syslog\n", "adm"), Some(4));
    }

    error_tests! {
        unknown_owner_names_the_key:
            "[control]\nowner = \"no-such-user-x\"\n"
            => "t.toml:2: key 'owner': no user named 'no-such-user-x' in /etc/passwd (give a name \
                there, or a numeric id)";
        unknown_group_names_the_key:
            "[control]\nread-only-socket = \"/r\"\nread-only-group = \"no-such-group-x\"\n"
            => "t.toml:3: key 'read-only-group': no group named 'no-such-group-x' in /etc/group \
                (give a name there, or a numeric id)";
        negative_id:
            "[control]\ngroup = -1\n" => "t.toml:2: key 'group': -1 is not a group id";
        id_of_another_type:
            "[control]\nowner = true\n"
            => "t.toml:2: key 'owner': must be a user name or a numeric id, not true";
        mode_not_octal:
            "[control]\nmode = \"0680\"\n"
            => "t.toml:2: key 'mode': '0680' is not an octal mode such as \"0660\"";
        mode_as_an_integer:
            "[control]\nmode = 660\n"
            => "t.toml:2: key 'mode': must be octal digits in a string, such as \"0660\", not 660";
        mode_open_to_everyone:
            "[control]\nmode = \"0666\"\n"
            => "t.toml:2: key 'mode': mode 0666 is not allowed: at most 0770: a socket others may \
                write to would let every user reconfigure the router (give a group, or use \
                read-only-socket)";
        mode_with_setuid:
            "[control]\nread-only-socket = \"/r\"\nread-only-mode = \"4666\"\n"
            => "t.toml:3: key 'read-only-mode': mode 4666 is not allowed: at most 0777 (no \
                setuid, setgid or sticky bits)";
        read_only_keys_without_the_socket:
            "[control]\nread-only-mode = \"0666\"\n"
            => "t.toml:2: key 'read-only-mode': there is no read-only socket: set \
                read-only-socket too";
        read_only_socket_is_the_socket:
            "[control]\nsocket = \"/s\"\nread-only-socket = \"/s\"\n"
            => "t.toml:3: key 'read-only-socket': '/s' is also `socket`: give it a path of its \
                own";
    }

    #[test]
    fn only_show_commands_and_help_change_nothing() {
        for c in crate::control::cli::commands() {
            let name = crate::control::request::name(c);
            let reads = name.starts_with("show ") || name == "help";
            assert_eq!(c.effect == Effect::Reads, reads, "{name}");
            assert_eq!(permits(Access::ReadOnly, Some(c)).is_ok(), reads, "{name}");
            assert!(permits(Access::ReadWrite, Some(c)).is_ok());
        }
        let e = permits(Access::ReadOnly, None).unwrap_err();
        assert!(e.starts_with("read-only socket: "), "{e}");
        assert!(permits(Access::ReadWrite, None).is_ok());
    }

    #[test]
    fn apply_sets_owner_group_and_mode() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("sluice-access-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, "").unwrap();
        let me = std::fs::metadata(&dir).unwrap();
        let o = Ownership {
            owner: Some(me.uid()),
            group: Some(me.gid()),
            mode: 0o640,
        };
        o.apply(&path).unwrap();
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(
            (m.uid(), m.gid(), m.mode() & 0o7777),
            (me.uid(), me.gid(), 0o640)
        );
        let e = o.apply(&dir.join("missing")).unwrap_err();
        assert!(e.contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
