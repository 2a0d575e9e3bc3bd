#!/usr/bin/env bash
# Runs every test sluice has: formatting, lints, unit tests, pcap graph tests and the
# namespace tests (these need root: they create and remove their own namespaces and veths).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the namespace tests need beyond the Rust toolchain.
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v ethtool >/dev/null || need+=(ethtool)
command -v ps >/dev/null || need+=(procps)
command -v taskset >/dev/null || need+=(util-linux)
command -v ministat >/dev/null || need+=(ministat)
command -v ping >/dev/null || need+=(iputils-ping)
# BIRD 2: the routing daemon behind the taps in the netlink and lab tests (tests/bird_ns.rs).
command -v bird >/dev/null || need+=(bird2)
# tcpdump reads back the files `sluice capture` writes (tests/capture_ns.rs).
command -v tcpdump >/dev/null || need+=(tcpdump)
# nft: the lab's linux-router filters with nftables rules (--acl-rules).
command -v nft >/dev/null || need+=(nftables)
# promtool checks the daemon's Prometheus scrape (tests/metrics_ns.rs).
command -v promtool >/dev/null || need+=(prometheus)
# scapy crafts the router conformance cases (tests/conformance), run by Debian's python3.
/usr/bin/python3 -c 'import scapy' 2>/dev/null || need+=(python3-scapy)
# perf samples the DUT's CPU for the lab's --profile flame graphs.
command -v perf >/dev/null || need+=(linux-perf)
# DPDK's testpmd, a DUT the lab compares against.
command -v dpdk-testpmd >/dev/null || need+=(dpdk-dev)
# ...whose development files, found by pkg-config, build sluice's dpdk driver (build.rs).
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists libdpdk 2>/dev/null || need+=(libdpdk-dev)
# ...and the port drivers the tests give it (memif, pcap, af_packet, af_xdp, null). Debian
# ships DPDK 22.11, whose libraries carry ABI version 23 (hence pmds-23.0 and the 23 suffix).
pmds=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
for pmd in memif pcap af-packet af-xdp null; do
  [ -e "$pmds/librte_net_${pmd//-/_}.so.23" ] || need+=("librte-net-$pmd"23)
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing ${need[*]}: install them (apt-get install ${need[*]})" >&2
  fi
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The product alone (the `sluice` command without the tester's commands) builds too.
cargo clippy --no-default-features -- -D warnings
cargo test --workspace --all-targets -- --test-threads=2
# Doc tests: the compile_fail examples that show the pool's unsafe hand-overs need `unsafe`.
cargo test --workspace --doc
# Production runs the release profile (optimised, panic = "abort"): run the routed, bridged
# and memif namespace tests and the pool's ownership checks against it too.
cargo test --release --test router_ns --test bridge_ns --test memif --test memif_hostile \
  --test buffer_ownership -- --test-threads=2
