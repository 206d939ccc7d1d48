#!/usr/bin/env bash
# Drives netcache's compute API with the real `openstack` CLI (python-openstackclient)
# and checks that what it shows agrees with Neutron: server create/list/show,
# port list --server, server add/remove port, server add network, floating IPs,
# a ghost port (Neutron's device_id says "attached", netcache does not adopt it),
# server delete. Prints every command and its output; exits non-zero on the
# first mismatch. Non-interactive, loopback only.
#
#   scripts/openstack-cli-check.sh [NEUTRON_URL] [NETCACHE_URL]
#       (defaults http://127.0.0.1:9696 and http://127.0.0.1:8774)
#
# Needs: a running real Neutron (scripts/real-neutron.sh start, with
# NOVA_URL=<NETCACHE_URL>/v2.1 so floating IP changes reach netcache), a running
# netcache serving that Neutron (`netcache serve --neutron-url NEUTRON_URL`),
# `openstack` on PATH (PATH="$(scripts/real-neutron.sh env):$PATH"), curl, python3.
# Creates, as Neutron admin, the network `private` (project demo, 10.0.0.0/24)
# if missing, and `public` (external, 172.24.4.0/24) + router `router1` if
# missing. Env: CHECK_PROJECT (demo), CHECK_FLOATING_IP=0 skips the FIP step,
# CHECK_TIMEOUT seconds for each wait (30), CHECK_NOTIFIER_WAIT seconds for
# Neutron's network-changed to reach netcache before the check sends it itself
# (10; printed as a WARNING: the notifier path is then not what was checked).
set -euo pipefail

