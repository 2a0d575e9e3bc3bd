//! Line-rate arithmetic. Sizes are Ethernet frame sizes as benchmarkers state them: with the
//! 4-byte FCS and without the 8-byte preamble and 12-byte inter-frame gap, so a "64-byte"
//! frame takes 84 bytes of wire time and 10 Gb/s carries 14.88 Mpps of them.

/// Preamble + start delimiter (8) + inter-frame gap (12): wire bytes around every frame.
pub const L1_OVERHEAD: f64 = 20.0;
/// Link speeds offered for the "% of line rate" column, in bits per second.
pub const LINK_SPEEDS: [f64; 5] = [1e9, 10e9, 25e9, 40e9, 100e9];

/// Parse a link speed as benchmarkers name it: 1G, 10G, 25G, 40G, 100G.
pub fn parse_link_speed(s: &str) -> Result<f64, String> {
    match s
        .to_ascii_uppercase()
        .trim_end_matches("BPS")
        .trim_end_matches("B/S")
    {
        "1G" => Ok(1e9),
        "10G" => Ok(10e9),
        "25G" => Ok(25e9),
        "40G" => Ok(40e9),
        "100G" => Ok(100e9),
        _ => Err(format!(
            "'{s}' is not a link speed (1G, 10G, 25G, 40G, 100G)"
        )),
    }
}

/// Layer-2 bits per second: what switch counters show (frames × frame size with FCS × 8).
pub fn l2_bps(pps: f64, frame_size: f64) -> f64 {
    pps * frame_size * 8.0
}

/// Layer-1 bits per second: frames plus preamble and gap, what the link is full of.
pub fn l1_bps(pps: f64, frame_size: f64) -> f64 {
    pps * (frame_size + L1_OVERHEAD) * 8.0
}

/// Frames per second that fill a link of `link_bps` with frames of `frame_size`.
pub fn line_rate_pps(link_bps: f64, frame_size: f64) -> f64 {
    link_bps / ((frame_size + L1_OVERHEAD) * 8.0)
}

/// Percent of a link's capacity that `pps` frames of `frame_size` use.
pub fn percent_of_line(pps: f64, frame_size: f64, link_bps: f64) -> f64 {
    100.0 * l1_bps(pps, frame_size) / link_bps
}

/// The "simple IMIX" of 7 : 4 : 1 packets of 40, 576 and 1500 bytes at the IPv4 layer.
pub const SIMPLE_IMIX_IPV4: [(f64, f64); 3] = [(7.0, 40.0), (4.0, 576.0), (1.0, 1500.0)];

/// Mean size of a weighted mix of (weight, size).
pub fn mean_size(mix: &[(f64, f64)]) -> f64 {
    let w: f64 = mix.iter().map(|m| m.0).sum();
    mix.iter().map(|(k, s)| k * s).sum::<f64>() / w
}

/// IPv4-layer bits per second of simple IMIX traffic at `pps`:
/// PPS × (7·40 + 4·576 + 1500) / 12 × 8.
pub fn imix_ipv4_bps(pps: f64) -> f64 {
    pps * mean_size(&SIMPLE_IMIX_IPV4) * 8.0
}

/// Ethernet-layer bits per second of the same traffic (each packet plus its 14-byte
/// header, as switch counters count): PPS × (7·54 + 4·590 + 1514) / 12 × 8.
pub fn imix_ethernet_bps(pps: f64) -> f64 {
    pps * (mean_size(&SIMPLE_IMIX_IPV4) + 14.0) * 8.0
}

/// "1.23Mpps", "456.00Kpps", "12pps".
pub fn fmt_pps(pps: f64) -> String {
    if pps >= 1e6 {
        format!("{:.2}Mpps", pps / 1e6)
    } else if pps >= 1e3 {
        format!("{:.2}Kpps", pps / 1e3)
    } else {
        format!("{pps:.0}pps")
    }
}

/// "24.77Gbps", "823.00Mbps".
pub fn fmt_bps(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2}Gbps", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2}Mbps", bps / 1e6)
    } else {
        format!("{:.2}Kbps", bps / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= b.abs() * rel
    }

    #[test]
    fn reference_line_rates() {
        assert!(close(line_rate_pps(10e9, 64.0), 14_880_952.0, 1e-6));
        assert!(close(line_rate_pps(1e9, 64.0), 1_488_095.0, 1e-6));
        assert!(close(line_rate_pps(10e9, 1518.0), 812_743.8, 1e-6));
        assert!(close(
            percent_of_line(14_880_952.0, 64.0, 10e9),
            100.0,
            1e-6
        ));
    }

    #[test]
    fn seed_table_rows() {
        // FreeBSD kernel bridge, vm=var2,size=1514 uni: 2.02 Mpps, 24.77 Gb/s at L2 (seed 000).
        assert!(close(l2_bps(2.045e6, 1514.0), 24.77e9, 1e-3));
        // VPP, size=64 uni: 12.80 Mpps → 6.56 Gb/s.
        assert!(close(l2_bps(12.80e6, 64.0), 6.55e9, 2e-3));
    }

    #[test]
    fn imix_means() {
        assert!(close(mean_size(&SIMPLE_IMIX_IPV4), 340.333, 1e-5));
        assert!(close(imix_ethernet_bps(1.0), 354.333 * 8.0, 1e-5));
        // A 10 Gb/s link full of simple IMIX at the IPv4 layer is about 3.67 Mpps.
        assert!(close(10e9 / imix_ipv4_bps(1.0), 3.672e6, 1e-3));
    }

    #[test]
    fn link_speeds() {
        assert_eq!(parse_link_speed("25G").unwrap(), 25e9);
        assert_eq!(parse_link_speed("10gbps").unwrap(), 10e9);
        assert!(parse_link_speed("3G").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_pps(12_800_000.0), "12.80Mpps");
        assert_eq!(fmt_pps(700_000.0), "700.00Kpps");
        assert_eq!(fmt_bps(24.77e9), "24.77Gbps");
    }
}
