//! [[rx-placement]] and [[handoff]] differences as CLI lines: which worker handles what an
//! interface receives.
//!
//! A placement that goes sends its queue back to the worker it starts on by default (queue
//! mod workers), as `save` leaves such a queue out; a handoff that goes is `off`.

use super::ops::{both, word, words, Edit, Ops};
use crate::config::emit::Entry;

/// [[rx-placement]]: `set interface rx-placement IF queue Q worker W`.
pub fn rx_placement(o: &mut Ops, ch: Edit, workers: usize) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let e = new.or(old).ok_or("no entry")?;
    let (itf, queue) = (word(e, "interface")?, word(e, "queue")?);
    let q: usize = queue
        .parse()
        .map_err(|_| format!("{what}: queue '{queue}' is not a number"))?;
    let line =
        |worker: String| format!("set interface rx-placement {itf} queue {q} worker {worker}");
    let home = (q % workers.max(1)).to_string();
    let worker = |e: Option<&Entry>| e.map(|e| word(e, "worker")).unwrap_or(Ok(home.clone()));
    let (was, now) = (worker(old)?, worker(new)?);
    let moved = (line(now), line(was));
    if new.is_some() {
        o.add(what, moved.0, moved.1);
    } else {
        o.remove(what, moved.0, moved.1);
    }
    Ok(())
}

/// [[handoff]]: `set interface handoff IF workers LIST key K`, or `IF off`.
pub fn handoff(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let set = |e: &Entry| -> Result<String, String> {
        Ok(format!(
            "set interface handoff {} workers {} key {}",
            word(e, "interface")?,
            words(e, "workers").join(","),
            word(e, "key")?
        ))
    };
    let off = |e: &Entry| {
        Ok(format!(
            "set interface handoff {} off",
            word(e, "interface")?
        ))
    };
    both(o, ch, set, off)
}
