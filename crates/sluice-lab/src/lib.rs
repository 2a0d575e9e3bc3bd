//! sluice-lab: the tester that measures sluice and its peers. The traffic generator (`gen`,
//! with its AF_XDP engine), the namespace lab and its DUTs (`lab`), the RFC 2544 search and the
//! comparisons (`bench`), ministat's arithmetic (`stats`) and the FIB's benchmark tooling
//! (`fib`). It depends on the product crate, `sluice`, never the other way.

pub mod bench;
pub mod fib;
pub mod gen;
pub mod lab;
pub mod stats;
