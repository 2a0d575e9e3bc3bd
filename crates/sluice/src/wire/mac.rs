//! 48-bit IEEE 802 MAC addresses.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct MacAddress(pub [u8; 6]);

impl MacAddress {
    pub const BROADCAST: MacAddress = MacAddress([0xff; 6]);

    pub fn from_slice(b: &[u8]) -> Option<MacAddress> {
        b.get(..6).map(|s| {
            let mut a = [0u8; 6];
            a.copy_from_slice(s);
            MacAddress(a)
        })
    }

    /// The group bit (I/G), set for broadcast and multicast.
    /// Neither a group address nor all zeros: a station's own address.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast() && self.0 != [0; 6]
    }

    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 == 1
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for MacAddress {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(format!(
                "'{s}' is not a MAC address (want six hex bytes like 02:00:00:00:00:01)"
            ));
        }
        let mut a = [0u8; 6];
        for (slot, p) in a.iter_mut().zip(parts) {
            *slot = u8::from_str_radix(p, 16)
                .map_err(|_| format!("'{s}' is not a MAC address (bad byte '{p}')"))?;
        }
        Ok(MacAddress(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_round_trip() {
        let m: MacAddress = "02:0a:FF:00:10:01".parse().unwrap();
        assert_eq!(m.to_string(), "02:0a:ff:00:10:01");
        assert!("02:0a:ff:00:10".parse::<MacAddress>().is_err());
        assert!("zz:0a:ff:00:10:01".parse::<MacAddress>().is_err());
        assert!(MacAddress::BROADCAST.is_multicast());
        assert!(!m.is_multicast());
    }
}
