#!/usr/bin/env bash
# Runs OpenStack Tempest (47.0.0) against netcache's compute API: CI's tier 5.
#
#   scripts/tempest.sh WORKSPACE
#
# Needs, all on 127.0.0.1: Keystone as scripts/keystone.sh makes it (admin user
# and project, RegionOne catalog: compute = netcache's /v2.1, image = netcache's
# /image, network = the real Neutron), the real Neutron with Keystone auth
# (scripts/real-neutron.sh, NEUTRON_AUTH_URL), `netcache serve` with
# auth.strategy = keystone. Tempest finds every endpoint in the catalog.
#
# Steps: Tempest venv (made once, $TEMPEST_VENV); `tempest init WORKSPACE`
# (WORKSPACE must be new or empty, or an earlier workspace of this script,
# which is reused); as admin through the `openstack` CLI: the external network
# PUBLIC_NETWORK_NAME (with a subnet) if missing, for dynamic credentials'
# routers, and netcache's image list (the first image is image_ref, the
# second, if any, image_ref_alt);
# WORKSPACE/etc/tempest.conf from scripts/tempest/tempest.conf.in;
# `tempest run --concurrency N --include-list scripts/tempest/include-list.txt`;
# then a pass/fail/skip table per test class (scripts/tempest/summary.py over
# `stestr last --subunit`). Exits non-zero if a test or a class's setup failed,
# or if no test ran.
#
# Environment:
#   KEYSTONE_URL          Keystone v3 URL (required), e.g. http://127.0.0.1:15000/v3
#   ADMIN_USERNAME, ADMIN_PASSWORD, ADMIN_PROJECT_NAME   (admin, secret, admin:
#                         what scripts/keystone.sh bootstraps)
#   TEMPEST_VENV          venv path                  ($HOME/.cache/netcache/tempest-venv)
#   TEMPEST_INCLUDE_LIST  tests to run               (scripts/tempest/include-list.txt)
#   TEMPEST_REGEX         run these instead of the include list (tempest run --regex)
#   TEMPEST_CONCURRENCY   test workers                                      (1)
#   TEMPEST_BUILD_TIMEOUT seconds a server may take to become ACTIVE         (60)
#   TEMPEST_TIMEOUT       seconds the whole `tempest run` may take; then it is
#                         killed (with its workers) and the run fails       (1800)
#                         (the 168 tests took 13 min on an idle 2-core machine,
#                         and 137 of them the whole 15 min on one busy with builds)
#   TEMPEST_DEBUG=1       debug logging in WORKSPACE/logs/tempest.log
#   TEMPEST_RESULTS       also write the per-test outcomes there as TSV (class,
#                         test, outcome, first line of the reason) and as
#                         Markdown tables (TEMPEST_RESULTS.md)
#   PUBLIC_NETWORK_NAME   external network                        (tempest-public)
#   PUBLIC_SUBNET_CIDR    its subnet                                 (172.25.0.0/24)
#   IMAGE_REF, IMAGE_REF_ALT   override the images found in netcache's /image
#   OPENSTACK             the openstack CLI (default: on PATH, else the one in
#                         scripts/real-neutron.sh's venv)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VENV=${TEMPEST_VENV:-$HOME/.cache/netcache/tempest-venv}
TEMPEST_SPEC=tempest==47.0.0

die() { echo "tempest: $*" >&2; exit 1; }
log() { echo "tempest: $*" >&2; }

