//! The left-right publication of the previous FIB.

use super::StrideFibWriter;
use crate::fib::synth::Rng;
use sluice::fib::{Prefix4, Prefix6};

/// After a commit the instance readers see and the writer's standby are identical cell for
/// cell: the replayed log reproduces every write, node growth and node reuse included.
#[test]
fn fib_both_instances_identical_after_commits() {
    use super::stride::StrideTable;
    let mut rng = Rng::new(21);
    let mut w = StrideFibWriter::new();
    let reader = w.reader();
    let mut live4: Vec<Prefix4> = Vec::new();
    let mut live6: Vec<Prefix6> = Vec::new();
    for _ in 0..10 {
        for _ in 0..300 {
            if rng.below(3) == 0 && !live4.is_empty() {
                let p = live4.swap_remove(rng.below(live4.len() as u64) as usize);
                w.del4(p);
            } else {
                let p = rng.prefix4_near(0xc000_0000, 16);
                if w.add4(p, rng.below(50) as u32).unwrap().is_none() {
                    live4.push(p);
                }
            }
            if rng.below(3) == 0 && !live6.is_empty() {
                let p = live6.swap_remove(rng.below(live6.len() as u64) as usize);
                w.del6(p);
            } else {
                let p = rng.prefix6_near(0x2a00u128 << 112, 64);
                if w.add6(p, rng.below(50) as u32).unwrap().is_none() {
                    live6.push(p);
                }
            }
        }
        w.commit();
        let active = reader.load_full();
        let standby = w.pending();
        assert!(active.v4().cells.top() == standby.v4().cells.top());
        assert!(active.v4().cells.nodes() == standby.v4().cells.nodes());
        assert!(active.v6().cells.top() == standby.v6().cells.top());
        assert!(active.v6().cells.nodes() == standby.v6().cells.nodes());
    }
}
