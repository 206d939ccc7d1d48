#!/usr/bin/env python3
"""Issue 34: netcache and Nova 34 side by side, on one real Neutron 29 and Keystone 30.

  scripts/side-by-side.py --env WORKDIR/env.sh [--boots 8] [--boots8 24] [--heal-servers 1000]
                          [--json FILE] [--skip-ghosts]

The rig is scripts/real-nova.sh's (start it first: `scripts/real-nova.sh start WORKDIR`). This
script starts `netcache serve` beside it ($NETCACHE_BIN, a release build for figures; Keystone
auth as the rig's service user, SQLite in WORKDIR/side-by-side) with its own counting proxy in
front of the rig's Neutron (scripts/real-nova/faultproxy.py), as Nova's computes and API each
have theirs, and runs the same workload through each system's compute API as the rig's admin:

  boots to ACTIVE at concurrency 1 and 8 (p50, p99, boots/s), show and detail list (p50),
  deletes (p50), each with the Neutron calls it made (the proxies' counts), the CPU seconds of
  the system's processes (Nova: API, conductor, scheduler, both computes, Placement; netcache:
  its one process) and their RSS; beside them the real Neutron's own creates, sent as a boot
  sends them (device_id, device_owner, binding:host_id), at the same concurrency;
  a heal sweep: netcache over --heal-servers servers (`netcache heal`, one pass); Nova's heal
  task over a 3-interval window (20 s interval), counted per pass and per server refreshed;
  the four ghost-port fault cases of bug 1258620 (A, B, C, E2: scripts/real-nova-ghosts.py and
  docs/evidence/nova-ghosts.md describe them), armed on each system's proxy: the most IPs a
  server showed on its one network, and the ports left with its device_id after its delete.

The two systems never run work at the same time. Boot-to-ACTIVE is polled: Nova's in its cell
database (the read-only user; a GET /servers/{id} would cost Nova 2 Neutron calls), netcache's
on its API (0 calls), each every 20 ms. Nova's computes are restarted (real-nova.sh) with heal
off for the timed work, then with heal every 20 s and [neutron] timeout 5 for the heal window
and the ghost cases (http_retries 3 for A, 0 for B, C and E2), as the ghost test has them;
netcache runs with heal and GC off for the timed work, then with neutron.timeout 5, heal every
10 s and GC every 5 s (grace 10 s) for the ghost cases.

Prints a markdown table; --json writes every figure. Needs python3 with PyMySQL (the rig's
venv has it: $NOVA_VENV/bin/python); exits 77 (skipped) without a rig, 1 on a failure.
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location('real_nova_ghosts', os.path.join(HERE, 'real-nova-ghosts.py'))
ghosts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ghosts)
say, Fail, check, Rig, load_env = ghosts.say, ghosts.Fail, ghosts.check, ghosts.Rig, ghosts.load_env

NETCACHE_PORT = 28775
NETCACHE_PROXY_PORT = 28699
NETCACHE_METRICS_PORT = 28776
NETCACHE_IMAGE = '9b3c1f0e-6f5e-4a34-9a49-7d1c2b0f7a11'   # netcache_api::images::IMAGES[0]
POLL = 0.02
TICK = os.sysconf('SC_CLK_TCK')
NOVA_SERVICES = ('nova-api', 'nova-conductor', 'nova-scheduler', 'nova-compute-compute1',
                 'nova-compute-compute2', 'placement')


# --- processes -------------------------------------------------------------------------------
def children():
    kids = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open(f'/proc/{d}/stat') as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            except OSError:
                continue
            kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(pids):
    kids, out, todo = children(), set(), list(pids)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(kids.get(p, []))
    return out


def cpu_seconds(pids):
    """User + system CPU of the processes and of their reaped children."""
    total = 0
    for p in tree(pids):
        try:
            with open(f'/proc/{p}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / TICK


def rss_mb(pids):
    total = 0
    for p in tree(pids):
        try:
            with open(f'/proc/{p}/status') as f:
                total += next(int(line.split()[1]) for line in f if line.startswith('VmRSS:'))
        except (OSError, StopIteration):
            continue
    return total / 1024


def pid_file(path):
    with open(path) as f:
        return int(f.read().strip())


# --- the two systems -------------------------------------------------------------------------
class System:
    """A compute API, the proxies that count its Neutron calls, and its processes."""
    name = ''

    def __init__(self, api, proxies, fault_proxy):
        self.api, self.proxies, self.fault_proxy = api, proxies, fault_proxy

    def calls(self):
        out = {}
        for who, url in self.proxies.items():
            with urllib.request.urlopen(url + '/_faultproxy/stats', timeout=30) as r:
                for shape, n in json.load(r)['requests'].items():
                    out[f'{who} {shape}'] = n
        return out

    def arm(self, query):
        req = urllib.request.Request(self.fault_proxy + '/_faultproxy/' + query, method='POST', data=b'')
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def creates_seen(self):
        with urllib.request.urlopen(self.fault_proxy + '/_faultproxy/stats', timeout=30) as r:
            return json.load(r)['port_creates']

    def boot(self, name, net):
        body = {'server': {'name': name, 'imageRef': self.image, 'flavorRef': self.flavor,
                           'networks': [{'uuid': net}]}}
        return self.api.http('POST', f'{self.api.nova}/servers', body)[1]['server']['id']

    def delete(self, sid):
        self.api.http('DELETE', f'{self.api.nova}/servers/{sid}', ok=(204, 404))

    def wait(self, sid, want, deadline=300):
        """Polls the server's state (`state`: 'active', 'gone', 'error…' or another) until it is `want`."""
        end = time.time() + deadline
        while time.time() < end:
            state = self.state(sid)
            if state == want:
                return
            check(want != 'active' or not state.startswith('error'), f'{self.name}: {sid} went to ERROR ({state})')
            time.sleep(POLL)
        raise Fail(f'{self.name}: {sid} not {want} within {deadline} s')

    def wait_active(self, sid):
        self.wait(sid, 'active')

    def wait_gone(self, sid):
        self.wait(sid, 'gone')


