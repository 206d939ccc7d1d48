#!/usr/bin/env bash
# Stop what start.sh started in WORKDIR (by the pid files in WORKDIR/run: TERM to each process
# group, KILL after 15 s), then Neutron and Keystone (through the project scripts). The project's
# copy of ../shared/reference/real-nova/stop.sh; called by scripts/real-nova.sh stop WORKDIR.
#   stop.sh WORKDIR            (or NOVA_DIR=WORKDIR stop.sh)
#   DROP=1 stop.sh WORKDIR     also drop the MariaDB databases and user and the RabbitMQ vhost
#                              and user of NOVA_PREFIX (and the read-only user's grants on
#                              them; the user too once it has no grants left), and forget the computes' node ids; the
#                              next start.sh makes them again (Keystone and Neutron keep their
#                              SQLite state in WORKDIR: remove WORKDIR for a wholly new rig)
set -uo pipefail
W=${1:-${NOVA_DIR:-}}
[ -n "$W" ] || { echo "usage: stop.sh WORKDIR  (or NOVA_DIR=WORKDIR stop.sh)" >&2; exit 2; }
[ -d "$W" ] || { echo "real-nova: no directory $W" >&2; exit 1; }
W=$(cd "$W" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC1091
[ -f "$W/settings" ] && . "$W/settings"
KEYSTONE_SH=${KEYSTONE_SH:-$HERE/../keystone.sh}
REAL_NEUTRON_SH=${REAL_NEUTRON_SH:-$HERE/../real-neutron.sh}
P=${NOVA_PREFIX:-ncnova} RO=${NOVA_RO_USER:-netcache_ro}
read -r -a MYSQL <<< "${NOVA_MYSQL:-mysql -uroot}"
pids=()
for n in nova-compute-compute1 nova-compute-compute2 nova-scheduler nova-conductor nova-api placement \
         fakeglance faultproxy faultproxy-compute; do
  f=$W/run/$n.pid; [ -s "$f" ] || continue
  pid=$(cat "$f"); rm -f "$f"
  kill -0 "$pid" 2>/dev/null || continue
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
  pids+=("$pid"); echo "stopping $n ($pid)"
done
for _ in $(seq 1 60); do   # all groups at once: TERM, up to 15 s, then KILL
  left=0; for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && left=1; done
  [ "$left" = 0 ] && break; sleep 0.25
done
for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && kill -KILL -- "-$pid" 2>/dev/null; done
[ -d "$W/neutron" ] && bash "$REAL_NEUTRON_SH" stop "$W/neutron"
[ -d "$W/keystone" ] && KS_DIR=$W/keystone bash "$KEYSTONE_SH" stop
if [ "${DROP:-0}" = 1 ]; then
  "${MYSQL[@]}" -e "DROP DATABASE IF EXISTS nova_api_$P; DROP DATABASE IF EXISTS nova_cell0_$P;
    DROP DATABASE IF EXISTS nova_$P; DROP DATABASE IF EXISTS placement_$P;
    DROP USER IF EXISTS '$P'@'127.0.0.1';"
  for db in nova_api_$P nova_cell0_$P nova_$P; do
    "${MYSQL[@]}" -e "REVOKE SELECT ON $db.* FROM '$RO'@'127.0.0.1'" 2>/dev/null || true
  done
  left=$("${MYSQL[@]}" -N -e "select count(*) from mysql.db where user='$RO' and host='127.0.0.1'" 2>/dev/null || echo 1)
  [ "$left" = 0 ] && "${MYSQL[@]}" -e "DROP USER IF EXISTS '$RO'@'127.0.0.1'"
  rabbitmqctl -q delete_vhost "$P" >/dev/null 2>&1 || true
  rabbitmqctl -q delete_user "$P" >/dev/null 2>&1 || true
  rm -f "$W/state/.db-created" "$W/state/.cells-done" "$W/state/.seeded" "$W"/state/compute*/compute_id
  echo "dropped databases nova_api_$P nova_cell0_$P nova_$P placement_$P, user $P, vhost $P"
fi
exit 0
