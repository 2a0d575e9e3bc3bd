#!/bin/bash
# sluice's dpdk driver against testpmd's io forwarding on the same two net_null ports and the
# same core, alternated round by round; medians at the end. Needs DPDK (dpdk-dev) and a
# release build: cargo build --release. Usage: scripts/dpdk-null-bench.sh [ROUNDS] [CPU]
set -euo pipefail
rounds=${1:-5}
cpu=${2:-1}
main=$(( cpu == 0 ? 1 : 0 ))
S=${SLUICE:-$(dirname "$0")/../target/release/sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/null.toml" <<CFG
[dataplane]
workers = 1
worker-cores = [$cpu]
main-core = $main
buffers = 16384
[control]
socket = "$dir/cli.sock"
[[interface]]
name = "n0"
driver = "dpdk"
devargs = "net_null0"
[[interface]]
name = "n1"
driver = "dpdk"
devargs = "net_null1"
[[xconnect]]
rx = "n0"
tx = "n1"
[[xconnect]]
rx = "n1"
tx = "n0"
CFG
ctl() { "$S" ctl -s "$dir/cli.sock" "$@"; }
sent() { ctl show interface --json | python3 -c 'import json,sys; print(sum(i["tx_packets"] for i in json.load(sys.stdin)))'; }
for r in $(seq "$rounds"); do
  "$S" run -c "$dir/null.toml" > "$dir/sluice.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do ctl show version >/dev/null 2>&1 && break; sleep 0.1; done
  sleep 2
  ctl clear runtime >/dev/null
  a=$(sent); t0=$(date +%s.%N); sleep 5; b=$(sent); t1=$(date +%s.%N)
  nodes=$(ctl show runtime --json | python3 -c '
import json,sys
v=json.load(sys.stdin)
print(" ".join("%s=%.1f" % (n["name"], n["clocks_per_vector"]) for t in v["threads"] for n in t["nodes"] if n["vectors"]>0))')
  kill -INT $pid; wait $pid || true
  python3 -c "print('sluice-dpdk %d %.2f' % ($r, ($b-$a)/($t1-$t0)/1e6), '$nodes')"
  timeout -s INT 10 dpdk-testpmd -l "$main,$cpu" --no-huge --no-shconf -m 1024 --no-pci --no-telemetry \
      --vdev net_null0 --vdev net_null1 -- --forward-mode=io --auto-start --stats-period=1 --nb-cores=1 2>&1 \
    | grep -E "Tx-pps" | tail -8 | awk -v r="$r" '{s+=$2} END {printf "testpmd %d %.2f\n", r, s/4/1e6}' \
    || true  # testpmd ends by the timeout's SIGINT: its status is not a failure
done | tee "$dir/rounds"
python3 - "$dir/rounds" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {k: statistics.median(float(r[2]) for r in rows if r[0] == k) for k in ("sluice-dpdk", "testpmd")}
print("median Mpps: sluice-dpdk %.2f, testpmd io %.2f: %.2fx" % (med["sluice-dpdk"], med["testpmd"], med["sluice-dpdk"] / med["testpmd"]))
PY
