//! memif control messages from a peer are untrusted bytes: decoding gives a message or a
//! reasoned error, never a panic, and a message that decodes re-encodes to the same bytes'
//! meaning (text fields aside: they are cut at the first zero and decoded lossily).
#![no_main]
use libfuzzer_sys::fuzz_target;
use sluice::drivers::memif::proto::Msg;

fuzz_target!(|data: &[u8]| {
    match Msg::decode(data) {
        Ok(m) => {
            let again = Msg::decode(&m.encode());
            if !matches!(m, Msg::Disconnect { .. } | Msg::Connect { .. } | Msg::Connected { .. }) {
                assert_eq!(again.as_ref().ok(), Some(&m));
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
