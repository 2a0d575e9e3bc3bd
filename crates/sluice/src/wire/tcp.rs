//! TCP's header, as far as the session tables read it: the ports (as UDP's) and the flags
//! byte (RFC 9293 3.1).

/// Where the flags byte stands in the header.
pub const FLAGS_OFFSET: usize = 13;
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;
