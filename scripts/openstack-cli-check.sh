#!/usr/bin/env bash
# Drives netcache's compute API with the real `openstack` CLI (python-openstackclient)
# and checks that what it shows agrees with Neutron: server create/list (with
# filters)/show, keypair create, server create --key-name --min 2 --max 3,
# server set, security group create, server create --security-group, server
# add/remove security group, server stop/start/reboot, lock/unlock and
# server event list, server create without --network, server list --ip (a
# regular expression), server group create (affinity) with two servers,
# as admin (keystone mode; noauth: refused by policy) compute service list,
# hypervisor list, compute service set --disable (the scheduler skips the host)
# and flavor create --private, port list --server, server add/remove port, server add network, floating IPs,
# a ghost port (Neutron's device_id says "attached", netcache does not adopt it),
# server delete. Prints every command and its output; exits non-zero on the
# first mismatch. Non-interactive, loopback only.
#
#   scripts/openstack-cli-check.sh [NEUTRON_URL] [NETCACHE_URL]
#       (defaults http://127.0.0.1:9696 and http://127.0.0.1:8774)
#   CHECK_KEYSTONE_URL=http://127.0.0.1:15000/v3 scripts/openstack-cli-check.sh ...
#       the same with real Keystone tokens, plus the authorization checks below
#
# Needs: a running real Neutron (scripts/real-neutron.sh start, with
# NOVA_URL=<NETCACHE_URL>/v2.1 so floating IP changes reach netcache), a running
# netcache serving that Neutron (`netcache serve --neutron-url NEUTRON_URL`),
# `openstack` on PATH (PATH="$(scripts/real-neutron.sh env):$PATH"), curl, python3.
#
# noauth (default): clouds.yaml with `auth_type: none` and endpoints pinned to
# netcache and Neutron. Creates, as Neutron admin (curl, no headers), the
# network CHECK_NETWORK (`private`; project CHECK_PROJECT, 10.0.0.0/24) if missing, and
# `public` (external, 172.24.4.0/24) + router `router1` if missing. curl calls
# to netcache that need a role say so with X-Roles (the external event:
# `X-Roles: service`).
#
# keystone (CHECK_KEYSTONE_URL set): Keystone as scripts/keystone.sh makes it
# (admin/admin project, user nova in project service with the service role,
# catalog: compute NETCACHE_URL/v2.1, image NETCACHE_URL/image, network
# NEUTRON_URL, region RegionOne; checked, never overridden). Neutron must run
# with NEUTRON_AUTH_URL, netcache with auth.strategy = keystone. Through
# Keystone's API as admin it makes, idempotently, projects cli-a and cli-b and
# users cli-a-member (member on cli-a), cli-a-reader (reader on cli-a),
# cli-b-member (member on cli-b), password CHECK_USER_PASSWORD; clouds.yaml has
# one `auth_type: password` cloud per user and one for admin (interface public,
# endpoints from the catalog); the admin steps re-enable the hosts they disable. The checks above run as cli-a-member in project cli-a (private,
# router1 and the ports are cli-a's; Neutron calls with an admin token; the
# external event with a token of user nova). Then: cli-a-reader may list and
# show but not create or delete (403); cli-b-member neither sees nor shows
# cli-a's server (404) nor boots on cli-a's network; --all-projects as a member
# is a 403; no or a bad token is a 401 with WWW-Authenticate.
#
# Env: CHECK_PROJECT (demo; noauth only), CHECK_FLOATING_IP=0 skips the FIP step,
# CHECK_TIMEOUT seconds for each wait (30), CHECK_NOTIFIER_WAIT seconds for
# Neutron's network-changed to reach netcache before the check sends it itself
# (10; printed as a WARNING: the notifier path is then not what was checked).
# Keystone mode: CHECK_KEYSTONE_URL, CHECK_KEYSTONE_ADMIN_PASSWORD (secret, as
# scripts/keystone.sh's ADMIN_PASSWORD), CHECK_NOVA_PASSWORD (nova-secret),
# CHECK_USER_PASSWORD (cli-check-secret; reset on existing users).
set -euo pipefail

