#!/usr/bin/env bash
# Soak: sluice routing at full rate for a given time while routes churn over netlink, links
# flap and a neighbour, a MAC and a new-flow flood run; then check that the buffer pool is
# back at its start and that every frame the generator lost is a counted drop. As root.
# docs/soak.md says what it does and what it does not cover. Not run by CI.
#
#   scripts/soak.sh [--duration SECS] [--chunk SECS] [--json FILE] [--bin PATH] [--keep]
set -u
DURATION=600 CHUNK=30 JSON_OUT="" KEEP=0 BIN=""
FLOOD_PPS=3000 ROUTED_FLAP=120
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
while [ $# -gt 0 ]; do
    case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --chunk) CHUNK=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --flood-pps) FLOOD_PPS=$2; shift 2 ;;
    --routed-flap) ROUTED_FLAP=$2; shift 2 ;;  # seconds between flaps of the sink port; 0: none
    --keep) KEEP=1; shift ;;
    -h | --help) sed -n 2,7p "$0"; exit 0 ;;
    *) echo "soak: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "soak: run as root (it makes namespaces)" >&2; exit 2; }
if [ -z "$BIN" ]; then
    BIN=$root/target/release/sluice
    [ -x "$BIN" ] || BIN=$root/target/debug/sluice
fi
[ -x "$BIN" ] || { echo "soak: no sluice binary (cargo build first, or --bin)" >&2; exit 2; }
for t in ip nft jq python3 nsenter; do
    command -v $t >/dev/null || { echo "soak: $t is missing" >&2; exit 2; }
done

P=sk$$                                  # every namespace's prefix
T=$P-t D=$P-d F=$P-f                    # tester (generator + sink), DUT, flooder
DIR=$(mktemp -d /tmp/sluice-soak.XXXXXX)
SOCK=$DIR/cli.sock STOP=$DIR/stop
PIDS=() DAEMON=""
log() { echo "soak: $*" >&2; }
ctl() { "$BIN" ctl -s "$SOCK" "$@"; }
in_ns() { local ns=$1; shift; nsenter --net=/run/netns/$ns "$@"; }

cleanup() {
    touch "$STOP"
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    if [ -n "$DAEMON" ] && kill -0 "$DAEMON" 2>/dev/null; then
        kill -TERM "$DAEMON"
        for _ in $(seq 50); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$DAEMON" 2>/dev/null
    fi
    for ns in $T $D $F; do ip netns del $ns 2>/dev/null; done
    [ $KEEP = 1 ] && log "kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the lab -----------------------------------------------------------------------------
# T: t0 -> d0 (generator), t1 <- d1 (sink, 198.51.100.2). D: sluice on d0 d1 d2 n0 b0 b1 b2,
# tap-d1 mirroring d1. F: f2 -> d2 (new-flow flood), fn0 -> n0 (ARP/ND flood on 10.0.0.0/16
# and 2001:db8::/64), fb0 fb1 fb2 -> b0 b1 b2 (bridge domain 10; MAC flood into b0).
set -e
for ns in $T $D $F; do ip netns add $ns; ip -n $ns link set lo up; done
veth() { # veth NS_A A NS_B B
    ip link add "$2" netns "$1" type veth peer name "$4" netns "$3"
    for x in "$1 $2" "$3 $4"; do
        set -- $x
        in_ns $1 sysctl -qw net.ipv6.conf.$2.disable_ipv6=1
        ip -n $1 link set $2 up
        in_ns $1 ethtool -K $2 tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
    done
}
veth $T t0 $D d0
veth $T t1 $D d1
veth $F f2 $D d2
veth $F fn0 $D n0
for i in 0 1 2; do veth $F fb$i $D b$i; done
in_ns $T sysctl -qw net.ipv4.ip_forward=0
in_ns $D sysctl -qw net.ipv4.ip_forward=0
in_ns $D sysctl -qw net.ipv6.conf.default.disable_ipv6=0
in_ns $D sysctl -qw net.ipv6.conf.default.accept_dad=0
ip -n $T addr add 198.51.100.2/24 dev t1
# The DUT's own stack must not answer on sluice's ports (tap-d1 holds d1's address).
for d in d0 d1 d2 n0 b0 b1 b2; do
    in_ns $D nft "table netdev soak_$d { chain in { type filter hook ingress device \"$d\" priority 0; policy drop; }; }"
done

cat >"$DIR/soak.toml" <<EOF
[dataplane]
workers = 1
hugepages = "never"
[control]
socket = "$SOCK"
$(for d in d0 d1 d2 n0 b0 b1 b2; do printf '[[interface]]\nname = "%s"\ndriver = "af_packet"\nhost = "%s"\n' $d $d
  case $d in d0 | d1) echo 'ring-size = 4096' ;; esac
  case $d in
  d0) echo 'address = ["192.0.2.1/24"]' ;;
  d1) echo 'address = ["198.51.100.1/24", "2001:db8:b::1/64"]' ;;
  d2) echo 'address = ["203.0.113.1/24"]' ;;
  n0) echo 'address = ["10.0.0.1/16", "2001:db8::1/64"]' ;;
  esac; done)