class Nova(System):
    name = 'Nova 34'

    def __init__(self, rig):
        e = rig.e
        super().__init__(rig, {'api': e['NOVA_PROXY_URL'].rstrip('/'), 'compute': e['NOVA_PROXY_COMPUTE_URL'].rstrip('/')},
                         e['NOVA_PROXY_COMPUTE_URL'].rstrip('/'))
        self.run_dir = os.path.join(e['NOVA_DIR'], 'run')
        self.image = e['NOVA_IMAGE_ID']
        import pymysql  # the rig's venv has it
        ro = rig.ro
        self._db = dict(host=ro.hostname or '127.0.0.1', port=ro.port or 3306, user=urllib.parse.unquote(ro.username),
                        password=urllib.parse.unquote(ro.password or ''), database=rig.cell_db, autocommit=True)
        self._pymysql = pymysql
        self._local = threading.local()

    def pids(self):
        return [pid_file(os.path.join(self.run_dir, f'{s}.pid')) for s in NOVA_SERVICES]

    def _row(self, sid):
        c = getattr(self._local, 'conn', None)
        if c is None:
            c = self._local.conn = self._pymysql.connect(**self._db)
        with c.cursor() as cur:
            cur.execute('select vm_state, task_state, deleted from instances where uuid = %s', (sid,))
            return cur.fetchone()

    def state(self, sid):
        row = self._row(sid)
        if row is None or row[2]:
            return 'gone'
        return 'active' if row[0] == 'active' and row[1] is None else row[0]


