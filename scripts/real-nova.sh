#!/usr/bin/env bash
# A real Nova 34.0.0 (fake virt driver, two nova-compute hosts compute1/compute2) + Placement
# 16.0.0 against the project's real Keystone 30 (scripts/keystone.sh) and real Neutron 29
# (scripts/real-neutron.sh), with a counting, fault-injecting proxy in front of Neutron for
# Nova's calls; MariaDB (root over the unix socket) and RabbitMQ (rabbitmqctl) must be running.
# Everything listens on 127.0.0.1 only. Files: scripts/real-nova/ (the project's copy of
# ../shared/reference/real-nova; start.sh there lists every setting).
#
#   scripts/real-nova.sh start WORKDIR   start what is not running (idempotent: ~1 s when all
#                                        is up; ~2.5 min from an empty WORKDIR, more when a
#                                        venv is made); writes WORKDIR/env.sh
#   scripts/real-nova.sh stop WORKDIR    stop all of it (DROP=1: also drop its databases,
#                                        MariaDB users/grants and RabbitMQ vhost)
#   scripts/real-nova.sh env WORKDIR     print WORKDIR/env.sh (eval it, or source the file):
#                                        OS_* (admin), OS_CLI, NOVA_API_URL, NOVA_NEUTRON_URL,
#                                        NOVA_PROXY_COMPUTE_URL, NOVA_RO_*_DB_URL (read-only user)
#
# The computes' Neutron client settings apply when they start; to change them, restart them
# (refused while servers are on them: the fake driver forgets its servers):
#   NOVA_NEUTRON_TIMEOUT=5 NOVA_NEUTRON_HTTP_RETRIES=0 NOVA_HEAL_INTERVAL=20 RESTART_COMPUTES=1 \
#     scripts/real-nova.sh start WORKDIR
# (defaults: timeout 30, http_retries 3, heal interval 60 s; -1 turns heal off).
# Venv: ${XDG_CACHE_HOME:-$HOME/.cache}/netcache/nova-venv (NOVA_VENV), made on first use.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 W=$2
export KEYSTONE_SH=${KEYSTONE_SH:-$HERE/keystone.sh} REAL_NEUTRON_SH=${REAL_NEUTRON_SH:-$HERE/real-neutron.sh}
case $cmd in
  start) exec bash "$HERE/real-nova/start.sh" "$W" ;;
  stop)  exec bash "$HERE/real-nova/stop.sh" "$W" ;;
  env)
    [ -f "$W/env.sh" ] || { echo "real-nova: no $W/env.sh (start the rig first)" >&2; exit 1; }
    cat "$W/env.sh" ;;
  *) usage ;;
esac
