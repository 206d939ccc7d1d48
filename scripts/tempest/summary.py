"""Summarises a Tempest run from its subunit v2 stream (stdin), as
`stestr last --subunit` gives it: a table of pass/fail/skip per test class,
then every failed test with the first line of its reason. Exits 1 if a test
(or a class's setUpClass) failed or no test ran, else 0.

    stestr last --subunit | python summary.py [--markdown FILE] [--tsv FILE]

--markdown writes a table per class (test, outcome, reason) for
scripts/tempest/baseline.md; --tsv one line per test: class, test, outcome,
reason. Runs in the Tempest venv (python-subunit and testtools are there).
"""

import argparse
import collections
import re
import sys

import subunit
import testtools

OUTCOME = {'success': 'pass', 'fail': 'fail', 'skip': 'skip', 'xfail': 'pass',
           'uxsuccess': 'fail', 'unknown': 'fail', 'exists': None, 'inprogress': None}
# "setUpClass (tempest.api.compute.servers.test_x.Class)" and tearDownClass
FIXTURE = re.compile(r'^(setUpClass|tearDownClass) \((?P<cls>[\w.]+)\)$')


def split_id(test_id):
    """(class, method) of a test id; attributes ([id-...,smoke]) dropped."""
    bare = test_id.split('[', 1)[0]
    m = FIXTURE.match(bare)
    if m:
        return m.group('cls'), m.group(1)
    cls, _, method = bare.rpartition('.')
    return cls, method


def first_reason(details):
    """The first line that says why: a skip's reason, else the exception line
    of the traceback (the last line that names an exception) with the schema
    or response detail right after it when there is one."""
    if 'reason' in details:
        return details['reason'].as_text().strip().splitlines()[0] if details['reason'].as_text().strip() else ''
    tb = details.get('traceback')
    if tb is None:
        return ''
    lines = [l.rstrip() for l in tb.as_text().splitlines() if l.strip()]
    # The exception line: the last "Name: message" or "Name" at column 0.
    idx = None
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r'^[A-Za-z_][\w.]*(Error|Exception|Failure|Invalid\w*|Timeout\w*|NotFound|'
                    r'BadRequest|Unauthorized|Forbidden|Conflict|ServerFault|\w+Exception)\b', lines[i]) \
                or re.match(r'^[a-z_][\w.]*\.[A-Z]\w*: ', lines[i]):
            idx = i
            break
    if idx is None:
        return lines[-1][:300]
    # For multi-line exceptions keep only the first line but append useful
    # detail lines (Details:/Response Body/Failed validating) if present.
    head = lines[idx]
    extra = [l.strip() for l in lines[idx + 1:idx + 8]
             if l.strip().startswith(('Details:', 'Response - Headers', 'Failed validating',
                                      'Body:', "u'", "'"))]
    # assertRaises that got an answer instead: name the call, not the object.
    m = re.match(r'^(\S*MismatchError): <bound method (?:\w+\.)?(\w+) of .*?>> returned (.*)$', head)
    if m:
        head = '%s: %s returned (no error): %s' % (m.group(1), m.group(2), m.group(3)[:80])
    text = head
    for e in extra:
        if e.startswith(('Details:', 'Body:', 'Failed validating')):
            text += ' | ' + e
            break
    for prefix in ('testtools.matchers._impl.', 'tempest.lib.exceptions.'):
        text = text.replace(prefix, '')
    return text[:300]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--markdown')
    ap.add_argument('--tsv')
    args = ap.parse_args()

    results = collections.OrderedDict()  # test_id -> (cls, method, outcome, reason)

    def on_test(test):
        outcome = OUTCOME.get(test['status'])
        if outcome is None:
            return
        cls, method = split_id(test['id'])
        results[test['id']] = (cls, method, outcome, first_reason(test['details']))

    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name='stdout')
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()

    by_class = collections.OrderedDict()
    for cls, method, outcome, reason in sorted(results.values()):
        by_class.setdefault(cls, []).append((method, outcome, reason))

    width = max([len(c) for c in by_class] + [10])
    print('%-*s %5s %5s %5s' % (width, 'class', 'pass', 'fail', 'skip'))
    totals = collections.Counter()
    for cls, tests in by_class.items():
        c = collections.Counter(o for _, o, _ in tests)
        totals.update(c)
        print('%-*s %5d %5d %5d' % (width, cls, c['pass'], c['fail'], c['skip']))
    print('%-*s %5d %5d %5d' % (width, 'total', totals['pass'], totals['fail'], totals['skip']))
    failed = [(cls, m, r) for cls, tests in by_class.items() for m, o, r in tests if o == 'fail']
    if failed:
        print('\nfailed:')
        for cls, m, r in failed:
            print('  %s.%s: %s' % (cls, m, r))

    if args.tsv:
        with open(args.tsv, 'w') as f:
            for cls, tests in by_class.items():
                for m, o, r in tests:
                    f.write('\t'.join((cls, m, o, r.replace('\t', ' '))) + '\n')
    if args.markdown:
        with open(args.markdown, 'w') as f:
            for cls, tests in by_class.items():
                c = collections.Counter(o for _, o, _ in tests)
                f.write('### %s (%d pass, %d fail, %d skip)\n\n' % (cls, c['pass'], c['fail'], c['skip']))
                f.write('| test | outcome | reason |\n|---|---|---|\n')
                for m, o, r in tests:
                    f.write('| %s | %s | %s |\n' % (m, o, r.replace('|', '\\|')))
                f.write('\n')

    if not results:
        print('no test ran', file=sys.stderr)
        return 1
    return 1 if totals['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
