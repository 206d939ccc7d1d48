#!/usr/bin/env bash
# Real Nova 34.0.0 (fake virt driver, 2 nova-compute hosts) + Placement 16.0.0 against a real
# Keystone 30 (scripts/keystone.sh) and a real Neutron 29 (scripts/real-neutron.sh), all on
# 127.0.0.1; MariaDB + RabbitMQ for Nova and Placement. The project's copy of
# ../shared/reference/real-nova/start.sh; called by scripts/real-nova.sh start WORKDIR.
#
#   start.sh WORKDIR          (or NOVA_DIR=WORKDIR start.sh)  start everything; idempotent:
#                             only what is not running is started. Prints URLs + credentials
#                             and writes WORKDIR/env.sh (source it for OS_* and the URLs).
# Env (defaults); a value saved by an earlier start in the same WORKDIR is the default:
#   KEYSTONE_SH (scripts/keystone.sh)  REAL_NEUTRON_SH (scripts/real-neutron.sh)
#   NOVA_VENV (${XDG_CACHE_HOME:-$HOME/.cache}/netcache/nova-venv)  made from PyPI on first use
#   KS_VENV, NETCACHE_VENV    passed to the project scripts (their own defaults otherwise)
#   NOVA_KS_PORT 27500  NOVA_NEUTRON_PORT 27696  NOVA_PROXY_PORT 27697 (proxy -> Neutron for
#   nova-api/-conductor/-scheduler)  NOVA_PROXY_COMPUTE_PORT 27698 (proxy -> Neutron for both
#   nova-computes)  NOVA_API_PORT 27774  NOVA_PLACEMENT_PORT 27778  NOVA_GLANCE_PORT 27292
#   (the reference rig uses 255xx/25292: both can run side by side with another NOVA_PREFIX)
#   NOVA_PREFIX (ncnova)      MariaDB databases nova_api_P, nova_cell0_P, nova_P, placement_P,
#                             MariaDB user P@127.0.0.1 (password Ppw), RabbitMQ vhost + user P
#   NOVA_DEBUG (True)         nova.conf's [DEFAULT] debug (False for CPU figures: scripts/side-by-side.py);
#                             applied to the Nova services that start in this run
#   NOVA_RO_USER (netcache_ro) NOVA_RO_PASSWORD (netcache-ro-pw)  a read-only MariaDB user
#                             (SELECT only, on nova_api_P, nova_cell0_P, nova_P) for netcache
#   NOVA_MYSQL ("mysql -uroot")  admin client (root over the unix socket)
#   Computes only (they make the port calls; applied when the computes start):
#   NOVA_NEUTRON_TIMEOUT (30) [neutron] timeout, NOVA_NEUTRON_HTTP_RETRIES (3) [neutron]
#   http_retries, NOVA_HEAL_INTERVAL (60) heal_instance_info_cache_interval (-1: off)
#   RESTART_COMPUTES=1        restart both computes (refused while servers exist on them,
#                             unless FORCE=1: the fake driver forgets its servers)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=${1:-${NOVA_DIR:-}}
die() { echo "real-nova: $*" >&2; exit 1; }
log() { echo "[$(date +%T)] $*" >&2; }
[ -n "$W" ] || die "usage: start.sh WORKDIR  (or NOVA_DIR=WORKDIR start.sh)"
mkdir -p "$W"; W=$(cd "$W" && pwd)
mkdir -p "$W"/{etc,log,run,pylib,lock,state/ctl,state/compute1,state/compute2}
# earlier settings of this WORKDIR are the defaults (env still overrides)
# shellcheck disable=SC1091
[ -f "$W/settings" ] && . "$W/settings"
KEYSTONE_SH=${KEYSTONE_SH:-$HERE/../keystone.sh}
REAL_NEUTRON_SH=${REAL_NEUTRON_SH:-$HERE/../real-neutron.sh}
NOVA_VENV=${NOVA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/netcache/nova-venv}
NOVA_KS_PORT=${NOVA_KS_PORT:-27500} NOVA_NEUTRON_PORT=${NOVA_NEUTRON_PORT:-27696}
NOVA_PROXY_PORT=${NOVA_PROXY_PORT:-27697} NOVA_PROXY_COMPUTE_PORT=${NOVA_PROXY_COMPUTE_PORT:-27698}
NOVA_API_PORT=${NOVA_API_PORT:-27774} NOVA_PLACEMENT_PORT=${NOVA_PLACEMENT_PORT:-27778}
NOVA_GLANCE_PORT=${NOVA_GLANCE_PORT:-27292}
NOVA_PREFIX=${NOVA_PREFIX:-ncnova} NOVA_MYSQL=${NOVA_MYSQL:-mysql -uroot}
NOVA_RO_USER=${NOVA_RO_USER:-netcache_ro} NOVA_RO_PASSWORD=${NOVA_RO_PASSWORD:-netcache-ro-pw}
NOVA_NEUTRON_TIMEOUT=${NOVA_NEUTRON_TIMEOUT:-30} NOVA_NEUTRON_HTTP_RETRIES=${NOVA_NEUTRON_HTTP_RETRIES:-3}
NOVA_HEAL_INTERVAL=${NOVA_HEAL_INTERVAL:-60} NOVA_DEBUG=${NOVA_DEBUG:-True}
[ -f "$KEYSTONE_SH" ] || die "no $KEYSTONE_SH: set KEYSTONE_SH"
[ -f "$REAL_NEUTRON_SH" ] || die "no $REAL_NEUTRON_SH: set REAL_NEUTRON_SH"
KEYSTONE_SH=$(cd "$(dirname "$KEYSTONE_SH")" && pwd)/$(basename "$KEYSTONE_SH")
REAL_NEUTRON_SH=$(cd "$(dirname "$REAL_NEUTRON_SH")" && pwd)/$(basename "$REAL_NEUTRON_SH")
[[ $NOVA_PREFIX =~ ^[a-z][a-z0-9_]{0,20}$ ]] || die "NOVA_PREFIX must match [a-z][a-z0-9_]{0,20}"
[[ $NOVA_RO_USER =~ ^[a-z][a-z0-9_]{0,30}$ ]] || die "NOVA_RO_USER must match [a-z][a-z0-9_]{0,30}"
[[ $NOVA_RO_PASSWORD =~ ^[A-Za-z0-9_.-]{1,64}$ ]] || die "NOVA_RO_PASSWORD must match [A-Za-z0-9_.-]{1,64}"
{ for v in KEYSTONE_SH REAL_NEUTRON_SH NOVA_VENV NOVA_KS_PORT NOVA_NEUTRON_PORT NOVA_PROXY_PORT \
      NOVA_PROXY_COMPUTE_PORT NOVA_API_PORT NOVA_PLACEMENT_PORT NOVA_GLANCE_PORT NOVA_PREFIX \
      NOVA_RO_USER NOVA_RO_PASSWORD NOVA_DEBUG; do
    printf '%s=${%s:-%q}\n' "$v" "$v" "${!v}"; done
  for v in KS_VENV NETCACHE_VENV; do   # the project scripts' venvs, when given: kept for reruns
    [ -z "${!v:-}" ] || printf 'export %s=${%s:-%q}\n' "$v" "$v" "${!v}"; done; } > "$W/settings"
