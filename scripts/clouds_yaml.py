"""Writes the clouds.yaml of the client checks (scripts/ansible-check.sh,
scripts/openstacksdk-check.sh): one password-auth cloud per user against one
Keystone, Default domain, interface public, RegionOne, every other endpoint
from the catalog. JSON, which YAML readers take as it is.

Usage: clouds_yaml.py AUTH_URL OUT [CLOUD USER PASSWORD PROJECT]...
PROJECT `@system` scopes that cloud to the system instead of a project.
"""
import json
import sys

auth_url, out, *rest = sys.argv[1:]
if not rest or len(rest) % 4:
    sys.exit(__doc__)
clouds = {}
for at in range(0, len(rest), 4):
    name, user, password, project = rest[at:at + 4]
    auth = {'auth_url': auth_url, 'username': user, 'password': password,
            'user_domain_name': 'Default'}
    if project == '@system':
        auth['system_scope'] = 'all'
    else:
        auth.update(project_name=project, project_domain_name='Default')
    clouds[name] = {'auth_type': 'password', 'auth': auth, 'identity_api_version': '3',
                    'region_name': 'RegionOne', 'interface': 'public'}
with open(out, 'w') as f:
    json.dump({'clouds': clouds}, f, indent=2)
