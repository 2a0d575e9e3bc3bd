//! memif control messages: fixed 128-byte little-endian messages on a unix seqpacket socket,
//! a 16-bit type then the packed body. Memory regions and interrupt eventfds travel beside
//! the message as SCM_RIGHTS descriptors.
//!
//! The exchange (client = the side that owns the shared memory):
//! ```text
//! server -> client  HELLO       name, versions, limits
//! client -> server  INIT        version, interface id, mode, secret, name      <- ACK
//! client -> server  ADD_REGION  index, size   (+ memfd)                        <- ACK
//! client -> server  ADD_RING    direction, index, region, offset, log2 size (+ eventfd) <- ACK
//! client -> server  CONNECT     interface name                   <- CONNECTED interface name
//! either            DISCONNECT  code, reason; then the socket closes
//! ```
//! Decoding checks every size and index it can and never panics: bad input is a `ProtoError`.

use super::violation::Violation;
use std::fmt;

pub const MSG_SIZE: usize = 128;
/// Protocol version 2.0 (major in the high byte).
pub const VERSION: u16 = 0x0200;
/// The first word of every ring header.
pub const RING_COOKIE: u32 = 0x03E3_1F20;
pub const NAME_LEN: usize = 32;
pub const SECRET_LEN: usize = 24;
pub const REASON_LEN: usize = 96;
/// ADD_RING flag: the ring carries packets from client to server.
pub const RING_FLAG_C2S: u16 = 1;
/// Most rings, regions and the largest ring we accept or offer.
pub const MAX_RINGS: u16 = 64;
pub const MAX_REGIONS: u16 = 16;
pub const MAX_LOG2_RING_SIZE: u8 = 14;

const ACK: u16 = 1;
const HELLO: u16 = 2;
const INIT: u16 = 3;
const ADD_REGION: u16 = 4;
const ADD_RING: u16 = 5;
const CONNECT: u16 = 6;
const CONNECTED: u16 = 7;
const DISCONNECT: u16 = 8;