P=$NOVA_PREFIX V=$NOVA_VENV
read -r -a MYSQL <<< "$NOVA_MYSQL"
AUTH=http://127.0.0.1:$NOVA_KS_PORT/v3
DBU="mysql+pymysql://$P:${P}pw@127.0.0.1:3306"
RMQ="rabbit://$P:${P}pw@127.0.0.1:5672/$P"
IMAGE_ID=6b0b8a2e-6c2f-4d3e-9a55-0f00d5c0ffee
T_START=$SECONDS

"${MYSQL[@]}" -N -e 'select 1' >/dev/null 2>&1 || die "'$NOVA_MYSQL' cannot log in to MariaDB (root over the unix socket expected)"
command -v rabbitmqctl >/dev/null && rabbitmqctl -q list_vhosts >/dev/null 2>&1 || die "rabbitmqctl does not work (RabbitMQ on 127.0.0.1:5672 expected)"
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { [ -s "$W/run/$1.pid" ] && kill -0 "$(cat "$W/run/$1.pid")" 2>/dev/null; }
bg() {  # NAME PORT CMD...  setsid (process group = pid in run/NAME.pid), output in log/NAME.out
  local n=$1 port=$2; shift 2
  if alive "$n"; then return 0; fi
  if [ "$port" != - ] && port_in_use "$port"; then die "127.0.0.1:$port (for $n) is in use by another process"; fi
  setsid "$@" </dev/null >>"$W/log/$n.out" 2>&1 &
  echo $! > "$W/run/$n.pid"
  STARTED+=("$n")
}
STARTED=()
wait_http() {  # NAME URL CODES...  (up to 240 s; fails early if NAME's process died)
  local n=$1 url=$2 c=; shift 2
  for _ in $(seq 1 480); do
    c=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url" || true)
    for ok in "$@"; do [ "$c" = "$ok" ] && return 0; done
    alive "$n" || { tail -20 "$W/log/$n.out" >&2; die "$n exited (log: $W/log/$n.out)"; }
    sleep 0.5
  done
  die "timeout waiting for $url (last HTTP $c)"
}
sqlq() { "${MYSQL[@]}" -N -e "$1"; }