class Netcache(System):
    name = 'netcache'

    def __init__(self, rig, binary, work):
        e = rig.e
        self.work, self.bin = work, binary
        os.makedirs(work, exist_ok=True)
        for f in os.listdir(work):   # a fresh database each run
            if f.startswith('netcache.db'):
                os.remove(os.path.join(work, f))
        self.db = f'sqlite:{work}/netcache.db'
        self.proxy_url = f'http://127.0.0.1:{NETCACHE_PROXY_PORT}'
        self.proxy = subprocess.Popen(
            [sys.executable, os.path.join(HERE, 'real-nova', 'faultproxy.py'), '--listen',
             f'127.0.0.1:{NETCACHE_PROXY_PORT}', '--upstream', e['NOVA_NEUTRON_URL'].rstrip('/')],
            stdout=open(f'{work}/faultproxy.log', 'a'), stderr=subprocess.STDOUT)
        api = Rig(e, rig.env_path)
        api.nova = f'http://127.0.0.1:{NETCACHE_PORT}/v2.1'
        super().__init__(api, {'netcache': self.proxy_url}, self.proxy_url)
        self.image = NETCACHE_IMAGE
        self.env = {k: v for k, v in os.environ.items() if not k.startswith('NETCACHE_')}
        self.env.update({
            'NETCACHE_AUTH_STRATEGY': 'keystone', 'NETCACHE_AUTH_AUTH_URL': e['OS_AUTH_URL'],
            'NETCACHE_AUTH_USERNAME': 'nova', 'NETCACHE_AUTH_PASSWORD': 'nova-secret',
            'NETCACHE_AUTH_PROJECT_NAME': 'service',
            'NETCACHE_NEUTRON_URL': self.proxy_url, 'NETCACHE_NEUTRON_AUTH_URL': e['OS_AUTH_URL'],
            'NETCACHE_NEUTRON_USERNAME': 'nova', 'NETCACHE_NEUTRON_PASSWORD': 'nova-secret',
            'NETCACHE_NEUTRON_PROJECT_NAME': 'service',
            'NETCACHE_QUOTA_INSTANCES': '-1', 'NETCACHE_QUOTA_CORES': '-1', 'NETCACHE_QUOTA_RAM': '-1',
        })
        self.serve = None

    def start(self, **settings):
        self.stop()
        env = dict(self.env, NETCACHE_API_METRICS_LISTEN=f'127.0.0.1:{NETCACHE_METRICS_PORT}',
                   **{f'NETCACHE_{k.upper()}': str(v) for k, v in settings.items()})
        self.serve = subprocess.Popen([self.bin, 'serve', '--listen', f'127.0.0.1:{NETCACHE_PORT}', '--database', self.db],
                                      env=env, stdout=open(f'{self.work}/serve.log', 'a'), stderr=subprocess.STDOUT)
        end = time.time() + 60
        while time.time() < end:
            try:
                urllib.request.urlopen(f'http://127.0.0.1:{NETCACHE_PORT}/', timeout=2).read()
                say(f'netcache serve up (pid {self.serve.pid}): {settings}')
                return
            except OSError:
                if self.serve.poll() is not None:
                    raise Fail(f'netcache serve exited {self.serve.returncode}; see {self.work}/serve.log')
                time.sleep(0.2)
        raise Fail('netcache serve did not answer within 60 s')

    def stop(self):
        if self.serve and self.serve.poll() is None:
            self.serve.terminate()
            self.serve.wait(30)
        self.serve = None

    def close(self):
        self.stop()
        self.proxy.terminate()

    def pids(self):
        return [self.serve.pid]

    def state(self, sid):
        st, doc = self.api.http('GET', f'{self.api.nova}/servers/{sid}', ok=(200, 404))
        if st == 404:
            return 'gone'
        s = doc['server']
        if s['status'] == 'ERROR':
            return f'error: {s.get("fault")}'
        return 'active' if s['status'] == 'ACTIVE' and not s.get('OS-EXT-STS:task_state') else s['status']

    def metrics(self):
        with urllib.request.urlopen(f'http://127.0.0.1:{NETCACHE_METRICS_PORT}/metrics', timeout=30) as r:
            text = r.read().decode()
        return {k: float(v) for k, _, v in (line.rpartition(' ') for line in text.splitlines()
                                            if line and not line.startswith('#'))}

    def wait_heal_passes(self, n, deadline=600):
        end = time.time() + deadline
        while self.metrics().get('netcache_heal_passes_total', 0) < n:
            check(time.time() < end, f'netcache: fewer than {n} heal passes within {deadline} s')
            time.sleep(0.5)

    def heal_pass(self):
        """One `netcache heal` pass in a process of its own: (seconds, CPU seconds, output)."""
        t = time.time()
        before = os.times()
        r = subprocess.run([self.bin, 'heal', '--database', self.db], env=self.env, capture_output=True, text=True,
                           timeout=600)
        after = os.times()
        check(r.returncode == 0, f'netcache heal exited {r.returncode}', r.stderr[-2000:])
        return time.time() - t, (after.children_user - before.children_user) + (after.children_system - before.children_system), r.stdout


# --- measuring ---------------------------------------------------------------------------------
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