NEUTRON_URL=${1:-${NEUTRON_URL:-http://127.0.0.1:9696}}
NETCACHE_URL=${2:-${NETCACHE_URL:-http://127.0.0.1:8774}}
NEUTRON_URL=${NEUTRON_URL%/}
NEUTRON_URL=${NEUTRON_URL%/v2.0}
NETCACHE_URL=${NETCACHE_URL%/}
NETCACHE_URL=${NETCACHE_URL%/v2.1}
PROJECT=${CHECK_PROJECT:-demo}
NET=${CHECK_NETWORK:-private}
TIMEOUT=${CHECK_TIMEOUT:-30}
FLAVOR=m1.tiny
IMAGE=cirros-0.6.3-x86_64-disk
RUN=$(date +%s)-$$
NAME=cli-check-$RUN
KS_URL=${CHECK_KEYSTONE_URL:-}
KS_URL=${KS_URL%/}
if [ -n "$KS_URL" ]; then
    MODE=keystone
    KS_URL=${KS_URL%/v3}/v3
else
    MODE=noauth
fi
KS_ADMIN_PASSWORD=${CHECK_KEYSTONE_ADMIN_PASSWORD:-secret}
NOVA_PASSWORD=${CHECK_NOVA_PASSWORD:-nova-secret}
USER_PASSWORD=${CHECK_USER_PASSWORD:-cli-check-secret}

for url in "$NEUTRON_URL" "$NETCACHE_URL" ${KS_URL:+"${KS_URL%/v3}"}; do
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
KEYPAIR=
SG_ID=
GROUP_ID=
FLAVOR_CREATED=
ADMIN_CLOUD=       # keystone mode: the admin user's cloud
DISABLED_HOSTS=()  # nova-compute services this check disabled
STRAY_SERVERS=() # "cloud server-id": created although they should not have been
# Credentials per caller (curl arguments); filled in per mode below.
NEUTRON_AUTH=()    # Neutron as admin
NETCACHE_SERVICE=() # netcache as a service (external events)
NETCACHE_USER=()   # netcache as the user the CLI runs as (cli-a-member)

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

# `refused PATTERN CMD...`: CMD must fail (non-zero exit); its output (stdout and
# stderr, kept in $OUT) must match the extended regexp PATTERN unless it is empty.
refused() {
    local pattern=$1
    shift
    echo "\$ ! $*"
    local rc=0
    OUT=$("$@" 2>&1) || rc=$?
    if [ -n "$OUT" ]; then printf '%s\n' "$OUT"; fi
    [ "$rc" -ne 0 ] || fail "expected a failure from: $*"
    [ -z "$pattern" ] || grep -Eq -- "$pattern" <<< "$OUT" || fail "the failure of '$*' does not match /$pattern/"
    echo "(failed as expected, exit status $rc)"
}

# A regexp for the CLI's report of a 403 by RULE: "ForbiddenException: 403: Client
# Error for url: …, Policy doesn't allow RULE to be performed." (openstacksdk), or
# "Policy doesn't allow RULE to be performed. (HTTP 403)" (novaclient style).
forbidden() { echo "403[^0-9].*Policy doesn't allow $1 to be performed|Policy doesn't allow $1 to be performed.*HTTP 403"; }

# `http METHOD URL [CURL-ARGS...]`: prints the request, the status and the
# body; sets CODE, the body in $TMP/http-body and the headers in $TMP/http-headers.
http() {
    local method=$1 url=$2
    shift 2
    local shown=() a
    for a in "$@"; do
        case $a in
            X-Auth-Token:*) shown+=("'X-Auth-Token: <token>'") ;;
            *[[:space:]\"{}]*) shown+=("'$a'") ;;
            *) shown+=("$a") ;;
        esac
    done
    echo "\$ curl -X $method ${shown[*]} $url"
    CODE=$(curl -sS -m 60 -X "$method" -D "$TMP/http-headers" -o "$TMP/http-body" -w '%{http_code}' "$@" "$url") \
        || fail "curl -X $method $url failed"
    echo "HTTP $CODE"
    cat "$TMP/http-body"
    echo
}

# python3 over JSON on stdin: `jq_py EXPR < json` prints EXPR's value (d = the document).
jq_py() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1"
}

# `first_id LIST < json`: the id of the first item of the list body's LIST
# (`networks`, `users`…), or an empty line when it lists none.
first_id() { jq_py '(d["'"$1"'"] or [{"id": ""}])[0]["id"]'; }

# Neutron as admin (noauth: no X-Project-Id; keystone: an admin token); prints
# the body, fails on HTTP >= 400.
neutron() {
    local method=$1 path=$2 body=${3:-}
    local args=(-sS -X "$method" -H 'Content-Type: application/json' "${NEUTRON_AUTH[@]}" -o "$TMP/body" -w '%{http_code}')
    [ -n "$body" ] && args+=(-d "$body")
    local code
    code=$(curl "${args[@]}" "$NEUTRON_URL/v2.0$path")
    [ "$code" -lt 400 ] || fail "Neutron $method $path: HTTP $code $(cat "$TMP/body")"
    cat "$TMP/body"
}

# ---- Keystone (keystone mode)
# `ks_token USER PASSWORD PROJECT`: a project-scoped token (Default domain) on
# stdout; the token body (with the catalog) is left in $TMP/ks-token.json.
ks_token() {
    local body code
    body=$(python3 -c '
import json, sys
user, password, project = sys.argv[1:]
print(json.dumps({"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": user, "password": password, "domain": {"id": "default"}}}},
    "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}))' "$1" "$2" "$3")
    code=$(curl -sS -m 60 -X POST -H 'Content-Type: application/json' -d "$body" \
        -D "$TMP/ks-token-headers" -o "$TMP/ks-token.json" -w '%{http_code}' "$KS_URL/auth/tokens")
    [ "$code" = 201 ] || fail "Keystone: no token for user $1 in project $3: HTTP $code $(cat "$TMP/ks-token.json")"
    sed -n 's/^[Xx]-[Ss]ubject-[Tt]oken: *\([^[:space:]]*\).*/\1/p' "$TMP/ks-token-headers"
}

# Keystone's API as admin (ADMIN_TOKEN); prints the body, fails on HTTP >= 400.
keystone() {
    local method=$1 path=$2 body=${3:-}
    local args=(-sS -m 60 -X "$method" -H 'Content-Type: application/json' -H "X-Auth-Token: $ADMIN_TOKEN"
        -o "$TMP/ks-body" -w '%{http_code}')
    [ -n "$body" ] && args+=(-d "$body")
    local code
    code=$(curl "${args[@]}" "$KS_URL$path")
    [ "$code" -lt 400 ] || fail "Keystone $method $path: HTTP $code $(cat "$TMP/ks-body")"
    cat "$TMP/ks-body"
}

# `ks_project NAME`: the project's id, created (Default domain) if missing.
ks_project() {
    local id
    id=$(keystone GET "/projects?name=$1&domain_id=default" | first_id projects)
    if [ -z "$id" ]; then
        id=$(keystone POST /projects "{\"project\":{\"name\":\"$1\",\"domain_id\":\"default\",\"description\":\"scripts/openstack-cli-check.sh\"}}" \
            | jq_py 'd["project"]["id"]')
        echo "created project $1 $id" >&2
    else
        echo "project $1 exists: $id" >&2
    fi
    echo "$id"
}

# `ks_user NAME PROJECT_ID ROLE_ID`: the user's id; created if missing, else its
# password is reset to USER_PASSWORD; ROLE_ID granted on the project (idempotent).
ks_user() {
    local name=$1 project=$2 role=$3 id body
    body=$(python3 -c 'import json, sys; print(json.dumps({"user": {"password": sys.argv[1]}}))' "$USER_PASSWORD")
    id=$(keystone GET "/users?name=$name&domain_id=default" | first_id users)
    if [ -z "$id" ]; then
        body=$(jq_py "dict(d['user'], name='$name', domain_id='default', default_project_id='$project')" <<< "$body")
        id=$(keystone POST /users "{\"user\":$body}" | jq_py 'd["user"]["id"]')
        echo "created user $name $id" >&2
    else
        keystone PATCH "/users/$id" "$body" > /dev/null
        echo "user $name exists: $id (password reset)" >&2
    fi
    keystone PUT "/projects/$project/users/$id/roles/$role" > /dev/null
    echo "$id"
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

# `active_named PREFIX N`: N servers named PREFIX-<n> are ACTIVE.
active_named() { [ "$(openstack server list --name "^$1-[0-9]+$" --status ACTIVE -f value -c ID | wc -l)" = "$2" ]; }
server_status_is() { [ "$(openstack server show "$SERVER_ID" -f value -c status)" = "$1" ]; }
server_addresses() { openstack server show "$SERVER_ID" -f json -c addresses | jq_py '[a for ips in d["addresses"].values() for a in ips]'; }
server_port_ids() { openstack port list --server "$SERVER_ID" -f json -c ID | jq_py 'sorted(p["ID"] for p in d)'; }
contains() { python3 -c 'import json,sys; sys.exit(0 if sys.argv[2] in json.loads(sys.argv[1]) else 1)' "$1" "$2"; }
enable_hosts() {
    local host
    for host in "${DISABLED_HOSTS[@]}"; do
        run openstack --os-cloud "$ADMIN_CLOUD" compute service set --enable "$host" nova-compute
    done
    DISABLED_HOSTS=()
}

cleanup() {
    local rc=$?
    set +e
    local s
    for s in "${STRAY_SERVERS[@]}"; do
        openstack --os-cloud "${s%% *}" server delete --wait "${s#* }" > /dev/null 2>&1 # "cloud id"
    done
    if [ -n "$SERVER_ID" ]; then openstack server delete --wait "$SERVER_ID" > /dev/null 2>&1; fi
    if [ -n "$KEYPAIR" ]; then openstack keypair delete "$KEYPAIR" > /dev/null 2>&1; fi
    if [ -n "$GROUP_ID" ]; then openstack server group delete "$GROUP_ID" > /dev/null 2>&1; fi
    if [ -n "$FLAVOR_CREATED" ]; then openstack --os-cloud "$ADMIN_CLOUD" flavor delete "$FLAVOR_CREATED" > /dev/null 2>&1; fi
    for s in "${DISABLED_HOSTS[@]}"; do
        openstack --os-cloud "$ADMIN_CLOUD" compute service set --enable "$s" nova-compute > /dev/null 2>&1
    done
    if [ -n "$SG_ID" ]; then curl -s -X DELETE "${NEUTRON_AUTH[@]}" "$NEUTRON_URL/v2.0/security-groups/$SG_ID" > /dev/null; fi
    if [ -n "$FIP_ID" ]; then curl -s -X DELETE "${NEUTRON_AUTH[@]}" "$NEUTRON_URL/v2.0/floatingips/$FIP_ID" > /dev/null; fi
    for p in "$USER_PORT" "$GHOST_PORT"; do
        if [ -n "$p" ]; then curl -s -X DELETE "${NEUTRON_AUTH[@]}" "$NEUTRON_URL/v2.0/ports/$p" > /dev/null; fi
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------- set-up
if [ "$MODE" = keystone ]; then
    step "Keystone at $KS_URL: catalog, projects cli-a/cli-b and their users (curl, as admin)"
    answers_ks() { curl -s -f -o /dev/null "$KS_URL"; }
    wait_for "Keystone at $KS_URL" answers_ks
    ADMIN_TOKEN=$(ks_token admin "$KS_ADMIN_PASSWORD" admin)
    echo "admin token (user admin, project admin): roles $(jq_py 'sorted(r["name"] for r in d["token"]["roles"])' < "$TMP/ks-token.json")"
    # The CLI takes every endpoint from this catalog: it must name the services under test.
    CATALOG=$(jq_py '{s["type"]: e["url"].rstrip("/") for s in d["token"]["catalog"] for e in s["endpoints"] if e["interface"] == "public" and e.get("region_id") == "RegionOne"}' < "$TMP/ks-token.json")
    echo "catalog (public, RegionOne): $CATALOG"
    for want in "compute $NETCACHE_URL/v2.1" "image $NETCACHE_URL/image" "network $NEUTRON_URL"; do
        got=$(jq_py "d.get('${want%% *}', '')" <<< "$CATALOG")
        [ "$got" = "${want#* }" ] || fail "Keystone's catalog has ${want%% *} endpoint '$got', not ${want#* } (scripts/keystone.sh: COMPUTE_URL, IMAGE_URL, NETWORK_URL)"
    done
    ROLES=$(keystone GET /roles | jq_py '{r["name"]: r["id"] for r in d["roles"]}')
    ROLE_MEMBER=$(jq_py 'd["member"]' <<< "$ROLES")
    ROLE_READER=$(jq_py 'd["reader"]' <<< "$ROLES")
    PROJECT_A=$(ks_project cli-a)
    PROJECT_B=$(ks_project cli-b)
    USER_A_MEMBER=$(ks_user cli-a-member "$PROJECT_A" "$ROLE_MEMBER")
    USER_A_READER=$(ks_user cli-a-reader "$PROJECT_A" "$ROLE_READER")
    USER_B_MEMBER=$(ks_user cli-b-member "$PROJECT_B" "$ROLE_MEMBER")
    PROJECT=$PROJECT_A
    # Tokens for curl: nova (the external event), the users (their own calls).
    token_roles() { jq_py '"user %s, project %s, roles %s" % (d["token"]["user"]["name"], d["token"]["project"]["name"], ",".join(sorted(r["name"] for r in d["token"]["roles"])))' < "$TMP/ks-token.json"; }
    NOVA_TOKEN=$(ks_token nova "$NOVA_PASSWORD" service)
    echo "token: $(token_roles)"
    A_MEMBER_TOKEN=$(ks_token cli-a-member "$USER_PASSWORD" cli-a)
    echo "token: $(token_roles)"
    A_READER_TOKEN=$(ks_token cli-a-reader "$USER_PASSWORD" cli-a)
    echo "token: $(token_roles)"
    B_MEMBER_TOKEN=$(ks_token cli-b-member "$USER_PASSWORD" cli-b)
    echo "token: $(token_roles)"
    NEUTRON_AUTH=(-H "X-Auth-Token: $ADMIN_TOKEN")
    NETCACHE_SERVICE=(-H "X-Auth-Token: $NOVA_TOKEN")
    NETCACHE_USER=(-H "X-Auth-Token: $A_MEMBER_TOKEN")
    ok "projects cli-a $PROJECT_A, cli-b $PROJECT_B; users cli-a-member $USER_A_MEMBER, cli-a-reader $USER_A_READER, cli-b-member $USER_B_MEMBER"

    step "client configuration (auth_type password, one cloud per user; endpoints from Keystone's catalog)"
    password_yaml=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$USER_PASSWORD")
    {
        echo "clouds:"
        for cloud in "cli-a-member cli-a" "cli-a-reader cli-a" "cli-b-member cli-b" "admin admin"; do
            [ "${cloud% *}" = admin ] && password_yaml=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$KS_ADMIN_PASSWORD")
            cat <<EOF
  ${cloud% *}:
    auth_type: password
    auth:
      auth_url: $KS_URL
      username: ${cloud% *}
      password: $password_yaml
      project_name: ${cloud#* }
      user_domain_name: Default
      project_domain_name: Default
    identity_api_version: '3'
    region_name: RegionOne
    interface: public
EOF
        done
    } > "$TMP/clouds.yaml"
    DEFAULT_CLOUD=cli-a-member
    ADMIN_CLOUD=admin
    PROJECT_LABEL="cli-a $PROJECT"
else
    # noauth: netcache reads the caller from headers; external events need the
    # service (or admin) role.
    NETCACHE_SERVICE=(-H 'X-Roles: service')
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
    DEFAULT_CLOUD=netcache
    PROJECT_LABEL=$PROJECT
fi
cat "$TMP/clouds.yaml"
# only these clouds, whatever the environment says
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(OS_[A-Z_]*\)=.*/\1/p')
export OS_CLIENT_CONFIG_FILE=$TMP/clouds.yaml OS_CLOUD=$DEFAULT_CLOUD
echo "OS_CLOUD=$OS_CLOUD"
run openstack --version

step "services answer"
answers() { curl -s -f -o /dev/null "$@"; }
wait_for "netcache at $NETCACHE_URL" answers "$NETCACHE_URL/v2.1/"
wait_for "Neutron at $NEUTRON_URL" answers "$NEUTRON_URL/v2.0/networks?limit=1" "${NEUTRON_AUTH[@]}"
run curl -sS -f "$NETCACHE_URL/v2.1/"
run curl -sS -f "$NEUTRON_URL/"
TAG_EXT=$(neutron GET /extensions | jq_py '"tag-ports-during-bulk-creation" in [e["alias"] for e in d["extensions"]]')
echo "Neutron lists tag-ports-during-bulk-creation: $TAG_EXT"

step "network $NET (project $PROJECT_LABEL) and public + router1 on Neutron, as admin (curl)"
PRIVATE=$(neutron GET "/networks?name=$NET&project_id=$PROJECT" | first_id networks)
if [ -z "$PRIVATE" ]; then
    PRIVATE=$(neutron POST /networks "{\"network\":{\"name\":\"$NET\",\"project_id\":\"$PROJECT\"}}" | jq_py 'd["network"]["id"]')
    neutron POST /subnets "{\"subnet\":{\"name\":\"$NET-subnet\",\"network_id\":\"$PRIVATE\",\"project_id\":\"$PROJECT\",\"ip_version\":4,\"cidr\":\"10.0.0.0/24\"}}" > /dev/null
    echo "created network $NET $PRIVATE with subnet 10.0.0.0/24"
else
    echo "network $NET exists: $PRIVATE"
fi
if [ "${CHECK_FLOATING_IP:-1}" = 1 ]; then
    PUBLIC=$(neutron GET '/networks?name=public&router:external=true' | first_id networks)
    if [ -z "$PUBLIC" ]; then
        PUBLIC=$(neutron POST /networks '{"network":{"name":"public","router:external":true,"provider:network_type":"flat","provider:physical_network":"public"}}' | jq_py 'd["network"]["id"]')
        neutron POST /subnets "{\"subnet\":{\"name\":\"public-subnet\",\"network_id\":\"$PUBLIC\",\"ip_version\":4,\"cidr\":\"172.24.4.0/24\",\"enable_dhcp\":false}}" > /dev/null
        echo "created external network public $PUBLIC with subnet 172.24.4.0/24"
    else
        echo "external network public exists: $PUBLIC"
    fi
    ROUTER=$(neutron GET "/routers?name=router1&project_id=$PROJECT" | first_id routers)
    if [ -z "$ROUTER" ]; then
        ROUTER=$(neutron POST /routers "{\"router\":{\"name\":\"router1\",\"project_id\":\"$PROJECT\",\"external_gateway_info\":{\"network_id\":\"$PUBLIC\"}}}" | jq_py 'd["router"]["id"]')
        echo "created router1 $ROUTER (gateway public)"
    else
        echo "router1 exists: $ROUTER"
    fi
    # router1 may predate $NET (the embedded Neutron's own router1 serves its private)
    if [ "$(neutron GET "/ports?device_id=$ROUTER&network_id=$PRIVATE" | jq_py 'len(d["ports"])')" = 0 ]; then
        SUBNET=$(neutron GET "/subnets?network_id=$PRIVATE" | jq_py 'd["subnets"][0]["id"]')
        neutron PUT "/routers/$ROUTER/add_router_interface" "{\"subnet_id\":\"$SUBNET\"}" > /dev/null
        echo "router1 $ROUTER: interface added on $NET"
    fi
fi

# ---------------------------------------------------------------- checks
step "catalogs the client resolves names from"
run openstack flavor list
run openstack image list
run openstack availability zone list --compute

step "server create --wait"
run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --network "$NET" --wait -f json "$NAME"
SERVER_ID=$(jq_py 'd["id"]' <<< "$OUT")
[ "$(jq_py 'd["status"]' <<< "$OUT")" = ACTIVE ] || fail "server $NAME is not ACTIVE"
# Below 2.47 the CLI shows "NAME (ID)"; from 2.47 the flavor the server kept, by its original name.
SHOWN_FLAVOR=$(jq_py 'd["flavor"]["original_name"] if isinstance(d["flavor"], dict) else d["flavor"]' <<< "$OUT")
case "$SHOWN_FLAVOR" in "$FLAVOR"|"$FLAVOR (1)") ;; *) fail "flavor is shown as '$SHOWN_FLAVOR', not $FLAVOR" ;; esac
case $(jq_py 'd["image"]' <<< "$OUT") in "$IMAGE ("*) ;; *) fail "image is not shown by name" ;; esac
IMAGE_ID=$(jq_py 'd["image"].rsplit(" (", 1)[1].rstrip(")")' <<< "$OUT")
FLAVOR_ID=1
BOOT_IP=$(jq_py "d['addresses']['$NET'][0]" <<< "$OUT")
ok "server $SERVER_ID ACTIVE with $BOOT_IP on private"

step "server list"
run openstack server list -f json
[ "$(jq_py "[s['Status'] for s in d if s['ID'] == '$SERVER_ID']" <<< "$OUT")" = '["ACTIVE"]' ] || fail "server $SERVER_ID not listed as ACTIVE"
# (the embedded Neutron's private network has an IPv6 subnet too)
[ "$(jq_py "'$BOOT_IP' in [s['Networks'] for s in d if s['ID'] == '$SERVER_ID'][0]['$NET']" <<< "$OUT")" = True ] || fail "server list does not show private=$BOOT_IP"
[ "$(jq_py "[[s['Image'], s['Flavor']] for s in d if s['ID'] == '$SERVER_ID'][0]" <<< "$OUT")" = "[\"$IMAGE\", \"$FLAVOR\"]" ] || fail "server list does not show image and flavor names"
run openstack server list --limit 1 -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 1 ] || fail "server list --limit 1 did not return one server"
run openstack server list --flavor "$FLAVOR" --image "$IMAGE" --name "^cli-check-[0-9]+-[0-9]+$" \
    --changes-since "$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)" -f json -c ID
contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" || fail "the filtered list misses $SERVER_ID"
run openstack server list --name '^vm-[0-9]+$' -f json -c ID
contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" && fail "--name '^vm-[0-9]+\$' matched $NAME"
run openstack server list --changes-since 2051-01-01T12:34:00Z -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 0 ] || fail "servers changed in 2051 were listed"
# --ip is a regular expression matched from the start of an address, as Nova's re.match
run openstack server list --ip "^${BOOT_IP//./\\.}\$" -f json -c ID
contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" || fail "--ip '^${BOOT_IP//./\\.}\$' misses $SERVER_ID"
run openstack server list --ip "^${BOOT_IP%.*}\.[0-9]+\$" -f json -c ID
contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" || fail "--ip '^${BOOT_IP%.*}\.[0-9]+\$' misses $SERVER_ID"
run openstack server list --ip "${BOOT_IP#*.}" -f json -c ID
contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" && fail "--ip '${BOOT_IP#*.}' (not the start of $BOOT_IP) matched $SERVER_ID"
ok "listed ACTIVE with private=$BOOT_IP, $IMAGE, $FLAVOR; --limit, --flavor, --image, --name and --ip (regular expressions) and --changes-since honoured"