# --- Nova venv (once; shared by every WORKDIR) ------------------------------------------------
mkdir -p "$(dirname "$V")"
(
  flock -w 1800 9 || die "timed out waiting for $V.lock"
  if [ ! -f "$V/.complete" ] || ! "$V/bin/python" -c 'import nova, placement, pymysql, gunicorn' 2>/dev/null; then
    log "making $V from PyPI (nova==34.0.0 openstack-placement==16.0.0 PyMySQL gunicorn; ~2 min)"
    t0=$SECONDS
    python3 -m venv --clear "$V"
    "$V/bin/pip" install -q --upgrade pip
    "$V/bin/pip" install -q "nova==34.0.0" "openstack-placement==16.0.0" PyMySQL gunicorn
    "$V/bin/python" -c 'import nova, placement, pymysql, gunicorn'
    touch "$V/.complete"
    log "venv ready in $((SECONDS - t0)) s"
  fi
) 9>"$V.lock"

# --- MariaDB databases, RabbitMQ vhost (a new WORKDIR starts from empty ones) ------------------
if [ ! -f "$W/state/.db-created" ]; then
  busy=$(sqlq "select count(*) from information_schema.processlist where user='$P'")
  [ "$busy" = 0 ] || die "MariaDB user $P has $busy open connections: another rig uses NOVA_PREFIX=$P (stop it or pick another prefix)"
  log "MariaDB databases nova_api_$P nova_cell0_$P nova_$P placement_$P, RabbitMQ vhost $P (fresh)"
  sqlq "DROP DATABASE IF EXISTS nova_api_$P; DROP DATABASE IF EXISTS nova_cell0_$P;
    DROP DATABASE IF EXISTS nova_$P; DROP DATABASE IF EXISTS placement_$P;
    CREATE DATABASE nova_api_$P; CREATE DATABASE nova_cell0_$P; CREATE DATABASE nova_$P; CREATE DATABASE placement_$P;
    CREATE USER IF NOT EXISTS '$P'@'127.0.0.1' IDENTIFIED BY '${P}pw';
    GRANT ALL ON nova_api_$P.* TO '$P'@'127.0.0.1'; GRANT ALL ON nova_cell0_$P.* TO '$P'@'127.0.0.1';
    GRANT ALL ON nova_$P.* TO '$P'@'127.0.0.1'; GRANT ALL ON placement_$P.* TO '$P'@'127.0.0.1';"
  rabbitmqctl -q delete_vhost "$P" >/dev/null 2>&1 || true
  rabbitmqctl -q add_vhost "$P" >/dev/null
  rabbitmqctl -q list_users | grep -q "^$P[[:space:]]" || rabbitmqctl -q add_user "$P" "${P}pw" >/dev/null
  rabbitmqctl -q set_permissions -p "$P" "$P" '.*' '.*' '.*' >/dev/null
  rm -f "$W/state/.cells-done" "$W"/state/compute*/compute_id
  touch "$W/state/.db-created"
