//! The punt policy over arbitrary packets: never panics; with no `allow` list everything goes
//! up; a port rule never lets up what its protocol rule would not.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::lcp::policy::{PuntPolicy, PuntRule};
use sluice::nodes::host_punt::Reason;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, l3)) = data.split_first() else {
        return;
    };
    let reason = [
        Reason::Local4,
        Reason::Local6,
        Reason::ArpCopy,
        Reason::NdCopy,
    ][pick as usize % 4];
    assert!(PuntPolicy::default().allows(reason, Some(l3)));
    let with = |words: &[&str]| PuntPolicy {
        allow: Some(
            words
                .iter()
                .flat_map(|w| PuntRule::parse(w).unwrap())
                .collect(),
        ),
        ..PuntPolicy::default()
    };
    if with(&["bgp"]).allows(reason, Some(l3)) {
        assert!(with(&["tcp"]).allows(reason, Some(l3)));
    }
    let _ = with(&["fragments", "ospf", "arp", "nd"]).allows(reason, Some(l3));
});
