//! The interfaces' config sections: [[interface]] (`interface.rs`, its driver keys in
//! `driver/`) and [[subinterface]] (`subif.rs`).

pub mod driver;
pub mod interface;
pub mod subif;