[ $# -eq 1 ] || { sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ -n "${KEYSTONE_URL:-}" ] || die "KEYSTONE_URL is not set (Keystone's v3 URL)"
KEYSTONE_URL=${KEYSTONE_URL%/}
ADMIN_USERNAME=${ADMIN_USERNAME:-admin}
ADMIN_PASSWORD=${ADMIN_PASSWORD:-secret}
ADMIN_PROJECT_NAME=${ADMIN_PROJECT_NAME:-admin}
INCLUDE_LIST=${TEMPEST_INCLUDE_LIST:-$ROOT/scripts/tempest/include-list.txt}
CONCURRENCY=${TEMPEST_CONCURRENCY:-1}
BUILD_TIMEOUT=${TEMPEST_BUILD_TIMEOUT:-60}
RUN_TIMEOUT=${TEMPEST_TIMEOUT:-1800}
PUBLIC_NETWORK_NAME=${PUBLIC_NETWORK_NAME:-tempest-public}
PUBLIC_SUBNET_CIDR=${PUBLIC_SUBNET_CIDR:-172.25.0.0/24}
DEBUG=False
if [ "${TEMPEST_DEBUG:-0}" = 1 ]; then DEBUG=True; fi
mkdir -p "$1"
WORKSPACE=$(cd "$1" && pwd)

# The venv, made once; under a lock so two runs do not install into it at once.
ensure_venv() {
    mkdir -p "$(dirname "$VENV")"
    exec 8>"$VENV.lock"
    flock -w 1200 8 || die "timed out waiting for $VENV.lock"
    if [ "$("$VENV/bin/python" -c 'from importlib import metadata; print(metadata.version("tempest"))' 2>/dev/null)" != "${TEMPEST_SPEC#tempest==}" ]; then
        log "installing $TEMPEST_SPEC into $VENV from PyPI (a first install takes a few minutes)"
        "${PYTHON:-python3}" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet "$TEMPEST_SPEC" >&2 || die "pip install $TEMPEST_SPEC failed"
    fi
    exec 8>&-
}

# `tempest init`, unless WORKSPACE already is one of ours. The workspace
# registry goes to a scratch file, not ~/.tempest/workspace.yaml (a name
# registered there twice is an error).
init_workspace() {
    if [ -f "$WORKSPACE/.stestr.conf" ] && [ -d "$WORKSPACE/etc" ]; then
        log "reusing workspace $WORKSPACE"
        return
    fi
    [ -z "$(ls -A "$WORKSPACE")" ] || die "$WORKSPACE is neither empty nor a Tempest workspace"
    local registry
    registry=$(mktemp -d)
    "$VENV/bin/tempest" init --workspace-path "$registry/workspace.yaml" "$WORKSPACE" >&2 \
        || { rm -rf "$registry"; die "tempest init $WORKSPACE failed"; }
    rm -rf "$registry"
}

find_openstack() {
    if [ -n "${OPENSTACK:-}" ]; then return; fi
    if command -v openstack >/dev/null; then
        OPENSTACK=$(command -v openstack)
    else
        OPENSTACK="$("$ROOT/scripts/real-neutron.sh" env)/openstack"
    fi
    [ -x "$OPENSTACK" ] || die "no openstack CLI ($OPENSTACK)"
}

# The openstack CLI as Keystone's admin, endpoints from the catalog.
os_admin() {
    env -u OS_CLOUD -u OS_CLIENT_CONFIG_FILE -u OS_TOKEN -u OS_AUTH_TYPE \
        OS_AUTH_URL="$KEYSTONE_URL" OS_IDENTITY_API_VERSION=3 \
        OS_USERNAME="$ADMIN_USERNAME" OS_PASSWORD="$ADMIN_PASSWORD" \
        OS_PROJECT_NAME="$ADMIN_PROJECT_NAME" OS_USER_DOMAIN_NAME=Default \
        OS_PROJECT_DOMAIN_NAME=Default OS_REGION_NAME=RegionOne OS_INTERFACE=public \
        PYTHONWARNINGS=ignore "$OPENSTACK" "$@"
}

# The external network, found by name, else made (with a subnet): dynamic
# credentials set each class's router's gateway on it. (Classes that ask for
# no isolated network, e.g. the admin test_server_external_events, boot without
# `networks`: with no network to use, netcache boots the server without an
# interface, as Nova does at 2.1.)
ensure_public_network() {
    PUBLIC_NETWORK_ID=$(os_admin network list --external --name "$PUBLIC_NETWORK_NAME" -f value -c ID | head -n 1)
    if [ -z "$PUBLIC_NETWORK_ID" ]; then
        log "creating external network $PUBLIC_NETWORK_NAME ($PUBLIC_SUBNET_CIDR)"
        PUBLIC_NETWORK_ID=$(os_admin network create --external "$PUBLIC_NETWORK_NAME" -f value -c id)
    fi
    if [ -z "$(os_admin subnet list --network "$PUBLIC_NETWORK_ID" -f value -c ID)" ]; then
        os_admin subnet create --network "$PUBLIC_NETWORK_ID" --subnet-range "$PUBLIC_SUBNET_CIDR" \
            --no-dhcp "$PUBLIC_NETWORK_NAME-subnet" -f value -c id >/dev/null
    fi
    log "public network $PUBLIC_NETWORK_NAME: $PUBLIC_NETWORK_ID"
}

# image_ref and image_ref_alt: netcache's /image lists a fixed catalog
# (crates/netcache-api/src/images.rs); with one image both are that one.
find_images() {
    if [ -z "${IMAGE_REF:-}" ]; then
        local ids
        ids=$(os_admin image list -f value -c ID) || die "cannot list images (is netcache's /image in the catalog and netcache up?)"
        IMAGE_REF=$(sed -n 1p <<< "$ids")
        [ -n "$IMAGE_REF" ] || die "the image service lists no image"
        IMAGE_REF_ALT=${IMAGE_REF_ALT:-$(sed -n 2p <<< "$ids")}
    fi
    IMAGE_REF_ALT=${IMAGE_REF_ALT:-$IMAGE_REF}
    log "image_ref $IMAGE_REF, image_ref_alt $IMAGE_REF_ALT"
}

# @NAME@ placeholders of the template (values may hold / & |).
render_conf() {
    local text key
    text=$(<"$ROOT/scripts/tempest/tempest.conf.in")
    for key in WORKSPACE DEBUG KEYSTONE_URL ADMIN_USERNAME ADMIN_PASSWORD ADMIN_PROJECT_NAME \
        IMAGE_REF IMAGE_REF_ALT BUILD_TIMEOUT PUBLIC_NETWORK_ID PUBLIC_NETWORK_NAME; do
        text=${text//"@$key@"/"${!key}"}
    done
    if grep -q '@[A-Z_]*@' <<< "$text"; then
        die "placeholders left in tempest.conf: $(grep -o '@[A-Z_]*@' <<< "$text" | sort -u | tr '\n' ' ')"
    fi
    printf '%s\n' "$text" > "$WORKSPACE/etc/tempest.conf"
}

ensure_venv
init_workspace
find_openstack
ensure_public_network
find_images
render_conf

selection=()
if [ -n "${TEMPEST_REGEX:-}" ]; then
    selection=(--regex "$TEMPEST_REGEX")
else
    [ -s "$INCLUDE_LIST" ] || die "include list $INCLUDE_LIST is missing or empty"
    INCLUDE_LIST=$(cd "$(dirname "$INCLUDE_LIST")" && pwd)/$(basename "$INCLUDE_LIST")
    selection=(--include-list "$INCLUDE_LIST")
fi

log "tempest run --concurrency $CONCURRENCY ${selection[*]} (workspace $WORKSPACE)"
t0=$SECONDS
rc=0
# timeout runs tempest in a process group of its own and signals all of it.
(cd "$WORKSPACE" && PYTHONWARNINGS=ignore timeout -k 30 "$RUN_TIMEOUT" \
    "$VENV/bin/tempest" run --concurrency "$CONCURRENCY" "${selection[@]}") || rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    log "tempest run did not finish within ${RUN_TIMEOUT}s (TEMPEST_TIMEOUT): killed"
fi
log "tempest run exited $rc after $((SECONDS - t0))s"

echo "== Tempest results per class"
summary_args=()
if [ -n "${TEMPEST_RESULTS:-}" ]; then
    summary_args=(--tsv "$TEMPEST_RESULTS" --markdown "$TEMPEST_RESULTS.md")
fi
src=0
(cd "$WORKSPACE" && "$VENV/bin/stestr" last --subunit) \
    | "$VENV/bin/python" "$ROOT/scripts/tempest/summary.py" "${summary_args[@]}" || src=$?
if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ]; then
    die "Tempest failed (tempest run: $rc, summary: $src); log: $WORKSPACE/logs/tempest.log"
fi
echo "Tempest passed"
