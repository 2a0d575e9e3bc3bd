//! Frame sizes: named mixes (IMIX), lists, and the smallest frame each kind allows.
//!
//! Sizes are stated as benchmarkers state them, with the 4-byte FCS: `--size 64` puts 60
//! bytes on the socket (the NIC or veth adds the FCS, which we never see). VLAN tags add to
//! the stated size.

use super::{FCS_LEN, MAX_SIZE, MIN_SIZE};

/// Flows in T-Rex's var2 profile: one per address of the /16, less the network address.
pub const VAR2_FLOWS: u32 = 65535;

/// T-Rex bench's IMIX: 60, 590 and 1514 bytes before FCS (64, 594, 1518 with it), 28:20:4.
pub const TREX_IMIX: [(usize, usize); 3] = [(64, 28), (594, 20), (1518, 4)];
/// The "simple IMIX": 64, 594 and 1518 bytes with FCS, 7:4:1.
pub const SIMPLE_IMIX: [(usize, usize); 3] = [(64, 7), (594, 4), (1518, 1)];

/// One cycle of a weighted mix with the sizes spread evenly through it (smooth weighted
/// round robin), so that any short window has nearly the stated ratio.
pub fn weighted_cycle(mix: &[(usize, usize)]) -> Vec<usize> {
    let total: i64 = mix.iter().map(|m| m.1 as i64).sum();
    let mut current = vec![0i64; mix.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, m) in current.iter_mut().zip(mix) {
            *c += m.1 as i64;
        }
        let best = (0..mix.len())
            .max_by_key(|&i| (current[i], -(i as i64)))
            .unwrap_or(0);
        current[best] -= total;
        out.push(mix[best].0);
    }
    out
}

/// Parse `--size`: a size, a comma list used in turn, `mixed` (64,128,256,512,1024,1514),
/// `imix` (T-Rex bench's) or `simple-imix`.
pub fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    match s {
        "imix" => return Ok(weighted_cycle(&TREX_IMIX)),
        "simple-imix" => return Ok(weighted_cycle(&SIMPLE_IMIX)),
        _ => {}
    }
    let list = if s == "mixed" {
        "64,128,256,512,1024,1514"
    } else {
        s
    };
    list.split(',')
        .map(|w| {
            let n: usize = w
                .trim()
                .parse()
                .map_err(|_| format!("--size: '{w}' is not a number"))?;
            if !(MIN_SIZE..=MAX_SIZE).contains(&n) {
                return Err(format!(
                    "--size: {n} is outside {MIN_SIZE}..={MAX_SIZE} (sizes include the 4-byte FCS)"
                ));
            }
            Ok(n)
        })
        .collect()
}

/// Whether `--size` names a mix rather than giving sizes.
pub fn is_named_mix(s: &str) -> bool {
    matches!(s, "imix" | "simple-imix" | "mixed")
}

/// `--size` for a kind of frame whose smallest size (with FCS) is `min`: a named mix's
/// 64-byte frames become `min`-byte ones (IPv6 IMIX is 78, 594, 1518 as CSIT's is), and a
/// size given as a number below `min` is an error naming the kind.
pub fn sizes_for(s: &str, min: usize, kind: &str) -> Result<Vec<usize>, String> {
    let mut sizes = parse_sizes(s)?;
    if is_named_mix(s) {
        for x in sizes.iter_mut() {
            *x = (*x).max(min);
        }
        return Ok(sizes);
    }
    if let Some(&small) = sizes.iter().find(|&&x| x < min) {
        return Err(format!(
            "--size: {small} is too small for {kind}: its smallest frame is {min} bytes with \
             the FCS ({} of headers and the 12-byte test header, {FCS_LEN} of FCS)",
            min - FCS_LEN - 12
        ));
    }
    Ok(sizes)
}
