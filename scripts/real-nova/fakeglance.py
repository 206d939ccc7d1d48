#!/usr/bin/env python3
"""A minimal stand-in for the Glance v2 API: one static, active image.

Answers what Nova (glanceclient) and the openstack CLI (openstacksdk) ask for when a
server is booted with that image's id: version discovery (GET /, GET /v2/), GET
/v2/images/{id}, GET /v2/images (list), GET /v2/schemas/image(s). Anything else: 404.
Logs every request line to stdout.  Usage: fakeglance.py [PORT] [IMAGE_ID]
"""
import http.server
import json
import socketserver
import sys

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 27292
IMAGE_ID = sys.argv[2] if len(sys.argv) > 2 else '6b0b8a2e-6c2f-4d3e-9a55-0f00d5c0ffee'
BASE = f'http://127.0.0.1:{PORT}'
IMAGE = {
    'id': IMAGE_ID, 'name': 'cirros-fake', 'status': 'active', 'visibility': 'public',
    'container_format': 'bare', 'disk_format': 'qcow2', 'size': 1048576, 'virtual_size': None,
    'min_disk': 0, 'min_ram': 0, 'protected': False, 'os_hidden': False,
    'checksum': 'd41d8cd98f00b204e9800998ecf8427e', 'os_hash_algo': None, 'os_hash_value': None,
    'owner': None, 'created_at': '2026-01-01T00:00:00Z', 'updated_at': '2026-01-01T00:00:00Z',
    'tags': [], 'file': f'/v2/images/{IMAGE_ID}/file', 'self': f'/v2/images/{IMAGE_ID}',
    'schema': '/v2/schemas/image',
}
SCHEMA = {'name': 'image', 'properties': {k: {} for k in IMAGE},
          'additionalProperties': {'type': 'string'},
          'links': [{'rel': 'self', 'href': '{self}'}, {'rel': 'enclosure', 'href': '{file}'},
                    {'rel': 'describedby', 'href': '{schema}'}]}
VERSIONS = {'versions': [{'id': 'v2.16', 'status': 'CURRENT',
                          'links': [{'rel': 'self', 'href': f'{BASE}/v2/'}]}]}


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *a):
        print(fmt % a, flush=True)

    def send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)

    def do_GET(self):
        p = self.path.split('?', 1)[0].rstrip('/')
        if p in ('', '/versions'):
            return self.send(300 if p == '' else 200, VERSIONS)
        if p == '/v2':
            return self.send(200, {'version': VERSIONS['versions'][0]})
        if p == f'/v2/images/{IMAGE_ID}':
            return self.send(200, IMAGE)
        if p == '/v2/images':
            q = self.path.split('?', 1)[1] if '?' in self.path else ''
            hit = ('name=' not in q) or ('name=cirros-fake' in q) or (f'id={IMAGE_ID}' in q)
            return self.send(200, {'images': [IMAGE] if hit else [], 'schema': '/v2/schemas/images',
                                   'first': '/v2/images'})
        if p == '/v2/schemas/image':
            return self.send(200, SCHEMA)
        if p == '/v2/schemas/images':
            return self.send(200, {'name': 'images', 'properties': {'images': {'items': SCHEMA}}})
        return self.send(404, {'message': 'not found'})

    do_HEAD = do_GET


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


print(f'fake glance on {BASE}, image {IMAGE_ID}', flush=True)
S(('127.0.0.1', PORT), H).serve_forever()