fi
# netcache's read-only user: SELECT only, on the API and cell databases of this prefix (every run:
# idempotent; the user may hold grants of other prefixes too)
sqlq "CREATE USER IF NOT EXISTS '$NOVA_RO_USER'@'127.0.0.1' IDENTIFIED BY '$NOVA_RO_PASSWORD';
  ALTER USER '$NOVA_RO_USER'@'127.0.0.1' IDENTIFIED BY '$NOVA_RO_PASSWORD';
  GRANT SELECT ON nova_api_$P.* TO '$NOVA_RO_USER'@'127.0.0.1';
  GRANT SELECT ON nova_cell0_$P.* TO '$NOVA_RO_USER'@'127.0.0.1';
  GRANT SELECT ON nova_$P.* TO '$NOVA_RO_USER'@'127.0.0.1';"

# --- Keystone (catalog: compute = nova-api, network = Neutron, image = fake Glance) ------------
log "keystone on :$NOVA_KS_PORT"
KS_PORT=$NOVA_KS_PORT KS_DIR=$W/keystone COMPUTE_URL=http://127.0.0.1:$NOVA_API_PORT/v2.1 \
  NETWORK_URL=http://127.0.0.1:$NOVA_NEUTRON_PORT IMAGE_URL=http://127.0.0.1:$NOVA_GLANCE_PORT \
  bash "$KEYSTONE_SH" start >>"$W/log/keystone-start.log" 2>&1 \
  || { tail -20 "$W/log/keystone-start.log" >&2; die "keystone did not start (log: $W/log/keystone-start.log)"; }
# --- Neutron (Keystone auth; its Nova notifier posts to nova-api via the catalog) ---------------
if [ -s "$W/neutron/gunicorn.pid" ] && kill -0 "$(cat "$W/neutron/gunicorn.pid")" 2>/dev/null; then :; else
  log "neutron on :$NOVA_NEUTRON_PORT"
  NEUTRON_PORT=$NOVA_NEUTRON_PORT NEUTRON_AUTH_URL=$AUTH NOVA_URL=http://127.0.0.1:$NOVA_API_PORT/v2.1 \
    bash "$REAL_NEUTRON_SH" start "$W/neutron" >/dev/null 2>>"$W/log/neutron-start.log" \
    || { tail -20 "$W/log/neutron-start.log" >&2; die "neutron did not start (log: $W/log/neutron-start.log)"; }
fi
OS_CLI=$(bash "$REAL_NEUTRON_SH" env 2>>"$W/log/neutron-start.log")/openstack
# --- the two counting/fault proxies, the fake Glance -------------------------------------------
bg faultproxy "$NOVA_PROXY_PORT" python3 "$HERE/faultproxy.py" --listen "127.0.0.1:$NOVA_PROXY_PORT" \
   --upstream "http://127.0.0.1:$NOVA_NEUTRON_PORT" --stats "$W/log/proxy-stats.json"
bg faultproxy-compute "$NOVA_PROXY_COMPUTE_PORT" python3 "$HERE/faultproxy.py" \
   --listen "127.0.0.1:$NOVA_PROXY_COMPUTE_PORT" --upstream "http://127.0.0.1:$NOVA_NEUTRON_PORT" \
   --stats "$W/log/proxy-compute-stats.json"
bg fakeglance "$NOVA_GLANCE_PORT" python3 "$HERE/fakeglance.py" "$NOVA_GLANCE_PORT" "$IMAGE_ID"

# --- configs -----------------------------------------------------------------------------------
ksauth() {  # keystoneauth password plugin lines: service user nova (admin + service in project service)
  printf '%s\n' "auth_type = password" "auth_url = $AUTH" "username = nova" "password = nova-secret" \
    "project_name = service" "user_domain_name = Default" "project_domain_name = Default" "region_name = RegionOne"
}
cat > "$W/etc/nova.conf" <<C
# written by scripts/real-nova/start.sh
[DEFAULT]
host = ctl
my_ip = 127.0.0.1
state_path = $W/state/ctl
log_dir = $W/log
debug = $NOVA_DEBUG
transport_url = $RMQ
compute_driver = fake.FakeDriverWithoutFakeNodes
instance_name_template = inst-%08x
enabled_apis = osapi_compute