step "server show"
run openstack server show "$SERVER_ID" -f json
[ "$(jq_py 'd["addresses"]' <<< "$OUT")" = "{\"$NET\": [\"$BOOT_IP\"]}" ] || fail "server show addresses differ"
[ "$(jq_py 'd["name"]' <<< "$OUT")" = "$NAME" ] || fail "server show name differs"
run openstack server show "$NAME" -f value -c id
[ "$OUT" = "$SERVER_ID" ] || fail "server show by name found another server"
ok "addresses private=$BOOT_IP; name lookup works"

step "keypair create, server create --key-name --min 2 --max 3, server set"
ssh-keygen -q -t ed25519 -N "" -C "$NAME" -f "$TMP/key"
run openstack keypair create --public-key "$TMP/key.pub" -f json "$NAME-key"
[ "$(jq_py 'd["fingerprint"]' <<< "$OUT")" = "$(ssh-keygen -l -E md5 -f "$TMP/key.pub" | awk '{print $2}' | sed 's/^MD5://')" ] \
    || fail "the key pair's fingerprint is not ssh-keygen's MD5 one"
KEYPAIR="$NAME-key"
run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --network "$NET" --key-name "$KEYPAIR" \
    --min 2 --max 3 -f json "$NAME-multi"
wait_for "three servers $NAME-multi-N to be ACTIVE" active_named "$NAME-multi" 3
run openstack server list --name "^$NAME-multi-[0-9]+$" -f value -c ID -c Name
MULTI_IDS=$(awk '{print $1}' <<< "$OUT")
for id in $MULTI_IDS; do STRAY_SERVERS+=("$OS_CLOUD $id"); done
for n in 1 2 3; do grep -q " $NAME-multi-$n$" <<< "$OUT" || fail "no server named $NAME-multi-$n"; done
run openstack server show "$NAME-multi-1" -f value -c key_name
[ "$OUT" = "$KEYPAIR" ] || fail "$NAME-multi-1 does not show key pair $KEYPAIR"
run openstack server set --name "$NAME-renamed" "$NAME-multi-2"
run openstack server show "$NAME-renamed" -f value -c name
[ "$OUT" = "$NAME-renamed" ] || fail "server set --name did not rename $NAME-multi-2"
# shellcheck disable=SC2086 # one id per word
run openstack server delete --wait $MULTI_IDS
STRAY_SERVERS=()
run openstack keypair delete "$KEYPAIR"
KEYPAIR=
ok "key pair imported (ssh-keygen's fingerprint); three servers booted with it by --min 2 --max 3, named NAME-multi-N; one renamed; all deleted"

