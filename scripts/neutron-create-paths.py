#!/usr/bin/env python3
"""How fast a Neutron takes a boot's port by each path a compute service could
use, measured side by side in one run (issue 34, point 1):

* one create per boot (netcache's path, and Nova's): POST /v2.0/ports with a
  boot's body (device_id, device_owner, binding:host_id, two tags), from 1 and
  from 8 clients at once;
* creates coalesced into bulk POSTs of 8 and of 16 ports (one client, and two
  clients sending bulks of 8 at once);
* a port made ahead (a pool), claimed at boot by one PUT of device_id and
  device_owner: made bound to the host, or unbound and bound by the PUT.

Each round runs every path once, in that order, so all see the same Neutron
(its database grows through the run). Ports are left behind: run it against a
throw-away Neutron, e.g. `NEUTRON_PORT=19696 NEUTRON_FRESH=1
scripts/real-neutron.sh start /tmp/nx` (noauth), then

    scripts/neutron-create-paths.py --url http://127.0.0.1:19696 --rounds 3
"""

import argparse
import json
import threading
import time
import urllib.request
import uuid

HEADERS = {"Content-Type": "application/json", "X-Project-Id": "proj1", "X-Roles": "admin"}


class Neutron:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, method=method, data=data, headers=HEADERS)
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.loads(answer.read() or b"null")


def boot_port(network, bound=True):
    port = {
        "network_id": network,
        "project_id": "proj1",
        "device_id": str(uuid.uuid4()),
        "device_owner": "compute:nova",
        "tags": ["netcache-deployment:paths", "netcache-intent:" + str(uuid.uuid4())],
    }
    if bound:
        port["binding:host_id"] = "host1"
    return port


def in_parallel(clients, work):
    """Runs `work(client)` on `clients` threads; the wall time."""
    threads = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started


def creates(neutron, network, ports, clients):
    each = ports // clients
    seconds = in_parallel(clients, lambda _: [neutron.call("POST", "/v2.0/ports", {"port": boot_port(network)})
                                              for _ in range(each)])
    return each * clients / seconds


def bulks(neutron, network, ports, size, clients):
    each = ports // (size * clients)

    def work(_):
        for _ in range(each):
            made = neutron.call("POST", "/v2.0/ports", {"ports": [boot_port(network) for _ in range(size)]})
            assert len(made["ports"]) == size

    seconds = in_parallel(clients, work)
    return each * size * clients / seconds


def pool(neutron, network, ports, bound):
    """Ports made ahead, in bulks of 16, with no device: a pool's."""
    made = []
    while len(made) < ports:
        body = []
        for _ in range(min(16, ports - len(made))):
            port = boot_port(network, bound)
            del port["device_id"], port["device_owner"]
            body.append(port)
        made += [p["id"] for p in neutron.call("POST", "/v2.0/ports", {"ports": body})["ports"]]
    return made


def claims(neutron, ids, clients, bind):
    """One PUT per boot claiming a pool port; (claims/s, median ms)."""
    lock = threading.Lock()
    todo = iter(ids)
    latencies = []

    def work(_):
        while True:
            with lock:
                port = next(todo, None)
            if port is None:
                return
            body = {"device_id": str(uuid.uuid4()), "device_owner": "compute:nova"}
            if bind:
                body["binding:host_id"] = "host1"
            started = time.monotonic()
            neutron.call("PUT", "/v2.0/ports/" + port, {"port": body})
            with lock:
                latencies.append(time.monotonic() - started)

    seconds = in_parallel(clients, work)
    latencies.sort()
    return len(ids) / seconds, 1000 * latencies[len(latencies) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a noauth Neutron, e.g. http://127.0.0.1:19696")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    neutron = Neutron(args.url)
    network = neutron.call("POST", "/v2.0/networks", {"network": {"name": "create-paths"}})["network"]["id"]
    neutron.call("POST", "/v2.0/subnets", {"subnet": {"network_id": network, "cidr": "10.64.0.0/12", "ip_version": 4}})
    creates(neutron, network, 8, 1)  # warm-up
    print("round | create c1 | create c8 | bulk 8, 1 client | bulk 8, 2 clients | bulk 16, 1 client "
          "| pool bound: PUT c1 (p50) | PUT c8 (p50) | pool unbound: PUT+bind c1 (p50) | PUT+bind c8 (p50)")
    for r in range(args.rounds):
        row = [creates(neutron, network, 32, 1), creates(neutron, network, 48, 8),
               bulks(neutron, network, 48, 8, 1), bulks(neutron, network, 64, 8, 2), bulks(neutron, network, 64, 16, 1)]
        cells = [f"{x:.2f}/s" for x in row]
        for bound, bind in ((True, False), (False, True)):
            for clients, n in ((1, 24), (8, 48)):
                rate, p50 = claims(neutron, pool(neutron, network, n, bound), clients, bind)
                cells.append(f"{rate:.2f}/s ({p50:.0f} ms)")
        print(f"{r} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