class Window:
    """Neutron calls, CPU seconds and wall time of a stretch of work. With settle, the calls and
    CPU are counted on until no call came for 3 s (Nova's compute builds a boot's cache again
    when Neutron's network-changed reaches it, after the server is ACTIVE); the wall time ends
    with the work."""

    def __init__(self, system, others=(), settle=False):
        self.s, self.others, self.settle = system, others, settle

    def __enter__(self):
        self.c0, self.cpu0, self.o0 = self.s.calls(), cpu_seconds(self.s.pids()), [cpu_seconds(p) for p in self.others]
        self.t0 = time.time()
        return self

    def __exit__(self, *exc):
        self.wall = time.time() - self.t0
        c1 = self.s.calls()
        quiet, end = 0, time.time() + 60
        while self.settle and quiet < 3 and time.time() < end:
            time.sleep(1)
            c2 = self.s.calls()
            quiet = quiet + 1 if c2 == c1 else 0
            c1 = c2
        self.by_shape = {k: v - self.c0.get(k, 0) for k, v in c1.items() if v - self.c0.get(k, 0)}
        self.n_calls = sum(self.by_shape.values())
        self.cpu = cpu_seconds(self.s.pids()) - self.cpu0
        self.other_cpu = [cpu_seconds(p) - c for p, c in zip(self.others, self.o0)]


def run_parallel(n, conc, fn):
    with concurrent.futures.ThreadPoolExecutor(max_workers=conc) as ex:
        return list(ex.map(fn, range(n)))


def breakdown(m0, m1, n):
    """Where a netcache boot's time went, from its own histograms: per boot, the milliseconds
    and the count of each timed thing (API requests by route, Neutron calls by operation, store
    commits) between two scrapes of /metrics."""
    out = {}
    for key, v in m1.items():
        if key.endswith('_count') or '_count{' in key:
            d = v - m0.get(key, 0)
            if d and ('duration_seconds' in key):
                total = m1[key.replace('_count', '_sum', 1)] - m0.get(key.replace('_count', '_sum', 1), 0)
                out[key.replace('_duration_seconds_count', '', 1)] = {'per_boot': d / n, 'ms_per_boot': 1000 * total / n}
    return out


def boots(system, label, n, conc, net, others):
    def one(i):
        t = time.time()
        sid = system.boot(f'sbs-{label}-{i}', net)
        system.wait_active(sid)
        return sid, time.time() - t
    m0 = system.metrics() if isinstance(system, Netcache) else None
    with Window(system, others, settle=True) as w:
        got = run_parallel(n, conc, one)
    lat = [x for _, x in got]
    fig = {'n': n, 'concurrency': conc, 'p50_ms': 1000 * statistics.median(lat), 'p99_ms': 1000 * pct(lat, 99),
           'per_s': n / w.wall, 'calls_per_op': w.n_calls / n, 'cpu_s_per_op': w.cpu / n,
           'neutron_cpu_s_per_op': w.other_cpu[0] / n, 'keystone_cpu_s_per_op': w.other_cpu[1] / n,
           'calls_by_shape': w.by_shape}
    if m0 is not None:
        fig['breakdown'] = breakdown(m0, system.metrics(), n)
    say(f'{system.name}: {n} boots at concurrency {conc}: p50 {fig["p50_ms"]:.0f} ms, p99 {fig["p99_ms"]:.0f} ms, '
        f'{fig["per_s"]:.2f}/s, {fig["calls_per_op"]:.2f} Neutron calls and {fig["cpu_s_per_op"]:.3f} CPU s per boot')
    return [s for s, _ in got], fig


def deletes(system, sids, conc, others):
    def one(sid):
        t = time.time()
        system.delete(sid)
        system.wait_gone(sid)
        return time.time() - t
    with Window(system, others, settle=True) as w:
        with concurrent.futures.ThreadPoolExecutor(max_workers=conc) as ex:
            lat = list(ex.map(one, sids))
    fig = {'n': len(sids), 'concurrency': conc, 'p50_ms': 1000 * statistics.median(lat), 'per_s': len(sids) / w.wall,
           'calls_per_op': w.n_calls / len(sids), 'cpu_s_per_op': w.cpu / len(sids), 'calls_by_shape': w.by_shape}
    say(f'{system.name}: {len(sids)} deletes at concurrency {conc}: p50 {fig["p50_ms"]:.0f} ms, '
        f'{fig["calls_per_op"]:.2f} Neutron calls per delete')
    return fig


def reads(system, sid, samples=20):
    out = {}
    for what, url in (('show', f'{system.api.nova}/servers/{sid}'), ('detail', f'{system.api.nova}/servers/detail')):
        lat = []
        with Window(system) as w:
            for _ in range(samples):
                t = time.time()
                system.api.http('GET', url)
                lat.append(time.time() - t)
        out[what] = {'p50_ms': 1000 * statistics.median(lat), 'calls_per_op': w.n_calls / samples,
                     'calls_by_shape': w.by_shape}
        say(f'{system.name}: {what}: p50 {out[what]["p50_ms"]:.1f} ms, {out[what]["calls_per_op"]:.1f} Neutron calls each')
    return out