step "security group create, server create --security-group, server remove/add security group"
SG_NAME="$NAME-sg"
if [ "$MODE" = keystone ]; then
    run openstack security group create -f json "$SG_NAME"
    SG_ID=$(jq_py 'd["id"]' <<< "$OUT")
else
    # Without Keystone the CLI cannot name a project (--project asks the identity
    # service), and its own calls land in the embedded Neutron's admin project:
    # the group is made in $PROJECT as admin (curl), as the network is.
    SG_ID=$(neutron POST /security-groups "{\"security_group\":{\"name\":\"$SG_NAME\",\"project_id\":\"$PROJECT\"}}" | jq_py 'd["security_group"]["id"]')
    echo "created security group $SG_NAME $SG_ID in project $PROJECT"
fi
run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --network "$NET" --security-group "$SG_NAME" \
    --wait -f json "$NAME-sg"
SG_SERVER=$(jq_py 'd["id"]' <<< "$OUT")
STRAY_SERVERS+=("$OS_CLOUD $SG_SERVER")
# (all columns: a server without groups has no security_groups column)
sg_names() { openstack server show "$SG_SERVER" -f json | jq_py 'sorted(g["name"] for g in d.get("security_groups") or [])'; }
port_groups() { neutron GET "/ports?device_id=$SG_SERVER" | jq_py 'sorted(g for p in d["ports"] for g in p["security_groups"])'; }
[ "$(sg_names)" = "[\"$SG_NAME\"]" ] || fail "server $SG_SERVER shows groups $(sg_names), not [$SG_NAME]"
[ "$(port_groups)" = "[\"$SG_ID\"]" ] || fail "the server's port is in $(port_groups), not [$SG_ID]"
run openstack server remove security group "$SG_SERVER" "$SG_NAME"
[ "$(sg_names)" = "[]" ] || fail "after the removal the server shows groups $(sg_names)"
[ "$(port_groups)" = "[]" ] || fail "after the removal the server's port is in $(port_groups)"
refused "not associated with the instance" openstack server remove security group "$SG_SERVER" "$SG_NAME"
run openstack server add security group "$SG_SERVER" "$SG_NAME"
[ "$(sg_names)" = "[\"$SG_NAME\"]" ] || fail "after the addition the server shows groups $(sg_names)"
run openstack server delete --wait "$SG_SERVER"
STRAY_SERVERS=()
run curl -sS -f -X DELETE "${NEUTRON_AUTH[@]}" "$NEUTRON_URL/v2.0/security-groups/$SG_ID"
SG_ID=
ok "booted in $SG_NAME (its port in it on Neutron, the server showing it); removed (no groups, a second removal refused) and added back"

