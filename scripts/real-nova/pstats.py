#!/usr/bin/env python3
"""Neutron calls through the two counting proxies since a snapshot.
  pstats.py snap FILE          save both proxies' counters to FILE
  pstats.py diff FILE [LABEL]  print the calls made since FILE, by caller and method + path shape
Env: NOVA_PROXY_URL (http://127.0.0.1:27697: nova-api/conductor/scheduler),
     NOVA_PROXY_COMPUTE_URL (http://127.0.0.1:27698: the nova-compute services)
(both are in NOVA_DIR/env.sh, which start.sh writes)"""
import json, os, sys, urllib.request
URLS = {'api': os.environ.get('NOVA_PROXY_URL', 'http://127.0.0.1:27697'),
        'compute': os.environ.get('NOVA_PROXY_COMPUTE_URL', 'http://127.0.0.1:27698')}
cur = {n: json.load(urllib.request.urlopen(u + '/_faultproxy/stats'))['requests'] for n, u in URLS.items()}
if sys.argv[1] == 'snap':
    json.dump(cur, open(sys.argv[2], 'w'))
    sys.exit(0)
old = json.load(open(sys.argv[2]))
label = sys.argv[3] if len(sys.argv) > 3 else ''
d = {n: {k: v - old.get(n, {}).get(k, 0) for k, v in c.items() if v - old.get(n, {}).get(k, 0)}
     for n, c in cur.items()}
tot = {n: sum(x.values()) for n, x in d.items()}
print(f'== {label}: {sum(tot.values())} Neutron calls ' + ', '.join(f'{n} {t}' for n, t in tot.items()))
for n, x in d.items():
    for k in sorted(x, key=lambda k: (-x[k], k)):
        print(f'  {n:8s}{x[k]:4d}  {k}')