NEUTRON_URL=${1:-${NEUTRON_URL:-http://127.0.0.1:9696}}
NETCACHE_URL=${2:-${NETCACHE_URL:-http://127.0.0.1:8774}}
NEUTRON_URL=${NEUTRON_URL%/}
NEUTRON_URL=${NEUTRON_URL%/v2.0}
NETCACHE_URL=${NETCACHE_URL%/}
NETCACHE_URL=${NETCACHE_URL%/v2.1}
PROJECT=${CHECK_PROJECT:-demo}
TIMEOUT=${CHECK_TIMEOUT:-30}
FLAVOR=m1.tiny
IMAGE=cirros-0.6.3-x86_64-disk
RUN=$(date +%s)-$$
NAME=cli-check-$RUN

for url in "$NEUTRON_URL" "$NETCACHE_URL"; do
    [[ $url =~ ^http://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?$ ]] || {
        echo "refusing non-loopback URL $url" >&2
        exit 2
    }
done
command -v openstack > /dev/null || {
    echo "openstack is not on PATH; run: PATH=\"\$(scripts/real-neutron.sh env):\$PATH\" $0" >&2
    exit 2
}

TMP=$(mktemp -d)
STEP=0
SERVER_ID=
USER_PORT=
GHOST_PORT=
FIP_ID=

# ---------------------------------------------------------------- helpers
# Messages go to stderr too, so a failure inside $(...) is not swallowed.
fail() {
    echo >&2
    echo "FAIL: $*" >&2
    exit 1
}
ok() { echo "ok: $*"; }
step() {
    STEP=$((STEP + 1))
    echo
    echo "== $STEP. $*"
}

# Runs a command, printing it and its output; the output is kept in $OUT.
run() {
    echo "\$ $*"
    local rc=0
    OUT=$("$@" 2> "$TMP/stderr") || rc=$?
    if [ -n "$OUT" ]; then printf '%s\n' "$OUT"; fi
    if [ -s "$TMP/stderr" ]; then cat "$TMP/stderr"; fi
    [ "$rc" -eq 0 ] || fail "exit status $rc from: $*"
}

# python3 over JSON on stdin: `jq_py EXPR < json` prints EXPR's value (d = the document).
jq_py() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1"
}

# Neutron as admin (no X-Project-Id); prints the body, fails on HTTP >= 400.
neutron() {
    local method=$1 path=$2 body=${3:-}
    local args=(-sS -X "$method" -H 'Content-Type: application/json' -o "$TMP/body" -w '%{http_code}')
    [ -n "$body" ] && args+=(-d "$body")
    local code
    code=$(curl "${args[@]}" "$NEUTRON_URL/v2.0$path")
    [ "$code" -lt 400 ] || fail "Neutron $method $path: HTTP $code $(cat "$TMP/body")"
    cat "$TMP/body"
}

# Waits until `cmd` (a shell function) succeeds, up to TIMEOUT seconds.
wait_for() {
    local what=$1
    shift
    local deadline=$((SECONDS + TIMEOUT))
    until "$@"; do
        [ $SECONDS -lt "$deadline" ] || fail "timed out after ${TIMEOUT}s waiting for $what"
        sleep 1
    done
}

server_addresses() { openstack server show "$SERVER_ID" -f json -c addresses | jq_py '[a for ips in d["addresses"].values() for a in ips]'; }
server_port_ids() { openstack port list --server "$SERVER_ID" -f json -c ID | jq_py 'sorted(p["ID"] for p in d)'; }
contains() { python3 -c 'import json,sys; sys.exit(0 if sys.argv[2] in json.loads(sys.argv[1]) else 1)' "$1" "$2"; }

cleanup() {
    local rc=$?
    set +e
    if [ -n "$SERVER_ID" ]; then openstack server delete --wait "$SERVER_ID" > /dev/null 2>&1; fi
    if [ -n "$FIP_ID" ]; then curl -s -X DELETE "$NEUTRON_URL/v2.0/floatingips/$FIP_ID" > /dev/null; fi
    for p in "$USER_PORT" "$GHOST_PORT"; do
        if [ -n "$p" ]; then curl -s -X DELETE "$NEUTRON_URL/v2.0/ports/$p" > /dev/null; fi
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------- set-up
step "client configuration (auth_type none; endpoints pinned to netcache and Neutron)"
cat > "$TMP/clouds.yaml" <<EOF
clouds:
  netcache:
    auth_type: none
    auth:
      endpoint: $NEUTRON_URL
    # no Keystone: without this the SDK takes Neutron's v2.0 document as the
    # identity version and \`server list\` refuses to run
    identity_api_version: '3'
    compute_endpoint_override: $NETCACHE_URL/v2.1
    network_endpoint_override: $NEUTRON_URL
    # netcache's read-only Glance v2 subset (fixed image catalog)
    image_endpoint_override: $NETCACHE_URL/image
EOF
cat "$TMP/clouds.yaml"
# only this cloud, whatever the environment says
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(OS_[A-Z_]*\)=.*/\1/p')
export OS_CLIENT_CONFIG_FILE=$TMP/clouds.yaml OS_CLOUD=netcache
run openstack --version

step "services answer"
answers() { curl -s -f -o /dev/null "$1"; }
wait_for "netcache at $NETCACHE_URL" answers "$NETCACHE_URL/v2.1/"
wait_for "Neutron at $NEUTRON_URL" answers "$NEUTRON_URL/v2.0/networks?limit=1"
run curl -sS -f "$NETCACHE_URL/v2.1/"
run curl -sS -f "$NEUTRON_URL/"
TAG_EXT=$(neutron GET /extensions | jq_py '"tag-ports-during-bulk-creation" in [e["alias"] for e in d["extensions"]]')
echo "Neutron lists tag-ports-during-bulk-creation: $TAG_EXT"

step "network private (project $PROJECT) and public + router1 on Neutron, as admin (curl)"
PRIVATE=$(neutron GET "/networks?name=private&project_id=$PROJECT" | jq_py '(d["networks"] or [{"id": ""}])[0]["id"]')
if [ -z "$PRIVATE" ]; then
    PRIVATE=$(neutron POST /networks "{\"network\":{\"name\":\"private\",\"project_id\":\"$PROJECT\"}}" | jq_py 'd["network"]["id"]')
    neutron POST /subnets "{\"subnet\":{\"name\":\"private-subnet\",\"network_id\":\"$PRIVATE\",\"project_id\":\"$PROJECT\",\"ip_version\":4,\"cidr\":\"10.0.0.0/24\"}}" > /dev/null
    echo "created network private $PRIVATE with subnet 10.0.0.0/24"
else
    echo "network private exists: $PRIVATE"
fi
if [ "${CHECK_FLOATING_IP:-1}" = 1 ]; then
    PUBLIC=$(neutron GET '/networks?name=public&router:external=true' | jq_py '(d["networks"] or [{"id": ""}])[0]["id"]')
    if [ -z "$PUBLIC" ]; then
        PUBLIC=$(neutron POST /networks '{"network":{"name":"public","router:external":true,"provider:network_type":"flat","provider:physical_network":"public"}}' | jq_py 'd["network"]["id"]')
        neutron POST /subnets "{\"subnet\":{\"name\":\"public-subnet\",\"network_id\":\"$PUBLIC\",\"ip_version\":4,\"cidr\":\"172.24.4.0/24\",\"enable_dhcp\":false}}" > /dev/null
        echo "created external network public $PUBLIC with subnet 172.24.4.0/24"
    else
        echo "external network public exists: $PUBLIC"
    fi
    ROUTER=$(neutron GET "/routers?name=router1&project_id=$PROJECT" | jq_py '(d["routers"] or [{"id": ""}])[0]["id"]')
    if [ -z "$ROUTER" ]; then
        ROUTER=$(neutron POST /routers "{\"router\":{\"name\":\"router1\",\"project_id\":\"$PROJECT\",\"external_gateway_info\":{\"network_id\":\"$PUBLIC\"}}}" | jq_py 'd["router"]["id"]')
        SUBNET=$(neutron GET "/subnets?network_id=$PRIVATE" | jq_py 'd["subnets"][0]["id"]')
        neutron PUT "/routers/$ROUTER/add_router_interface" "{\"subnet_id\":\"$SUBNET\"}" > /dev/null
        echo "created router1 $ROUTER (gateway public, interface on private)"
    else
        echo "router1 exists: $ROUTER"
    fi
fi

# ---------------------------------------------------------------- checks
step "catalogs the client resolves names from"
run openstack flavor list
run openstack image list
run openstack availability zone list --compute

step "server create --wait"
run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --network private --wait -f json "$NAME"
SERVER_ID=$(jq_py 'd["id"]' <<< "$OUT")
[ "$(jq_py 'd["status"]' <<< "$OUT")" = ACTIVE ] || fail "server $NAME is not ACTIVE"
[ "$(jq_py 'd["flavor"]' <<< "$OUT")" = "$FLAVOR (1)" ] || fail "flavor is not shown as '$FLAVOR (1)'"
case $(jq_py 'd["image"]' <<< "$OUT") in "$IMAGE ("*) ;; *) fail "image is not shown by name" ;; esac
BOOT_IP=$(jq_py 'd["addresses"]["private"][0]' <<< "$OUT")
ok "server $SERVER_ID ACTIVE with $BOOT_IP on private"

step "server list"
run openstack server list -f json
[ "$(jq_py "[s['Status'] for s in d if s['ID'] == '$SERVER_ID']" <<< "$OUT")" = '["ACTIVE"]' ] || fail "server $SERVER_ID not listed as ACTIVE"
[ "$(jq_py "[s['Networks'] for s in d if s['ID'] == '$SERVER_ID'][0]" <<< "$OUT")" = "{\"private\": [\"$BOOT_IP\"]}" ] || fail "server list does not show private=$BOOT_IP"
[ "$(jq_py "[[s['Image'], s['Flavor']] for s in d if s['ID'] == '$SERVER_ID'][0]" <<< "$OUT")" = "[\"$IMAGE\", \"$FLAVOR\"]" ] || fail "server list does not show image and flavor names"
run openstack server list --limit 1 -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 1 ] || fail "server list --limit 1 did not return one server"
ok "listed ACTIVE with private=$BOOT_IP, $IMAGE, $FLAVOR; --limit honoured"

step "server show"
run openstack server show "$SERVER_ID" -f json
[ "$(jq_py 'd["addresses"]' <<< "$OUT")" = "{\"private\": [\"$BOOT_IP\"]}" ] || fail "server show addresses differ"
[ "$(jq_py 'd["name"]' <<< "$OUT")" = "$NAME" ] || fail "server show name differs"
run openstack server show "$NAME" -f value -c id
[ "$OUT" = "$SERVER_ID" ] || fail "server show by name found another server"
ok "addresses private=$BOOT_IP; name lookup works"

step "port list --server (Neutron's view) agrees"
run openstack port list --server "$SERVER_ID" -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 1 ] || fail "expected exactly one port on the server"
[ "$(jq_py 'd[0]["Fixed IP Addresses"][0]["ip_address"]' <<< "$OUT")" = "$BOOT_IP" ] || fail "the port's IP is not $BOOT_IP"
BOOT_PORT=$(jq_py 'd[0]["ID"]' <<< "$OUT")
ok "one port $BOOT_PORT with $BOOT_IP"

step "server add port (a user's port in project $PROJECT, made with curl)"
USER_PORT=$(neutron POST /ports "{\"port\":{\"network_id\":\"$PRIVATE\",\"project_id\":\"$PROJECT\",\"name\":\"$NAME-user-port\"}}" | jq_py 'd["port"]["id"]')
USER_IP=$(neutron GET "/ports/$USER_PORT" | jq_py 'd["port"]["fixed_ips"][0]["ip_address"]')
echo "user port $USER_PORT ($USER_IP)"
run openstack server add port "$SERVER_ID" "$USER_PORT"
run openstack port list --server "$SERVER_ID" -f json
contains "$(jq_py '[p["ID"] for p in d]' <<< "$OUT")" "$USER_PORT" || fail "port list --server lacks $USER_PORT after add port"
run openstack server show "$SERVER_ID" -f json -c addresses
contains "$(jq_py 'd["addresses"].get("private", [])' <<< "$OUT")" "$USER_IP" || fail "server show lacks $USER_IP after add port"
run openstack port show "$USER_PORT" -f json -c device_id -c device_owner -c binding_host_id -c status
[ "$(jq_py 'd["device_id"]' <<< "$OUT")" = "$SERVER_ID" ] || fail "the port's device_id is not the server"
ok "$USER_PORT attached: in port list --server and in server show ($USER_IP)"

step "server remove port"
run openstack server remove port "$SERVER_ID" "$USER_PORT"
user_port_gone() { ! contains "$(server_port_ids)" "$USER_PORT"; }
wait_for "$USER_PORT to leave port list --server" user_port_gone
run openstack port list --server "$SERVER_ID" -f json
run openstack server show "$SERVER_ID" -f json -c addresses
contains "$(jq_py 'd["addresses"].get("private", [])' <<< "$OUT")" "$USER_IP" && fail "server show still has $USER_IP after remove port"
run openstack port show "$USER_PORT" -f json -c device_id -c device_owner -c status
[ "$(jq_py 'd["device_id"]' <<< "$OUT")" = "" ] || fail "the user's port still names a device"
ok "$USER_PORT detached and kept (a user's port is unbound, never deleted)"

step "server add network"
run openstack server add network "$SERVER_ID" private
run openstack port list --server "$SERVER_ID" -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 2 ] || fail "expected two ports after add network"
NEW_IP=$(jq_py "[p['Fixed IP Addresses'][0]['ip_address'] for p in d if p['ID'] != '$BOOT_PORT'][0]" <<< "$OUT")
run openstack server show "$SERVER_ID" -f json -c addresses
[ "$(jq_py 'sorted(d["addresses"]["private"])' <<< "$OUT")" = "$(python3 -c 'import json,sys; print(json.dumps(sorted(sys.argv[1:])))' "$BOOT_IP" "$NEW_IP")" ] \
    || fail "server show addresses are not $BOOT_IP and $NEW_IP"