step "server stop, start and reboot (soft and hard)"
run openstack server stop "$SERVER_ID"
wait_for "server $SERVER_ID to be SHUTOFF" server_status_is SHUTOFF
run openstack server show "$SERVER_ID" -f value -c OS-EXT-STS:power_state
[ "$OUT" = 4 ] || fail "a stopped server's power state is $OUT, not 4 (SHUTDOWN)"
refused "Cannot 'stop' instance.*vm_state stopped" openstack server stop "$SERVER_ID"
run openstack server start "$SERVER_ID"
wait_for "server $SERVER_ID to be ACTIVE" server_status_is ACTIVE
run openstack server reboot --wait "$SERVER_ID"
run openstack server reboot --hard --wait "$SERVER_ID"
server_status_is ACTIVE || fail "server $SERVER_ID is not ACTIVE after the reboots"
run openstack server event list "$SERVER_ID" -f value -c Action
for action in create stop start reboot; do
    grep -qx "$action" <<< "$OUT" || fail "no $action in the server's events"
done
ok "stopped (power state 4, a second stop refused), started, rebooted soft and hard; each an instance action"

step "server lock with a reason, unlock; each an instance action"
run openstack server lock --reason "$NAME maintenance" "$SERVER_ID"
run openstack server show "$SERVER_ID" -f json
[ "$(jq_py 'd["locked"]' <<< "$OUT")" = True ] || fail "server $SERVER_ID is not shown locked"
[ "$(jq_py 'd.get("locked_reason")' <<< "$OUT")" = "$NAME maintenance" ] || fail "the lock's reason is not shown"
run openstack server unlock "$SERVER_ID"
run openstack server show "$SERVER_ID" -f value -c locked
[ "$OUT" = False ] || fail "server $SERVER_ID is still locked"
run openstack server event list "$SERVER_ID" -f value -c Action
for action in lock unlock; do
    grep -qx "$action" <<< "$OUT" || fail "no $action in the server's events"
