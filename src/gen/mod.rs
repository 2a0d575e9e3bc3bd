//! `sluice gen`: the packet generator (placeholder until it lands).

/// Entry point of `sluice gen ARGS`; returns the process exit code.
pub fn main(_args: &[String]) -> i32 {
    eprintln!("sluice gen: not built yet");
    2
}