[[route]]
prefix = "198.19.0.0/16"
via = ["198.51.100.2"]
[[route]]
prefix = "100.127.0.0/16"
via = ["198.51.100.2"]
[[lcp]]
interface = "d1"
host-if = "tap-d1"
[[acl]]
name = "inside"
rules = ["permit+reflect proto udp", "permit+reflect proto tcp", "permit", "permit ipv6"]
[[acl]]
name = "outside"
rules = ["permit ipv6"]
[[acl-input]]
interface = "d0"
acl = "inside"
[[acl-input]]
interface = "d2"
acl = "inside"
[[acl-input]]
interface = "d1"
acl = "outside"
[sessions]
per-worker = 32768
[[bridge-domain]]
id = 10
mac-age = "60s"
members = [{ interface = "b0", mac-limit = 4096 }, "b1", "b2"]
EOF
# nsenter execs sluice: $! is the daemon itself.
nsenter --net=/run/netns/$D "$BIN" run -c "$DIR/soak.toml" >"$DIR/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 150); do ctl show version >/dev/null 2>&1 && break; sleep 0.1; done
ctl show version >/dev/null || { cat "$DIR/daemon.log" >&2; exit 1; }
set +e
mac() { ip -n $1 -j link show dev $2 | jq -r ".[0].address"; }
D0_MAC=$(mac $D d0) T0_MAC=$(mac $T t0) D2_MAC=$(mac $D d2)
log "lab $P up; sluice $BIN (pid $DAEMON); $DURATION s in chunks of $CHUNK s; logs in $DIR"

