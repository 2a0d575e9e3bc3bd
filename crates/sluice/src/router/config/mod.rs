//! The router's config sections: [[route]] and [fib] (`route.rs`), [[ip-table]]
//! (`table.rs`) and [neighbors] (`neighbors.rs`).

pub mod neighbors;
pub mod route;
pub mod table;
