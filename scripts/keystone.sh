#!/usr/bin/env bash
# The project's copy of ../shared/reference/keystone/keystone.sh (CI's Keystone
# tier), with its caches under ~/.cache/netcache.
# Keystone (newest on PyPI for this Python: keystone 30.0.0) on 127.0.0.1:15000,
# SQLite, fernet tokens, served by gunicorn (gthread). Tested here with Neutron 29
# (../real-neutron, NEUTRON_AUTH_URL) and Tempest 47.
#
#   keystone.sh setup   # venv (if missing), config, db_sync, fernet/credential keys,
#                       # bootstrap (admin/ADMIN_PASSWORD, RegionOne), catalog entries
#   keystone.sh start   # start gunicorn in its own process group; waits until ready
#   keystone.sh stop    # TERM to the gunicorn master (KILL its group after 15 s)
#   keystone.sh status
# start also (re)writes the catalog: identity http://127.0.0.1:15000/v3, compute
# http://127.0.0.1:18774/v2.1, network http://127.0.0.1:19696, image
# http://127.0.0.1:18774/image (RegionOne; public/internal/admin), project "service",
# users neutron/neutron-secret and nova/nova-secret with roles admin+service there.
# Env: KS_PORT (15000), COMPUTE_URL, NETWORK_URL, IMAGE_URL (catalog URLs above),
#      KS_DIR ($HOME/.cache/netcache/keystone), KS_VENV ($HOME/.cache/netcache/keystone-venv),
#      ADMIN_PASSWORD (secret), KS_FRESH=1 (setup wipes the database and keys first)
set -euo pipefail
KS_DIR=${KS_DIR:-$HOME/.cache/netcache/keystone}
VENV=${KS_VENV:-$HOME/.cache/netcache/keystone-venv}
ADMIN_PASSWORD=${ADMIN_PASSWORD:-secret}
HOST=127.0.0.1 PORT=${KS_PORT:-15000}
URL=http://$HOST:$PORT
PIDFILE=$KS_DIR/keystone.pid
export OS_KEYSTONE_CONFIG_DIR=$KS_DIR/etc
export OS_KEYSTONE_CONFIG_FILES=keystone.conf
export PYTHONWARNINGS=ignore

write_conf() {
  mkdir -p "$KS_DIR/etc" "$KS_DIR/log" "$KS_DIR/fernet-keys" "$KS_DIR/credential-keys" "$KS_DIR/pylib"
  cat > "$KS_DIR/pylib/keystone_api_wsgi.py" <<'PYWSGI'
"""gunicorn entry for Keystone: hide gunicorn's argv from oslo.config, make
SQLite transactions BEGIN IMMEDIATE with a busy timeout, then load
keystone.wsgi.api:application (config from OS_KEYSTONE_CONFIG_DIR)."""
import sys
sys.argv = [sys.argv[0]]

import sqlalchemy
from sqlalchemy import event


@event.listens_for(sqlalchemy.pool.Pool, 'connect')
def _busy(dbapi_con, rec):
    if type(dbapi_con).__module__.startswith('sqlite3'):
        dbapi_con.execute('PRAGMA busy_timeout = 60000')


@event.listens_for(sqlalchemy.engine.Engine, 'begin')
def _immediate(conn):
    if conn.dialect.name == 'sqlite' and 'in_transaction' not in conn.info:
        conn.exec_driver_sql('BEGIN IMMEDIATE')
        conn.info['in_transaction'] = True


from keystone.wsgi.api import application  # noqa: E402,F401
PYWSGI
  cat > "$KS_DIR/catalog.py" <<'PYCAT'
"""Idempotently add services, endpoints, service users to a bootstrapped Keystone.
Usage: catalog.py AUTH_URL ADMIN_PASSWORD"""
import sys
from keystoneauth1.identity import v3
from keystoneauth1 import session
from keystoneclient.v3 import client

auth_url, admin_pw = sys.argv[1], sys.argv[2]
REGION = 'RegionOne'
import os
SERVICES = [  # (name, type, url)
    ('nova', 'compute', os.environ.get('COMPUTE_URL', 'http://127.0.0.1:18774/v2.1')),
    ('neutron', 'network', os.environ.get('NETWORK_URL', 'http://127.0.0.1:19696')),
    ('glance', 'image', os.environ.get('IMAGE_URL', 'http://127.0.0.1:18774/image')),
]
SERVICE_USERS = {'neutron': 'neutron-secret', 'nova': 'nova-secret'}

sess = session.Session(auth=v3.Password(
    auth_url=auth_url, username='admin', password=admin_pw, project_name='admin',
    user_domain_id='default', project_domain_id='default'))
ks = client.Client(session=sess)

for name, stype, url in SERVICES:
    svc = next((s for s in ks.services.list(type=stype)), None) or \
        ks.services.create(name=name, type=stype)
    have = {e.interface: e for e in ks.endpoints.list(service=svc)}
    for iface in ('public', 'internal', 'admin'):
        if iface in have:
            if have[iface].url != url:
                ks.endpoints.update(have[iface], url=url)
        else:
            ks.endpoints.create(service=svc, url=url, interface=iface, region=REGION)

project = next(iter(ks.projects.list(name='service')), None) or \
    ks.projects.create(name='service', domain='default')
roles = {r.name: r for r in ks.roles.list()}
for rname in ('admin', 'member', 'reader', 'service'):
    if rname not in roles:
        roles[rname] = ks.roles.create(name=rname)
for uname, pw in SERVICE_USERS.items():
    user = next(iter(ks.users.list(name=uname, domain='default')), None) or \
        ks.users.create(name=uname, password=pw, domain='default', default_project=project)
    for rname in ('admin', 'service'):
        ks.roles.grant(roles[rname], user=user, project=project)
print('catalog:', [(s.name, s.type) for s in ks.services.list()])
print('roles:', sorted(roles))
PYCAT
  cat > "$KS_DIR/etc/keystone.conf" <<CONF
[DEFAULT]
log_file = $KS_DIR/log/keystone.log
use_stderr = False
debug = False

[database]
connection = sqlite:///$KS_DIR/keystone.db

[identity]
# bcrypt's least cost: at its default (12) a password check takes 240 ms of CPU
# here (1 ms at 4), a third of Keystone's time under Tempest's dynamic
# credentials. A test rig's passwords guard nothing; never copy this to a cloud.
password_hash_rounds = 4

[token]
provider = fernet
expiration = 14400

[fernet_tokens]
key_repository = $KS_DIR/fernet-keys/

[credential]
key_repository = $KS_DIR/credential-keys/

[fernet_receipts]
key_repository = $KS_DIR/fernet-keys/

[cache]
enabled = False
CONF
}

