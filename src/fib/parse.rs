//! Route files.
