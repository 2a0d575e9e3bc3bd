//! `sluice ctl`: placeholder until the control socket lands.

pub fn main(_args: &[String]) -> i32 {
    eprintln!("sluice ctl: not built yet");
    2
}