def raw_creates(rig, net, n, conc, base):
    """The real Neutron's own port creates, as a boot sends them, sent to base (Neutron or a proxy)."""
    project = rig.project_id

    def one(i):
        # netcache's create: a device id, owner and host, its marker's name and two tags (the
        # tags here are not netcache's own, so no netcache takes these ports for its own)
        intent = str(uuid.uuid4())
        body = {'port': {'network_id': net, 'device_id': str(uuid.uuid4()), 'device_owner': 'compute:nova',
                         'binding:host_id': 'compute1', 'tenant_id': project, 'name': f'sidebyside:raw:{intent}',
                         'tags': ['sidebyside:owner=raw', f'sidebyside:intent={intent}']}}
        return rig.http('POST', f'{base}/v2.0/ports', body)[1]['port']['id']
    t = time.time()
    ids = run_parallel(n, conc, one)
    wall = time.time() - t
    run_parallel(len(ids), conc, lambda i: rig.http('DELETE', f'{rig.neutron}/v2.0/ports/{ids[i]}', ok=(204, 404)))
    say(f'real Neutron: {n} raw creates at concurrency {conc} to {base}: {n / wall:.2f}/s')
    return {'n': n, 'concurrency': conc, 'per_s': n / wall}


# --- heal ----------------------------------------------------------------------------------------
def netcache_heal(nc, net, n, others, interval=30):
    say(f'netcache: booting {n} servers for the heal sweep (concurrency 8)')
    sids, fig = boots(nc, 'heal', n, 8, net, others)
    with Window(nc) as w:
        secs, cpu, out = nc.heal_pass()
    heal = {'servers': n, 'boots': fig, 'cli': {'seconds': secs, 'cpu_s': cpu, 'calls': w.n_calls,
                                                'calls_by_shape': w.by_shape, 'report': out.strip()[-500:]}}
    say(f'netcache: `netcache heal` (a new process) over {n} servers: {secs:.2f} s, {w.n_calls} Neutron calls, '
        f'{cpu:.2f} CPU s')
    # the serve loop's pass, as it runs every interval: the second pass after a start (the first
    # fills the process's network catalog)
    nc.start(heal_interval=interval, heal_jitter=0, gc_interval=0)
    nc.wait_heal_passes(1)
    m0 = nc.metrics()
    with Window(nc) as w:
        nc.wait_heal_passes(2)
    m1 = nc.metrics()
    loop = {'interval_s': interval, 'calls': w.n_calls, 'calls_by_shape': w.by_shape, 'cpu_s': w.cpu,
            'servers': m1['netcache_heal_servers_total'] - m0['netcache_heal_servers_total'],
            'seconds': m1['netcache_heal_pass_duration_seconds_sum'] - m0['netcache_heal_pass_duration_seconds_sum']}
    heal['loop'] = loop
    say(f"netcache: the heal loop's pass over {loop['servers']:.0f} servers: {loop['seconds']:.2f} s, "
        f"{loop['calls']} Neutron calls, {loop['cpu_s']:.2f} CPU s (interval {interval} s)")
    heal['deletes'] = deletes(nc, sids, 8, others)
    return heal


def nova_heal(nova, rig, net, n_servers, window, interval):
    sids = run_parallel(n_servers, n_servers, lambda i: nova.boot(f'sbs-novaheal-{i}', net))
    for sid in sids:
        nova.wait_active(sid)
    time.sleep(interval)   # the builds' own calls are done
    with Window(nova) as w:
        time.sleep(window)
    # a heal pass refreshes one server: GET ports?device_id&fields, then the 7-call cache build
    passes = w.by_shape.get('compute GET /v2.0/ports?device_id,fields', 0)
    compute_calls = sum(v for k, v in w.by_shape.items() if k.startswith('compute '))
    fig = {'servers': n_servers, 'hosts': 2, 'interval_s': interval, 'window_s': window, 'calls': compute_calls,
           'calls_by_shape': w.by_shape, 'servers_refreshed': passes}
    say(f'Nova: heal window {window} s (interval {interval} s, {n_servers} servers, 2 hosts): {compute_calls} Neutron calls, '
        f'{passes} servers refreshed')
    for sid in sids:
        nova.delete(sid)
    for sid in sids:
        nova.wait_gone(sid)
    return fig


