//! IPv4 headers (RFC 791): the checks a router makes before it forwards a packet, the header
//! checksum, and the incremental checksum update of RFC 1624 that a TTL decrement needs.
//!
//! ```text
//!  0       4       8              16      19             24             32
//! +-------+-------+---------------+-------------------------------------+
//! |version|  IHL  |   DSCP/ECN    |            total length             |
//! |           identification      |flags|      fragment offset          |
//! |      TTL      |   protocol    |          header checksum            |
//! |                          source address                             |
//! |                        destination address                          |
//! |                     options (IHL > 5) ...                           |
//! ```

/// Smallest header: IHL 5.
pub const MIN_HEADER_LEN: usize = 20;

/// Why a router refuses an IPv4 packet; each is its own drop counter in `ip4-input`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipv4Error {
    /// Fewer than 20 bytes.
    Truncated,
    /// The version field is not 4.
    Version,
    /// IHL below 5, or beyond the bytes present.
    HeaderLength,
    /// Total length below the header length, or beyond the frame.
    TotalLength,
    /// The header checksum does not verify.
    Checksum,
}

impl Ipv4Error {
    pub fn reason(self) -> &'static str {
        match self {
            Ipv4Error::Truncated => "ip4 header truncated",
            Ipv4Error::Version => "ip4 version is not 4",
            Ipv4Error::HeaderLength => "ip4 header length (IHL) invalid",
            Ipv4Error::TotalLength => "ip4 total length invalid",
            Ipv4Error::Checksum => "ip4 header checksum bad",
        }
    }
}

/// The fields of an IPv4 header at the start of `bytes`, read without checking them: for
/// nodes behind ip4-input, which has checked the packet once. Only the 20 fixed bytes are
/// known to be present.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4View<'a> {
    /// The fixed header, as an array: reading its fields needs no bounds checks.
    fixed: &'a [u8; MIN_HEADER_LEN],
    /// The header and what follows it.
    bytes: &'a [u8],
}

impl<'a> Ipv4View<'a> {
    /// `None` when fewer than 20 bytes are present.
    #[inline(always)]
    pub fn of(bytes: &'a [u8]) -> Option<Ipv4View<'a>> {
        let fixed = bytes.first_chunk::<MIN_HEADER_LEN>()?;
        Some(Ipv4View { fixed, bytes })
    }

    pub fn version(&self) -> u8 {
        self.fixed[0] >> 4
    }

    /// The header length IHL announces (which may exceed the bytes present).
    pub fn header_len(&self) -> usize {
        (self.fixed[0] & 0x0f) as usize * 4
    }

    pub fn has_options(&self) -> bool {
        self.header_len() > MIN_HEADER_LEN
    }

    pub fn total_len(&self) -> usize {
        u16::from_be_bytes([self.fixed[2], self.fixed[3]]) as usize
    }

    pub fn ttl(&self) -> u8 {
        self.fixed[8]
    }

    pub fn protocol(&self) -> u8 {
        self.fixed[9]
    }

    /// Don't Fragment.
    pub fn dont_fragment(&self) -> bool {
        self.fixed[6] & 0x40 != 0
    }

    /// Part of a fragmented datagram: more fragments follow, or the offset is not 0.
    pub fn is_fragment(&self) -> bool {
        self.fixed[6] & 0x20 != 0 || !self.first_fragment()
    }

    /// The fragment offset is 0: the transport header, if any, follows this header.
    pub fn first_fragment(&self) -> bool {
        u16::from_be_bytes([self.fixed[6], self.fixed[7]]) & 0x1fff == 0
    }

    pub fn source(&self) -> u32 {
        word_at(self.fixed, 12)
    }

    pub fn destination(&self) -> u32 {
        word_at(self.fixed, 16)
    }

    /// The first four bytes after the header (the ports of TCP and UDP), if present.
    pub fn first_payload_word(&self) -> Option<u32> {
        let at = self.header_len();
        self.bytes.get(at..at + 4).map(|_| word_at(self.bytes, at))
    }
}

/// The big-endian word at `at`, which the caller has checked is present.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// A checked view of an IPv4 header at the start of `bytes`: the fields of `Ipv4View`, of a
/// header whose version, lengths and checksum verify (and which is all present).
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Header<'a> {
    view: Ipv4View<'a>,
}

