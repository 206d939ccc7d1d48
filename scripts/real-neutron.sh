#!/usr/bin/env bash
# A real OpenStack Neutron API server (neutron 29.0.0) on 127.0.0.1, for
# netcache's integration runs: noauth (or Keystone with NEUTRON_AUTH_URL), no agents, no broker
# (oslo.messaging fake:/), ML2 with the "fakebind" mechanism driver, SQLite in
# WORKDIR, served by gunicorn.  Files: scripts/real-neutron/ (README.md there).
#
#   scripts/real-neutron.sh start WORKDIR   start; prints the URL (http://127.0.0.1:PORT)
#   scripts/real-neutron.sh stop WORKDIR    stop the server started in WORKDIR
#   scripts/real-neutron.sh env             print the venv's bin dir (openstack, neutron-db-manage)
#
# The venv (neutron==29.0.0, gunicorn, python-openstackclient from PyPI) is made
# on first use and reused; only what is missing is installed.
#
# Environment:
#   NETCACHE_VENV              venv path                     ($HOME/.cache/netcache/venv)
#   NETCACHE_PYTHON            interpreter for a new venv    (python3, >= 3.10)
#   NEUTRON_PORT               TCP port on 127.0.0.1                              (9696)
#   NEUTRON_EXTENSION_DRIVERS  ML2 extension drivers (port_security,tag_ports_during_bulk_creation);
#                              "port_security" gives a Neutron WITHOUT the
#                              tag-ports-during-bulk-creation extension
#   NEUTRON_MECH_DRIVERS       ML2 mechanism drivers                          (fakebind)
#   NEUTRON_SERVICE_PLUGINS    service plugins                                  (router)
#   NOVA_URL                   e.g. http://127.0.0.1:8774/v2.1: enable Neutron's Nova
#                              notifier (loopback URLs only)                     (off)
#                              Without Keystone it posts there with X-Roles: service
#                              (keystoneauth1 plugin pylib/netcache_nova_noauth.py).
#                              With NEUTRON_AUTH_URL it only switches the notifier on:
#                              the notifier takes compute's URL from Keystone's catalog
#                              (public, RegionOne), which must be where netcache listens
#                              (start warns when it differs from NOVA_URL).
#   NEUTRON_AUTH_URL           e.g. http://127.0.0.1:15000/v3 (loopback): auth_strategy =
#                              keystone instead of noauth. Tokens are validated as service
#                              user "neutron", the notifier authenticates as "nova" (both in
#                              project "service", Default domain, as scripts/keystone.sh
#                              makes them). start logs them in first (nova only with
#                              NOVA_URL) and fails if Keystone refuses, takes 401 as
#                              "up", then makes one request with neutron's token. (off)
#   NEUTRON_SERVICE_PASSWORD   password of Keystone user neutron          (neutron-secret)
#   NOVA_SERVICE_PASSWORD      password of Keystone user nova                (nova-secret)
#   NEUTRON_WORKERS, NEUTRON_THREADS   gunicorn workers / threads per worker   (1, 4)
#   NEUTRON_START_TIMEOUT      seconds to wait for the API                        (120)
#   NEUTRON_STOP_TIMEOUT       seconds to wait after TERM before KILL              (15)
#   NEUTRON_FRESH=1            delete WORKDIR's database first (default: reuse it)
#   NEUTRON_DEBUG=1            debug logging in WORKDIR/log/neutron-server.log
#   NETCACHE_FAKEBIND_STATUS   port status set on bind, or "none"             (ACTIVE)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE/real-neutron
VENV=${NETCACHE_VENV:-$HOME/.cache/netcache/venv}
NEUTRON_SPEC=neutron==29.0.0
REQUIREMENTS=("$NEUTRON_SPEC" gunicorn python-openstackclient)
HOST=127.0.0.1

die() { echo "real-neutron: $*" >&2; exit 1; }
log() { echo "real-neutron: $*" >&2; }

