//! Neighbour unreachability detection (RFC 4861 section 7.3, applied to ARP as Linux does):
//! the state of every neighbour entry, when it was entered, and the timers that move it on.
//!
//! Only the control plane's learner thread runs this, so it is plain single-threaded code
//! with the clock passed in. Events come from the workers (a request, reply or advertisement
//! heard, a resolution started, an entry used by traffic) and from `tick`; each returns what
//! the router must change in the published view (`Effect`). Entries are created only where
//! RFC 826 and RFC 4861 7.2.3–7.2.5 say: a request for one of our addresses (the asker is a
//! neighbour: stale), or an answer to a resolution we started (incomplete → reachable). An
//! answer nobody asked for, for an address with no entry, creates nothing (Linux's
//! `arp_accept = 0`). When the table is full, failed, incomplete and then stale entries are
//! evicted (the one untouched longest first) before a new one is refused, so a flood of
//! spoofed requests cannot keep a host that appears later out.

use crate::wire::MacAddress;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// An entry's key: interface index and address.
pub type Key = (u32, IpAddr);

/// RFC 4861's states, plus `Permanent` for entries the operator or Linux gave (never aged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// A worker is resolving it; no MAC yet.
    Incomplete,
    /// Confirmed by an answer within the reachable time.
    Reachable,
    /// Not confirmed lately; used as it is, confirmed again when traffic uses it.
    Stale,
    /// Used while stale: waiting a moment for confirmation before probing.
    Delay,
    /// Unicast probes are going out.
    Probe,
    /// Did not answer; removed from the view, kept a moment to be shown.
    Failed,
    /// Static (CLI, config) or from Linux's table: not aged.
    Permanent,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Incomplete => "incomplete",
            State::Reachable => "reachable",
            State::Stale => "stale",
            State::Delay => "delay",
            State::Probe => "probe",
            State::Failed => "failed",
            State::Permanent => "permanent",
        }
    }

    /// Entries the table may drop to make room for a new one.
    fn evictable(self) -> bool {
        matches!(self, State::Incomplete | State::Stale | State::Failed)
    }
}

/// The timers and the size, `[neighbors]` in the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Times {
    /// How long an answer keeps an entry reachable (Linux's base_reachable_time, 30 s);
    /// each entry draws its own between 0.5 and 1.5 times this (RFC 4861 6.3.2).
    pub reachable: Duration,
    /// How long a stale entry nobody uses is kept (Linux's gc_stale_time, 60 s).
    pub stale: Duration,
    /// How long a used stale entry waits before the first probe (DELAY_FIRST_PROBE_TIME, 5 s).
    pub delay: Duration,
    /// Time between unicast probes (RETRANS_TIMER, 1 s).
    pub retrans: Duration,
    /// Unicast probes before the neighbour is taken as gone (MAX_UNICAST_SOLICIT, 3).
    pub probes: u8,
    /// How long a resolution may stay incomplete, and a failed entry be shown (3 s).
    pub incomplete: Duration,
    /// Entries at most, both families together.
    pub max_entries: usize,
}

impl Default for Times {
    fn default() -> Times {
        Times {
            reachable: Duration::from_secs(30),
            stale: Duration::from_secs(60),
            delay: Duration::from_secs(5),
            retrans: Duration::from_secs(1),
            probes: 3,
            incomplete: Duration::from_secs(3),
            max_entries: 65_536,
        }
    }
}

/// One neighbour.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub mac: Option<MacAddress>,
    pub state: State,
    /// When the state was entered (or the last probe sent, in `Probe`).
    pub since: Instant,
    /// When an answer or the operator last confirmed it.
    pub confirmed: Instant,
    pub probes: u8,
    /// The entry's use flag (`UseFlags`) while it has one.
    pub slot: u32,
    /// Bumped at every state change: a stale eviction candidate is recognised by it.
    stamp: u32,
}

/// What the router must do to the view after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Nothing,
    /// The neighbour is usable with this MAC (new, or changed); `confirmed` when an answer
    /// says it is there (the router then gives a host on a connected network its host route).
    Publish {
        mac: MacAddress,
        confirmed: bool,
    },
    /// No longer usable (failed or removed): out of the view, its host route gone.
    Withdraw,
}