setup() {
  if [ ! -x "$VENV/bin/keystone-manage" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "keystone==30.0.0" gunicorn
  fi
  [ "${KS_FRESH:-0}" = 1 ] && rm -rf "$KS_DIR/keystone.db" "$KS_DIR/fernet-keys" "$KS_DIR/credential-keys"
  write_conf
  local M="$VENV/bin/keystone-manage --config-file $KS_DIR/etc/keystone.conf"
  $M db_sync
  $M fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
  $M credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
  $M bootstrap --bootstrap-password "$ADMIN_PASSWORD" \
     --bootstrap-username admin --bootstrap-project-name admin \
     --bootstrap-role-name admin --bootstrap-service-name keystone \
     --bootstrap-region-id RegionOne \
     --bootstrap-admin-url "$URL/v3" --bootstrap-internal-url "$URL/v3" \
     --bootstrap-public-url "$URL/v3"
  echo "setup done; 'start' then the catalog entries are added" >&2
}

start() {
  if [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "already running (pid $(cat "$PIDFILE"))" >&2; return 0; fi
  if [ -s "$KS_DIR/keystone.db" ]; then write_conf; else setup; fi
  setsid "$VENV/bin/gunicorn" --bind "$HOST:$PORT" --workers 1 --threads 4 \
    --worker-class gthread --timeout 120 --graceful-timeout 10 --no-control-socket \
    --pythonpath "$KS_DIR/pylib" --pid "$PIDFILE" \
    --access-logfile "$KS_DIR/log/access.log" --error-logfile "$KS_DIR/log/gunicorn.log" \
    keystone_api_wsgi:application </dev/null >>"$KS_DIR/log/gunicorn.log" 2>&1 &
  echo $! > "$PIDFILE"
  for _ in $(seq 1 120); do
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -20 "$KS_DIR/log/gunicorn.log" >&2; exit 1; }
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v3")" = 200 ] && break
    sleep 0.5
  done
  "$VENV/bin/python" "$KS_DIR/catalog.py" "$URL/v3" "$ADMIN_PASSWORD"
  echo "keystone ready: $URL/v3 (pid $(cat "$PIDFILE"))" >&2
}

stop() {
  [ -s "$PIDFILE" ] || { echo "not running" >&2; return 0; }
  local pid; pid=$(cat "$PIDFILE")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL -- "-$pid" 2>/dev/null
    echo "stopped keystone (pid $pid)"
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  setup) setup ;;
  start) start ;;
  stop) stop ;;
  status) [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && echo "running pid $(cat "$PIDFILE")" || echo stopped ;;
  *) echo "usage: $0 setup|start|stop|status" >&2; exit 2 ;;
esac