/// Interface modes of INIT; sluice speaks Ethernet.
pub const MODE_ETHERNET: u8 = 0;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub name: String,
    pub min_version: u16,
    pub max_version: u16,
    pub max_region: u16,
    pub max_c2s_ring: u16,
    pub max_s2c_ring: u16,
    pub max_log2_ring_size: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Init {
    pub version: u16,
    pub id: u32,
    pub mode: u8,
    pub secret: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddRegion {
    pub index: u16,
    pub size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddRing {
    /// Client to server (else server to client).
    pub c2s: bool,
    pub index: u16,
    pub region: u16,
    pub offset: u32,
    pub log2_size: u8,
    pub private_hdr_size: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    Ack,
    Hello(Hello),
    Init(Init),
    AddRegion(AddRegion),
    AddRing(AddRing),
    Connect { name: String },
    Connected { name: String },
    Disconnect { code: u32, reason: String },
}

/// Why a control message was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtoError {
    Size(usize),
    UnknownType(u16),
    Version(u16),
    RegionIndex(u16),
    RingIndex(u16),
    RingSize(u8),
    Mode(u8),
    /// A message that is valid but not expected now (`got`, while waiting for `wanted`).
    Unexpected {
        got: &'static str,
        wanted: &'static str,
    },
    Other(String),
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Size(n) => write!(f, "message of {n} bytes, not {MSG_SIZE}"),
            ProtoError::UnknownType(t) => write!(f, "unknown message type {t}"),
            ProtoError::Version(v) => write!(
                f,
                "version {}.{} (we speak {}.{})",
                v >> 8,
                v & 0xff,
                VERSION >> 8,
                VERSION & 0xff
            ),
            ProtoError::RegionIndex(i) => write!(f, "region index {i} out of range"),
            ProtoError::RingIndex(i) => write!(f, "ring index {i} out of range"),
            ProtoError::RingSize(l) => write!(f, "ring size 2^{l} out of range"),
            ProtoError::Mode(m) => write!(f, "interface mode {m} (only ethernet, 0)"),
            ProtoError::Unexpected { got, wanted } => {
                write!(f, "got {got} while waiting for {wanted}")
            }
            ProtoError::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for ProtoError {}

impl ProtoError {
    /// Which peer violation this counts as.
    pub fn violation(&self) -> Violation {
        match self {
            ProtoError::RingIndex(_) | ProtoError::RingSize(_) => Violation::BadRing,
            ProtoError::RegionIndex(_) => Violation::BadRegion,
            _ => Violation::BadMessage,
        }
    }
}

impl Msg {
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Ack => "ACK",
            Msg::Hello(_) => "HELLO",
            Msg::Init(_) => "INIT",
            Msg::AddRegion(_) => "ADD_REGION",
            Msg::AddRing(_) => "ADD_RING",
            Msg::Connect { .. } => "CONNECT",
            Msg::Connected { .. } => "CONNECTED",
            Msg::Disconnect { .. } => "DISCONNECT",
        }
    }

    pub fn encode(&self) -> [u8; MSG_SIZE] {
        let mut w = Writer {
            b: [0; MSG_SIZE],
            at: 0,
        };
        match self {
            Msg::Ack => w.u16(ACK),
            Msg::Hello(h) => {
                w.u16(HELLO);
                w.text(&h.name, NAME_LEN);
                w.u16(h.min_version);
                w.u16(h.max_version);
                w.u16(h.max_region);
                w.u16(h.max_c2s_ring);
                w.u16(h.max_s2c_ring);
                w.u8(h.max_log2_ring_size);
            }
            Msg::Init(i) => {
                w.u16(INIT);
                w.u16(i.version);
                w.u32(i.id);
                w.u8(i.mode);
                w.text(&i.secret, SECRET_LEN);
                w.text(&i.name, NAME_LEN);
            }
            Msg::AddRegion(r) => {
                w.u16(ADD_REGION);
                w.u16(r.index);
                w.u64(r.size);
            }
            Msg::AddRing(r) => {
                w.u16(ADD_RING);
                w.u16(if r.c2s { RING_FLAG_C2S } else { 0 });
                w.u16(r.index);
                w.u16(r.region);
                w.u32(r.offset);
                w.u8(r.log2_size);
                w.u16(r.private_hdr_size);
            }
            Msg::Connect { name } => {
                w.u16(CONNECT);
                w.text(name, NAME_LEN);
            }
            Msg::Connected { name } => {
                w.u16(CONNECTED);
                w.text(name, NAME_LEN);
            }
            Msg::Disconnect { code, reason } => {
                w.u16(DISCONNECT);
                w.u32(*code);
                w.text(reason, REASON_LEN);
            }
        }
        w.b
    }

    /// Decode one message; fields are checked for what can be checked without context.
    pub fn decode(b: &[u8]) -> Result<Msg, ProtoError> {
        if b.len() != MSG_SIZE {
            return Err(ProtoError::Size(b.len()));
        }
        let mut r = Reader { b, at: 0 };
        let kind = r.u16();
        Ok(match kind {
            ACK => Msg::Ack,
            HELLO => {
                let h = Hello {
                    name: r.text(NAME_LEN),
                    min_version: r.u16(),
                    max_version: r.u16(),
                    max_region: r.u16(),
                    max_c2s_ring: r.u16(),
                    max_s2c_ring: r.u16(),
                    max_log2_ring_size: r.u8(),
                };
                if h.min_version > VERSION || h.max_version < VERSION {
                    return Err(ProtoError::Version(h.max_version));
                }
                Msg::Hello(h)
            }
            INIT => {
                let i = Init {
                    version: r.u16(),
                    id: r.u32(),
                    mode: r.u8(),
                    secret: r.text(SECRET_LEN),
                    name: r.text(NAME_LEN),
                };
                if i.version >> 8 != VERSION >> 8 {
                    return Err(ProtoError::Version(i.version));
                }
                if i.mode != MODE_ETHERNET {
                    return Err(ProtoError::Mode(i.mode));
                }
                Msg::Init(i)
            }
            ADD_REGION => {
                let a = AddRegion {
                    index: r.u16(),
                    size: r.u64(),
                };
                if a.index >= MAX_REGIONS {
                    return Err(ProtoError::RegionIndex(a.index));
                }
                if a.size == 0 || a.size > 1 << 40 {
                    return Err(ProtoError::Other(format!(
                        "region {} of {} bytes",
                        a.index, a.size
                    )));
                }
                Msg::AddRegion(a)
            }
            ADD_RING => {
                let flags = r.u16();
                let a = AddRing {
                    c2s: flags & RING_FLAG_C2S != 0,
                    index: r.u16(),
                    region: r.u16(),
                    offset: r.u32(),
                    log2_size: r.u8(),
                    private_hdr_size: r.u16(),
                };
                if a.index >= MAX_RINGS {
                    return Err(ProtoError::RingIndex(a.index));
                }
                if a.region >= MAX_REGIONS {
                    return Err(ProtoError::RegionIndex(a.region));
                }
                if a.log2_size == 0 || a.log2_size > MAX_LOG2_RING_SIZE {
                    return Err(ProtoError::RingSize(a.log2_size));
                }
                Msg::AddRing(a)
            }
            CONNECT => Msg::Connect {
                name: r.text(NAME_LEN),
            },
            CONNECTED => Msg::Connected {
                name: r.text(NAME_LEN),
            },
            DISCONNECT => Msg::Disconnect {
                code: r.u32(),
                reason: r.text(REASON_LEN),
            },
            other => return Err(ProtoError::UnknownType(other)),
        })
    }
}