usage() {
    sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# Creates the venv if needed and installs what is missing, under a lock so
# concurrent callers do not install into the same venv at once.
ensure_venv() {
    mkdir -p "$(dirname "$VENV")"
    exec 9>"$VENV.lock"
    flock -w 1200 9 || die "timed out waiting for $VENV.lock"
    if ! "$VENV/bin/python" -c '' 2>/dev/null; then
        local py=${NETCACHE_PYTHON:-python3}
        "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
            || die "$py is older than 3.10 (neutron 29 needs >= 3.10); set NETCACHE_PYTHON"
        log "creating venv $VENV"
        "$py" -m venv --clear "$VENV"
    fi
    local missing
    missing=$("$VENV/bin/python" - <<'PY'
from importlib import metadata
want = {"neutron": "29.0.0", "gunicorn": None, "python-openstackclient": None}
for name, version in want.items():
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        print(name)
        continue
    if version and have != version:
        print(name)
PY
)
    if [ -n "$missing" ]; then
        log "installing into $VENV from PyPI (missing: $(echo $missing)); a first install takes a few minutes"
        # Every requirement is named so the resolver keeps neutron's pins; pip
        # leaves the ones already satisfied alone.
        "$VENV/bin/python" -m pip install --quiet "${REQUIREMENTS[@]}" >&2 \
            || die "pip install ${REQUIREMENTS[*]} failed"
    fi
    exec 9>&-
}

# Substitutes @NAME@ placeholders (values may hold / & |).
render() {
    local src=$1 dst=$2 text
    text=$(<"$src")
    local key
    for key in WORK PORT DB_URL SERVICE_PLUGINS MECH_DRIVERS EXTENSION_DRIVERS NOTIFY_NOVA NOVA_URL DEBUG \
        AUTH_STRATEGY AUTH_URL NEUTRON_SERVICE_PASSWORD NOVA_SERVICE_PASSWORD; do
        text=${text//"@$key@"/"${!key}"}
    done
    printf '%s\n' "$text" > "$dst"
}

# Keystone mode, before the server starts: logs in as the service users the
# configuration names (a wrong password would otherwise show only as 401s
# later, or as a notifier that never reaches netcache) and compares the
# catalog's public compute URL with NOVA_URL.  Sets NEUTRON_TOKEN.
check_keystone() {
    local out
    out=$(AUTH_URL=$AUTH_URL NEUTRON_PW=$NEUTRON_SERVICE_PASSWORD NOVA_PW=$NOVA_SERVICE_PASSWORD \
          CHECK_NOVA=$NOTIFY_NOVA "$VENV/bin/python" -c '
import json, os, sys, urllib.error, urllib.request

url = os.environ["AUTH_URL"] + "/auth/tokens"


def login(user, password):
    body = {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "password": password, "domain": {"name": "Default"}}}},
        "scope": {"project": {"name": "service", "domain": {"name": "Default"}}}}}
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.headers["X-Subject-Token"], json.load(r)["token"]
    except urllib.error.HTTPError as e:
        sys.exit(f"Keystone refused user {user} (project service): HTTP {e.code} {e.read()[:200]!r}")
    except OSError as e:
        sys.exit(f"cannot reach Keystone at {url}: {e}")


token, _ = login("neutron", os.environ["NEUTRON_PW"])
compute = "-"
if os.environ["CHECK_NOVA"] == "True":
    _, body = login("nova", os.environ["NOVA_PW"])
    for svc in body.get("catalog", []):
        if svc["type"] == "compute":
            compute = next((e["url"] for e in svc["endpoints"]
                            if e["interface"] == "public" and e.get("region_id") == "RegionOne"), "-")
print(token)
print(compute)
') || die "Keystone check failed (NEUTRON_AUTH_URL=$AUTH_URL)"
    NEUTRON_TOKEN=$(sed -n 1p <<< "$out")
    local compute
    compute=$(sed -n 2p <<< "$out")
    if [ "$NOTIFY_NOVA" = True ]; then
        if [ "$compute" = - ]; then
            log "WARNING: Keystone's catalog has no public compute endpoint in RegionOne; the Nova notifier will fail"
        elif [ "${compute%/}" != "${NOVA_URL%/}" ]; then
            log "WARNING: the Nova notifier posts to the catalog's compute URL $compute, not NOVA_URL=$NOVA_URL"
        else
            log "Nova notifier: catalog compute URL $compute (as NOVA_URL)"
        fi
    fi
}

# True if PID is a gunicorn serving this script's WSGI module.
is_our_gunicorn() {
    local pid=$1
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'gunicorn.*netcache_neutron_wsgi'
}

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

log_tail() {
    local f
    for f in "$WORK/log/gunicorn.log" "$WORK/log/neutron-server.log" "$WORK/log/schema.log"; do
        [ -s "$f" ] || continue
        echo "---- tail of $f" >&2
        tail -n 30 "$f" >&2
    done
}