/// Why an event changed nothing; counted by the learner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// An answer for an address we were not resolving (RFC 4861 7.2.5; ARP as Linux).
    Unsolicited,
    /// Full of entries none of which may be evicted.
    Full,
}

/// How an answer is flagged (RFC 4861 4.4; an ARP reply to us is solicited and overriding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    pub solicited: bool,
    pub override_: bool,
}

/// The table: entries, their use-flag slots, and the queue of eviction candidates.
pub struct Nud {
    pub times: Times,
    entries: HashMap<Key, Entry>,
    free_slots: Vec<u32>,
    /// Entries that became evictable, in that order, with their stamp then; one whose
    /// stamp has moved on since is skipped (lazy deletion).
    candidates: VecDeque<(Key, u32)>,
    /// Evicted entries that had a MAC, for the router to take out of the view
    /// (`take_withdrawn`).
    withdrawn: Vec<Key>,
    /// Counters for `show ip neighbors`: entries evicted to make room, entries aged out or
    /// failed, answers nobody asked for, entries refused because nothing could be evicted.
    pub evicted: u64,
    pub expired: u64,
    pub unsolicited: u64,
    pub full: u64,
}

impl Nud {
    pub fn new(times: Times) -> Nud {
        Nud {
            times,
            entries: HashMap::new(),
            free_slots: (0..times.max_entries as u32).rev().collect(),
            candidates: VecDeque::new(),
            withdrawn: Vec::new(),
            evicted: 0,
            expired: 0,
            unsolicited: 0,
            full: 0,
        }
    }

    /// Entries evicted since the last call that the view still has.
    pub fn take_withdrawn(&mut self) -> Vec<Key> {
        std::mem::take(&mut self.withdrawn)
    }

