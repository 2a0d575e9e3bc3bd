//! `sluice lab`: the namespace lab (placeholder until it lands).

/// Entry point of `sluice lab ARGS`; returns the process exit code.
pub fn main(_args: &[String]) -> i32 {
    eprintln!("sluice lab: not built yet");
    2
}
