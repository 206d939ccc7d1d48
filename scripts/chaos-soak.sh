#!/usr/bin/env bash
# The chaos soak: `netcache chaos` for each seed on SQLite (one process) and on
# PostgreSQL with 2 and 3 processes sharing a scratch database, kill -9 included.
# Prints per run the seed, the variant, the violations, the time and the command
# that replays it (`cargo run -p netcache -- chaos …`, the same choices: the seed
# decides them), and for a violated run its summary, violations and the offending
# servers' history; exits 1 if any run violated an invariant or failed.
#
#   scripts/chaos-soak.sh          # the soak: 5 seeds × 2,000 ops, 5 kills each, on
#                                  # sqlite, pg2 and pg3 (15 runs; roughly 30–60
#                                  # minutes on 2 cores, by 800-op runs' times)
#   scripts/chaos-soak.sh --seeds "$((16#$(git rev-parse HEAD | cut -c1-8)))" \
#       --ops 800 --kills 3 --rate 20 --variants sqlite,pg3      # CI's chaos tier
#
# Options (defaults: the soak):
#   --seeds "S1 S2 …"   seeds (default: 5 drawn at random, printed)
#   --ops N             operations per run (2000)
#   --kills K           kill -9s per run (5)
#   --rate R            operations started per second (30)
#   --concurrency C     operations in flight (8)
#   --variants LIST     comma-separated: sqlite (1 process, SQLite), pgN (N processes
#                       on PostgreSQL) (sqlite,pg2,pg3)
#   --database URL      PostgreSQL admin URL for pgN (default: $NETCACHE_TEST_PG_URL,
#                       else postgres://postgres@127.0.0.1:5432/postgres)
#   --logs DIR          where each run's output is kept (default: a temp directory)
# Env: NETCACHE_BIN, the netcache binary (default: `cargo build -p netcache --locked`
# and its target/debug/netcache).
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=
ops=2000
kills=5
rate=30
concurrency=8
variants=sqlite,pg2,pg3
database=${NETCACHE_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}
logs=
while [ $# -gt 0 ]; do
    case $1 in
        --seeds) seeds=$2 ;;
        --ops) ops=$2 ;;
        --kills) kills=$2 ;;
        --rate) rate=$2 ;;
        --concurrency) concurrency=$2 ;;
        --variants) variants=$2 ;;
        --database) database=$2 ;;
        --logs) logs=$2 ;;
        *) echo "chaos-soak.sh: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
    esac
    shift 2
done
if [ -z "$seeds" ]; then
    for _ in 1 2 3 4 5; do seeds="$seeds $(( (RANDOM << 15 | RANDOM) % 1000000000 ))"; done
fi
logs=${logs:-$(mktemp -d -t netcache-chaos-soak.XXXXXX)}
mkdir -p "$logs"

if [ -z "${NETCACHE_BIN:-}" ]; then
    cargo build -p netcache --locked
    NETCACHE_BIN=${CARGO_TARGET_DIR:-target}/debug/netcache
fi

echo "chaos soak: seeds [${seeds# }], $ops ops, $kills kills, rate $rate, concurrency $concurrency, variants $variants; logs in $logs"
failed=0
results=()
for seed in $seeds; do
    for variant in ${variants//,/ }; do
        args=(chaos --seed "$seed" --ops "$ops" --kills "$kills" --rate "$rate" --concurrency "$concurrency")
        case $variant in
            sqlite) ;;
            pg[0-9]*) args+=(--processes "${variant#pg}" --database "$database") ;;
            *) echo "chaos-soak.sh: unknown variant $variant (sqlite, pgN)" >&2; exit 2 ;;
        esac
        replay="cargo run -p netcache -- ${args[*]}"
        log="$logs/chaos-$seed-$variant.log"
        echo "-- seed $seed, $variant: $NETCACHE_BIN ${args[*]}"
        echo "   replay: $replay"
        start=$SECONDS
        status=0
        NETCACHE_LOG=${NETCACHE_LOG:-warn} "$NETCACHE_BIN" "${args[@]}" >"$log" 2>"$log.stderr" || status=$?
        took=$((SECONDS - start))
        summary=$(grep -m1 '^violations: ' "$log" || echo "violations: none counted (the run did not finish)")
        line="seed $seed  $variant  $summary  ${took}s  exit $status"
        echo "   $line"
        if [ "$status" -ne 0 ] || ! grep -q '^violations: 0 ' "$log"; then
            failed=1
            line="$line  FAILED; replay: $replay"
            echo "   FAILED; its summary and violations:"
            sed -n '/^netcache chaos — seed/,$p' "$log" | head -300 | sed 's/^/   | /'
            echo "   last lines of its log ($log.stderr):"
            tail -20 "$log.stderr" | sed 's/^/   | /'
            echo "   replay: $replay"
        fi
        results+=("$line")
    done
done

echo
echo "chaos soak results:"
printf '  %s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
    echo "chaos soak: a run violated an invariant or failed (logs in $logs)" >&2
    exit 1
fi
echo "chaos soak: every run clean"