done
ok "locked (locked, its reason shown), unlocked; both in server event list"

step "server create without --network: the project's only usable network, or Nova's 409 when there are several"
# What the project may boot on without naming a network, by Neutron's records:
# its own networks and shared ones, never an external one that is not shared.
USABLE=$(neutron GET /networks | jq_py "sorted(n['name'] for n in d['networks'] if (n['project_id'] == '$PROJECT' or n['shared']) and (n['shared'] or not n.get('router:external')))")
echo "networks project $PROJECT_LABEL may use: $USABLE"
case $(jq_py 'len(d)' <<< "$USABLE") in
    0) refused "" openstack server create --flavor "$FLAVOR" --image "$IMAGE" --wait "$NAME-nonet" ;;
    1)
        run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --wait -f json "$NAME-nonet"
        NONET=$(jq_py 'd["id"]' <<< "$OUT")
        STRAY_SERVERS+=("$OS_CLOUD $NONET")
        [ "$(jq_py 'sorted(d["addresses"])' <<< "$OUT")" = "$USABLE" ] \
            || fail "server $NONET has addresses on $(jq_py 'sorted(d["addresses"])' <<< "$OUT"), not on $USABLE"
        run openstack server delete --wait "$NONET"
        STRAY_SERVERS=()
        ;;
    *)
        refused "Multiple possible networks found" \
            openstack server create --flavor "$FLAVOR" --image "$IMAGE" --wait "$NAME-nonet"
        run openstack server list --name "^$NAME-nonet\$" -f value -c ID
        [ -z "$OUT" ] || { STRAY_SERVERS+=("$OS_CLOUD $OUT"); fail "the refused create left server $OUT"; }
        ;;
esac
ok "without --network: $(jq_py 'len(d)' <<< "$USABLE") usable network(s) $USABLE, answered as Nova does"

step "server group create (affinity); two servers booted in it share a host"
run openstack server group create --policy affinity -f json "$NAME-group"
GROUP_ID=$(jq_py 'd["id"]' <<< "$OUT")
run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --network "$NET" --hint "group=$GROUP_ID" \
    --min 2 --max 2 -f json "$NAME-grouped"
wait_for "two servers $NAME-grouped-N to be ACTIVE" active_named "$NAME-grouped" 2
run openstack server list --name "^$NAME-grouped-[0-9]+$" -f value -c ID
GROUPED_IDS=$OUT
for id in $GROUPED_IDS; do STRAY_SERVERS+=("$OS_CLOUD $id"); done
run openstack server group show "$GROUP_ID" -f json
[ "$(jq_py 'sorted(d["members"] if isinstance(d["members"], list) else d["members"].split(", "))' <<< "$OUT")" \
    = "$(python3 -c 'import json,sys; print(json.dumps(sorted(sys.argv[1:])))' $GROUPED_IDS)" ] \
    || fail "the group's members are not the two servers"
HOST_IDS=$(for id in $GROUPED_IDS; do openstack server show "$id" -f value -c hostId; done | sort -u)
[ "$(wc -l <<< "$HOST_IDS")" = 1 ] && [ -n "$HOST_IDS" ] || fail "the affinity group's servers are on different hosts: $HOST_IDS"
# shellcheck disable=SC2086 # one id per word
run openstack server delete --wait $GROUPED_IDS
STRAY_SERVERS=()
run openstack server group delete "$GROUP_ID"
GROUP_ID=
ok "affinity group: both servers its members, one hostId; servers and group deleted"