struct Writer {
    b: [u8; MSG_SIZE],
    at: usize,
}

impl Writer {
    fn put(&mut self, bytes: &[u8]) {
        let end = (self.at + bytes.len()).min(MSG_SIZE);
        let n = end - self.at;
        self.b[self.at..end].copy_from_slice(&bytes[..n]);
        self.at = end;
    }
    fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    fn u16(&mut self, v: u16) {
        self.put(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.put(&v.to_le_bytes());
    }
    /// A zero-padded text field; one byte stays zero so C peers find a terminator.
    fn text(&mut self, s: &str, width: usize) {
        let mut field = vec![0u8; width];
        // Cut at a character boundary: half a character would reach the peer as another.
        let mut n = s.len().min(width - 1);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        field[..n].copy_from_slice(&s.as_bytes()[..n]);
        self.put(&field);
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        // The message is MSG_SIZE bytes and every layout fits in it, so this never runs
        // short; clamp anyway rather than trust that.
        let end = (self.at + n).min(self.b.len());
        let s = &self.b[self.at..end];
        self.at = end;
        s
    }
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let s = self.take(N);
        a[..s.len()].copy_from_slice(s);
        a
    }
    fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }
    /// A text field up to its first zero; bytes that are not UTF-8 are replaced, and so
    /// are control characters (a peer's name is printed by `show hardware`).
    fn text(&mut self, width: usize) -> String {
        let s = self.take(width);
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        String::from_utf8_lossy(&s[..end])
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Msg> {
        vec![
            Msg::Ack,
            Msg::Hello(Hello {
                name: "testpmd".into(),
                min_version: VERSION,
                max_version: VERSION,
                max_region: 255,
                max_c2s_ring: 255,
                max_s2c_ring: 255,
                max_log2_ring_size: 14,
            }),
            Msg::Init(Init {
                version: VERSION,
                id: 7,
                mode: MODE_ETHERNET,
                secret: "s3cret".into(),
                name: "sluice".into(),
            }),
            Msg::AddRegion(AddRegion {
                index: 1,
                size: 75_497_472,
            }),
            Msg::AddRing(AddRing {
                c2s: true,
                index: 3,
                region: 0,
                offset: 8448,
                log2_size: 10,
                private_hdr_size: 0,
            }),
            Msg::Connect {
                name: "memif0".into(),
            },
            Msg::Connected {
                name: "memif0/0".into(),
            },
            Msg::Disconnect {
                code: 1,
                reason: "bye".into(),
            },
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in all() {
            let b = m.encode();
            assert_eq!(Msg::decode(&b).unwrap(), m);
        }
    }

    #[test]
    fn layout_is_the_packed_c_layout() {
        // ADD_RING: type, flags, index, region, offset u32, log2 u8, private header u16.
        let b = Msg::AddRing(AddRing {
            c2s: true,
            index: 2,
            region: 1,
            offset: 0x01020304,
            log2_size: 10,
            private_hdr_size: 0,
        })
        .encode();
        assert_eq!(&b[..13], &[5, 0, 1, 0, 2, 0, 1, 0, 4, 3, 2, 1, 10]);
        // INIT: type, version, id, mode, secret[24], name[32].
        let b = Msg::Init(Init {
            version: VERSION,
            id: 0x0a0b0c0d,
            mode: 0,
            secret: String::new(),
            name: "x".into(),
        })
        .encode();
        assert_eq!(&b[..9], &[3, 0, 0, 2, 0x0d, 0x0c, 0x0b, 0x0a, 0]);
        assert_eq!(b[9 + SECRET_LEN], b'x');
        // Over-long names are cut, keeping a terminating zero.
        let b = Msg::Connect {
            name: "n".repeat(100),
        }
        .encode();
        assert_eq!(b[2 + NAME_LEN - 1], 0);
    }

    #[test]
    fn bad_messages_are_refused_with_a_reason() {
        let ring = |f: &dyn Fn(&mut [u8; MSG_SIZE])| {
            let mut b = all()[4].encode();
            f(&mut b);
            Msg::decode(&b)
        };
        assert_eq!(Msg::decode(&[0u8; 10]), Err(ProtoError::Size(10)));
        assert_eq!(Msg::decode(&[0u8; 200]), Err(ProtoError::Size(200)));
        let mut b = [0u8; MSG_SIZE];
        b[0] = 99;
        assert_eq!(Msg::decode(&b), Err(ProtoError::UnknownType(99)));
        assert_eq!(ring(&|b| b[4] = 200), Err(ProtoError::RingIndex(200)));
        assert_eq!(ring(&|b| b[6] = 200), Err(ProtoError::RegionIndex(200)));
        assert_eq!(ring(&|b| b[12] = 0), Err(ProtoError::RingSize(0)));
        assert_eq!(ring(&|b| b[12] = 30), Err(ProtoError::RingSize(30)));
        let mut init = all()[2].encode();
        init[3] = 1; // version 1.x
        assert!(matches!(Msg::decode(&init), Err(ProtoError::Version(_))));
        let mut init = all()[2].encode();
        init[8] = 2; // punt/inject mode
        assert_eq!(Msg::decode(&init), Err(ProtoError::Mode(2)));
        let mut region = all()[3].encode();
        region[4..12].copy_from_slice(&0u64.to_le_bytes());
        assert!(Msg::decode(&region).is_err());
        // Names that are not UTF-8 decode lossily instead of failing or panicking.
        let mut c = all()[5].encode();
        c[2] = 0xff;
        assert!(Msg::decode(&c).is_ok());
        // Control characters (a terminal escape) in a name are not passed on.
        c[2] = 0x1b;
        assert_eq!(
            Msg::decode(&c).unwrap(),
            Msg::Connect {
                name: "?emif0".into()
            }
        );
    }

    #[test]
    fn a_long_name_is_cut_at_a_character_boundary() {
        // 30 ASCII bytes and a two-byte character: 32 bytes, one more than the field holds.
        let name = format!("{}é", "a".repeat(30));
        let m = Msg::Connect { name };
        assert_eq!(
            Msg::decode(&m.encode()).unwrap(),
            Msg::Connect {
                name: "a".repeat(30)
            }
        );
    }

    proptest::proptest! {
        /// What CI can do of the fuzz target: arbitrary bytes never panic the decoder, and
        /// what decodes survives a round trip (names compared after their own decoding).
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
                                       kind in 0u16..10) {
            let mut b = bytes;
            if b.len() >= 2 {
                b[..2].copy_from_slice(&kind.to_le_bytes());
            }
            if let Ok(m) = Msg::decode(&b) {
                let again = Msg::decode(&m.encode()).unwrap();
                proptest::prop_assert_eq!(again.encode(), m.encode());
            }
        }
    }
}
