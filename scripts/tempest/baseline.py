"""Turns a run of the candidate Tempest tests into baseline.md's tables and
an include list: which tests pass, which of those pass vacuously, and for
every failure the netcache request that failed.

    TEMPEST_DEBUG=1 TEMPEST_REGEX="$(cat scripts/tempest/candidates.regex)" \
        TEMPEST_RESULTS=/tmp/results.tsv scripts/tempest.sh WORKSPACE || true
    python3 scripts/tempest/baseline.py /tmp/results.tsv WORKSPACE/logs/tempest.log [--compute URL] \
        --include-list scripts/tempest/include-list.txt > tables.md

The log must be a debug log (TEMPEST_DEBUG=1): response bodies are read from it.
A pass is vacuous (left out of the include list) when
* one of its netcache requests got netcache's catch-all 404 ("The resource
  could not be found.", a path netcache has no route for), a 405 (a method
  netcache does not serve on that path) or a 400 "There is no such action"
  (a server action netcache does not have): a negative test expecting that
  error then passes without the feature, or
* it only lists servers, every list came back empty, and no unfiltered list
  made by its class's tests ever showed a server (e.g. min_count ignored, so
  the class's project is empty once setUpClass deleted its one server): "not
  in the list" and "empty list" then prove nothing.
"""

import argparse
import collections
import re
import sys

NETCACHE_PORT = None  # from the log: the compute endpoint's host:port
CATCH_ALL = 'The resource could not be found.'
NO_ACTION = 'There is no such action:'
UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')
REQUEST = re.compile(r' INFO tempest\.lib\.common\.rest_client \[[^\]]*\] Request \((\w+):(\w+)\): '
                     r'(\d+) (\w+) (\S+)')
RECORD = re.compile(r'\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \d+ )')


def read_requests(log_path, compute_base):
    """(class, test) -> [(status, method, path, response body)] for netcache's
    compute and image endpoints."""
    text = open(log_path, errors='replace').read()
    out = collections.defaultdict(list)
    current = None
    for rec in RECORD.split(text):
        m = REQUEST.search(rec)
        if m:
            url = m.group(5)
            current = None
            if url.startswith(compute_base):
                current = (m.group(1), m.group(2), m.group(3), m.group(4), url[len(compute_base):])
            continue
        if current and 'Response - Headers' in rec:
            bodies = re.findall(r"Body: b'(.*)'", rec)
            out[(current[0], current[1])].append((current[2], current[3], current[4],
                                                  bodies[-1] if bodies else ''))
            current = None
    return out


def template(path):
    path = UUID.sub('{id}', path)
    path = re.sub(r'/os-keypairs/[^/?]+', '/os-keypairs/{name}', path)
    return re.sub(r'/servers/(-1|\d{6,})$', '/servers/{bad-id}', path)


def is_list(method, path):
    return method == 'GET' and re.match(r'^/v2\.1/servers(/detail)?(\?.*)?$', path)


