#!/usr/bin/env bash
# Runs openstacksdk's own functional compute tests (openstack/tests/functional/
# compute/v2 and cloud/test_compute.py, shipped in its wheel) against netcache:
# those of scripts/openstacksdk/tests.txt (no block storage, no image upload,
# nothing netcache does not serve by design), with pytest. Prints each test's
# outcome and the pass/fail/skip counts; exits non-zero on any failure or error,
# or when no test ran.
#
#   scripts/openstacksdk-check.sh KEYSTONE_URL     (e.g. http://127.0.0.1:15000/v3)
#
# Needs, on 127.0.0.1: Keystone as scripts/keystone.sh makes it (admin user and
# project; catalog compute = netcache's /v2.1, image = netcache's /image,
# network = a real Neutron with Keystone auth), netcache with
# auth.strategy = keystone. The clouds.yaml the tests read (scripts/clouds_yaml.py):
# devstack (user demo), devstack-alt (alt_demo), devstack-admin and
# devstack-system-admin (admin); scripts/openstacksdk/prepare.py makes, as admin,
# the projects, users and networks. Upstream's assumption of
# a block-storage service is lifted by scripts/openstacksdk/without_block_storage.py.
#
# The venv (openstacksdk and the tests' own requirements) is made once under a lock.
#
# Environment:
#   OPENSTACKSDK_VENV        venv path     ($HOME/.cache/netcache/openstacksdk-venv)
#   CHECK_KEYSTONE_ADMIN_PASSWORD   Keystone admin's password            (secret)
#   CHECK_USER_PASSWORD      the test users' password          (sdk-check-secret)
#   OPENSTACKSDK_IMAGE       image to boot (default: the first of netcache's /image)
#   OPENSTACKSDK_FLAVOR      flavor to boot                               (m1.tiny)
#   OPENSTACKSDK_FUNC_TEST_TIMEOUT  seconds a wait for a server may take    (60)
#   OS_TEST_TIMEOUT          seconds one test may take                      (180)
#   CHECK_TESTS              run these node ids (space-separated) instead of tests.txt
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHECK_NAME=openstacksdk-check
# shellcheck source=client-checks.sh
. "$HERE/client-checks.sh"
VENV=${OPENSTACKSDK_VENV:-$HOME/.cache/netcache/openstacksdk-venv}
# The tests' requirements are openstacksdk's test-requirements.txt, less what
# only its unit tests use.
REQUIREMENTS=(openstacksdk==4.22.0 pytest==8.4.2 oslotest fixtures testtools)

keystone_url_arg "$@"

ensure_venv() {
    lock_venv "$VENV"
    if ! venv_has "$VENV" "${REQUIREMENTS[@]}"; then
        log "installing ${REQUIREMENTS[*]} into $VENV"
        "${PYTHON:-python3}" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet "${REQUIREMENTS[@]}" >&2 || die "pip install failed"
    fi
    exec 7>&-
}
ensure_venv

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Only these clouds, whatever the environment says.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(OS_[A-Z_]*\)=.*/\1/p')
export OS_CLIENT_CONFIG_FILE=$TMP/clouds.yaml PYTHONWARNINGS=ignore
USER_PASSWORD=${CHECK_USER_PASSWORD:-sdk-check-secret}
ADMIN_PASSWORD=${CHECK_KEYSTONE_ADMIN_PASSWORD:-secret}
python3 "$HERE/clouds_yaml.py" "$KS_URL" "$OS_CLIENT_CONFIG_FILE" \
    devstack demo "$USER_PASSWORD" demo devstack-alt alt_demo "$USER_PASSWORD" alt_demo \
    devstack-admin admin "$ADMIN_PASSWORD" admin devstack-system-admin admin "$ADMIN_PASSWORD" @system \
    || die "writing clouds.yaml failed"
# Floating IPs come from `public`, the external network prepare.py routes the
# projects to (other tiers may leave other external networks on a shared Neutron).
python3 - "$OS_CLIENT_CONFIG_FILE" <<'PY' || die "naming the NAT source failed"
import json, sys
path = sys.argv[1]
config = json.load(open(path))
for cloud in config['clouds'].values():
    cloud['networks'] = [{'name': 'public', 'routes_externally': True, 'nat_source': True}]
json.dump(config, open(path, 'w'), indent=2)
PY
"$VENV/bin/python" "$HERE/openstacksdk/prepare.py" "$USER_PASSWORD" || die "set-up failed"

if [ -z "${OPENSTACKSDK_IMAGE:-}" ]; then
    OPENSTACKSDK_IMAGE=$("$VENV/bin/python" -c '
import openstack
print(next(openstack.connect(cloud="devstack").image.images()).name)') || die "no image in the catalog's image service"
fi
export OPENSTACKSDK_IMAGE OPENSTACKSDK_FLAVOR=${OPENSTACKSDK_FLAVOR:-m1.tiny}
export OPENSTACKSDK_FUNC_TEST_TIMEOUT=${OPENSTACKSDK_FUNC_TEST_TIMEOUT:-60} OS_TEST_TIMEOUT=${OS_TEST_TIMEOUT:-180}
echo "openstacksdk $("$VENV/bin/python" -c 'from importlib import metadata; print(metadata.version("openstacksdk"))');" \
    "image $OPENSTACKSDK_IMAGE, flavor $OPENSTACKSDK_FLAVOR"

FUNCTIONAL=$("$VENV/bin/python" -c 'import os, openstack.tests.functional as f; print(os.path.dirname(f.__file__))')
if [ -n "${CHECK_TESTS:-}" ]; then
    read -r -a TESTS <<< "$CHECK_TESTS"
else
    mapfile -t TESTS < <(sed 's/#.*//; s/[[:space:]]*$//; /^$/d' "$HERE/openstacksdk/tests.txt")
fi

rc=0
(cd "$FUNCTIONAL" && PYTHONPATH="$HERE/openstacksdk" "$VENV/bin/python" -m pytest -p without_block_storage \
    -p no:cacheprovider --rootdir "$FUNCTIONAL" -o junit_family=xunit2 --junitxml "$TMP/results.xml" \
    -v -rfEs --tb=short "${TESTS[@]}") || rc=$?
[ -s "$TMP/results.xml" ] || die "pytest wrote no results (exit status $rc)"
"$VENV/bin/python" - "$TMP/results.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
counts = {"passed": 0, "failed": 0, "skipped": 0}
for case in ET.parse(sys.argv[1]).iter("testcase"):
    outcome = "passed"
    for child in case:
        if child.tag in ("failure", "error"):
            outcome = "failed"
        elif child.tag == "skipped" and outcome == "passed":
            outcome = "skipped"
    counts[outcome] += 1
print(f"openstacksdk: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
# pytest: 0 all passed, 1 some failed, 5 none ran; anything else is its own trouble.
case $rc in
    0) ;;
    5) die "no test ran" ;;
    *) exit 1 ;;
esac
