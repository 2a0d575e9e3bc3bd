//! ACL rules and the flow key a packet presents to them.

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Deny,
    Permit,
    /// Permit, and open a session that lets the rest of the flow through, both ways
    /// (`session.rs`).
    PermitReflect,
}

/// One rule. Addresses are left-aligned in a `u128` (an IPv4 address in the top 32 bits), so
/// that one rule type serves both families; prefix lengths count from the left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub action: Action,
    pub ipv6: bool,
    pub src: u128,
    pub src_len: u8,
    pub dst: u128,
    pub dst_len: u8,
    /// `None`: any protocol (and the port, ICMP and flag fields are ignored).
    pub proto: Option<u8>,
    /// Inclusive ranges: source and destination port for TCP and UDP, ICMP type and code for
    /// ICMP and ICMPv6.
    pub sport: (u16, u16),
    pub dport: (u16, u16),
    /// TCP flags: `(value, mask)`, matched when `flags & mask == value`.
    pub tcp_flags: (u8, u8),
}

/// A packet as the rules see it (addresses left-aligned as in `Rule`; for ICMP `sport` is
/// the type and `dport` the code; for protocols without ports both are 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub ipv6: bool,
    pub src: u128,
    pub dst: u128,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
    pub tcp_flags: u8,
    /// A fragment other than the first: no transport header, so ports and flags are 0 and
    /// only rules that ignore them can match.
    pub later_fragment: bool,
}

pub const TCP: u8 = 6;

/// The first `len` bits of a left-aligned address.
pub(crate) fn mask(a: u128, len: u8) -> u128 {
    match len {
        0 => 0,
        l if l >= 128 => a,
        l => a & !(u128::MAX >> l),
    }
}

impl Rule {
    /// A rule matching everything of one family.
    pub fn any(ipv6: bool, action: Action) -> Rule {
        Rule {
            action,
            ipv6,
            src: 0,
            src_len: 0,
            dst: 0,
            dst_len: 0,
            proto: None,
            sport: (0, u16::MAX),
            dport: (0, u16::MAX),
            tcp_flags: (0, 0),
        }
    }

    /// Whether the fields other than the addresses and protocol (ports, ICMP, flags) match.
    pub(crate) fn rest_matches(&self, k: &FlowKey) -> bool {
        if self.proto.is_none() {
            return true;
        }
        if k.later_fragment {
            return self.sport == (0, u16::MAX)
                && self.dport == (0, u16::MAX)
                && self.tcp_flags.1 == 0;
        }
        (self.sport.0..=self.sport.1).contains(&k.sport)
            && (self.dport.0..=self.dport.1).contains(&k.dport)
            && (k.proto != TCP || k.tcp_flags & self.tcp_flags.1 == self.tcp_flags.0)
    }

    /// Whether the rule matches `k`.
    pub fn matches(&self, k: &FlowKey) -> bool {
        self.ipv6 == k.ipv6
            && mask(k.src, self.src_len) == self.src
            && mask(k.dst, self.dst_len) == self.dst
            && self.proto.is_none_or(|p| p == k.proto)
            && self.rest_matches(k)
    }

    /// The rule with host bits past each prefix cleared (what the classifier stores).
    pub fn normalized(mut self) -> Rule {
        let max = if self.ipv6 { 128 } else { 32 };
        self.src_len = self.src_len.min(max);
        self.dst_len = self.dst_len.min(max);
        self.src = mask(self.src, self.src_len);
        self.dst = mask(self.dst, self.dst_len);
        self
    }
}

/// The index of the first rule of `rules` that matches `k`: a scan, the reference.
pub fn first_match(rules: &[Rule], k: &FlowKey) -> Option<usize> {
    rules.iter().position(|r| r.matches(k))
}