# --- the ghost cases -------------------------------------------------------------------------------
CASES = {
    'A': ('lose-after-commit', 'fault=lose-after-commit&hold=30'),
    'B': ('lose-after-commit', 'fault=lose-after-commit&hold=30'),
    'C': ('late-commit', 'fault=late-commit&hold=30&late=10'),
    'E2': ('late-commit, released after the delete', 'fault=late-commit&hold=30&release=1'),
}


def ghost_case(system, rig, case, net, watch, settle):
    """Arms the case's fault for the system's next create, boots one server, watches what its API
    shows for `watch` s, deletes it, and counts the ports left with its device_id `settle` s later
    (E2: the held create is released after the delete): {'max_ips', 'leaked'}."""
    system.arm('disarm')
    armed = system.arm('arm?' + CASES[case][1])['armed']
    sid = system.boot(f'sbs-ghost-{case}', net)
    end = time.time() + 120
    while system.creates_seen() < armed:
        check(time.time() < end, f'{system.name} {case}: the armed create never came')
        time.sleep(0.2)
    system.wait_active(sid)
    max_ips, t = 0, time.time()

    def look():
        nonlocal max_ips
        st, doc = system.api.http('GET', f'{system.api.nova}/servers/{sid}', ok=(200, 404))
        if st == 200:
            max_ips = max(max_ips, sum(len(v) for v in doc['server']['addresses'].values()))
    if case == 'E2':
        look()
        system.delete(sid)
        system.wait_gone(sid)
        system.arm('release')
    else:
        while time.time() < t + watch:
            look()
            time.sleep(1)
        system.delete(sid)
        system.wait_gone(sid)
    # what is left with its device_id once the system had `settle` seconds to clean up
    end, left = time.time() + settle, []
    while time.time() < end:
        left = rig.ports(device_id=sid)
        time.sleep(2)
    for p in left:
        rig.http('DELETE', f'{rig.neutron}/v2.0/ports/{p["id"]}', ok=(204, 404))
    fig = {'max_ips': max_ips, 'leaked': len(left)}
    say(f'{system.name} case {case}: the most IPs shown {max_ips}, ports left after the delete {len(left)}')
    return fig


