# Sourced by the client checks (scripts/ansible-check.sh, scripts/openstacksdk-check.sh),
# after they set CHECK_NAME: messages, their one argument, their venv's lock and pins.

die() { echo "$CHECK_NAME: $*" >&2; exit 1; }
log() { echo "$CHECK_NAME: $*" >&2; }

# `keystone_url_arg "$@"`: KS_URL from the one argument (Keystone's URL, loopback
# only, /v3 added if missing); the script's header as usage otherwise.
keystone_url_arg() {
    [ $# -eq 1 ] || { sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }
    KS_URL=${1%/}
    KS_URL=${KS_URL%/v3}/v3
    [[ $KS_URL =~ ^http://(127\.[0-9.]+|localhost)(:[0-9]+)?/v3$ ]] || die "refusing non-loopback Keystone URL $KS_URL"
}

# `lock_venv VENV`: holds VENV's lock (descriptor 7) so two runs do not install
# into it at once; `exec 7>&-` releases it.
lock_venv() {
    mkdir -p "$(dirname "$1")"
    exec 7>"$1.lock"
    flock -w 1200 7 || die "timed out waiting for $1.lock"
}

# `venv_has VENV SPEC...`: whether VENV's python has each NAME==VERSION installed
# (a bare NAME: any version).
venv_has() {
    local venv=$1
    shift
    "$venv/bin/python" - "$@" <<'PY' 2>/dev/null
import sys
from importlib import metadata
for spec in sys.argv[1:]:
    name, _, version = spec.partition("==")
    if metadata.version(name) != (version or metadata.version(name)):
        sys.exit(1)
PY
}
