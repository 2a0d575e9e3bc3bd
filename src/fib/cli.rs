//! sluice fib.