# --- the run ---------------------------------------------------------------------------------------
def ensure_quotas(rig):
    tok = rig.token
    req = urllib.request.Request(rig.e['OS_AUTH_URL'].rstrip('/') + '/auth/tokens', headers={
        'X-Auth-Token': tok, 'X-Subject-Token': tok})
    with urllib.request.urlopen(req, timeout=30) as r:
        rig.project_id = json.load(r)['token']['project']['id']
    rig.http('PUT', f'{rig.neutron}/v2.0/quotas/{rig.project_id}', {'quota': {'port': -1}})
    rig.http('PUT', f'{rig.nova}/os-quota-sets/{rig.project_id}',
             {'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}})


def smallest_flavor(system):
    fl = system.api.http('GET', f'{system.api.nova}/flavors/detail')[1]['flavors']
    return min(fl, key=lambda f: (f['ram'], f['vcpus'], f['disk']))['id']


def cleanup(systems):
    for s in systems:
        for srv in s.api.http('GET', f'{s.api.nova}/servers?name=^sbs-')[1]['servers']:
            s.delete(srv['id'])
            s.wait_gone(srv['id'])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--env', help="the rig's env.sh (scripts/real-nova.sh start WORKDIR writes it)")
    ap.add_argument('--boots', type=int, default=8, help='boots at concurrency 1')
    ap.add_argument('--boots8', type=int, default=24, help='boots at concurrency 8')
    ap.add_argument('--heal-servers', type=int, default=1000)
    ap.add_argument('--skip-ghosts', action='store_true')
    ap.add_argument('--json', help='write every figure here')
    a = ap.parse_args()
    env_path = a.env or (os.path.join(os.environ['NOVA_DIR'], 'env.sh') if os.environ.get('NOVA_DIR') else None)
    if not env_path or not os.path.isfile(env_path):
        print(f'skipped: no real-Nova rig env file ({env_path or "give --env or NOVA_DIR"})', flush=True)
        return 77
    binary = os.environ.get('NETCACHE_BIN')
    if not (binary and os.access(binary, os.X_OK)):
        print(f'FAILED: NETCACHE_BIN ({binary!r}) is not an executable netcache binary', flush=True)
        return 1
    rig = Rig(load_env(env_path), env_path)
    rig.login()
    work = os.path.join(rig.e['NOVA_DIR'], 'side-by-side')
    nova, nc = Nova(rig), Netcache(rig, binary, work)
    neutron_pids = [pid_file(os.path.join(rig.e['NOVA_DIR'], 'neutron', 'gunicorn.pid'))]
    keystone_pids = [pid_file(os.path.join(rig.e['NOVA_DIR'], 'keystone', 'keystone.pid'))]
    others = (neutron_pids, keystone_pids)
    out = {'started': time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()), 'netcache': {}, 'nova': {}, 'neutron': {}}
    try:
        ensure_quotas(rig)
        net1 = rig.network_id('net1', '10.10.0.0/22')
        big = rig.network_id('sbs-heal', '10.64.0.0/18')
        nc.start(heal_interval=0, gc_interval=0)
        nova.flavor, nc.flavor = smallest_flavor(nova), smallest_flavor(nc)
        cleanup((nova, nc))

        # timed work: Nova's heal off, netcache's heal and GC off
        rig.ensure_computes(30, 3, -1)
        for key, system in (('nova', nova), ('netcache', nc)):
            f = out[key]
            warm, _ = boots(system, 'warm', 1, 1, net1, others)   # first calls after a start (extensions, catalog)
            deletes(system, warm, 1, others)
            sids1, f['boot_c1'] = boots(system, 'c1', a.boots, 1, net1, others)
            sids8, f['boot_c8'] = boots(system, 'c8', a.boots8, 8, net1, others)
            f.update(reads(system, sids8[0]))
            f['rss_mb'] = rss_mb(system.pids())
            f['delete_c8'] = deletes(system, sids1 + sids8, 8, others)
        out['neutron']['raw_c1'] = raw_creates(rig, net1, a.boots8, 1, rig.neutron)
        out['neutron']['raw_c8'] = raw_creates(rig, net1, 4 * a.boots8, 8, rig.neutron)
        out['neutron']['raw_c8_proxied'] = raw_creates(rig, net1, 4 * a.boots8, 8, nc.proxy_url)
        out['netcache']['heal'] = netcache_heal(nc, big, a.heal_servers, others)
        out['netcache']['rss_mb_after_heal'] = rss_mb(nc.pids())

        # heal and the ghost cases: Nova's computes as the ghost test runs them
        rig.ensure_computes(5, 3, 20)
        out['nova']['heal'] = nova_heal(nova, rig, net1, 4, 60, 20)
        if not a.skip_ghosts:
            nc.start(neutron_timeout=5, heal_interval=10, gc_interval=5, gc_grace=10)
            g = out['ghosts'] = {'nova': {}, 'netcache': {}}
            g['nova']['A'] = ghost_case(nova, rig, 'A', net1, 60, 20)
            for case in CASES:
                g['netcache'][case] = ghost_case(nc, rig, case, net1, 30, 30)
            rig.ensure_computes(5, 0, 20)
            for case in ('B', 'C', 'E2'):
                g['nova'][case] = ghost_case(nova, rig, case, net1, 60, 20)
    except Fail as err:
        print(f'FAILED: {err}', flush=True)
        return 1
    finally:
        nc.close()
        out['finished'] = time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())
        if a.json:
            with open(a.json, 'w') as f:
                json.dump(out, f, indent=1, sort_keys=True)
    print(table(out))
    return 0


