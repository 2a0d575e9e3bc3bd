//! The layer-2 commands: `set interface l2 xconnect`.

use super::cli::{Arg, Args, Command, Output};
use super::exec::Control;

pub const COMMANDS: &[Command] = &[Command {
    words: &["set", "interface", "l2", "xconnect"],
    syntax: "<RX> <TX>",
    help: "send everything received on RX out of TX",
    args: &[Arg::Value("RX"), Arg::Value("TX")],
    run: set_xconnect,
}];

fn set_xconnect(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rx = c.interface(a.value("RX"))?.index;
    let tx = c.interface(a.value("TX"))?.index;
    c.dp.set_xconnect(rx, Some(tx));
    Output::done()
}