    pub fn get(&self, key: &Key) -> Option<&Entry> {
        self.entries.get(key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.entries.iter()
    }

    /// A resolution started by a worker (its first request went out).
    pub fn solicit(&mut self, key: Key, now: Instant) -> Result<Effect, Refusal> {
        match self.entries.get(&key).map(|e| e.state) {
            None => {
                self.create(key, None, State::Incomplete, now)?;
                Ok(Effect::Nothing)
            }
            Some(State::Failed) => {
                self.enter(key, State::Incomplete, now);
                Ok(Effect::Nothing)
            }
            Some(_) => Ok(Effect::Nothing),
        }
    }

    /// The neighbour asked for one of our addresses, giving its MAC (an ARP request, an NS
    /// with a source link-layer address): it is on the link (RFC 4861 7.2.3: stale).
    /// `create` false for what does not make entries (a request for another host, a
    /// gratuitous ARP): only an entry we have is updated.
    pub fn request(
        &mut self,
        key: Key,
        mac: MacAddress,
        create: bool,
        now: Instant,
    ) -> Result<Effect, Refusal> {
        let Some(e) = self.entries.get(&key).copied() else {
            if !create {
                self.unsolicited += 1;
                return Err(Refusal::Unsolicited);
            }
            self.create(key, Some(mac), State::Stale, now)?;
            return Ok(Effect::Publish {
                mac,
                confirmed: false,
            });
        };
        match e.state {
            State::Permanent => Ok(Effect::Nothing),
            State::Incomplete | State::Failed => {
                self.set_mac(key, mac);
                self.enter(key, State::Stale, now);
                Ok(Effect::Publish {
                    mac,
                    confirmed: false,
                })
            }
            _ if e.mac == Some(mac) => Ok(Effect::Nothing),
            _ => {
                self.set_mac(key, mac);
                self.enter(key, State::Stale, now);
                Ok(Effect::Publish {
                    mac,
                    confirmed: false,
                })
            }
        }
    }

    /// An answer (ARP reply, NA) for `key` carrying `mac` (RFC 4861 7.2.5).
    pub fn answer(
        &mut self,
        key: Key,
        mac: MacAddress,
        flags: Answer,
        now: Instant,
    ) -> Result<Effect, Refusal> {
        let Some(e) = self.entries.get(&key).copied() else {
            self.unsolicited += 1;
            return Err(Refusal::Unsolicited);
        };
        let state = e.state;
        if state == State::Permanent {
            return Ok(Effect::Nothing);
        }
        if matches!(state, State::Incomplete | State::Failed) {
            if state == State::Failed && !flags.solicited {
                self.unsolicited += 1;
                return Err(Refusal::Unsolicited);
            }
            self.set_mac(key, mac);
            let next = if flags.solicited {
                State::Reachable
            } else {
                State::Stale
            };
            self.enter(key, next, now);
            return Ok(Effect::Publish {
                mac,
                confirmed: flags.solicited,
            });
        }
        let changed = e.mac != Some(mac);
        if changed && !flags.override_ {
            // Not allowed to replace the MAC: at most a hint that the entry is doubtful.
            if state == State::Reachable {
                self.enter(key, State::Stale, now);
            }
            return Ok(Effect::Nothing);
        }
        if changed {
            self.set_mac(key, mac);
        }
        if flags.solicited {
            self.enter(key, State::Reachable, now);
            return Ok(Effect::Publish {
                mac,
                confirmed: true,
            });
        }
        if changed {
            self.enter(key, State::Stale, now);
            return Ok(Effect::Publish {
                mac,
                confirmed: false,
            });
        }
        Ok(Effect::Nothing)
    }

    /// An entry the operator or Linux gives: permanent, the MAC as given.
    pub fn set_permanent(
        &mut self,
        key: Key,
        mac: MacAddress,
        now: Instant,
    ) -> Result<(), Refusal> {
        if !self.entries.contains_key(&key) {
            self.create(key, Some(mac), State::Permanent, now)?;
            return Ok(());
        }
        self.set_mac(key, mac);
        self.enter(key, State::Permanent, now);
        if let Some(e) = self.entries.get_mut(&key) {
            e.confirmed = now;
        }
        Ok(())
    }

    /// Forget an entry; its slot is free again.
    pub fn remove(&mut self, key: &Key) -> Option<Entry> {
        let e = self.entries.remove(key)?;
        self.free_slots.push(e.slot);
        Some(e)
    }

    /// Traffic used a stale entry (its use flag was found set): probe it soon.
    pub fn used(&mut self, key: Key, now: Instant) {
        if self.entries.get(&key).map(|e| e.state) == Some(State::Stale) {
            self.enter(key, State::Delay, now);
        }
    }

    /// Move every entry whose timer ran out on. `probe` is called for each unicast probe to
    /// send, `effect` for each change to the view; `is_used` tells whether a stale entry's
    /// use flag is set (and clears it).
    pub fn tick(
        &mut self,
        now: Instant,
        mut is_used: impl FnMut(u32) -> bool,
        mut probe: impl FnMut(Key, MacAddress),
        mut effect: impl FnMut(Key, Effect),
    ) {
        let t = self.times;
        let mut moves: Vec<(Key, State)> = Vec::new();
        let mut gone: Vec<Key> = Vec::new();
        for (&key, e) in &self.entries {
            let age = now.saturating_duration_since(e.since);
            match e.state {
                State::Reachable if age >= reachable_time(t.reachable, &key) => {
                    moves.push((key, State::Stale))
                }
                State::Stale if is_used(e.slot) => moves.push((key, State::Delay)),
                State::Stale if age >= t.stale => gone.push(key),
                State::Delay if age >= t.delay => moves.push((key, State::Probe)),
                State::Probe if age >= t.retrans => {
                    if e.probes >= t.probes {
                        moves.push((key, State::Failed));
                    } else {
                        moves.push((key, State::Probe));
                    }
                }
                State::Incomplete if age >= t.incomplete => moves.push((key, State::Failed)),
                State::Failed if age >= t.incomplete => gone.push(key),
                _ => {}
            }
        }
        for (key, next) in moves {
            let Some(e) = self.entries.get(&key).copied() else {
                continue;
            };
            match next {
                State::Stale => {
                    // From now on, a use of the entry is news.
                    is_used(e.slot);
                    self.enter(key, State::Stale, now);
                }
                State::Probe => {
                    if let Some(mac) = e.mac {
                        probe(key, mac);
                    }
                    self.enter(key, State::Probe, now);
                    if let Some(x) = self.entries.get_mut(&key) {
                        x.probes = e.probes + 1;
                    }
                }
                State::Failed => {
                    if e.mac.is_some() {
                        effect(key, Effect::Withdraw);
                    }
                    self.enter(key, State::Failed, now);
                    if let Some(x) = self.entries.get_mut(&key) {
                        x.mac = None;
                    }
                    self.expired += 1;
                }
                other => self.enter(key, other, now),
            }
        }
        for key in gone {
            if let Some(e) = self.remove(&key) {
                if e.mac.is_some() {
                    effect(key, Effect::Withdraw);
                }
                self.expired += u64::from(e.state == State::Stale);
            }
        }
        if self.candidates.len() > 4 * self.entries.len() + 1024 {
            self.rebuild_candidates();
        }
    }

    /// Make an entry, evicting one first if the table is full. Returns the evicted key.
    fn create(
        &mut self,
        key: Key,
        mac: Option<MacAddress>,
        state: State,
        now: Instant,
    ) -> Result<(), Refusal> {
        if self.entries.len() >= self.times.max_entries {
            let Some(victim) = self.victim() else {
                self.full += 1;
                return Err(Refusal::Full);
            };
            if self.remove(&victim).is_some_and(|e| e.mac.is_some()) {
                self.withdrawn.push(victim);
            }
            self.evicted += 1;
        }
        let Some(slot) = self.free_slots.pop() else {
            self.full += 1;
            return Err(Refusal::Full);
        };
        self.entries.insert(
            key,
            Entry {
                mac,
                state,
                since: now,
                confirmed: now,
                probes: 0,
                slot,
                stamp: 0,
            },
        );
        if state.evictable() {
            self.candidates.push_back((key, 0));
        }
        Ok(())
    }

    /// The entry to evict: a failed one, else the evictable one that became so first.
    fn victim(&mut self) -> Option<Key> {
        while let Some((key, stamp)) = self.candidates.pop_front() {
            if let Some(e) = self.entries.get(&key) {
                if e.stamp == stamp && e.state.evictable() {
                    return Some(key);
                }
            }
        }
        None
    }

    fn rebuild_candidates(&mut self) {
        let mut v: Vec<(Instant, Key, u32)> = self
            .entries
            .iter()
            .filter(|(_, e)| e.state.evictable())
            .map(|(k, e)| (e.since, *k, e.stamp))
            .collect();
        v.sort_by_key(|x| x.0);
        self.candidates = v.into_iter().map(|(_, k, s)| (k, s)).collect();
    }

    fn set_mac(&mut self, key: Key, mac: MacAddress) {
        if let Some(e) = self.entries.get_mut(&key) {
            e.mac = Some(mac);
        }
    }

    fn enter(&mut self, key: Key, state: State, now: Instant) {
        let Some(e) = self.entries.get_mut(&key) else {
            return;
        };
        e.state = state;
        e.since = now;
        e.stamp = e.stamp.wrapping_add(1);
        if state != State::Probe {
            e.probes = 0;
        }
        if state == State::Reachable {
            e.confirmed = now;
        }
        if state.evictable() {
            self.candidates.push_back((key, e.stamp));
        }
    }
}

/// The reachable time of one entry: the base scaled by a factor in [0.5, 1.5) drawn from
/// its key, so that entries learnt together do not all go stale (and get probed) together.
fn reachable_time(base: Duration, key: &Key) -> Duration {
    use std::hash::{Hash, Hasher};
    let mut h = crate::sys::fasthash::FastHasher::default();
    key.hash(&mut h);
    let permille = 500 + h.finish() % 1000;
    base * permille as u32 / 1000
}

#[cfg(test)]
#[path = "nud_tests.rs"]
mod tests;