ok "new interface with $NEW_IP; port list --server and server show agree"

if [ "${CHECK_FLOATING_IP:-1}" = 1 ]; then
    step "floating IP (Neutron tells netcache through network-changed)"
    FIP_ID=$(neutron POST /floatingips "{\"floatingip\":{\"floating_network_id\":\"$PUBLIC\",\"project_id\":\"$PROJECT\"}}" | jq_py 'd["floatingip"]["id"]')
    FIP=$(neutron GET "/floatingips/$FIP_ID" | jq_py 'd["floatingip"]["floating_ip_address"]')
    echo "floating IP $FIP ($FIP_ID)"
    run openstack server add floating ip --fixed-ip-address "$BOOT_IP" "$SERVER_ID" "$FIP"
    fip_shown() { contains "$(server_addresses)" "$FIP"; }
    fip_gone() { ! contains "$(server_addresses)" "$FIP"; }
    # Neutron's notifier batches events every second; if none reaches netcache
    # (Neutron started without NOVA_URL=<netcache>/v2.1), say so and send the
    # network-changed event Neutron would have sent.
    via_neutron() {
        local what=$1 check=$2 saved=$TIMEOUT
        TIMEOUT=${CHECK_NOTIFIER_WAIT:-10}
        if (wait_for "$what" "$check") 2> /dev/null; then
            TIMEOUT=$saved
            echo "Neutron's network-changed event reached netcache: $what"
            return
        fi
        TIMEOUT=$saved
        echo "WARNING: no network-changed from Neutron reached netcache within ${CHECK_NOTIFIER_WAIT:-10}s" \
            "(start Neutron with NOVA_URL=$NETCACHE_URL/v2.1); sending it to netcache as Neutron would"
        run curl -sS -f -X POST -H 'Content-Type: application/json' "$NETCACHE_URL/v2.1/os-server-external-events" \
            -d "{\"events\":[{\"name\":\"network-changed\",\"server_uuid\":\"$SERVER_ID\"}]}"
        wait_for "$what" "$check"
    }
    via_neutron "$FIP in server show" fip_shown
    run openstack server show "$SERVER_ID" -f json -c addresses
    run openstack server remove floating ip "$SERVER_ID" "$FIP"
    via_neutron "$FIP to leave server show" fip_gone
    run openstack server show "$SERVER_ID" -f json -c addresses
    ok "floating IP $FIP shown after add, gone after remove"