if [ -n "$ADMIN_CLOUD" ]; then
    step "as admin: compute service list, hypervisor list; disabled hosts are skipped by the scheduler"
    run openstack --os-cloud "$ADMIN_CLOUD" compute service list --service nova-compute -f json
    HOSTS=$(jq_py 'sorted(s["Host"] for s in d if s["State"] == "up" and s["Status"] == "enabled")' <<< "$OUT")
    [ "$(jq_py 'len(d)' <<< "$HOSTS")" -ge 2 ] || fail "fewer than two nova-compute services up and enabled: $HOSTS"
    run openstack --os-cloud "$ADMIN_CLOUD" hypervisor list -f json
    [ "$(jq_py 'sorted(h["Hypervisor Hostname"] for h in d)' <<< "$OUT")" = "$HOSTS" ] \
        || fail "hypervisor list does not name the compute hosts $HOSTS"
    run openstack --os-cloud "$ADMIN_CLOUD" server show "$SERVER_ID" -f value -c OS-EXT-SRV-ATTR:host
    contains "$HOSTS" "$OUT" || fail "server $SERVER_ID is on '$OUT', not one of $HOSTS"
    KEPT_HOST=$(jq_py 'd[-1]' <<< "$HOSTS")
    for host in $(jq_py '" ".join(d[:-1])' <<< "$HOSTS"); do
        run openstack --os-cloud "$ADMIN_CLOUD" compute service set --disable --disable-reason "$NAME" "$host" nova-compute
        DISABLED_HOSTS+=("$host")
    done
    run openstack --os-cloud "$ADMIN_CLOUD" compute service list --service nova-compute -f json
    [ "$(jq_py "sorted(s['Host'] for s in d if s['Status'] == 'enabled')" <<< "$OUT")" = "[\"$KEPT_HOST\"]" ] \
        || fail "after disabling, the enabled hosts are not [$KEPT_HOST]"
    run openstack server create --flavor "$FLAVOR" --image "$IMAGE" --network "$NET" --min 2 --max 2 -f json "$NAME-placed"
    wait_for "two servers $NAME-placed-N to be ACTIVE" active_named "$NAME-placed" 2
    run openstack server list --name "^$NAME-placed-[0-9]+$" -f value -c ID
    PLACED_IDS=$OUT
    for id in $PLACED_IDS; do STRAY_SERVERS+=("$OS_CLOUD $id"); done
    for id in $PLACED_IDS; do
        run openstack --os-cloud "$ADMIN_CLOUD" server show "$id" -f value -c OS-EXT-SRV-ATTR:host
        [ "$OUT" = "$KEPT_HOST" ] || fail "server $id was placed on $OUT, a disabled host"
    done
    enable_hosts
    # shellcheck disable=SC2086 # one id per word
    run openstack server delete --wait $PLACED_IDS
    STRAY_SERVERS=()
    ok "hosts $HOSTS up; all but $KEPT_HOST disabled, both new servers placed on $KEPT_HOST; hosts enabled again"

    step "flavor create (admin, private to project $PROJECT_LABEL): its members boot with it, another project does not see it"
    run openstack --os-cloud "$ADMIN_CLOUD" flavor create --ram 256 --disk 1 --vcpus 1 --private \
        --project "$PROJECT" -f json "$NAME-flavor"
    FLAVOR_CREATED=$(jq_py 'd["id"]' <<< "$OUT")
    [ "$(jq_py 'd["os-flavor-access:is_public"]' <<< "$OUT")" = False ] || fail "the new flavor is not private"
    run openstack flavor show "$NAME-flavor" -f value -c ram
    [ "$OUT" = 256 ] || fail "cli-a-member sees the flavor with ram $OUT"
    refused "" openstack --os-cloud cli-b-member flavor show "$FLAVOR_CREATED"
    run openstack server create --flavor "$NAME-flavor" --image "$IMAGE" --network "$NET" --wait -f json "$NAME-flavored"
    FLAVORED=$(jq_py 'd["id"]' <<< "$OUT")
    STRAY_SERVERS+=("$OS_CLOUD $FLAVORED")
    [ "$(jq_py 'd["flavor"]["original_name"] if isinstance(d["flavor"], dict) else d["flavor"]' <<< "$OUT")" = "$NAME-flavor" ] \
        || fail "server $FLAVORED does not show flavor $NAME-flavor"
    run openstack server delete --wait "$FLAVORED"
    STRAY_SERVERS=()
    run openstack --os-cloud "$ADMIN_CLOUD" flavor delete "$FLAVOR_CREATED"
    FLAVOR_CREATED=
    ok "private flavor $NAME-flavor: shown to and booted by cli-a, not shown to cli-b; deleted"
else
    step "admin-only commands as a member (noauth has no admin for the CLI): refused by Nova's policy"
    refused "$(forbidden os_compute_api:os-services:list)" openstack compute service list
    refused "$(forbidden os_compute_api:os-hypervisors:list-detail)" openstack hypervisor list
    refused "$(forbidden os_compute_api:os-flavor-manage:create)" \
        openstack flavor create --ram 256 --disk 1 --vcpus 1 "$NAME-flavor"
    ok "compute service list, hypervisor list and flavor create need admin (403, as in Nova)"
fi