def empty_list(body):
    return re.fullmatch(r'\{"servers":\s*\[\]\}', body) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('tsv')
    ap.add_argument('log')
    ap.add_argument('--compute', default='http://127.0.0.1:18774',
                    help="netcache's base URL as Tempest calls it")
    ap.add_argument('--include-list')
    args = ap.parse_args()
    base = args.compute.rstrip('/')
    requests = read_requests(args.log, base)

    rows = [line.rstrip('\n').split('\t') for line in open(args.tsv) if line.strip()]
    by_class = collections.OrderedDict()
    for cls, test, outcome, reason in rows:
        by_class.setdefault(cls, []).append([test, outcome, reason])

    # Classes whose project never showed a server in an unfiltered list.
    empty_classes = set()
    for cls in by_class:
        short = cls.rsplit('.', 1)[1]
        unfiltered = [body for (c, t), reqs in requests.items() if c == short and t.startswith('test')
                      for status, method, path, body in reqs
                      if status == '200' and method == 'GET' and path in ('/v2.1/servers', '/v2.1/servers/detail')]
        if unfiltered and all(empty_list(b) for b in unfiltered):
            empty_classes.add(cls)

    include = []
    vacuous = []
    print('| class | pass | of which vacuous | fail | skip |\n|---|---|---|---|---|')
    detail = []
    totals = collections.Counter()
    for cls, tests in by_class.items():
        short = cls.rsplit('.', 1)[1]
        counts = collections.Counter()
        lines = []
        for test, outcome, reason in tests:
            reqs = requests.get((short, test), [])
            note = reason
            shown = outcome
            if outcome == 'pass':
                why = None
                for status, method, path, body in reqs:
                    if (status == '404' and CATCH_ALL in body) or status == '405':
                        why = 'vacuous: %s %s %s is netcache\'s %s' % (
                            status, method, template(path),
                            'catch-all 404 (no such route)' if status == '404' else '405 (method not served)')
                        break
                    if status == '400' and NO_ACTION in body:
                        action = re.search(NO_ACTION + r' ([\w-]+)', body)
                        why = 'vacuous: 400 %s %s: netcache has no action %s' % (
                            method, template(path), action.group(1) if action else '?')
                        break
                if why is None and cls in empty_classes and reqs and all(
                        is_list(m, p) and (s != '200' or empty_list(b)) for s, m, p, b in reqs) and any(
                        s == '200' for s, _, _, _ in reqs):
                    why = 'vacuous: the class\'s project has no server (an empty list passes)'
                if why:
                    shown = 'pass (vacuous)'
                    note = why
                    counts['vacuous'] += 1
                    vacuous.append((cls, test, why))
                else:
                    include.append((cls, test))
                    note = ', '.join(sorted({'%s %s %s' % (s, m, template(p).split('?')[0])
                                            for s, m, p, _ in reqs if not s.startswith('2')}))
            elif outcome == 'fail':
                if '(no error)' in reason:
                    # assertRaises got a success: say which request was accepted
                    note = reason[:reason.index('(no error)')] + '(no error): accepted'
                    ok = [(s, m, p) for s, m, p, _ in reqs if s.startswith('2') and m != 'GET']
                    if ok:
                        note += ' (%s %s %s)' % (ok[0][0], ok[0][1], template(ok[0][2]))
                bad = [(s, m, p, b) for s, m, p, b in reqs if s[0] in '45']
                if bad:
                    s, m, p, b = bad[-1]
                    msg = re.search(r'"message":\s*"([^"]{0,120})', b)
                    where = '%s %s %s' % (s, m, template(p))
                    if msg and msg.group(1) in reason:
                        note = '%s ← %s' % (reason, where)
                    else:
                        note = '%s ← %s%s' % (reason, where, (': ' + msg.group(1)) if msg else '')
            counts[outcome] += 1
            lines.append('| %s | %s | %s |' % (test, shown, note.replace('|', '\\|')))
        totals.update(counts)
        print('| %s | %d | %d | %d | %d |' % (cls.replace('tempest.api.compute.', ''), counts['pass'],
                                              counts['vacuous'], counts['fail'], counts['skip']))
        detail.append('### %s\n\n%d pass (%d vacuous), %d fail, %d skip\n\n| test | outcome | reason |\n'
                      '|---|---|---|\n%s\n' % (cls, counts['pass'], counts['vacuous'], counts['fail'],
                                               counts['skip'], '\n'.join(lines)))
    print('| **total** | %d | %d | %d | %d |\n' % (totals['pass'], totals['vacuous'], totals['fail'],
                                                   totals['skip']))
    print('\n'.join(detail))

    if args.include_list:
        with open(args.include_list, 'w') as f:
            f.write('# Tempest tests netcache passes, for `tempest run --include-list` (scripts/tempest.sh).\n'
                    '# One regex per line (re.search over test ids): the test id, anchored, up to the\n'
                    '# "[" of its attributes. Made by scripts/tempest/baseline.py from a run of every\n'
                    '# candidate (scripts/tempest/candidates.regex); see scripts/tempest/baseline.md.\n'
                    '# Vacuous passes are left out (listed at the end, commented).\n')
            last = None
            for cls, test in include:
                if cls != last:
                    f.write('\n# %s\n' % cls)
                    last = cls
                f.write('^%s\\.%s\\[\n' % (re.escape(cls).replace('\\_', '_'), test))
            if vacuous:
                f.write('\n# Left out: pass without exercising netcache\n')
                for cls, test, why in vacuous:
                    f.write('#   %s.%s (%s)\n' % (cls, test, why))
    print('include: %d, vacuous: %d' % (len(include), len(vacuous)), file=sys.stderr)


if __name__ == '__main__':
    main()
