#!/usr/bin/env python3
"""Issue 31 against a real Nova 34 (scripts/real-nova.sh): netcache's `nova audit` and `nova gc`
find and clean up the ghost ports of OpenStack bug 1258620, and leave everything else alone.

  scripts/real-nova-ghosts.py [--env WORKDIR/env.sh] [--phase 1|2|all] [--without-netcache]

Phase 1 (computes restarted, when needed, with [neutron] http_retries 3, timeout 5, heal 20 s):
  a control server (net1), a server booted with a user-created port (--nic port-id), a server on
  two networks (net1 + ncghost-net2), and case A: the compute-side fault proxy loses the answer
  of the next POST /v2.0/ports after Neutron committed it; keystoneauth re-sends it; heal later
  adopts the first port: A shows 2 IPs on net1.
Phase 2 (http_retries 0): the same controls, case C (the create reaches Neutron 10 s late; the
  build is rescheduled and heal adopts the late port: 2 IPs) and case E2 (the create is held
  until the server was deleted: a DOWN, unbound port with device_id = the deleted server).
Each phase then checks: `netcache nova audit --json` exits 2 naming exactly the ghosts (A, C:
  ghost_shown on the server and port; E2: leaked on the deleted server's port), nothing about
  the controls; `nova gc --dry-run --grace 2s` changes nothing (Neutron's ports: id, device_id,
  revision_number; every server's addresses); `nova gc --apply --grace 2s` leaves every server
  showing one IP per requested network, the leaked port deleted, the user's port and every port
  Nova allocated untouched; `nova audit` then exits 0. Finally it deletes its servers and ports.

Env: the rig's env file: --env, else NETCACHE_TEST_NOVA_ENV, else $NOVA_DIR/env.sh. Missing:
  prints "skipped" and exits 77, unless NETCACHE_TEST_REQUIRE_ENV=1 (then it fails).
  NETCACHE_BIN: the netcache binary (required unless --without-netcache). netcache's settings
  are set from the env file: NETCACHE_NOVA_DATABASE_URLS (the read-only user netcache_ro, cell1
  and cell0), NETCACHE_NEUTRON_URL (the real Neutron, not the proxy), NETCACHE_NEUTRON_AUTH_URL
  and the service user nova (project service); NETCACHE_TEST_NOVA_USE_API_DB=1 gives
  NETCACHE_NOVA_API_DATABASE_URL (read-only user) instead of the cell URLs.
  --without-netcache: the script plays netcache's part itself (it knows the ghosts; it deletes
  them in Neutron and sends Nova network-vif-deleted + network-changed), to test the rig and
  the checks. NETCACHE_TEST_NOVA_GRACE: gc's --grace (2s). NETCACHE_TEST_NOVA_DROP_DEADLINE:
  seconds Nova may take to stop showing a ghost after gc --apply (180; it notes when > 15 s).
Exit: 0 passed, 1 failed, 77 skipped. Needs python3 (stdlib), the mysql client, a running rig.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = time.time()
PREFIX = 'ncghost'
GRACE = os.environ.get('NETCACHE_TEST_NOVA_GRACE', '2s')   # gc's --grace
# how long Nova may take to stop showing a ghost after gc --apply (a heal pass refreshes one
# server per host per interval: without a prompt refresh from netcache, N servers x 20 s)
DROP_DEADLINE = float(os.environ.get('NETCACHE_TEST_NOVA_DROP_DEADLINE', '180'))


def say(*a):
    print(f'[{time.time() - T0:6.1f}s]', *a, flush=True)


class Fail(Exception):
    pass


def check(cond, msg, seen=None):
    if not cond:
        if seen is not None:
            msg += '\n  saw: ' + (seen if isinstance(seen, str) else json.dumps(seen, indent=1, sort_keys=True, default=str))
        raise Fail(msg)


def load_env(path):
    out = subprocess.run(['bash', '-c', 'set -a; . "$1" >/dev/null; env -0', '-', path],
                         check=True, capture_output=True).stdout
    return dict(kv.split('=', 1) for kv in out.decode().split('\0') if '=' in kv)


class Rig:
    def __init__(self, env, env_path):
        self.e = env
        self.env_path = env_path
        self.nova = env['NOVA_API_URL'].rstrip('/')
        self.neutron = env['NOVA_NEUTRON_URL'].rstrip('/')
        self.proxy = env['NOVA_PROXY_COMPUTE_URL'].rstrip('/')
        self.token = None
        ro = urllib.parse.urlparse(env['NOVA_RO_CELL_DB_URL'])
        self.ro = ro
        self.cell_db = ro.path.lstrip('/')

    # --- HTTP ---------------------------------------------------------------------------------
    def login(self):
        e = self.e
        body = {'auth': {'identity': {'methods': ['password'], 'password': {'user': {
            'name': e['OS_USERNAME'], 'password': e['OS_PASSWORD'], 'domain': {'id': 'default'}}}},
            'scope': {'project': {'name': e['OS_PROJECT_NAME'], 'domain': {'id': 'default'}}}}}
        req = urllib.request.Request(e['OS_AUTH_URL'].rstrip('/') + '/auth/tokens', json.dumps(body).encode(),
                                     {'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=60) as r:
            self.token = r.headers['X-Subject-Token']

    def http(self, method, url, body=None, ok=(200, 201, 202, 204), timeout=90):
        """(status, decoded JSON or None); statuses not in ok raise Fail. Logs in again on a 401."""
        for attempt in (1, 2):
            if self.token is None:
                self.login()
            req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
            req.add_header('Content-Type', 'application/json')
            req.add_header('X-Auth-Token', self.token)
            req.add_header('OpenStack-API-Version', 'compute 2.79')
            req.add_header('X-OpenStack-Nova-API-Version', '2.79')
            try:
                with urllib.request.urlopen(req, timeout=timeout) as r:
                    data = r.read()
                    status = r.status
            except urllib.error.HTTPError as err:
                data, status = err.read(), err.code
                if status == 401 and attempt == 1:
                    self.token = None
                    continue
            doc = json.loads(data) if data and data.strip()[:1] in (b'{', b'[') else None
            if status not in ok:
                raise Fail(f'{method} {url}: HTTP {status}: {data[:500]!r}')
            return status, doc
        raise AssertionError('unreachable')

    def proxy_call(self, method, path):
        req = urllib.request.Request(self.proxy + path, method=method, data=b'' if method == 'POST' else None)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    # --- Neutron --------------------------------------------------------------------------------
    def ports(self, **q):
        qs = urllib.parse.urlencode(q)
        return self.http('GET', f'{self.neutron}/v2.0/ports' + (f'?{qs}' if qs else ''))[1]['ports']

    def port(self, pid):
        st, doc = self.http('GET', f'{self.neutron}/v2.0/ports/{pid}', ok=(200, 404))
        return doc['port'] if st == 200 else None

    def network_id(self, name, cidr):
        nets = self.http('GET', f'{self.neutron}/v2.0/networks?name={name}')[1]['networks']
        if nets:
            nid = nets[0]['id']
        else:
            nid = self.http('POST', f'{self.neutron}/v2.0/networks', {'network': {'name': name}})[1]['network']['id']
            say(f'made network {name} {nid}')
        if not self.http('GET', f'{self.neutron}/v2.0/subnets?network_id={nid}')[1]['subnets']:
            self.http('POST', f'{self.neutron}/v2.0/subnets', {'subnet': {
                'name': name + '-sub', 'network_id': nid, 'ip_version': 4, 'cidr': cidr}})
            say(f'made subnet {cidr} on {name}')
        return nid

    # --- Nova -----------------------------------------------------------------------------------
    def server(self, sid):
        st, doc = self.http('GET', f'{self.nova}/servers/{sid}', ok=(200, 404))
        return doc['server'] if st == 200 else None

    def addresses(self, sid):
        s = self.server(sid)
        if s is None:
            return None
        return {net: sorted(a['addr'] for a in v) for net, v in s['addresses'].items()}

    def boot(self, name, networks):
        body = {'server': {'name': name, 'imageRef': self.e['NOVA_IMAGE_ID'], 'flavorRef': self.flavor,
                           'networks': networks}}
        sid = self.http('POST', f'{self.nova}/servers', body)[1]['server']['id']
        say(f'boot {name}: {sid} networks={networks}')
        return sid

    def wait_active(self, sid, name, deadline=300):
        end = time.time() + deadline
        s = None
        while time.time() < end:
            s = self.server(sid)
            if s and s['status'] == 'ACTIVE' and not s.get('OS-EXT-STS:task_state'):
                say(f'{name} ACTIVE on {s.get("OS-EXT-SRV-ATTR:host")} addresses={self.addrs_of(s)}')
                return s
            if s and s['status'] == 'ERROR':
                raise Fail(f'{name} {sid} went to ERROR: {s.get("fault")}')
            time.sleep(1)
        raise Fail(f'{name} {sid} not ACTIVE within {deadline} s', )

    @staticmethod
    def addrs_of(s):
        return {net: sorted(a['addr'] for a in v) for net, v in s['addresses'].items()}

    def delete_server(self, sid, deadline=180):
        self.http('DELETE', f'{self.nova}/servers/{sid}', ok=(204, 404))
        end = time.time() + deadline
        while time.time() < end:
            if self.server(sid) is None:
                return
            time.sleep(1)
        raise Fail(f'server {sid} not gone {deadline} s after DELETE')

    def my_servers(self):
        return [s for s in self.http('GET', f'{self.nova}/servers?all_tenants=1&name=^{PREFIX}-')[1]['servers']]

    def vif_ports(self, sid):
        return {r[0] for r in self.sql(f"select uuid from virtual_interfaces where instance_uuid='{sid}' and deleted=0")}

    # --- cell DB (read-only user) --------------------------------------------------------------
    def sql(self, q):
        ro = self.ro
        env = dict(os.environ, MYSQL_PWD=urllib.parse.unquote(ro.password or ''))
        out = subprocess.run(['mysql', '-h', ro.hostname or '127.0.0.1', '-P', str(ro.port or 3306),
                              '-u', urllib.parse.unquote(ro.username), '-N', '-B', '-e', q, self.cell_db],
                             env=env, check=True, capture_output=True, text=True).stdout
        return [line.split('\t') for line in out.splitlines()]

    # --- computes -------------------------------------------------------------------------------
    def compute_settings(self):
        got = {}
        for h in ('compute1', 'compute2'):
            with open(os.path.join(self.e['NOVA_DIR'], 'etc', f'{h}.conf')) as f:
                for line in f:
                    k, _, v = line.partition(' = ')
                    if k in ('timeout', 'http_retries', 'heal_instance_info_cache_interval'):
                        got[(h, k)] = v.strip()
        return got

    def ensure_computes(self, timeout, retries, heal):
        want = {(h, k): str(v) for h in ('compute1', 'compute2') for k, v in
                (('timeout', timeout), ('http_retries', retries), ('heal_instance_info_cache_interval', heal))}
        if self.compute_settings() == want:
            say(f'computes already run with timeout {timeout}, http_retries {retries}, heal {heal} s')
            return
        say(f'restarting both computes with timeout {timeout}, http_retries {retries}, heal {heal} s')
        t = time.time()
        env = dict(os.environ, NOVA_NEUTRON_TIMEOUT=str(timeout), NOVA_NEUTRON_HTTP_RETRIES=str(retries),
                   NOVA_HEAL_INTERVAL=str(heal), RESTART_COMPUTES='1')
        r = subprocess.run(['bash', os.path.join(HERE, 'real-nova.sh'), 'start', self.e['NOVA_DIR']],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise Fail(f'scripts/real-nova.sh start (RESTART_COMPUTES=1) failed:\n{r.stderr[-3000:]}')
        check(self.compute_settings() == want, 'the computes did not take the settings', self.compute_settings())
        say(f'computes restarted in {time.time() - t:.0f} s')


# --- netcache -------------------------------------------------------------------------------------
class Netcache:
    def __init__(self, rig, binary):
        e = rig.e
        self.bin = binary
        # netcache takes every NETCACHE_* variable for a setting and refuses unknown ones: drop
        # the project scripts' variables that are not settings (NETCACHE_TEST_*, _LOG pass)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ('NETCACHE_BIN', 'NETCACHE_VENV', 'NETCACHE_PYTHON', 'NETCACHE_FAKEBIND_STATUS')}
        if os.environ.get('NETCACHE_TEST_NOVA_USE_API_DB') == '1':
            self.env['NETCACHE_NOVA_API_DATABASE_URL'] = e['NOVA_RO_API_DB_URL']
            self.env.pop('NETCACHE_NOVA_DATABASE_URLS', None)
        else:
            self.env['NETCACHE_NOVA_DATABASE_URLS'] = f"{e['NOVA_RO_CELL_DB_URL']},{e['NOVA_RO_CELL0_DB_URL']}"
            self.env.pop('NETCACHE_NOVA_API_DATABASE_URL', None)
        self.env.update({
            'NETCACHE_NEUTRON_URL': e['NOVA_NEUTRON_URL'],
            'NETCACHE_NEUTRON_AUTH_URL': e['OS_AUTH_URL'],
            'NETCACHE_NEUTRON_USERNAME': e.get('NOVA_SERVICE_USER', 'nova'),
            'NETCACHE_NEUTRON_PASSWORD': e.get('NOVA_SERVICE_PASSWORD', 'nova-secret'),
            'NETCACHE_NEUTRON_PROJECT_NAME': e.get('NOVA_SERVICE_PROJECT', 'service'),
            'NETCACHE_NEUTRON_USER_DOMAIN_NAME': 'Default',
            'NETCACHE_NEUTRON_PROJECT_DOMAIN_NAME': 'Default',
        })
        self.env.pop('NETCACHE_NOVA_API_URL', None)   # Keystone's catalog (compute) has it
        say('netcache settings: ' + ' '.join(sorted(k for k in self.env if k.startswith('NETCACHE_')
                                                    and not k.startswith('NETCACHE_TEST_'))))

    def run(self, *args, timeout=300):
        cmd = [self.bin, *args]
        say('$', ' '.join(shlex.quote(c) for c in cmd))
        t = time.time()
        try:
            r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise Fail(f'{" ".join(cmd)}: no exit within {timeout} s; stderr: {(err.stderr or "")[-2000:]}')
        say(f'  exit {r.returncode} in {time.time() - t:.1f} s')
        for line in r.stderr.strip().splitlines()[-15:]:
            print('  stderr|', line)
        return r

    def run_json(self, *args):
        r = self.run(*args)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            raise Fail(f'{" ".join(args)}: stdout is not JSON (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}')
        return r.returncode, doc


# --- the test ---------------------------------------------------------------------------------------
class Phase:
    def __init__(self, rig, nc, n, timeout, retries, heal):
        self.rig, self.nc, self.n = rig, nc, n
        self.timeout, self.retries, self.heal = timeout, retries, heal
        self.servers = {}      # role -> {'id', 'nets': {netname: count}, 'port': user port or None}
        self.deleted = {}      # role -> server id (E2)
        self.expect = set()    # (kind, instance, port)
        self.ghosts = set()    # ports to be gone or detached after gc --apply
        self.user_port = None

    def name(self, role):
        return f'{PREFIX}-p{self.n}-{role}'

    def boot_controls(self):
        r = self.rig
        self.user_port = r.http('POST', f'{r.neutron}/v2.0/ports', {'port': {
            'network_id': r.net1, 'name': self.name('userport-port')}})[1]['port']
        say(f'user port {self.user_port["id"]} {[i["ip_address"] for i in self.user_port["fixed_ips"]]}')
        want = {'control': ([{'uuid': r.net1}], {'net1': 1}),
                'userport': ([{'port': self.user_port['id']}], {'net1': 1}),
                'twonet': ([{'uuid': r.net1}, {'uuid': r.net2}], {'net1': 1, r.net2_name: 1})}
        for role, (nets, per) in want.items():
            self.servers[role] = {'id': r.boot(self.name(role), nets), 'nets': per}
        self.servers['attach'] = {'id': r.boot(self.name('attach'), [{'uuid': r.net1}]),
                                  'nets': {'net1': 1, r.net2_name: 1}}
        for role, s in self.servers.items():
            r.wait_active(s['id'], self.name(role))
        # an interface attached after the build (os-interface, Nova allocates the port on net2)
        att = self.servers['attach']['id']
        r.http('POST', f'{r.nova}/servers/{att}/os-interface', {'interfaceAttachment': {'net_id': r.net2}})
        end, a = time.time() + 120, None
        while time.time() < end:
            a = r.addresses(att)
            if a and len(a.get(r.net2_name, [])) == 1:
                break
            time.sleep(1)
        check(a and {n: len(v) for n, v in a.items()} == {'net1': 1, r.net2_name: 1},
              'the attached interface does not show', a)
        say(f'attach: interface on {r.net2_name} attached: {a}')
        ups = r.server(self.servers['userport']['id'])
        ip = [i['ip_address'] for i in self.user_port['fixed_ips']]
        check(self.rig.addrs_of(ups).get('net1') == ip, "the user-port server does not show its port's IP",
              self.rig.addrs_of(ups))

    def wait_creates(self, armed, deadline=120):
        end = time.time() + deadline
        while time.time() < end:
            if self.rig.proxy_call('GET', '/_faultproxy/stats')['port_creates'] >= armed:
                return
            time.sleep(0.2)
        raise Fail(f'the armed POST /v2.0/ports (#{armed}) never reached the compute proxy')

    def wait_two_ips(self, role, deadline=300):
        r, sid = self.rig, self.servers[role]['id']
        say(f'waiting (up to {deadline} s) for heal to adopt the extra port: {role} showing 2 IPs on net1')
        t, end, a = time.time(), time.time() + deadline, None
        while time.time() < end:
            a = r.addresses(sid)
            if a and len(a.get('net1', [])) == 2:
                say(f'{role} shows {a} ({time.time() - t:.0f} s)')
                return
            time.sleep(2)
        raise Fail(f'{role} {sid} did not show 2 IPs within {deadline} s', a)

    def ghost_of(self, role):
        """The port with device_id = the server that Nova did not allocate (no virtual_interfaces row)."""
        r, sid = self.rig, self.servers[role]['id']
        ports = r.ports(device_id=sid)
        vifs = r.vif_ports(sid)
        extra = [p['id'] for p in ports if p['id'] not in vifs]
        check(len(ports) == 2 and len(extra) == 1, f'{role}: expected 2 ports with device_id {sid}, 1 without a VIF row',
              {'ports': [(p['id'], p['status'], p['device_owner'], p.get('binding:host_id'), p['created_at']) for p in ports],
               'virtual_interfaces': sorted(vifs)})
        say(f'{role}: ghost port {extra[0]} (Nova allocated {sorted(vifs)})')
        return extra[0]

    def boot_on_net1(self, role, armed):
        """Boots `role` on net1 and waits for its port create, the proxy's #`armed`, then for ACTIVE."""
        r = self.rig
        sid = r.boot(self.name(role), [{'uuid': r.net1}])
        self.wait_creates(armed)
        r.wait_active(sid, self.name(role))
        return sid

    def expect_ghost_shown(self, role):
        """Waits for heal to show `role`'s ghost port; audit is to name it, gc --apply to remove it."""
        self.wait_two_ips(role)
        g = self.ghost_of(role)
        self.expect.add(('ghost_shown', self.servers[role]['id'], g))
        self.ghosts.add(g)

    def case_a(self):
        r = self.rig
        armed = r.proxy_call('POST', '/_faultproxy/arm?fault=lose-after-commit&hold=30')['armed']
        say(f'case A: the proxy loses the answer of create #{armed} after Neutron commits it')
        self.servers['A'] = {'id': self.boot_on_net1('A', armed), 'nets': {'net1': 1}}
        self.expect_ghost_shown('A')

    def case_c(self):
        r = self.rig
        armed = r.proxy_call('POST', '/_faultproxy/arm?fault=late-commit&hold=30&late=10')['armed']
        say(f'case C: create #{armed} reaches Neutron 10 s late (Nova gives up after 5 s, no retry)')
        self.servers['C'] = {'id': self.boot_on_net1('C', armed), 'nets': {'net1': 1}}

    def case_c_finish(self):
        self.expect_ghost_shown('C')

    def case_e2(self):
        r = self.rig
        armed = r.proxy_call('POST', '/_faultproxy/arm?fault=late-commit&hold=30&release=1')['armed']
        say(f'case E2: create #{armed} is held until the server is deleted')
        sid = self.boot_on_net1('E2', armed)
        r.delete_server(sid)
        say(f'E2 {sid} deleted; releasing the held create')
        r.proxy_call('POST', '/_faultproxy/release')
        end, ports = time.time() + 60, []
        while time.time() < end and not ports:
            ports = r.ports(device_id=sid)
            time.sleep(0.5)
        check(len(ports) == 1, f'E2: expected 1 port with device_id {sid} after the late commit', ports)
        p = ports[0]
        say(f'E2: leaked port {p["id"]} status={p["status"]} owner={p["device_owner"]!r} '
            f'host={p.get("binding:host_id")!r}')
        self.deleted['E2'] = sid
        self.expect.add(('leaked', sid, p['id']))
        self.ghosts.add(p['id'])

    # --- the netcache checks -------------------------------------------------------------------
    def snapshot(self):
        r = self.rig
        ports = {p['id']: (p['device_id'], p['revision_number']) for p in r.ports()}
        addrs = {role: r.addresses(s['id']) for role, s in self.servers.items()}
        return ports, addrs

    def audit(self, want_exit):
        rc, doc = self.nc.run_json('nova', 'audit', '--json')
        findings = doc.get('findings', []) if isinstance(doc, dict) else None
        check(isinstance(findings, list), 'audit --json: no findings list', doc)
        for f in findings:
            print('  finding:', json.dumps(f, sort_keys=True))
        got = {(f.get('kind'), f.get('instance'), f.get('port')) for f in findings}
        want = self.expect if want_exit == 2 else set()
        check(rc == want_exit, f'nova audit exited {rc}, expected {want_exit}', doc)
        check(len(findings) == len(got) and got == want,
              f'nova audit named {sorted(map(str, got))}, expected exactly {sorted(map(str, want))}', doc)
        controls = {s['id'] for role, s in self.servers.items() if role not in ('A', 'C')}
        check(not any(f.get('instance') in controls for f in findings), 'nova audit named a control server', doc)
        say(f'audit: exit {rc}, findings as expected ({len(findings)})')

    def fake_gc(self):
        """--without-netcache: what gc --apply is to do, done by hand: delete each ghost port in
        Neutron, then tell Nova for the ones a live server shows: network-vif-deleted (tag = the
        port), and network-changed without a tag (a refresh of the whole cache from Neutron: with
        the fake virt driver, network-vif-deleted alone leaves a port that heal adopted in the
        cache, as the driver's detach_interface fails for a port it never plugged)."""
        r = self.rig
        for kind, inst, port in sorted(self.expect):
            r.http('DELETE', f'{r.neutron}/v2.0/ports/{port}', ok=(204, 404))
            say(f'(without netcache) deleted port {port} ({kind})')
            if kind == 'ghost_shown':
                r.http('POST', f'{r.nova}/os-server-external-events', {'events': [
                    {'name': 'network-vif-deleted', 'server_uuid': inst, 'tag': port},
                    {'name': 'network-changed', 'server_uuid': inst}]}, ok=(200, 207))
                say(f'(without netcache) network-vif-deleted {port} + network-changed sent for {inst}')

    def gc_checks(self, without):
        r = self.rig
        # the ports that must be left alone: every port Nova allocated (virtual_interfaces), the user's
        keep = {self.user_port['id']}
        for s in self.servers.values():
            keep |= r.vif_ports(s['id'])
        keep -= self.ghosts
        before_ports, before_addrs = self.snapshot()
        if without:
            say('(without netcache) skipping audit and gc --dry-run')
        else:
            self.audit(2)
            rc = self.nc.run('nova', 'gc', '--dry-run', '--grace', GRACE).returncode
            check(rc in (0, 2), f'nova gc --dry-run exited {rc}')
            after_ports, after_addrs = self.snapshot()
            check(after_ports == before_ports, 'gc --dry-run changed Neutron ports',
                  {'before': before_ports, 'after': after_ports})
            check(after_addrs == before_addrs, "gc --dry-run changed servers' addresses",
                  {'before': before_addrs, 'after': after_addrs})
            say('gc --dry-run changed nothing (ports, revisions, addresses)')
        t = time.time()
        if without:
            self.fake_gc()
        else:
            rc = self.nc.run('nova', 'gc', '--apply', '--grace', GRACE).returncode
            check(rc in (0, 2), f'nova gc --apply exited {rc}')
        # Nova's view: one IP per requested network (polled)
        end, bad = time.time() + DROP_DEADLINE, None
        while time.time() < end:
            bad = {}
            for role, s in self.servers.items():
                a = r.addresses(s['id'])
                if a is None or {n: len(v) for n, v in a.items()} != s['nets']:
                    bad[role] = a
            if not bad:
                break
            time.sleep(1)
        check(not bad, f'after gc --apply, servers do not show one IP per requested network ({DROP_DEADLINE:.0f} s)', bad)
        took = time.time() - t
        say(f'after gc --apply every server shows one IP per requested network ({took:.1f} s)')
        if took > 15:
            say('  NOTE: that took long: Nova dropped the ghost at a heal pass, not on what gc told it '
                '(network-vif-deleted alone does not drop a port heal adopted on the fake driver; '
                'network-changed without a tag does)')
        now = {p['id']: p for p in r.ports()}
        for g in sorted(self.ghosts):
            p = now.get(g)
            owner = [k for k, i, pp in self.expect if pp == g]
            inst = [i for k, i, pp in self.expect if pp == g][0]
            if 'leaked' in owner:
                check(p is None, f'the leaked port {g} is still there', p)
            else:
                check(p is None or p['device_id'] != inst, f'the ghost {g} is still attached to {inst}', p)
            say(f'ghost {g}: ' + ('deleted' if p is None else f'detached (device_id {p["device_id"]!r})'))
        for pid in sorted(keep):
            check(pid in now, f'port {pid} (allocated by Nova or the user\'s) was deleted')
            check((now[pid]['device_id'], now[pid]['revision_number']) == before_ports[pid],
                  f'port {pid} (allocated by Nova or the user\'s) was changed',
                  {'before': before_ports[pid], 'after': (now[pid]['device_id'], now[pid]['revision_number'])})
        say(f'the {len(keep)} allocated/user ports are untouched')
        if not without:
            self.audit(0)

    def cleanup(self):
        r = self.rig
        for role, s in self.servers.items():
            r.http('DELETE', f'{r.nova}/servers/{s["id"]}', ok=(204, 404))
        for role, s in self.servers.items():
            r.delete_server(s['id'])
        left = {}
        for role, sid in [(k, v['id']) for k, v in self.servers.items()] + list(self.deleted.items()):
            ps = r.ports(device_id=sid)
            if ps:
                left[role] = [p['id'] for p in ps]
        if self.user_port:
            r.http('DELETE', f'{r.neutron}/v2.0/ports/{self.user_port["id"]}', ok=(204, 404))
        check(not left, 'ports with the device_id of a deleted server are left', left)
        say(f'phase {self.n}: servers deleted, no port left behind')

    def run(self, without):
        t = time.time()
        say(f'=== phase {self.n}: computes with timeout {self.timeout}, http_retries {self.retries}, heal {self.heal} s')
        self.rig.ensure_computes(self.timeout, self.retries, self.heal)
        self.rig.proxy_call('POST', '/_faultproxy/disarm')
        self.boot_controls()
        if self.n == 1:
            self.case_a()
        else:
            self.case_c()
            self.case_e2()
            self.case_c_finish()
        self.gc_checks(without)
        self.cleanup()
        took = time.time() - t
        say(f'=== phase {self.n} passed in {took:.0f} s')
        return took