if [ "$MODE" = keystone ]; then
    step "tokens: none or a bad one is a 401 naming Keystone; cli-a-member's is accepted (curl)"
    http GET "$NETCACHE_URL/v2.1/servers"
    [ "$CODE" = 401 ] || fail "a request without a token got HTTP $CODE, not 401"
    grep -i '^www-authenticate:' "$TMP/http-headers" || fail "no WWW-Authenticate header with the 401"
    grep -iqF "www-authenticate: Keystone uri=\"$KS_URL" "$TMP/http-headers" \
        || fail "WWW-Authenticate does not name Keystone uri=\"$KS_URL\""
    http GET "$NETCACHE_URL/v2.1/servers" -H 'X-Auth-Token: not-a-token'
    [ "$CODE" = 401 ] || fail "a request with a bad token got HTTP $CODE, not 401"
    # identity headers are ignored when a token is checked
    http GET "$NETCACHE_URL/v2.1/servers" "${NETCACHE_USER[@]}" -H 'X-Roles: admin' -H "X-Project-Id: $PROJECT_B"
    [ "$CODE" = 200 ] || fail "cli-a-member's token got HTTP $CODE"
    contains "$(jq_py '[s["id"] for s in d["servers"]]' < "$TMP/http-body")" "$SERVER_ID" || fail "cli-a-member's list lacks $SERVER_ID"
    ok "401 + WWW-Authenticate without a valid token; a member's token lists its project's server"

    step "cli-a-reader: server list and show, but server create and delete are 403"
    run openstack --os-cloud cli-a-reader server list -f json
    contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" || fail "the reader does not list $SERVER_ID"
    run openstack --os-cloud cli-a-reader server show "$SERVER_ID" -f json -c id -c status
    [ "$(jq_py 'd["status"]' <<< "$OUT")" = ACTIVE ] || fail "the reader does not see $SERVER_ID ACTIVE"
    refused "$(forbidden os_compute_api:servers:create)" \
        openstack --os-cloud cli-a-reader server create --flavor "$FLAVOR" --image "$IMAGE" --network "$PRIVATE" "$NAME-reader"
    refused "$(forbidden os_compute_api:servers:delete)" openstack --os-cloud cli-a-reader server delete "$SERVER_ID"
    run openstack server list -f json
    STRAY=$(jq_py "' '.join(s['ID'] for s in d if s['Name'] == '$NAME-reader')" <<< "$OUT")
    if [ -n "$STRAY" ]; then
        STRAY_SERVERS+=("cli-a-member $STRAY")
        fail "the reader's server create made $STRAY"
    fi
    run openstack server show "$SERVER_ID" -f value -c status
    [ "$OUT" = ACTIVE ] || fail "$SERVER_ID is $OUT after the reader's delete"
    ok "reader lists and shows $SERVER_ID; its create and delete are refused (403), nothing changed"

    step "cli-b-member: cli-a's server is not listed, not shown (404), its network not bootable"
    run openstack --os-cloud cli-b-member server list -f json
    contains "$(jq_py '[s["ID"] for s in d]' <<< "$OUT")" "$SERVER_ID" && fail "cli-b-member lists cli-a's $SERVER_ID"
    refused "$SERVER_ID" openstack --os-cloud cli-b-member server show "$SERVER_ID"
    http GET "$NETCACHE_URL/v2.1/servers/$SERVER_ID" -H "X-Auth-Token: $B_MEMBER_TOKEN"
    [ "$CODE" = 404 ] || fail "cli-b-member's GET of cli-a's server: HTTP $CODE, not 404"
    # the CLI resolves --network in Neutron first (as cli-b: not found) ...
    refused '' openstack --os-cloud cli-b-member server create --flavor "$FLAVOR" --image "$IMAGE" \
        --network "$PRIVATE" --wait "$NAME-b"
    # ... so ask netcache directly, as Nova's API would be asked
    http POST "$NETCACHE_URL/v2.1/servers" -H "X-Auth-Token: $B_MEMBER_TOKEN" -H 'Content-Type: application/json' \
        -d "{\"server\":{\"name\":\"$NAME-b\",\"flavorRef\":\"$FLAVOR_ID\",\"imageRef\":\"$IMAGE_ID\",\"networks\":[{\"uuid\":\"$PRIVATE\"}]}}"
    if [ "$CODE" -lt 400 ]; then
        STRAY=$(jq_py 'd["server"]["id"]' < "$TMP/http-body")
        STRAY_SERVERS+=("cli-b-member $STRAY")
        fail "netcache accepted cli-b-member's server on cli-a's network $PRIVATE (HTTP $CODE, server $STRAY)"
    fi
    [ "$CODE" -lt 500 ] || fail "netcache answered HTTP $CODE"
    run openstack --os-cloud cli-b-member server list -f json
    STRAY=$(jq_py "' '.join(s['ID'] for s in d if s['Name'] == '$NAME-b')" <<< "$OUT")
    if [ -n "$STRAY" ]; then
        STRAY_SERVERS+=("cli-b-member $STRAY")
        fail "cli-b-member has a server $NAME-b: $STRAY"
    fi
    ok "cli-a's server is invisible to cli-b (404); booting on cli-a's network is refused (HTTP $CODE)"

    step "server list --all-projects as cli-a-member"
    refused "$(forbidden os_compute_api:servers:detail:get_all_tenants)" openstack server list --all-projects
    ok "--all-projects needs admin (403, as in Nova)"
fi

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
contains "$(jq_py "d['addresses'].get('$NET', [])" <<< "$OUT")" "$USER_IP" || fail "server show lacks $USER_IP after add port"
run openstack port show "$USER_PORT" -f json -c device_id -c device_owner -c binding_host_id -c status
[ "$(jq_py 'd["device_id"]' <<< "$OUT")" = "$SERVER_ID" ] || fail "the port's device_id is not the server"
ok "$USER_PORT attached: in port list --server and in server show ($USER_IP)"

step "server remove port"
run openstack server remove port "$SERVER_ID" "$USER_PORT"
user_port_gone() { ! contains "$(server_port_ids)" "$USER_PORT"; }
wait_for "$USER_PORT to leave port list --server" user_port_gone
run openstack port list --server "$SERVER_ID" -f json
run openstack server show "$SERVER_ID" -f json -c addresses
contains "$(jq_py "d['addresses'].get('$NET', [])" <<< "$OUT")" "$USER_IP" && fail "server show still has $USER_IP after remove port"
run openstack port show "$USER_PORT" -f json -c device_id -c device_owner -c status
[ "$(jq_py 'd["device_id"]' <<< "$OUT")" = "" ] || fail "the user's port still names a device"
ok "$USER_PORT detached and kept (a user's port is unbound, never deleted)"

step "server add network"
run openstack server add network "$SERVER_ID" "$NET"
run openstack port list --server "$SERVER_ID" -f json
[ "$(jq_py 'len(d)' <<< "$OUT")" = 2 ] || fail "expected two ports after add network"
NEW_IP=$(jq_py "[p['Fixed IP Addresses'][0]['ip_address'] for p in d if p['ID'] != '$BOOT_PORT'][0]" <<< "$OUT")
run openstack server show "$SERVER_ID" -f json -c addresses
[ "$(jq_py "sorted(d['addresses']['$NET'])" <<< "$OUT")" = "$(python3 -c 'import json,sys; print(json.dumps(sorted(sys.argv[1:])))' "$BOOT_IP" "$NEW_IP")" ] \
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
        # as a service: noauth X-Roles: service, keystone a token of user nova
        http POST "$NETCACHE_URL/v2.1/os-server-external-events" -H 'Content-Type: application/json' \
            "${NETCACHE_SERVICE[@]}" -d "{\"events\":[{\"name\":\"network-changed\",\"server_uuid\":\"$SERVER_ID\"}]}"
        [ "$CODE" = 200 ] || fail "netcache refused the external event: HTTP $CODE"
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
contains "$(jq_py "d['addresses'].get('$NET', [])" <<< "$OUT")" "$GHOST_IP" && fail "netcache shows the ghost's $GHOST_IP"
http GET "$NETCACHE_URL/v2.1/servers/$SERVER_ID/os-interface" "${NETCACHE_USER[@]}"
[ "$CODE" = 200 ] || fail "os-interface: HTTP $CODE"
OUT=$(cat "$TMP/http-body")
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
