//! The XDP fast path: flows the graph has decided are forwarded by sluice's XDP program in
//! the kernel, without the trip through the AF_XDP socket (issue 39).

pub mod maps;
pub mod program;
#[cfg(test)]
mod tests;