# Stops the gunicorn master recorded in WORKDIR: TERM (it stops its workers),
# then KILL its process group after NEUTRON_STOP_TIMEOUT seconds.
stop_server() {
    local pidfile=$WORK/gunicorn.pid pid
    if [ ! -s "$pidfile" ]; then
        log "not running (no $pidfile)"
        return 0
    fi
    pid=$(<"$pidfile")
    if ! is_our_gunicorn "$pid"; then
        log "pid $pid from $pidfile is not running (or not ours); removing the pid file"
        rm -f "$pidfile"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + ${NEUTRON_STOP_TIMEOUT:-15}))
    while [ $SECONDS -lt "$deadline" ]; do
        kill -0 -- "-$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 -- "-$pid" 2>/dev/null; then
        log "process group $pid still alive after TERM; sending KILL"
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
    log "stopped (pid $pid)"
}

start_server() {
    local port=${NEUTRON_PORT:-9696}
    [[ $port =~ ^[0-9]+$ ]] && [ "$port" -gt 0 ] && [ "$port" -lt 65536 ] || die "bad NEUTRON_PORT: $port"
    PORT=$port
    SERVICE_PLUGINS=${NEUTRON_SERVICE_PLUGINS-router}
    MECH_DRIVERS=${NEUTRON_MECH_DRIVERS:-fakebind}
    EXTENSION_DRIVERS=${NEUTRON_EXTENSION_DRIVERS-port_security,tag_ports_during_bulk_creation}
    DEBUG=False
    if [ "${NEUTRON_DEBUG:-0}" = 1 ]; then DEBUG=True; fi
    local loopback='^https?://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?(/.*)?$'
    if [ -n "${NOVA_URL:-}" ]; then
        [[ $NOVA_URL =~ $loopback ]] || die "NOVA_URL must be a loopback URL (got $NOVA_URL)"
        NOTIFY_NOVA=True
    else
        NOTIFY_NOVA=False
        NOVA_URL=http://127.0.0.1:9/v2.1 # unused while the notifier is off
    fi
    AUTH_URL=${NEUTRON_AUTH_URL:-}
    NEUTRON_SERVICE_PASSWORD=${NEUTRON_SERVICE_PASSWORD:-neutron-secret}
    NOVA_SERVICE_PASSWORD=${NOVA_SERVICE_PASSWORD:-nova-secret}
    NEUTRON_TOKEN=
    local auth_fragment
    if [ -n "$AUTH_URL" ]; then
        [[ $AUTH_URL =~ $loopback ]] || die "NEUTRON_AUTH_URL must be a loopback URL (got $AUTH_URL)"
        AUTH_URL=${AUTH_URL%/}
        AUTH_STRATEGY=keystone
        auth_fragment=$SRC/conf/keystone.conf.tmpl
    else
        AUTH_STRATEGY=noauth
        auth_fragment=$SRC/conf/nova-noauth.conf.tmpl
    fi

    local pidfile=$WORK/gunicorn.pid
    if [ -s "$pidfile" ] && is_our_gunicorn "$(<"$pidfile")"; then
        die "already running in $WORK (pid $(<"$pidfile")); stop it first"
    fi
    port_in_use "$PORT" && die "$HOST:$PORT is already in use; set NEUTRON_PORT"

    ensure_venv
    local t0=$SECONDS
    if [ "$AUTH_STRATEGY" = keystone ]; then check_keystone; fi
    mkdir -p "$WORK/etc" "$WORK/log" "$WORK/state/lock" "$WORK/pylib"
    local db=$WORK/state/neutron.sqlite
    DB_URL=sqlite:///$db
    if [ "${NEUTRON_FRESH:-0}" = 1 ]; then rm -f "$db" "$db-journal" "$db-wal" "$db-shm"; fi
    local f
    for f in "$WORK"/log/*.log; do
        if [ -e "$f" ]; then mv -f "$f" "$f.1"; fi
    done
    render "$SRC/conf/neutron.conf.tmpl" "$WORK/etc/neutron.conf"
    # [nova] (and, with Keystone, [keystone_authtoken]) for the auth strategy
    render "$auth_fragment" "$WORK/etc/auth.conf.part"
    cat "$WORK/etc/auth.conf.part" >> "$WORK/etc/neutron.conf"
    rm -f "$WORK/etc/auth.conf.part"
    render "$SRC/conf/ml2_conf.ini.tmpl" "$WORK/etc/ml2_conf.ini"
    render "$SRC/conf/api-paste.ini.tmpl" "$WORK/etc/api-paste.ini"
    rm -rf "$WORK/pylib"
    cp -r "$SRC/pylib" "$WORK/pylib"

    export OS_NEUTRON_CONFIG_DIR=$WORK/etc
    export OS_NEUTRON_CONFIG_FILES="neutron.conf;ml2_conf.ini"
    export PYTHONPATH=$WORK/pylib${PYTHONPATH:+:$PYTHONPATH}
    export PYTHONWARNINGS=ignore
    export NETCACHE_FAKEBIND_STATUS=${NETCACHE_FAKEBIND_STATUS:-ACTIVE}

    if [ ! -s "$db" ]; then
        log "creating the schema in $db"
        { "$VENV/bin/python" "$WORK/pylib/netcache_neutron_schema.py" "$DB_URL" &&
          "$VENV/bin/neutron-db-manage" --config-file "$WORK/etc/neutron.conf" \
              --config-file "$WORK/etc/ml2_conf.ini" stamp heads; } > "$WORK/log/schema.log" 2>&1 \
            || { log_tail; rm -f "$db"; die "schema creation failed"; }
    fi

    local extra=()
    if "$VENV/bin/gunicorn" --help 2>/dev/null | grep -q -- '--no-control-socket'; then
        extra+=(--no-control-socket)
    fi
    # setsid: the server gets its own session and process group (stop kills
    # that group), and outlives the calling shell.
    setsid "$VENV/bin/gunicorn" \
        --bind "$HOST:$PORT" \
        --workers "${NEUTRON_WORKERS:-1}" --threads "${NEUTRON_THREADS:-4}" --worker-class gthread \
        --timeout 300 --graceful-timeout 10 --keep-alive 120 \
        --limit-request-line 0 --limit-request-field_size 0 \
        --pid "$pidfile" "${extra[@]}" \
        --access-logfile "$WORK/log/access.log" --error-logfile "$WORK/log/gunicorn.log" \
        --chdir "$WORK" \
        netcache_neutron_wsgi:application < /dev/null >> "$WORK/log/gunicorn.log" 2>&1 &
    local launcher=$!

    local url=http://$HOST:$PORT code=000
    local deadline=$((SECONDS + ${NEUTRON_START_TIMEOUT:-120}))
    while [ $SECONDS -lt "$deadline" ]; do
        if ! kill -0 "$launcher" 2>/dev/null; then
            log_tail
            die "gunicorn exited during start-up (logs in $WORK/log)"
        fi
        if grep -q ' CRITICAL ' "$WORK/log/neutron-server.log" 2>/dev/null; then
            log_tail
            stop_server || true
            die "Neutron failed to start (CRITICAL in $WORK/log/neutron-server.log)"
        fi
        code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url/v2.0/networks?limit=1" || true)
        # keystone: authtoken refuses a token-less request once the API is up
        if [ "$code" = 200 ] || { [ "$AUTH_STRATEGY" = keystone ] && [ "$code" = 401 ]; }; then
            break
        fi
        sleep 0.25
    done
    if [ "$code" != 200 ] && { [ "$AUTH_STRATEGY" != keystone ] || [ "$code" != 401 ]; }; then
        log_tail
        stop_server || true
        kill -KILL "$launcher" 2>/dev/null || true
        die "Neutron API not ready after ${NEUTRON_START_TIMEOUT:-120}s (last HTTP status $code)"
    fi
    if [ "$AUTH_STRATEGY" = keystone ]; then
        # one request through authtoken + keystonecontext: Neutron validates a token
        code=$(curl -s -o /dev/null -m 60 -w '%{http_code}' -H "X-Auth-Token: $NEUTRON_TOKEN" \
            "$url/v2.0/networks?limit=1" || true)
        if [ "$code" != 200 ]; then
            log_tail
            stop_server || true
            die "Neutron did not accept the neutron service user's token (HTTP $code); see [keystone_authtoken] in $WORK/etc/neutron.conf"
        fi
    fi
    log "ready in $((SECONDS - t0))s: pid $(cat "$pidfile" 2>/dev/null || echo "$launcher"), workdir $WORK, auth $AUTH_STRATEGY${AUTH_URL:+ ($AUTH_URL)}, extension drivers '$EXTENSION_DRIVERS', nova notifier $NOTIFY_NOVA"
    echo "$url"
}

cmd=${1:-}
case $cmd in
    start | stop)
        [ $# -eq 2 ] || usage
        if [ "$cmd" = start ]; then
            mkdir -p "$2"
            WORK=$(cd "$2" && pwd)
            start_server
        else
            [ -d "$2" ] || { log "not running (no directory $2)"; exit 0; }
            WORK=$(cd "$2" && pwd)
            stop_server
        fi
        ;;
    env)
        [ $# -eq 1 ] || usage
        ensure_venv
        echo "$VENV/bin"
        ;;
    *) usage ;;
esac
