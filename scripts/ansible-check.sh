#!/usr/bin/env bash
# Drives netcache with Ansible's openstack.cloud collection, as a user would:
# scripts/ansible/create.yml twice, then scripts/ansible/teardown.yml twice.
# Each playbook's first run must not fail, its second must report changed=0
# and failed=0 (idempotence: every module reads back what it made). Prints
# each run's output and recap; exits non-zero if any run is not as required.
#
#   scripts/ansible-check.sh KEYSTONE_URL      (e.g. http://127.0.0.1:15000/v3)
#
# Needs, on 127.0.0.1: Keystone as scripts/keystone.sh makes it (admin user and
# project; catalog compute = netcache's /v2.1, image = netcache's /image,
# network = a real Neutron with Keystone auth), netcache with
# auth.strategy = keystone. clouds.yaml (scripts/clouds_yaml.py): `ansible-admin` (admin),
# which create.yml uses to make project ansible-check and user ansible-member
# (member role), and `ansible-member`, which does the rest; both
# auth_type password, interface public, endpoints from the catalog.
#
# The venv (ansible-core, openstacksdk, and the openstack.cloud collection
# taken from the `ansible` package on PyPI) is made once under a lock.
#
# Environment:
#   ANSIBLE_VENV              venv path       ($HOME/.cache/netcache/ansible-venv)
#   CHECK_KEYSTONE_ADMIN_PASSWORD   Keystone admin's password (secret)
#   CHECK_USER_PASSWORD       ansible-member's password on creation (ansible-check-secret)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHECK_NAME=ansible-check
# shellcheck source=client-checks.sh
. "$HERE/client-checks.sh"
VENV=${ANSIBLE_VENV:-$HOME/.cache/netcache/ansible-venv}
# ansible-core 2.19 is the newest for Python 3.11; the `ansible` package of the
# same line carries openstack.cloud 2.5.0, the only file taken from it, which
# reads openstack.version (gone from openstacksdk 4.15.0 on).
ANSIBLE_CORE_SPEC=ansible-core==2.19.14
OPENSTACKSDK_SPEC=openstacksdk==4.14.0
COLLECTION_FROM=ansible==12.3.0
COLLECTIONS=$VENV/collections

keystone_url_arg "$@"

# The venv and the collection, made once (under the venv's lock).
ensure_venv() {
    lock_venv "$VENV"
    if ! venv_has "$VENV" "$ANSIBLE_CORE_SPEC" "$OPENSTACKSDK_SPEC" || [ ! -f "$COLLECTIONS/ansible_collections/openstack/cloud/MANIFEST.json" ]; then
        log "installing $ANSIBLE_CORE_SPEC, $OPENSTACKSDK_SPEC and openstack.cloud (from $COLLECTION_FROM) into $VENV"
        "${PYTHON:-python3}" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet "$ANSIBLE_CORE_SPEC" "$OPENSTACKSDK_SPEC" >&2 \
            || die "pip install failed"
        local wheel_dir
        wheel_dir=$(mktemp -d)
        "$VENV/bin/python" -m pip download --quiet --no-deps -d "$wheel_dir" "$COLLECTION_FROM" >&2 \
            || die "pip download $COLLECTION_FROM failed"
        rm -rf "$COLLECTIONS"
        "$VENV/bin/python" - "$wheel_dir"/*.whl "$COLLECTIONS" <<'PY' || die "extracting openstack.cloud failed"
import sys, zipfile
wheel, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith("ansible_collections/openstack/cloud/")]
    if not members:
        sys.exit(f"no openstack.cloud in {wheel}")
    z.extractall(target, members)
PY
        rm -rf "$wheel_dir"
    fi
    exec 7>&-
}
ensure_venv

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# One key for all four runs (a key pair found with another key would be a change).
ssh-keygen -q -t ed25519 -N '' -C ansible-check -f "$TMP/id" || die "ssh-keygen failed"

USER_PASSWORD=${CHECK_USER_PASSWORD:-ansible-check-secret}
python3 "$HERE/clouds_yaml.py" "$KS_URL" "$TMP/clouds.yaml" \
    ansible-admin admin "${CHECK_KEYSTONE_ADMIN_PASSWORD:-secret}" admin \
    ansible-member ansible-member "$USER_PASSWORD" ansible-check || die "writing clouds.yaml failed"

# Only these clouds and this collection, whatever the environment says.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(OS_[A-Z_]*\)=.*/\1/p')
export OS_CLIENT_CONFIG_FILE=$TMP/clouds.yaml
export ANSIBLE_COLLECTIONS_PATH=$COLLECTIONS ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False
export ANSIBLE_HOME=$TMP/ansible-home ANSIBLE_LOCAL_TEMP=$TMP/ansible-tmp ANSIBLE_REMOTE_TEMP=$TMP/ansible-remote
export ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=False ANSIBLE_INVENTORY_UNPARSED_WARNING=False
export ANSIBLE_RETRY_FILES_ENABLED=False PYTHONWARNINGS=ignore
export ANSIBLE_CHECK_PASSWORD=$USER_PASSWORD ANSIBLE_CHECK_PUBLIC_KEY
ANSIBLE_CHECK_PUBLIC_KEY=$(cat "$TMP/id.pub")
VERSION=$("$VENV/bin/ansible-playbook" --version) || die "ansible-playbook --version failed"
echo "${VERSION%%$'\n'*}"
echo "openstack.cloud $("$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' \
    "$COLLECTIONS/ansible_collections/openstack/cloud/MANIFEST.json"), openstacksdk ${OPENSTACKSDK_SPEC#*==}"

PROBLEMS=()
RECAPS=()
# `play PLAYBOOK RUN`: runs it; RUN 2 must change nothing; no run may fail.
play() {
    local playbook=$1 run=$2 rc=0 recap
    echo
    echo "== $playbook, run $run"
    # (no inventory: the implicit localhost, local connection, this venv's python)
    "$VENV/bin/ansible-playbook" "$HERE/ansible/$playbook" > "$TMP/out" 2>&1 || rc=$?
    cat "$TMP/out"
    recap=$(sed -n '/^PLAY RECAP/,$p' "$TMP/out" | grep -E '^localhost +:' || true)
    RECAPS+=("$playbook run $run: ${recap:-no recap} (exit status $rc)")
    [ -n "$recap" ] || { PROBLEMS+=("$playbook run $run: no recap (exit status $rc)"); return; }
    [ "$rc" -eq 0 ] && [[ $recap =~ unreachable=0\ .*failed=0 ]] || PROBLEMS+=("$playbook run $run failed: $recap")
    if [ "$run" = 2 ] && ! [[ $recap =~ changed=0[^0-9] ]]; then
        PROBLEMS+=("$playbook run 2 changed something: $recap ($(grep -E '^changed:' "$TMP/out" | tr '\n' ' '))")
    fi
}
play create.yml 1
play create.yml 2
play teardown.yml 1
play teardown.yml 2

echo
echo "== recaps"
printf '%s\n' "${RECAPS[@]}"
if [ ${#PROBLEMS[@]} -gt 0 ]; then
    echo
    printf 'FAIL: %s\n' "${PROBLEMS[@]}" >&2
    exit 1
fi
echo "PASS: openstack.cloud against netcache: create and teardown each idempotent (second runs changed=0)"
