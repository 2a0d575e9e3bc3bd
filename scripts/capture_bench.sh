#!/usr/bin/env bash
# Single-queue against multi-queue `sluice capture`, to memory, to tmpfs and to the disk.
#
# A veth with QUEUES queues each way between two namespaces (scb-cap, scb-send); `sluice gen`
# sends 64-byte frames of 1024 flows from the send end as fast as it can for SECS seconds.
# Single queue: the sender's XPS map puts every frame on queue 0, captured with -q 0 (one
# thread). Multi-queue: XPS spreads the flows by hash over all queues, captured with -q all
# (one thread per queue). single-xdp: the generator's XDP live-frames engine, several times
# faster, offers more than one capture thread takes; a veth records no queue for frames that
# come through its XDP path, so they all land on queue 0 (captured with -q 0). Each row is
# one run; the capture's own counts (first to last packet) give the rates, and its CPU time
# (user + system, /usr/bin/time) per packet captured the cost.
#
# usage: scripts/capture_bench.sh [SLUICE] [DISK_DIR]   (root; tmpfs is /dev/shm)
set -euo pipefail
BIN=${1:-target/release/sluice}
DISK=${2:-/var/tmp}
QUEUES=${QUEUES:-2}
SECS=${SECS:-5}
RUNS=${RUNS:-3}
CAP=scb-cap
SEND=scb-send

cleanup() {
  ip netns del "$CAP" 2>/dev/null || true
  ip netns del "$SEND" 2>/dev/null || true
  rm -f /dev/shm/scb.* "$DISK"/scb.*
}
trap cleanup EXIT
cleanup
ip netns add "$CAP"
ip netns add "$SEND"
ip link add name scb0 numtxqueues "$QUEUES" numrxqueues "$QUEUES" type veth \
  peer name scb1 numtxqueues "$QUEUES" numrxqueues "$QUEUES"
ip link set scb0 netns "$CAP"
ip link set scb1 netns "$SEND"
for ns_dev in "$CAP scb0" "$SEND scb1"; do
  set -- $ns_dev
  ip netns exec "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
  ip -n "$1" link set "$2" up
done
# GRO gives the capturing veth its NAPI queues, which XDP live frames need to arrive.
ip netns exec "$CAP" ethtool -K scb0 gro on >/dev/null
all=$(printf '%x' $(( (1 << $(nproc)) - 1 )))

# steer QUEUE...: every CPU sends on these transmit queues only.
steer() {
  for q in $(seq 0 $((QUEUES - 1))); do
    mask=0
    for want in "$@"; do [ "$want" = "$q" ] && mask=$all; done
    ip netns exec "$SEND" sh -c "echo $mask > /sys/class/net/scb1/queues/tx-$q/xps_cpus"
  done
}

# run MODE OUTPUT: one capture while the generator sends; prints a table row.
run() {
  local mode=$1 output=$2 qarg out cpu args engine=(--flows 1024)
  case $mode in
    single) steer 0; qarg=0 ;;
    multi) steer $(seq 0 $((QUEUES - 1))); qarg=all ;;
    single-xdp) qarg=0; engine=(--engine xdp --flows var2) ;;
  esac
  case $output in
    memory) args=(--memory) ;;
    tmpfs) args=(-w /dev/shm/scb) ;;
    disk) args=(-w "$DISK/scb") ;;
  esac
  out=$(mktemp)
  cpu=$(mktemp)
  /usr/bin/time -f '%U %S' -o "$cpu" ip netns exec "$CAP" "$BIN" capture -i scb0 -q "$qarg" \
    "${args[@]}" --seconds $((SECS + 2)) --json >"$out" 2>/dev/null &
  local pid=$!
  sleep 0.5
  local gen
  gen=$(ip netns exec "$SEND" "$BIN" gen --tx scb1 "${engine[@]}" \
    --duration "$SECS" --json --quiet)
  wait "$pid"
  jq -r --argjson gen "$gen" --arg mode "$mode" --arg output "$output" \
    --argjson cpu "$(awk '{print $1 + $2}' "$cpu")" '
    [$mode, $output, ($gen.tx_pps / 1e6 | . * 1000 | round / 1000),
     (.total.pps / 1e6 | . * 1000 | round / 1000),
     ([.queues[] | (.pps / 1e6 | . * 1000 | round / 1000 | tostring)] | join(" / ")),
     ([.queues[] | .drops | tostring] | join(" / ")),
     .total.drops,
     (if .total.packets > 0 then ($cpu * 1e9 / .total.packets | round) else "-" end)] | @tsv' "$out"
  rm -f "$out" "$cpu" /dev/shm/scb.* "$DISK"/scb.*
}

printf 'mode\toutput\tsent Mpps\tcaptured Mpps\tper queue Mpps\tdrops per queue\tdrops\tCPU ns/pkt\n'
for output in memory tmpfs disk; do
  for mode in ${MODES:-single multi single-xdp}; do
    for _ in $(seq "$RUNS"); do run "$mode" "$output"; done
  done
done
