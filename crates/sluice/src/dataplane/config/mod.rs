//! The dataplane's config sections: [dataplane] (`workers.rs`), [[rx-placement]]
//! (`placement.rs`) and [watchdog] (`watchdog.rs`).

pub mod placement;
pub mod watchdog;
pub mod workers;
