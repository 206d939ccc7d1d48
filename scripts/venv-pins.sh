# Sourced by the client checks (scripts/ansible-check.sh, scripts/openstacksdk-check.sh).
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