[api]
auth_strategy = keystone
[wsgi]
api_paste_config = $W/etc/api-paste.ini
[api_database]
connection = $DBU/nova_api_$P
[database]
connection = $DBU/nova_$P

[keystone_authtoken]
www_authenticate_uri = $AUTH
memcached_servers =
service_token_roles_required = True
$(ksauth)

[service_user]
send_service_user_token = True
$(ksauth)

[placement]
endpoint_override = http://127.0.0.1:$NOVA_PLACEMENT_PORT
$(ksauth)

[glance]
endpoint_override = http://127.0.0.1:$NOVA_GLANCE_PORT

[neutron]
# through the counting / fault-injecting proxy (the computes override this: computeN.conf)
endpoint_override = http://127.0.0.1:$NOVA_PROXY_PORT
$(ksauth)

[scheduler]
discover_hosts_in_cells_interval = 10
workers = 1
[conductor]
workers = 1
[oslo_concurrency]
lock_path = $W/lock
[oslo_messaging_notifications]
driver = noop
[vnc]
enabled = False
C
cp "$V/etc/nova/api-paste.ini" "$W/etc/api-paste.ini"
cat > "$W/etc/placement.conf" <<C
[DEFAULT]
debug = False
log_file = $W/log/placement-api.log
[api]
auth_strategy = keystone
[placement_database]
connection = $DBU/placement_$P
[keystone_authtoken]
www_authenticate_uri = $AUTH
memcached_servers =
$(ksauth)
C
# gunicorn entry points live in WORKDIR (this folder may be read-only)
cp "$HERE/nova_api_wsgi.py" "$HERE/placement_api_wsgi.py" "$W/pylib/"

# --- schemas and cells (first run of a WORKDIR) ---------------------------------------------------
export PYTHONWARNINGS=ignore
NM=("$V/bin/nova-manage" --config-file "$W/etc/nova.conf")
dbsetup() {
  "$V/bin/placement-manage" --config-file "$W/etc/placement.conf" db sync || return 1
  "${NM[@]}" api_db sync || return 1
  "${NM[@]}" cell_v2 map_cell0 --database_connection "$DBU/nova_cell0_$P" || return 1
  "${NM[@]}" cell_v2 create_cell --name cell1 --verbose || [ $? = 2 ] || return 1   # 2: exists already
  "${NM[@]}" db sync || return 1
  "${NM[@]}" cell_v2 list_cells
}
if [ ! -f "$W/state/.cells-done" ]; then
  log "schemas and cells (~30-60 s)"
  dbsetup >>"$W/log/db-sync.log" 2>&1 \
    || { tail -20 "$W/log/db-sync.log" >&2; die "schema/cell setup failed (log: $W/log/db-sync.log)"; }
  touch "$W/state/.cells-done"
fi

