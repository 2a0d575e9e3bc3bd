//! How fast the control plane takes neighbour learns under a flood: a router with one
//! interface on a connected /16 learns `N` distinct neighbours (as a host sending spoofed ARP
//! from the whole /16 makes it do), in batches of `BATCH` with one commit per batch, as the
//! daemon's learner thread does, and prints the rate.
//!
//! ```text
//! cargo run --release --example neighbor_flood -- 60000 256
//! ```

use sluice::router::{NeighborLearn, Router};
use sluice::wire::MacAddress;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(60_000);
    let batch: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(256);
    let mac = MacAddress([2, 0, 0, 0, 0, 1]);
    let mut r = Router::new(&[("d0".to_string(), mac, 1500)]);
    r.add_address(0, "10.0.0.1".parse().unwrap(), 16).unwrap();
    r.commit();
    let start = Instant::now();
    let mut learnt = 0u32;
    let mut i = 0u32;
    while i < n {
        for k in i..(i + batch).min(n) {
            let host = 0x0a00_0002 + k;
            let b = k.to_be_bytes();
            let learn = NeighborLearn::request(
                0,
                IpAddr::V4(Ipv4Addr::from(host)),
                MacAddress([2, 1, b[0], b[1], b[2], b[3]]),
            );
            if r.learn(learn, Instant::now()).is_ok() {
                learnt += 1;
            }
        }
        r.commit();
        i += batch;
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "{learnt} of {n} neighbours learnt in batches of {batch}: {:.0} learns/s ({s:.2} s)",
        n as f64 / s
    );
    let m = r.summary(0).unwrap().memory;
    println!("{:?}", m.v4);
}