fi

step "a ghost: a port that only carries the server's device_id (curl) is not adopted"
GHOST_PORT=$(neutron POST /ports "{\"port\":{\"network_id\":\"$PRIVATE\",\"project_id\":\"$PROJECT\",\"name\":\"$NAME-ghost\",\"device_id\":\"$SERVER_ID\",\"device_owner\":\"compute:nova\"}}" | jq_py 'd["port"]["id"]')
GHOST_IP=$(neutron GET "/ports/$GHOST_PORT" | jq_py 'd["port"]["fixed_ips"][0]["ip_address"]')
echo "ghost port $GHOST_PORT ($GHOST_IP)"
run openstack port list --server "$SERVER_ID" -f json -c ID -c Name
contains "$(jq_py '[p["ID"] for p in d]' <<< "$OUT")" "$GHOST_PORT" || fail "Neutron does not list the ghost by device_id"
run openstack server show "$SERVER_ID" -f json -c addresses
contains "$(jq_py 'd["addresses"].get("private", [])' <<< "$OUT")" "$GHOST_IP" && fail "netcache shows the ghost's $GHOST_IP"
run curl -sS -f "$NETCACHE_URL/v2.1/servers/$SERVER_ID/os-interface"
contains "$(jq_py '[i["port_id"] for i in d["interfaceAttachments"]]' <<< "$OUT")" "$GHOST_PORT" && fail "os-interface lists the ghost"
neutron DELETE "/ports/$GHOST_PORT" > /dev/null
GHOST_PORT=
ok "Neutron's device_id view lists the ghost; netcache's server show and os-interface do not (ghost deleted)"

step "server delete --wait"
run openstack server delete --wait "$SERVER_ID"
DELETED=$SERVER_ID
SERVER_ID=
run openstack server list -f json
contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$DELETED" && fail "deleted server still listed"
run openstack port list --device-id "$DELETED" -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 0 ] || fail "ports still carry the deleted server's id"
run openstack port show "$USER_PORT" -f value -c id
ok "server gone, its ports deleted, the user's port $USER_PORT kept"

echo
echo "PASS: openstack CLI against netcache ($NETCACHE_URL) and Neutron ($NEUTRON_URL): $STEP steps"