def cleanup_leftovers(rig):
    old = rig.my_servers()
    for s in old:
        say(f'deleting a leftover server {s["name"]} {s["id"]}')
        rig.delete_server(s['id'])
    for p in rig.ports():
        if p['name'].startswith(PREFIX + '-') or (p['device_id'] and not p['device_owner']
                                                   and rig.server(p['device_id']) is None
                                                   and p['network_id'] in (rig.net1, rig.net2)):
            say(f'deleting a leftover port {p["id"]} ({p["name"] or "device_id " + p["device_id"]})')
            rig.http('DELETE', f'{rig.neutron}/v2.0/ports/{p["id"]}', ok=(204, 404))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--env', help="the rig's env.sh (scripts/real-nova.sh start WORKDIR writes WORKDIR/env.sh)")
    ap.add_argument('--phase', choices=('1', '2', 'all'), default='all')
    ap.add_argument('--without-netcache', action='store_true',
                    help='play netcache\'s part by hand (tests the rig and the checks only)')
    a = ap.parse_args()
    env_path = a.env or os.environ.get('NETCACHE_TEST_NOVA_ENV') or (
        os.path.join(os.environ['NOVA_DIR'], 'env.sh') if os.environ.get('NOVA_DIR') else None)
    if not env_path or not os.path.isfile(env_path):
        msg = f'no real-Nova rig env file ({env_path or "give --env, NETCACHE_TEST_NOVA_ENV or NOVA_DIR"})'
        if os.environ.get('NETCACHE_TEST_REQUIRE_ENV') == '1':
            print(f'FAILED: {msg} and NETCACHE_TEST_REQUIRE_ENV=1', flush=True)
            return 1
        print(f'skipped: {msg}', flush=True)
        return 77
    binary = os.environ.get('NETCACHE_BIN')
    if not a.without_netcache and not (binary and os.access(binary, os.X_OK)):
        print(f'FAILED: NETCACHE_BIN ({binary!r}) is not an executable netcache binary', flush=True)
        return 1
    rig = Rig(load_env(env_path), env_path)
    say(f'rig {env_path}: nova {rig.nova}, neutron {rig.neutron}, compute proxy {rig.proxy}, cell DB {rig.cell_db}')
    nc = None if a.without_netcache else Netcache(rig, binary)
    times = {}
    try:
        rig.login()
        flavors = rig.http('GET', f'{rig.nova}/flavors')[1]['flavors']
        rig.flavor = next(f['id'] for f in flavors if f['name'] == rig.e.get('NOVA_FLAVOR', 'm1.nano'))
        rig.net1 = rig.network_id('net1', '10.10.0.0/22')
        rig.net2_name = f'{PREFIX}-net2'
        rig.net2 = rig.network_id(rig.net2_name, '10.20.0.0/24')
        cleanup_leftovers(rig)
        phases = {'1': [(1, 5, 3, 20)], '2': [(2, 5, 0, 20)], 'all': [(1, 5, 3, 20), (2, 5, 0, 20)]}[a.phase]
        for n, timeout, retries, heal in phases:
            times[n] = Phase(rig, nc, n, timeout, retries, heal).run(a.without_netcache)
    except Fail as err:
        print(f'FAILED: {err}', flush=True)
        print(f'(rig logs: {rig.e.get("NOVA_DIR")}/log; servers named {PREFIX}-* are left for a look, '
              'the next run deletes them)', flush=True)
        return 1
    say('passed: ' + ', '.join(f'phase {n} {t:.0f} s' for n, t in times.items()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