def table(o):
    n, c = o['nova'], o['netcache']
    rows = [
        ('Neutron calls per boot', n['boot_c1']['calls_per_op'], c['boot_c1']['calls_per_op'], '.2f'),
        ('boot to ACTIVE p50, concurrency 1 (ms)', n['boot_c1']['p50_ms'], c['boot_c1']['p50_ms'], '.0f'),
        ('boot to ACTIVE p99, concurrency 1 (ms)', n['boot_c1']['p99_ms'], c['boot_c1']['p99_ms'], '.0f'),
        ('boots/s, concurrency 1', n['boot_c1']['per_s'], c['boot_c1']['per_s'], '.2f'),
        ('boot to ACTIVE p50, concurrency 8 (ms)', n['boot_c8']['p50_ms'], c['boot_c8']['p50_ms'], '.0f'),
        ('boot to ACTIVE p99, concurrency 8 (ms)', n['boot_c8']['p99_ms'], c['boot_c8']['p99_ms'], '.0f'),
        ('boots/s, concurrency 8', n['boot_c8']['per_s'], c['boot_c8']['per_s'], '.2f'),
        ('CPU s per boot (its processes), concurrency 8', n['boot_c8']['cpu_s_per_op'], c['boot_c8']['cpu_s_per_op'], '.3f'),
        ("Neutron's CPU s per boot, concurrency 8", n['boot_c8']['neutron_cpu_s_per_op'], c['boot_c8']['neutron_cpu_s_per_op'], '.3f'),
        ("Keystone's CPU s per boot, concurrency 8", n['boot_c8']['keystone_cpu_s_per_op'], c['boot_c8']['keystone_cpu_s_per_op'], '.3f'),
        ('delete p50 (ms)', n['delete_c8']['p50_ms'], c['delete_c8']['p50_ms'], '.0f'),
        ('Neutron calls per delete', n['delete_c8']['calls_per_op'], c['delete_c8']['calls_per_op'], '.2f'),
        ('show p50 (ms)', n['show']['p50_ms'], c['show']['p50_ms'], '.1f'),
        ('Neutron calls per show', n['show']['calls_per_op'], c['show']['calls_per_op'], '.1f'),
        ('detail list p50 (ms)', n['detail']['p50_ms'], c['detail']['p50_ms'], '.1f'),
        ('Neutron calls per detail list', n['detail']['calls_per_op'], c['detail']['calls_per_op'], '.1f'),
        ('RSS of its processes (MB)', n['rss_mb'], c['rss_mb'], '.0f'),
    ]
    lines = ['| | Nova 34 | netcache | netcache / Nova |', '|---|---|---|---|']
    for label, nv, cv, fmt in rows:
        ratio = f'{cv / nv:.3f}' if nv else '—'
        lines.append(f'| {label} | {nv:{fmt}} | {cv:{fmt}} | {ratio} |')
    raw = o['neutron']['raw_c8']['per_s']
    rawp = o['neutron']['raw_c8_proxied']['per_s']
    lines.append(f"| real Neutron's raw creates/s, concurrency 8 (as a boot sends them): straight, through netcache's "
                 f"proxy | {raw:.2f}, {rawp:.2f} | boots/s ÷ raw: {c['boot_c8']['per_s'] / raw:.3f}, "
                 f"{c['boot_c8']['per_s'] / rawp:.3f} | |")
    h = c['heal']
    cli, loop = h['cli'], h['loop']
    lines.append(f"| heal sweep of {h['servers']} servers: netcache's loop, one pass (interval {loop['interval_s']} s) | | "
                 f"{loop['seconds']:.2f} s, {loop['calls']} calls, {loop['cpu_s']:.2f} CPU s | |")
    lines.append(f"| the same by `netcache heal`, a new process (its network catalog cold) | | "
                 f"{cli['seconds']:.2f} s, {cli['calls']} calls, {cli['cpu_s']:.2f} CPU s | |")
    nh = n.get('heal')
    if nh and nh['servers_refreshed']:
        per_interval = nh['servers_refreshed'] / (nh['window_s'] / nh['interval_s'])
        calls_each = nh['calls'] / nh['servers_refreshed']
        lines.append(f"| Nova's heal task: {nh['window_s']} s window, interval {nh['interval_s']} s, {nh['servers']} servers "
                     f"on 2 hosts | {nh['calls']} calls, {nh['servers_refreshed']} servers refreshed "
                     f"({calls_each:.0f} calls each, {per_interval:.2f} per interval); a sweep of {h['servers']}: "
                     f"{h['servers'] / per_interval:.0f} intervals, {h['servers'] * calls_each:.0f} calls | | |")
    g = o.get('ghosts')
    if g:
        lines += ['', '| ghost case | Nova: most IPs shown (1 network) | Nova: ports left after delete | '
                      'netcache: most IPs shown | netcache: ports left after delete |', '|---|---|---|---|---|']
        for case in CASES:
            nv, cv = g['nova'].get(case, {}), g['netcache'].get(case, {})
            lines.append(f"| {case} ({CASES[case][0]}) | {nv.get('max_ips', '—')} | {nv.get('leaked', '—')} | "
                         f"{cv.get('max_ips', '—')} | {cv.get('leaked', '—')} |")
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
