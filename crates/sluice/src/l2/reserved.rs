//! The addresses IEEE 802.1D sets apart (802.1D-2004 7.8 and 7.12.6, Table 7-10): a source
//! that is a group or the all-zero address is no station's and is neither learnt nor
//! forwarded; frames to the reserved link-local groups 01:80:C2:00:00:00-0F are for the link
//! alone (STP, PAUSE, LACP, 802.1X, LLDP...), not to be relayed. Linux's bridge does the same
//! (`br_handle_frame`), with two exceptions sluice follows: a bridge that runs no spanning
//! tree (sluice runs none) forwards the bridge group 01:80:C2:00:00:00, so that the spanning
//! tree of the switches around it still sees a loop through it; and `group_fwd_mask` lets
//! chosen groups through, never :00-:02.

/// The reserved group 01:80:C2:00:00:0N a destination is, as N.
#[inline(always)]
pub fn link_local_group(dst: &[u8]) -> Option<u8> {
    match dst {
        [0x01, 0x80, 0xc2, 0, 0, n, ..] if *n <= 0x0f => Some(*n),
        _ => None,
    }
}

/// Whether a source address can be a station's: not a group address, not all zeros.
#[inline(always)]
pub fn valid_source(src: &[u8]) -> bool {
    src.len() >= 6 && src[0] & 1 == 0 && src[..6] != [0; 6]
}

/// Whether a frame to reserved group N is relayed under `group_fwd_mask`: the bridge group
/// always (no spanning tree runs here), PAUSE never, the others when their bit is set.
#[inline(always)]
pub fn forwarded(n: u8, group_fwd_mask: u16) -> bool {
    match n {
        0 => true,
        1 | 2 => false,
        n => group_fwd_mask & (1 << n) != 0,
    }
}

/// Whether the bridge learns the source of a frame to `dst`: as Linux, from every valid
/// source but that of a PAUSE frame (MAC control, dropped before learning).
#[inline(always)]
pub fn learns_from(dst: &[u8]) -> bool {
    dst[0] & 1 == 0 || link_local_group(dst) != Some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_groups_and_sources() {
        assert_eq!(link_local_group(&[1, 0x80, 0xc2, 0, 0, 0x0e]), Some(14));
        assert_eq!(link_local_group(&[1, 0x80, 0xc2, 0, 0, 0x10]), None);
        assert_eq!(link_local_group(&[1, 0, 0x5e, 0, 0, 1]), None);
        assert!(!valid_source(&[0; 6]));
        assert!(!valid_source(&[1, 0, 0, 0, 0, 1]));
        assert!(!valid_source(&[2, 0, 0]));
        assert!(valid_source(&[0, 0, 0, 0, 0, 1]));
        let mask = 1 << 3 | 1 << 14 | 0x7;
        let through: Vec<u8> = (0..16).filter(|&n| forwarded(n, mask)).collect();
        assert_eq!(through, vec![0, 3, 14], "bits 1 and 2 mean nothing");
        assert!(!learns_from(&[1, 0x80, 0xc2, 0, 0, 1]));
        assert!(learns_from(&[1, 0x80, 0xc2, 0, 0, 3]));
    }
}