gen() { # gen SECS -> the generator's JSON summary on stdout
    in_ns $T "$BIN" gen --tx t0 --rx t1 --flows var2 --routed --src-mac "$T0_MAC" \
        --dst-mac "$D0_MAC" --duration "$1" --json --quiet 2>>"$DIR/gen.err"
}
# What counts a lost frame of the generator's, as one JSON object: sluice's interface
# counters (d0's rx ring misses and error-drops of frames received on d0; d1's transmit
# failures), the kernel's veth drops on the path (t0 and d1 tx_dropped), and show errors.
snapshot() {
    local ifs kt kd
    ifs=$(ctl show interface --json)
    kt=$(ip -n $T -s -j link show)
    kd=$(ip -n $D -s -j link show)
    jq -n --argjson ifs "$ifs" --argjson kt "$kt" --argjson kd "$kd" \
        --argjson errors "$(ctl show errors --json)" '
        def ifc(n): $ifs[] | select(.name == n);
        def k(l; n): l[] | select(.ifname == n) | .stats64;
        { d0_rx_miss: ifc("d0").rx_miss, d0_drops: ifc("d0").drops,
          d1_tx_fail: (ifc("d1") | .tx_errors + .tx_peer_full + .tx_dropped_link_down
                                   + .tx_dropped_no_device),
          t0_tx_dropped: k($kt; "t0").tx.dropped, d1_tx_dropped: k($kd; "d1").tx.dropped,
          t1_rx_dropped: k($kt; "t1").rx.dropped,
          errors: ($errors | map({key: "\(.node): \(.reason)", value: .count}) | from_entries) }'
}
# account BEFORE AFTER GEN -> one chunk's figures (explained: counted losses on the path)
account() {
    jq -n --argjson a "$1" --argjson b "$2" --argjson g "$3" '
        def d(k): $b[k] - $a[k];
        { sent: $g.tx_packets, received: $g.rx_packets, lost: ($g.tx_packets - $g.rx_packets),
          tester_rx_ring: $g.rx_ring_drops, d0_rx_ring: d("d0_rx_miss"), d0_dropped: d("d0_drops"),
          d1_tx_failed: d("d1_tx_fail"), veth_dropped: (d("t0_tx_dropped") + d("d1_tx_dropped")),
          corrupt: $g.rx_corrupt, dup: $g.rx_dup, tx_pps: $g.tx_pps, rx_pps: $g.rx_pps,
          errors: ($b.errors | with_entries(.value -= ($a.errors[.key] // 0))
                   | with_entries(select(.value > 0))) }
        | .explained = (.tester_rx_ring + .d0_rx_ring + .d0_dropped + .d1_tx_failed + .veth_dropped)
        | .unexplained = ([.lost - .explained, 0] | max)'
}

# Resolve the sink before counting, and take the idle pool as the start.
gen 2 >/dev/null
sleep 1
BUF0=$(ctl show buffers --json)
FIB0=$(ctl show ip fib summary --json)

# --- the background load -----------------------------------------------------------------
loop() { ( while [ ! -e "$STOP" ]; do "$@"; done ) & PIDS+=($!); }
# Route churn over netlink: 300 IPv4 and 100 IPv6 routes through tap-d1 added, then deleted.
churn() {
    for op in add del; do
        {
            for i in $(seq 0 299); do echo "route $op 10.$((200 + i / 256)).$((i % 256)).0/24 via 198.51.100.2 dev tap-d1"; done
            for i in $(seq 0 99); do echo "route $op 2001:db8:c:$i::/64 via 2001:db8:b::2 dev tap-d1"; done
        } >"$DIR/churn.$op"
        ip -n $D -batch "$DIR/churn.$op" 2>>"$DIR/churn.err" && echo $op >>"$DIR/churn.log"
        sleep 1
    done
}
loop churn
# Link flaps off the main path: the bridge port b2 and the flood port n0, from the far side.
flap() { sleep 10; ip -n $F link set fb2 down; sleep 1; ip -n $F link set fb2 up
         sleep 5; ip -n $F link set fn0 down; sleep 1; ip -n $F link set fn0 up; echo flap >>"$DIR/flaps.log"; }
loop flap
# The ARP/ND flood (tests/neighbor/flood.py): 40 000 spoofed hosts a round on n0.
loop in_ns $F sh -c "python3 '$root/tests/neighbor/flood.py' fn0 40000 >>'$DIR/neigh.log' 2>&1; sleep 2"
( in_ns $F python3 "$here/soak_flood.py" macs fb0 "$FLOOD_PPS" "$STOP" >"$DIR/macs.sent" 2>>"$DIR/flood.err" ) & PIDS+=($!)
( in_ns $F python3 "$here/soak_flood.py" flows f2 "$FLOOD_PPS" "$STOP" "$D2_MAC" 100.127 >"$DIR/flows.sent" 2>>"$DIR/flood.err" ) & PIDS+=($!)
# The sink port flaps too, now and then: what that costs the generator must be counted.
if [ "$ROUTED_FLAP" -gt 0 ]; then
    loop sh -c "for s in \$(seq $ROUTED_FLAP); do [ -e '$STOP' ] && exit; sleep 1; done; ip -n $T link set t1 down; sleep 0.5; ip -n $T link set t1 up; echo flap >>'$DIR/routed-flaps.log'"
fi

# --- full rate, chunk by chunk -------------------------------------------------------------
chunks=()
run_chunk() { # run_chunk SECS LABEL
    local a b g c
    a=$(snapshot)
    g=$(gen "$1")
    [ -n "$g" ] || { log "the generator failed: $(tail -3 "$DIR/gen.err")"; g='{"tx_packets":0,"rx_packets":0,"rx_ring_drops":0,"rx_corrupt":0,"rx_dup":0,"tx_pps":0,"rx_pps":0}'; }
    sleep 0.5
    b=$(snapshot)
    c=$(account "$a" "$b" "$g" | jq -c --arg l "$2" '. + {chunk: $l}')
    chunks+=("$c")
    jq -r '"soak: \(.chunk): sent \(.sent) received \(.received) lost \(.lost) = counted \(.explained) (tester ring \(.tester_rx_ring), d0 ring \(.d0_rx_ring), d0 dropped \(.d0_dropped), d1 tx \(.d1_tx_failed), veth \(.veth_dropped)), unexplained \(.unexplained); \(.tx_pps | floor) pps sent"' <<<"$c" >&2
}
start=$(date +%s) i=0
while :; do
    left=$((start + DURATION - $(date +%s)))
    [ $left -ge 3 ] || break
    i=$((i + 1))
    run_chunk $((left < CHUNK ? left : CHUNK)) "chunk $i"
done
# Stop the load; then one quiet chunk, where every counted drop on the path is the
# generator's own: lost must equal counted exactly.
touch "$STOP"
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
PIDS=()
sleep 3
run_chunk 10 "quiet"
quiet=${chunks[-1]}
sleep 3
ip -force -n $D -batch "$DIR/churn.del" 2>/dev/null  # the churn may have stopped after an add
sleep 2

# --- the checks --------------------------------------------------------------------------
fail=()
alive=true
kill -0 "$DAEMON" 2>/dev/null && ctl show version >/dev/null 2>&1 || { alive=false; fail+=("the daemon died or does not answer"); }
if $alive; then
    BUF1=$(ctl show buffers --json)
    THREADS=$(ctl show threads --json)
    NEIGH=$(ctl show ip neighbors --json | jq -c '.table + {learns_refused}')
    BD=$(ctl show bridge-domain 10 --json | jq -c .)
    SESS=$(ctl show sessions summary --json | jq -c 'del(.sessions)')
    LCP=$(ctl show lcp --json | jq -c .)
    FIB1=$(ctl show ip fib summary --json)
    ERRS=$(ctl show errors --json | jq -c 'map({key: "\(.node): \(.reason)", value: .count}) | from_entries')
else
    BUF1=$BUF0 THREADS='[]' NEIGH='{}' BD='{}' SESS='{}' LCP='{}' FIB1=$FIB0 ERRS='{}'
fi
# The daemon stops on SIGTERM (a supervisor's signal) within its shutdown deadline.
stop_s=null
if $alive; then
    t0=$(date +%s.%N)
    kill -TERM "$DAEMON"
    for _ in $(seq 300); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$DAEMON" 2>/dev/null; then
        fail+=("the daemon did not stop within 30 s of SIGTERM")
    else
        wait "$DAEMON"; rc=$?
        stop_s=$(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }")
        [ $rc = 0 ] || fail+=("the daemon exited with $rc on SIGTERM")
    fi
fi
held() { jq '.total - .free_in_caches - .free_in_pool' <<<"$1"; }
leak=$(($(held "$BUF1") - $(held "$BUF0")))
[ "$leak" = 0 ] || fail+=("buffer pool: $leak buffers not back (start $(held "$BUF0") held, end $(held "$BUF1"))")
# (The control thread's own cache shows as unaccounted; it must be what it was at the start.)
[ "$(jq .unaccounted <<<"$BUF1")" = "$(jq .unaccounted <<<"$BUF0")" ] || fail+=("buffer pool: $(jq .unaccounted <<<"$BUF1") unaccounted at the end, $(jq .unaccounted <<<"$BUF0") at the start")
stalled=$(jq '[.[] | select(.stalled == true)] | length' <<<"$THREADS")
[ "$stalled" = 0 ] || fail+=("$stalled worker(s) stalled now")
jq -e '.entries <= .max_entries' <<<"$NEIGH" >/dev/null || fail+=("neighbour table over its limit: $NEIGH")
jq -e '[.workers[]? | .entries <= .capacity] | all' <<<"$SESS" >/dev/null || fail+=("a session table over its capacity")
kernel_routes() { jq '[.by_source[]? | select(.[0] == "kernel") | .[1]] | add // 0' <<<"$1"; }
[ "$(kernel_routes "$FIB1")" = "$(kernel_routes "$FIB0")" ] || fail+=("kernel routes in the FIB: $(kernel_routes "$FIB0") at the start, $(kernel_routes "$FIB1") at the end")
all=$(printf '%s\n' "${chunks[@]}" | jq -s -c '.')
unexplained=$(jq '[.[].unexplained] | add' <<<"$all")
[ "$unexplained" = 0 ] || fail+=("$unexplained frames lost and not counted as a drop")
[ "$(jq '.lost == .explained' <<<"$quiet")" = true ] || fail+=("quiet chunk: lost $(jq .lost <<<"$quiet"), counted $(jq .explained <<<"$quiet")")
[ "$(jq '[.[].corrupt + .[].dup] | add' <<<"$all")" = 0 ] || fail+=("corrupt or duplicated frames received")

summary=$(jq -n --argjson chunks "$all" --argjson buf0 "$BUF0" --argjson buf1 "$BUF1" \
    --argjson threads "$THREADS" --argjson neigh "$NEIGH" --argjson bd "$BD" --argjson sess "$SESS" \
    --argjson lcp "$LCP" --argjson errors "$ERRS" --argjson fail "$(printf '%s\n' "${fail[@]}" | jq -R . | jq -s 'map(select(. != ""))')" \
    --argjson stop_s "$stop_s" --arg duration "$DURATION" --arg bin "$BIN" \
    --arg churn "$(grep -c . "$DIR/churn.log" 2>/dev/null)" --arg flaps "$(grep -c . "$DIR/flaps.log" 2>/dev/null)" \
    --arg rflaps "$(grep -c . "$DIR/routed-flaps.log" 2>/dev/null)" \
    --arg neigh_rounds "$(grep -c . "$DIR/neigh.log" 2>/dev/null)" \
    --arg macs "$(cat "$DIR/macs.sent" 2>/dev/null)" --arg flows "$(cat "$DIR/flows.sent" 2>/dev/null)" '
    def sum(k): [$chunks[][k]] | add;
    { duration_s: ($duration | tonumber), binary: $bin, ok: ($fail | length == 0), failures: $fail,
      traffic: { sent: sum("sent"), received: sum("received"), lost: sum("lost"),
                 counted: { tester_rx_ring: sum("tester_rx_ring"), d0_rx_ring: sum("d0_rx_ring"),
                            d0_dropped: sum("d0_dropped"), d1_tx_failed: sum("d1_tx_failed"),
                            veth_dropped: sum("veth_dropped"), total: sum("explained") },
                 unexplained: sum("unexplained"),
                 mean_tx_pps: ([$chunks[].tx_pps] | add / length | floor),
                 mean_rx_pps: ([$chunks[].rx_pps] | add / length | floor),
                 drops_by_reason: ([$chunks[].errors | to_entries[]] | group_by(.key)
                     | map({key: .[0].key, value: (map(.value) | add)}) | from_entries) },
      load: { route_batches_applied: ($churn | tonumber? // 0), routes_per_batch: 400,
              link_flaps: (($flaps | tonumber? // 0) * 2), sink_link_flaps: ($rflaps | tonumber? // 0),
              neighbour_flood_rounds: ($neigh_rounds | tonumber? // 0), neighbour_flood_hosts_per_round: 80000,
              mac_flood_frames: ($macs | tonumber? // 0), new_flow_flood_frames: ($flows | tonumber? // 0) },
      buffers: { start: $buf0, end: $buf1 },
      threads: $threads, neighbours: $neigh, bridge_domain: $bd, sessions: $sess, lcp: $lcp,
      errors_total: $errors, stop_s: $stop_s, chunks: $chunks }')
[ -n "$JSON_OUT" ] && echo "$summary" >"$JSON_OUT"

jq -r '
  "\nsoak: \(.duration_s) s with \(.binary)",
  "  traffic    sent \(.traffic.sent)  received \(.traffic.received)  lost \(.traffic.lost)  (mean \(.traffic.mean_tx_pps) pps sent, \(.traffic.mean_rx_pps) pps received)",
  "  counted    \(.traffic.counted | to_entries | map("\(.key) \(.value)") | join("  "))",
  "  unexplained \(.traffic.unexplained)",
  "  drops and events by reason, over the chunks:",
  (.traffic.drops_by_reason | to_entries | sort_by(-.value) | .[] | "    \(.value | tostring | (" " * (12 - length)) + .)  \(.key)"),
  "  load       \(.load | to_entries | map("\(.key) \(.value)") | join("  "))",
  "  buffers    held at start \(.buffers.start.total - .buffers.start.free_in_caches - .buffers.start.free_in_pool), at end \(.buffers.end.total - .buffers.end.free_in_caches - .buffers.end.free_in_pool) of \(.buffers.end.total); unaccounted \(.buffers.end.unaccounted)",
  "  workers    \(.threads | map(select(.type == "workers") | "\(.name) stalled \(.stalled) stalls \(.stalls)") | join(", "))",
  "  neighbours \(.neighbours | tostring)",
  "  bridge     \(.bridge_domain | tostring)",
  "  sessions   \(.sessions | tostring)",
  "  lcp        \(.lcp.netlink | map({routes_added, routes_deleted, overflows, resyncs}) | tostring)",
  "  stopped    in \(.stop_s) s after SIGTERM",
  (if .ok then "soak: PASS" else "soak: FAIL", (.failures[] | "  - " + .) end)' <<<"$summary"
[ ${#fail[@]} = 0 ]