impl<'a> std::ops::Deref for Ipv4Header<'a> {
    type Target = Ipv4View<'a>;

    fn deref(&self) -> &Ipv4View<'a> {
        &self.view
    }
}

impl<'a> Ipv4Header<'a> {
    /// Check version, IHL, total length against what is present, and the checksum.
    pub fn parse(bytes: &'a [u8]) -> Result<Ipv4Header<'a>, Ipv4Error> {
        Self::parse_in(bytes, bytes.len())
    }

    /// Like `parse`, for a packet of `packet_len` bytes of which `bytes` (holding at least the
    /// header) is the first part: a packet chained over several buffers.
    pub fn parse_in(bytes: &'a [u8], packet_len: usize) -> Result<Ipv4Header<'a>, Ipv4Error> {
        let view = match Ipv4View::of(bytes) {
            Some(v) if packet_len >= MIN_HEADER_LEN => v,
            _ => return Err(Ipv4Error::Truncated),
        };
        if view.version() != 4 {
            return Err(Ipv4Error::Version);
        }
        let header_len = view.header_len();
        if header_len < MIN_HEADER_LEN || header_len > bytes.len() {
            return Err(Ipv4Error::HeaderLength);
        }
        let total = view.total_len();
        if total < header_len || total > packet_len.max(bytes.len()) {
            return Err(Ipv4Error::TotalLength);
        }
        if checksum(&bytes[..header_len]) != 0 {
            return Err(Ipv4Error::Checksum);
        }
        Ok(Ipv4Header { view })
    }
}

/// The Internet checksum (RFC 1071) of `bytes`: 0 when a header with its checksum verifies.
pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [last] = words.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// RFC 1624 eqn. 3: the new checksum after one 16-bit word of the header changed from `old`
/// to `new`: HC' = ~(~HC + ~m + m').
pub fn update_checksum(check: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!check as u32) + (!old as u32) + new as u32;
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Decrement the TTL of the (already checked) header in `bytes` and fix its checksum
/// incrementally. Returns the new TTL; a TTL of 0 is left alone (the caller drops it).
pub fn decrement_ttl(bytes: &mut [u8]) -> u8 {
    let ttl = bytes[8];
    if ttl == 0 {
        return 0;
    }
    let old = u16::from_be_bytes([bytes[8], bytes[9]]);
    bytes[8] = ttl - 1;
    let new = u16::from_be_bytes([bytes[8], bytes[9]]);
    let check = u16::from_be_bytes([bytes[10], bytes[11]]);
    bytes[10..12].copy_from_slice(&update_checksum(check, old, new).to_be_bytes());
    ttl - 1
}

/// Option types a router acts on or steps over (RFC 791 3.1).
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;
const OPTION_RECORD_ROUTE: u8 = 7;

/// Record `addr` (the address of the interface the packet leaves by) in the record route
/// option of the checked header `header` (its whole IHL), if it has one with room left, and
/// recompute the header checksum (RFC 791 3.1, RFC 1812 5.3.13.5). A full option is left as
/// it is: the packet goes on unrecorded. Returns whether an address was written. Malformed
/// options stop the walk and change nothing.
pub fn record_route(header: &mut [u8], addr: u32) -> bool {
    let hl = ((header.first().copied().unwrap_or(0) & 0x0f) as usize * 4).min(header.len());
    let mut i = MIN_HEADER_LEN;
    while i < hl {
        match header[i] {
            OPTION_END => return false,
            OPTION_NOP => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = header.get(i + 1) else {
            return false;
        };
        let len = len as usize;
        if len < 2 || i + len > hl {
            return false;
        }
        if header[i] == OPTION_RECORD_ROUTE && len >= 3 {
            // The pointer counts from the option's first byte, starting at 1; the smallest
            // legal value is 4.
            let ptr = header[i + 2] as usize;
            if ptr < 4 || ptr + 3 > len {
                return false;
            }
            let at = i + ptr - 1;
            header[at..at + 4].copy_from_slice(&addr.to_be_bytes());
            header[i + 2] = (ptr + 4) as u8;
            header[10..12].copy_from_slice(&[0, 0]);
            let c = checksum(&header[..hl]);
            header[10..12].copy_from_slice(&c.to_be_bytes());
            return true;
        }
        i += len;
    }
    false
}

/// Why a datagram could not be fragmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragmentError {
    /// The MTU leaves no room for 8 bytes of data after the header.
    MtuTooSmall,
    /// The caller's `emit` refused a fragment (no buffer).
    Refused,
}

/// Split the datagram `ip` (a checked header; exactly its total length) into fragments of at
/// most `mtu` bytes (RFC 791 2.3 and 3.2, RFC 1812 5.2.6). The first fragment keeps every
/// option, the others only those with the copied flag. Offsets continue the datagram's own
/// (it may be a fragment already) and all but the last set More Fragments; the last keeps the
/// datagram's. Each fragment is built in `scratch` and handed to `emit`, which returns false
/// to stop. Returns how many fragments were emitted.
pub fn fragment(
    ip: &[u8],
    mtu: usize,
    scratch: &mut Vec<u8>,
    mut emit: impl FnMut(&[u8]) -> bool,
) -> Result<usize, FragmentError> {
    let hl = ((ip[0] & 0x0f) as usize * 4).clamp(MIN_HEADER_LEN, ip.len());
    let field = u16::from_be_bytes([ip[6], ip[7]]);
    let (first_offset, last_more) = ((field & 0x1fff) as usize * 8, field & 0x2000 != 0);
    // The header of the later fragments: the fixed part and the copied options, padded.
    let mut later = [OPTION_END; 60];
    later[..MIN_HEADER_LEN].copy_from_slice(&ip[..MIN_HEADER_LEN]);
    let mut later_len = MIN_HEADER_LEN;
    let mut i = MIN_HEADER_LEN;
    while i < hl {
        let kind = ip[i];
        if kind == OPTION_END {
            break;
        }
        let len = if kind == OPTION_NOP {
            1
        } else {
            ip.get(i + 1).map_or(0, |&l| l as usize)
        };
        if len == 0 || i + len > hl {
            break;
        }
        if kind & 0x80 != 0 {
            later[later_len..later_len + len].copy_from_slice(&ip[i..i + len]);
            later_len += len;
        }
        i += len;
    }
    let later = &later[..later_len.div_ceil(4) * 4];
    let data = &ip[hl..];
    let (mut at, mut count) = (0, 0);
    while at < data.len() || count == 0 {
        let header = if count == 0 { &ip[..hl] } else { later };
        let room = mtu.saturating_sub(header.len()) & !7;
        if room == 0 {
            return Err(FragmentError::MtuTooSmall);
        }
        let n = room.min(data.len() - at);
        let last = at + n == data.len();
        scratch.clear();
        scratch.extend_from_slice(header);
        scratch.extend_from_slice(&data[at..at + n]);
        let h = header.len();
        scratch[0] = 0x40 | (h / 4) as u8;
        scratch[2..4].copy_from_slice(&((h + n) as u16).to_be_bytes());
        let more = if last { last_more } else { true };
        let offset = ((first_offset + at) / 8) as u16 & 0x1fff;
        let flags = (field & 0x4000) | if more { 0x2000 } else { 0 };
        scratch[6..8].copy_from_slice(&(flags | offset).to_be_bytes());
        scratch[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&scratch[..h]);
        scratch[10..12].copy_from_slice(&c.to_be_bytes());
        if !emit(scratch) {
            return Err(FragmentError::Refused);
        }
        at += n;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fragments_carry_the_data_at_their_offsets_and_copied_options_only() {
        // Options: record route (not copied, 7 bytes) and a copied type 0x83 (LSRR-like,
        // 3 bytes empty), then 2 bytes of padding: IHL 8.
        let mut ip = vec![
            0x48, 0, 0, 0, 0xab, 0xcd, 0, 0, 63, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        ip.extend_from_slice(&[7, 7, 4, 0, 0, 0, 0, 0x83, 3, 4, 0, 0]);
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        ip.extend_from_slice(&data);
        let total = ip.len() as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum(&ip[..32]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let mut frags: Vec<Vec<u8>> = Vec::new();
        let n = fragment(&ip, 400, &mut Vec::new(), |f| {
            frags.push(f.to_vec());
            true
        });
        assert_eq!(n, Ok(frags.len()));
        let mut rebuilt = vec![0u8; data.len()];
        for (k, f) in frags.iter().enumerate() {
            let h = Ipv4Header::parse(f).unwrap();
            assert!(f.len() <= 400 && h.total_len() == f.len());
            assert_eq!(h.header_len(), if k == 0 { 32 } else { 24 });
            if k > 0 {
                assert_eq!(&f[20..24], &[0x83, 3, 4, 0]);
            }
            let field = u16::from_be_bytes([f[6], f[7]]);
            assert_eq!(field & 0x2000 != 0, k + 1 < frags.len());
            let at = (field & 0x1fff) as usize * 8;
            rebuilt[at..at + f.len() - h.header_len()].copy_from_slice(&f[h.header_len()..]);
            assert_eq!(&f[4..6], &[0xab, 0xcd]);
        }
        assert_eq!(rebuilt, data);
        // A later fragment of a datagram stays one: offsets continue, MF stays set.
        let mut later = ip.clone();
        later[6..8].copy_from_slice(&(0x2000u16 | 100).to_be_bytes());
        let mut fields = Vec::new();
        fragment(&later, 600, &mut Vec::new(), |f| {
            fields.push(u16::from_be_bytes([f[6], f[7]]));
            true
        })
        .unwrap();
        assert_eq!(fields[0], 0x2000 | 100);
        assert!(fields.iter().all(|f| f & 0x2000 != 0));
        assert_eq!(
            fragment(&ip, 30, &mut Vec::new(), |_| true),
            Err(FragmentError::MtuTooSmall)
        );
        assert_eq!(
            fragment(&ip, 400, &mut Vec::new(), |_| false),
            Err(FragmentError::Refused)
        );
    }

    #[test]
    fn record_route_fills_the_next_slot_until_full() {
        // NOP, then record route with room for two addresses, then end of options.
        let mut h = vec![
            0x48, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        h.extend_from_slice(&[1, 7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(record_route(&mut h, 0xc633_6401));
        assert_eq!(&h[21..28], &[7, 11, 8, 198, 51, 100, 1]);
        assert!(record_route(&mut h, 0x0a00_0001));
        assert_eq!(&h[21..32], &[7, 11, 12, 198, 51, 100, 1, 10, 0, 0, 1]);
        assert_eq!(checksum(&h), 0);
        let full = h.clone();
        assert!(!record_route(&mut h, 0x0b00_0001));
        assert_eq!(h, full);
        // No options, or a bad length: nothing changes.
        let mut plain = h[..20].to_vec();
        plain[0] = 0x45;
        assert!(!record_route(&mut plain, 1));
        let mut bad = full.clone();
        bad[22] = 40;
        assert!(!record_route(&mut bad, 1));
    }

    fn header(ttl: u8, total: u16) -> Vec<u8> {
        let mut h = vec![
            0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, ttl, 17, 0, 0, 198, 18, 0, 1, 198, 19, 0, 1,
        ];
        h[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.resize(total as usize, 0xab);
        h
    }

    #[test]
    fn good_header_and_each_failure() {
        let h = header(64, 46);
        let p = Ipv4Header::parse(&h).unwrap();
        assert_eq!((p.ttl(), p.protocol(), p.total_len()), (64, 17, 46));
        assert_eq!(p.destination(), 0xc613_0001);
        assert!(p.dont_fragment() && !p.has_options());
        assert_eq!(
            Ipv4Header::parse(&h[..19]).err(),
            Some(Ipv4Error::Truncated)
        );
        let mut v6 = h.clone();
        v6[0] = 0x65;
        assert_eq!(Ipv4Header::parse(&v6).err(), Some(Ipv4Error::Version));
        let mut ihl = h.clone();
        ihl[0] = 0x44;
        assert_eq!(Ipv4Header::parse(&ihl).err(), Some(Ipv4Error::HeaderLength));
        ihl[0] = 0x4f; // 60 bytes of header in a 46-byte packet
        assert_eq!(Ipv4Header::parse(&ihl).err(), Some(Ipv4Error::HeaderLength));
        let mut long = h.clone();
        long[2..4].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(Ipv4Header::parse(&long).err(), Some(Ipv4Error::TotalLength));
        let mut bad = h.clone();
        bad[10] ^= 1;
        assert_eq!(Ipv4Header::parse(&bad).err(), Some(Ipv4Error::Checksum));
        // Ethernet padding after the packet is allowed: total length shorter than the frame.
        let mut padded = header(64, 28);
        padded.resize(46, 0);
        assert_eq!(Ipv4Header::parse(&padded).unwrap().total_len(), 28);
    }

    #[test]
    fn ttl_zero_is_left_for_the_caller() {
        let mut h = header(0, 20);
        assert_eq!(decrement_ttl(&mut h), 0);
        assert_eq!(checksum(&h[..20]), 0);
    }

    proptest! {
        /// The unchecked view reads any bytes without panicking, exists exactly when the
        /// fixed header is present, and a checked header reads the same fields through it.
        #[test]
        fn view_reads_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let view = Ipv4View::of(&bytes);
            prop_assert_eq!(view.is_some(), bytes.len() >= MIN_HEADER_LEN);
            if let Some(v) = view {
                let fields = (v.version(), v.header_len(), v.total_len(), v.ttl(), v.protocol(),
                              v.dont_fragment(), v.is_fragment(), v.source(), v.destination());
                let _ = v.first_payload_word();
                prop_assert_eq!(v.source(), u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]));
                if let Ok(h) = Ipv4Header::parse(&bytes) {
                    prop_assert_eq!(fields, (h.version(), h.header_len(), h.total_len(), h.ttl(),
                        h.protocol(), h.dont_fragment(), h.is_fragment(), h.source(), h.destination()));
                }
            }
        }

        /// RFC 1624: the incremental update equals a full recomputation, for every TTL and
        /// header content.
        #[test]
        fn incremental_checksum_equals_recomputation(
            ttl in 1u8..=255, proto in any::<u8>(), id in any::<u16>(),
            src in any::<u32>(), dst in any::<u32>(), tos in any::<u8>(),
        ) {
            let mut h = header(ttl, 20);
            h[1] = tos;
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h[9] = proto;
            h[12..16].copy_from_slice(&src.to_be_bytes());
            h[16..20].copy_from_slice(&dst.to_be_bytes());
            h[10..12].copy_from_slice(&[0, 0]);
            let c = checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            prop_assert_eq!(decrement_ttl(&mut h), ttl - 1);
            let incremental = u16::from_be_bytes([h[10], h[11]]);
            h[10..12].copy_from_slice(&[0, 0]);
            prop_assert_eq!(incremental, checksum(&h));
        }

        /// Any bytes: a verdict, never a panic.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Ipv4Header::parse(&bytes);
            let mut b = bytes.clone();
            let _ = record_route(&mut b, 1);
        }
    }
}
