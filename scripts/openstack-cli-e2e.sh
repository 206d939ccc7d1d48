#!/usr/bin/env bash
# End to end, from nothing: starts a real Neutron (scripts/real-neutron.sh, with
# its Nova notifier pointed at netcache) and netcache (`serve --neutron-url`) on
# loopback, runs scripts/openstack-cli-check.sh against them, stops both.
# Non-interactive; suitable for CI. Exit status: the check's.
#
#   scripts/openstack-cli-e2e.sh
#
# Env: NEUTRON_PORT (9696) and NETCACHE_PORT (8774), each replaced by a free
# port if taken; NETCACHE_BIN (default: cargo build -p netcache, debug);
# NETCACHE_VENV as for scripts/real-neutron.sh; KEEP_WORKDIR=1 keeps logs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/netcache/target}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/netcache-osc-e2e.XXXXXX")
NETCACHE_PID=

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pick_port() {
    if port_in_use "$1"; then free_port; else echo "$1"; fi
}

NEUTRON_PORT=$(pick_port "${NEUTRON_PORT:-9696}")
NETCACHE_PORT=$(pick_port "${NETCACHE_PORT:-8774}")
NEUTRON_URL=http://127.0.0.1:$NEUTRON_PORT
NETCACHE_URL=http://127.0.0.1:$NETCACHE_PORT

finish() {
    local rc=$?
    set +e
    if [ -n "$NETCACHE_PID" ] && kill -0 "$NETCACHE_PID" 2>/dev/null; then
        kill -TERM "$NETCACHE_PID"
        for _ in $(seq 1 50); do kill -0 "$NETCACHE_PID" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$NETCACHE_PID" 2>/dev/null
        wait "$NETCACHE_PID" 2>/dev/null
    fi
    "$ROOT/scripts/real-neutron.sh" stop "$WORK/neutron" > /dev/null 2>&1
    if [ "$rc" -ne 0 ]; then
        echo "---- tail of $WORK/netcache.log" >&2
        tail -n 30 "$WORK/netcache.log" >&2 2>/dev/null
        echo "---- tail of $WORK/neutron/log/neutron-server.log" >&2
        tail -n 30 "$WORK/neutron/log/neutron-server.log" >&2 2>/dev/null
    fi
    if [ "$rc" -eq 0 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then rm -rf "$WORK"; else echo "logs kept in $WORK" >&2; fi
    exit "$rc"
}
trap finish EXIT

if [ -n "${NETCACHE_BIN:-}" ]; then
    BIN=$NETCACHE_BIN
else
    echo "# building netcache" >&2
    (cd "$ROOT" && cargo build -p netcache --locked --quiet)
    BIN=$CARGO_TARGET_DIR/debug/netcache
fi

echo "# real Neutron on $NEUTRON_URL (Nova notifier -> $NETCACHE_URL/v2.1)"
NEUTRON_PORT=$NEUTRON_PORT NOVA_URL=$NETCACHE_URL/v2.1 "$ROOT/scripts/real-neutron.sh" start "$WORK/neutron"

echo "# netcache on $NETCACHE_URL (database $WORK/netcache.db)"
"$BIN" serve --listen "127.0.0.1:$NETCACHE_PORT" --neutron-url "$NEUTRON_URL" \
    --database "sqlite:$WORK/netcache.db" < /dev/null > "$WORK/netcache.log" 2>&1 &
NETCACHE_PID=$!
for _ in $(seq 1 120); do
    kill -0 "$NETCACHE_PID" 2>/dev/null || { echo "netcache exited during start-up" >&2; exit 1; }
    curl -sf -o /dev/null "$NETCACHE_URL/v2.1/" && break
    sleep 0.5
done
curl -sf -o /dev/null "$NETCACHE_URL/v2.1/" || { echo "netcache not answering after 60s" >&2; exit 1; }

PATH="$("$ROOT/scripts/real-neutron.sh" env):$PATH"
export PATH
"$ROOT/scripts/openstack-cli-check.sh" "$NEUTRON_URL" "$NETCACHE_URL"
