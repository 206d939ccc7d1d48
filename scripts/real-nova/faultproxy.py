#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for Neutron (stdlib only).

Forwards every request to UPSTREAM. Rules apply to POST /v2.0/ports only:
  --lose-after-commit N   the Nth create is forwarded (Neutron commits) but the client's
                          connection is held open HOLD seconds and then closed, no answer
  --late-commit N         the Nth create is held LATE seconds *before* being forwarded; the
                          client's connection is closed at once after HOLD seconds, no answer;
                          Neutron commits the port only later (the seed's race)
Counts every request by METHOD, path shape (ids as {id}) and the names of its query
parameters into --stats FILE (JSON) on each request.

When the upstream cannot be reached (Neutron stopped), the proxy answers 502 with a
Neutron-style error body, as a load balancer in front of Neutron would, and counts it
under "upstream_errors".

Control API (not forwarded, not counted), for one proxy serving a whole test run:
  GET  /_faultproxy/stats                       the counters (as in --stats FILE)
  POST /_faultproxy/arm?fault=lose-after-commit[&hold=S]
  POST /_faultproxy/arm?fault=late-commit[&hold=S&late=S][&release=1]
                                                apply that fault to the NEXT create only;
                                                answers {"armed": N} (N = that create's number).
                                                release=1: the create is forwarded when
                                                /_faultproxy/release is called (or after LATE
                                                s at most; default then 600)
  POST /_faultproxy/release                     forward every create held for release now;
                                                answers {"released": K}
  POST /_faultproxy/delay?match=PREFIX&seconds=S[&when=before|after]
                                                delay every request whose shape (as counted,
                                                e.g. 'GET /v2.0/ports?device_id') starts with
                                                PREFIX by S seconds: before forwarding it
                                                (default), or after Neutron answered (the
                                                client then gets an answer that is S s old)
  POST /_faultproxy/disarm                      drop armed faults and delays

Usage: faultproxy.py --listen 127.0.0.1:9797 --upstream http://127.0.0.1:9696 \
          [--lose-after-commit 1] [--late-commit 2] [--hold 5] [--late 8] [--stats f.json]
"""
import argparse
import http.client
import http.server
import json
import os
import re
import socketserver
import sys
import threading
import time
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument('--listen', default='127.0.0.1:9797')
ap.add_argument('--upstream', default='http://127.0.0.1:9696')
ap.add_argument('--lose-after-commit', type=int, action='append', default=[])
ap.add_argument('--late-commit', type=int, action='append', default=[])
ap.add_argument('--hold', type=float, default=5.0)
ap.add_argument('--late', type=float, default=8.0)
ap.add_argument('--stats', default=None)
args = ap.parse_args()
up = urllib.parse.urlparse(args.upstream)
lock = threading.Lock()
creates = 0
stats = {}
upstream_errors = 0
delays = {}   # shape prefix -> (seconds, 'before' | 'after')
held = []     # threading.Event of each create held for /_faultproxy/release
# create number -> (fault, hold, late); filled from the flags and by /_faultproxy/arm
faults = {n: ('lose-after-commit', args.hold, args.late, False) for n in args.lose_after_commit}
faults.update({n: ('late-commit', args.hold, args.late, False) for n in args.late_commit})


def shape(method, path):
    """'GET /v2.0/ports/{id}', or with the query's filter names: 'GET /v2.0/ports?device_id,fields'."""
    u = urllib.parse.urlparse(path)
    p = re.sub(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', '{id}', u.path)
    keys = sorted({k for k, _ in urllib.parse.parse_qsl(u.query, keep_blank_values=True)})
    return f'{method} {p}' + (f'?{",".join(keys)}' if keys else '')


def snapshot():
    return {'requests': dict(stats), 'port_creates': creates, 'upstream_errors': upstream_errors}


def write_stats():
    if args.stats:
        with open(args.stats + '.tmp', 'w') as f:
            json.dump(snapshot(), f, indent=1)
        os.replace(args.stats + '.tmp', args.stats)


def forward(method, path, headers, body):
    c = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
    h = {k: v for k, v in headers.items() if k.lower() not in ('host', 'connection')}
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    out = (r.status, [(k, v) for k, v in r.getheaders()
                      if k.lower() not in ('transfer-encoding', 'connection')], data)
    c.close()
    return out


def late_forward(method, path, hdrs, body, late, release=None):
    if release is None:
        time.sleep(late)
    else:
        release.wait(late)
        with lock:
            if release in held:
                held.remove(release)
    try:
        status, _, _ = forward(method, path, hdrs, body)
        print(f'late commit forwarded: HTTP {status}', flush=True)
    except OSError as e:
        print(f'late commit could not reach the upstream: {e}', file=sys.stderr, flush=True)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def reply(self, status, headers, data):
        self.send_response(status)
        for k, v in headers:
            if k.lower() != 'content-length':
                self.send_header(k, v)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def control(self, body):
        global faults
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == '/_faultproxy/stats':
            with lock:
                data = json.dumps(snapshot()).encode()
            return self.reply(200, [('Content-Type', 'application/json')], data)
        if u.path == '/_faultproxy/arm' and self.command == 'POST':
            fault = q.get('fault')
            if fault not in ('lose-after-commit', 'late-commit'):
                return self.reply(400, [('Content-Type', 'text/plain')], b'fault=lose-after-commit|late-commit\n')
            rel = q.get('release') == '1'
            with lock:
                nth = creates + 1
                faults[nth] = (fault, float(q.get('hold', args.hold)),
                               float(q.get('late', 600 if rel else args.late)), rel)
            print(f'armed {fault} for create #{nth} {faults[nth][1:]}', flush=True)
            return self.reply(200, [('Content-Type', 'application/json')], json.dumps({'armed': nth}).encode())
        if u.path == '/_faultproxy/delay' and self.command == 'POST':
            when = q.get('when', 'before')
            if 'match' not in q or when not in ('before', 'after'):
                return self.reply(400, [('Content-Type', 'text/plain')], b'match=PREFIX&seconds=S[&when=before|after]\n')
            with lock:
                delays[q['match']] = (float(q.get('seconds', 1)), when)
                out = json.dumps({'delays': delays}).encode()
            print(f'delaying {q["match"]!r} by {delays[q["match"]]}', flush=True)
            return self.reply(200, [('Content-Type', 'application/json')], out)
        if u.path == '/_faultproxy/release' and self.command == 'POST':
            with lock:
                out = list(held)
            for ev in out:
                ev.set()
            print(f'released {len(out)} held create(s)', flush=True)
            return self.reply(200, [('Content-Type', 'application/json')], json.dumps({'released': len(out)}).encode())
        if u.path == '/_faultproxy/disarm' and self.command == 'POST':
            with lock:
                delays.clear()
                for n in [n for n in faults if n > creates]:
                    del faults[n]
            print('disarmed', flush=True)
            return self.reply(200, [('Content-Type', 'application/json')], b'{}')
        return self.reply(404, [('Content-Type', 'text/plain')], b'unknown control path\n')

    def handle_any(self):
        global creates, upstream_errors
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else None
        if self.path.startswith('/_faultproxy/'):
            return self.control(body)
        key = shape(self.command, self.path)
        nth = None
        with lock:
            stats[key] = stats.get(key, 0) + 1
            if self.command == 'POST' and urllib.parse.urlparse(self.path).path.rstrip('/') == '/v2.0/ports':
                creates += 1
                nth = creates
            write_stats()
            fault = faults.get(nth) if nth is not None else None
            delay = max([v for k, v in delays.items() if key.startswith(k)], default=(0, 'before'))
        if delay[0] and delay[1] == 'before':
            time.sleep(delay[0])
        if fault and fault[0] == 'late-commit':
            _, hold, late, rel = fault
            hdrs = dict(self.headers)
            ev = None
            if rel:
                ev = threading.Event()
                with lock:
                    held.append(ev)
            threading.Thread(target=late_forward, args=(self.command, self.path, hdrs, body, late, ev),
                             daemon=True).start()
            time.sleep(hold)
            self.close_connection = True
            return
        try:
            status, headers, data = forward(self.command, self.path, dict(self.headers), body)
        except OSError as e:
            with lock:
                upstream_errors += 1
                write_stats()
            err = {'NeutronError': {'type': 'BadGateway', 'message': f'faultproxy: upstream unreachable: {e}',
                                    'detail': ''}}
            return self.reply(502, [('Content-Type', 'application/json')], json.dumps(err).encode())
        if delay[0] and delay[1] == 'after':
            time.sleep(delay[0])
        if fault and fault[0] == 'lose-after-commit':
            time.sleep(fault[1])
            self.close_connection = True
            return
        self.reply(status, headers, data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


host, port = args.listen.rsplit(':', 1)
print(f'faultproxy on http://{host}:{port} -> {args.upstream}', flush=True)
S((host, int(port)), H).serve_forever()