# --- services -------------------------------------------------------------------------------------
if [ "${RESTART_COMPUTES:-0}" = 1 ]; then
  n=$(sqlq "select count(*) from nova_$P.instances where deleted=0 and host in ('compute1','compute2')")
  [ "$n" = 0 ] || [ "${FORCE:-0}" = 1 ] || die "$n server(s) on the computes: delete them first (a restart orphans them) or FORCE=1"
  cpids=()   # both at once: TERM to each process group, up to 15 s, then KILL
  for h in compute1 compute2; do
    alive "nova-compute-$h" || continue
    pid=$(cat "$W/run/nova-compute-$h.pid"); kill -TERM -- "-$pid" 2>/dev/null || true; cpids+=("$pid")
  done
  for pid in "${cpids[@]}"; do
    for _ in $(seq 1 60); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  rm -f "$W/run/nova-compute-compute1.pid" "$W/run/nova-compute-compute2.pid"
  [ ${#cpids[@]} = 0 ] || log "stopped nova-compute (pids ${cpids[*]})"
fi
GUNI=(--workers 1 --threads 4 --worker-class gthread --timeout 300 --graceful-timeout 10 --no-control-socket
      --pythonpath "$W/pylib")
OS_PLACEMENT_CONFIG_DIR=$W/etc bg placement "$NOVA_PLACEMENT_PORT" "$V/bin/gunicorn" \
  --bind "127.0.0.1:$NOVA_PLACEMENT_PORT" "${GUNI[@]}" --access-logfile "$W/log/placement-access.log" \
  placement_api_wsgi:application
OS_NOVA_CONFIG_DIR=$W/etc OS_NOVA_CONFIG_FILES="api-paste.ini;nova.conf" bg nova-api "$NOVA_API_PORT" \
  "$V/bin/gunicorn" --bind "127.0.0.1:$NOVA_API_PORT" "${GUNI[@]}" \
  --access-logfile "$W/log/nova-api-access.log" nova_api_wsgi:application
bg nova-conductor - "$V/bin/nova-conductor" --config-file "$W/etc/nova.conf"
bg nova-scheduler - "$V/bin/nova-scheduler" --config-file "$W/etc/nova.conf"
T0=$(sqlq "select utc_timestamp()")
computes_started=0
for h in compute1 compute2; do
  alive "nova-compute-$h" && continue
  cat > "$W/etc/$h.conf" <<C
# written by start.sh when nova-compute $h started: its live settings
[DEFAULT]
host = $h
state_path = $W/state/$h
log_file = $W/log/nova-compute-$h.log
heal_instance_info_cache_interval = $NOVA_HEAL_INTERVAL
[neutron]
endpoint_override = http://127.0.0.1:$NOVA_PROXY_COMPUTE_PORT
timeout = $NOVA_NEUTRON_TIMEOUT
http_retries = $NOVA_NEUTRON_HTTP_RETRIES
C
  bg "nova-compute-$h" - "$V/bin/nova-compute" --config-file "$W/etc/nova.conf" --config-file "$W/etc/$h.conf"
  computes_started=1
done
for h in compute1 compute2; do
  live=$(sed -n 's/^\(timeout\|http_retries\|heal_instance_info_cache_interval\) = //p' "$W/etc/$h.conf" | tr '\n' ' ')
  want="$NOVA_HEAL_INTERVAL $NOVA_NEUTRON_TIMEOUT $NOVA_NEUTRON_HTTP_RETRIES "
  [ "$live" = "$want" ] || log "NOTE: $h runs with heal interval/timeout/http_retries = $live(not $want); RESTART_COMPUTES=1 applies them"
done
[ ${#STARTED[@]} = 0 ] || log "started: ${STARTED[*]}"
wait_http placement "http://127.0.0.1:$NOVA_PLACEMENT_PORT/" 200
wait_http nova-api "http://127.0.0.1:$NOVA_API_PORT/" 200 300
if [ "$computes_started" = 1 ]; then
  log "waiting for both nova-compute services to report (up to 240 s)"
  ok=0
  for _ in $(seq 1 240); do
    for h in compute1 compute2; do alive "nova-compute-$h" || { tail -20 "$W/log/nova-compute-$h.log" >&2; die "nova-compute $h exited"; }; done
    n=$(sqlq "select count(*) from nova_$P.services s join nova_$P.compute_nodes c on c.host=s.host and c.deleted=0
              where s.binary='nova-compute' and s.deleted=0 and greatest(s.created_at, ifnull(s.updated_at, s.created_at)) >= '$T0'" 2>/dev/null || echo 0)
    [ "$n" -ge 2 ] && { ok=1; break; }; sleep 1
  done
  [ "$ok" = 1 ] || die "the nova-compute services did not report within 240 s (logs: $W/log/nova-compute-*.log)"
  "${NM[@]}" cell_v2 discover_hosts >>"$W/log/db-sync.log" 2>&1
fi

# --- env.sh, seed (flavor m1.nano, network net1 + subnet sub1 in project admin) --------------------
cat > "$W/env.sh" <<E
# source this: admin credentials and the rig's URLs (written by start.sh)
export OS_AUTH_URL=$AUTH OS_USERNAME=admin OS_PASSWORD=${ADMIN_PASSWORD:-secret} OS_PROJECT_NAME=admin
export OS_USER_DOMAIN_ID=default OS_PROJECT_DOMAIN_ID=default OS_IDENTITY_API_VERSION=3 OS_REGION_NAME=RegionOne
export OS_CLI=$OS_CLI
export NOVA_DIR=$W
export NOVA_API_URL=http://127.0.0.1:$NOVA_API_PORT/v2.1
export NOVA_NEUTRON_URL=http://127.0.0.1:$NOVA_NEUTRON_PORT
export NOVA_PLACEMENT_URL=http://127.0.0.1:$NOVA_PLACEMENT_PORT
export NOVA_GLANCE_URL=http://127.0.0.1:$NOVA_GLANCE_PORT
export NOVA_PROXY_URL=http://127.0.0.1:$NOVA_PROXY_PORT
export NOVA_PROXY_COMPUTE_URL=http://127.0.0.1:$NOVA_PROXY_COMPUTE_PORT
export NOVA_CELL_DB_URL=mysql://$P:${P}pw@127.0.0.1:3306/nova_$P
export NOVA_API_DB_URL=mysql://$P:${P}pw@127.0.0.1:3306/nova_api_$P
# read-only (SELECT) user for netcache: cell1, cell0, API database
export NOVA_RO_CELL_DB_URL=mysql://$NOVA_RO_USER:$NOVA_RO_PASSWORD@127.0.0.1:3306/nova_$P
export NOVA_RO_CELL0_DB_URL=mysql://$NOVA_RO_USER:$NOVA_RO_PASSWORD@127.0.0.1:3306/nova_cell0_$P
export NOVA_RO_API_DB_URL=mysql://$NOVA_RO_USER:$NOVA_RO_PASSWORD@127.0.0.1:3306/nova_api_$P
# the service user (roles admin + service in project service)
export NOVA_SERVICE_USER=nova NOVA_SERVICE_PASSWORD=nova-secret NOVA_SERVICE_PROJECT=service
export NOVA_IMAGE_ID=$IMAGE_ID NOVA_FLAVOR=m1.nano NOVA_NETWORK=net1 NOVA_PREFIX=$P
E
# shellcheck disable=SC1091
. "$W/env.sh"
if [ ! -f "$W/state/.seeded" ]; then
  log "seed: flavor m1.nano, network net1, subnet sub1 (10.10.0.0/22)"
  "$OS_CLI" flavor show m1.nano >/dev/null 2>&1 || "$OS_CLI" flavor create --ram 64 --disk 1 --vcpus 1 m1.nano >/dev/null
  "$OS_CLI" network show net1 >/dev/null 2>&1 || "$OS_CLI" network create net1 >/dev/null
  "$OS_CLI" subnet show sub1 >/dev/null 2>&1 || "$OS_CLI" subnet create --network net1 --subnet-range 10.10.0.0/22 sub1 >/dev/null
  touch "$W/state/.seeded"
fi
cat <<M
real Nova 34 up ($((SECONDS - T_START)) s): WORKDIR $W
  nova-api   $NOVA_API_URL      (catalog: compute)
  keystone   $OS_AUTH_URL           (admin / ${ADMIN_PASSWORD:-secret}, project admin, domain default)
  neutron    $NOVA_NEUTRON_URL          (catalog: network; Nova reaches it via the proxies below)
  proxies    $NOVA_PROXY_URL (api, conductor, scheduler)  $NOVA_PROXY_COMPUTE_URL (computes)
  placement  $NOVA_PLACEMENT_URL      fake glance $NOVA_GLANCE_URL (image $IMAGE_ID)
  service user nova / nova-secret (roles admin + service in project service)
  cell DB    $NOVA_CELL_DB_URL   api DB nova_api_$P
  read-only  $NOVA_RO_CELL_DB_URL
  computes   compute1, compute2 (fake driver); flavor m1.nano, network net1
  . $W/env.sh; \$OS_CLI server create --flavor m1.nano --image $IMAGE_ID --network net1 --wait vm1
M
