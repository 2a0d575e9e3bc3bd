//! Layer 2's config sections: the keys and checks of [[bridge-domain]], [[l2fib]] and
//! [[bvi]] (`bridge.rs`) and of [[xconnect]] (`xconnect.rs`).

pub mod bridge;
pub mod xconnect;
