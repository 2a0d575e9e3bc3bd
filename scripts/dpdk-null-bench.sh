#!/bin/bash
# sluice's dpdk driver against testpmd's io forwarding on the same DPDK virtual ports and the
# same core, alternated round by round; medians at the end. Each round runs:
#   sluice-dpdk  two net_null ports cross-connected both ways (sluice's dpdk driver; the
#                frames take the cross-connect patch, node l2-patch)
#   sluice-graph the same with [dpdk] patch = false: every frame through the graph
#   sluice-null  the same cross-connect over sluice's own null driver (no DPDK): the graph's
#                ceiling on this CPU, whatever the driver
#   testpmd      io forwarding on the two net_null ports (its default burst, 32)
#   testpmd-256  the same with --burst=256, the burst sluice asks its ports for
#   routed       sluice-dpdk routing 256 UDP flows replayed by net_pcap (infinite_rx) out of
#                a net_null port (no-rx), and testpmd io on the same two ports
# Needs DPDK (dpdk-dev) and a release build: cargo build --release.
# Usage: scripts/dpdk-null-bench.sh [ROUNDS] [CPU]
set -euo pipefail
rounds=${1:-5}
cpu=${2:-1}
main=$(( cpu == 0 ? 1 : 0 ))
S=${SLUICE:-$(dirname "$0")/../target/release/sluice}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head() {
  cat <<CFG
[dataplane]
workers = 1
worker-cores = [$cpu]
main-core = $main
buffers = 16384
[control]
socket = "$dir/cli.sock"
CFG
}
port() { printf '[[interface]]\nname = "%s"\ndriver = "%s"\n%s\n' "$@"; }
xconnect='[[xconnect]]
rx = "n0"
tx = "n1"'
{ head; port n0 dpdk 'devargs = "net_null0"'; port n1 dpdk 'devargs = "net_null1"'
  echo "$xconnect"; printf '[[xconnect]]\nrx = "n1"\ntx = "n0"\n'; } > "$dir/sluice-dpdk.toml"
sed 's/driver = "dpdk"/driver = "null"/; /devargs/d' "$dir/sluice-dpdk.toml" > "$dir/sluice-null.toml"
{ cat "$dir/sluice-dpdk.toml"; printf '[dpdk]\npatch = false\n'; } > "$dir/sluice-graph.toml"
# 256 flows to 198.19.K.1, addressed to the net_pcap port's MAC (DPDK gives pcap port 0
# 02:70:63:61:70:00).
python3 - "$dir/flows.pcap" <<'PY'
import struct, sys
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for k in range(256):
        eth = bytes([2, 0x70, 0x63, 0x61, 0x70, 0, 2, 0, 0, 0, 0, 1, 8, 0])
        ip = bytearray(struct.pack('!BBHHHBBH4s4s', 0x45, 0, 46, 0, 0, 64, 17, 0,
                                   bytes([198, 18, 0, 1]), bytes([198, 19, k, 1])))
        ip[10:12] = struct.pack('!H', csum(bytes(ip)))
        frame = eth + bytes(ip) + struct.pack('!HHHH', 1024 + k, 1024, 26, 0) + bytes(18)
        f.write(struct.pack('<IIII', 0, 0, len(frame), len(frame)) + frame)
PY
pcap="net_pcap0,rx_pcap=$dir/flows.pcap,infinite_rx=1"
{ head; port n0 dpdk "devargs = \"$pcap\""'
address = ["198.18.0.254/24"]'; port n1 dpdk 'devargs = "net_null1,no-rx=1"
address = ["198.51.100.1/24"]'; printf '[[route]]\nprefix = "198.19.0.0/16"\nvia = ["198.51.100.2"]\n'
} > "$dir/routed.toml"
ctl() { "$S" ctl -s "$dir/cli.sock" "$@"; }
sent() { ctl show interface --json | python3 -c 'import json,sys; print(sum(i["tx_packets"] for i in json.load(sys.stdin)))'; }
# sluice with config $1, reported as $2 for round $3.
sluice() {
  "$S" run -c "$dir/$1.toml" > "$dir/sluice.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do ctl show version >/dev/null 2>&1 && break; sleep 0.1; done
  # The routed run's next hop, which nothing on net_null could answer for.
  [ "$1" = routed ] && ctl set ip neighbor n1 198.51.100.2 02:00:00:00:00:02 >/dev/null
  sleep 2
  ctl clear runtime >/dev/null
  local a t0 b t1 nodes
  a=$(sent); t0=$(date +%s.%N); sleep 5; b=$(sent); t1=$(date +%s.%N)
  nodes=$(ctl show runtime --json | python3 -c '
import json,sys
v=json.load(sys.stdin)
print(" ".join("%s=%.1f" % (n["name"], n["clocks_per_vector"]) for t in v["threads"] for n in t["nodes"] if n["vectors"]>0))')
  kill -INT $pid; wait $pid || true
  python3 -c "print('$2 $3 %.2f' % (($b-$a)/($t1-$t0)/1e6), '$nodes')"
}
# testpmd's io forwarding on ports $1 and $2, reported as $3 for round $4: the sum of the
# Tx-pps of both ports over its last 4 one-second periods. More testpmd arguments follow.
testpmd() {
  local a=$1 b=$2 label=$3 round=$4
  shift 4
  timeout -s INT 10 dpdk-testpmd -l "$main,$cpu" --no-huge --no-shconf -m 1024 --no-pci --no-telemetry \
      --vdev "$a" --vdev "$b" -- --forward-mode=io --auto-start --stats-period=1 --nb-cores=1 "$@" 2>&1 \
    | grep -E "Tx-pps" | tail -8 | awk -v r="$round" -v l="$label" '{s+=$2} END {printf "%s %d %.2f\n", l, r, s/4/1e6}' \
    || true  # testpmd ends by the timeout's SIGINT: its status is not a failure
}
for r in $(seq "$rounds"); do
  sluice sluice-dpdk sluice-dpdk "$r"
  testpmd net_null0 net_null1 testpmd "$r"
  sluice sluice-graph sluice-graph "$r"
  testpmd net_null0 net_null1 testpmd-256 "$r" --burst=256
  sluice sluice-null sluice-null "$r"
  sluice routed sluice-routed "$r"
  testpmd "$pcap" net_null1,no-rx=1 testpmd-pcap "$r"
done | tee "$dir/rounds"
python3 - "$dir/rounds" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {k: statistics.median(float(r[2]) for r in rows if r[0] == k)
       for k in ("sluice-dpdk", "sluice-graph", "sluice-null", "testpmd", "testpmd-256",
                 "sluice-routed", "testpmd-pcap")}
print("median Mpps on net_null: sluice-dpdk %.2f (the patch), testpmd io %.2f: %.2fx; "
      "testpmd --burst=256 %.2f: %.2fx"
      % (med["sluice-dpdk"], med["testpmd"], med["sluice-dpdk"] / med["testpmd"],
         med["testpmd-256"], med["sluice-dpdk"] / med["testpmd-256"]))
print("median Mpps through the graph: sluice-dpdk patch = false %.2f: %.2fx; sluice's null "
      "driver %.2f: %.2fx"
      % (med["sluice-graph"], med["sluice-graph"] / med["testpmd"], med["sluice-null"],
         med["sluice-null"] / med["testpmd"]))
print("median Mpps from net_pcap: sluice-dpdk routed %.2f, testpmd io %.2f: %.2fx"
      % (med["sluice-routed"], med["testpmd-pcap"], med["sluice-routed"] / med["testpmd-pcap"]))
PY
