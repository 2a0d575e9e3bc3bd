//! `sluice run`: placeholder until the daemon lands.

pub fn main(_args: &[String]) -> i32 {
    eprintln!("sluice run: not built yet");
    2
}
