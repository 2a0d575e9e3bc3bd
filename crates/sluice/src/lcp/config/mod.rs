//! The lcp config sections: [[lcp]] pairs (`pair.rs`) and the [punt] policy (`punt.rs`).

pub mod pair;
pub mod punt;
