"""gunicorn entry point for the Neutron API (``netcache_neutron_wsgi:application``).

Neutron 29 ships no ``neutron-server`` command: its API is the WSGI
application ``neutron.wsgi.api:application``, which parses ``sys.argv`` with
oslo.config at import time.  gunicorn's own arguments would be rejected, so
they are hidden first; the configuration files come from
``OS_NEUTRON_CONFIG_DIR`` and ``OS_NEUTRON_CONFIG_FILES``.

SQLite: oslo.db begins transactions with a deferred ``BEGIN``, so two writers
that both upgrade to a write lock fail at once with "database is locked"
(HTTP 500).  Every SQLite transaction here starts with ``BEGIN IMMEDIATE`` and
waits up to ``NETCACHE_NEUTRON_SQLITE_BUSY_MS`` (60000) for the lock instead.
"""
import os
import sys

sys.argv = sys.argv[:1]

import sqlalchemy  # noqa: E402
from sqlalchemy import event  # noqa: E402

_BUSY_MS = int(os.environ.get('NETCACHE_NEUTRON_SQLITE_BUSY_MS', '60000'))


@event.listens_for(sqlalchemy.pool.Pool, 'connect')
def _busy_timeout(dbapi_connection, _record):
    if type(dbapi_connection).__module__.startswith('sqlite3'):
        dbapi_connection.execute('PRAGMA busy_timeout = %d' % _BUSY_MS)


# A class-level listener runs before oslo.db's per-engine one, which skips its
# own BEGIN when the connection is already marked as in a transaction.
@event.listens_for(sqlalchemy.engine.Engine, 'begin')
def _begin_immediate(connection):
    if connection.dialect.name == 'sqlite' and 'in_transaction' not in connection.info:
        connection.exec_driver_sql('BEGIN IMMEDIATE')
        connection.info['in_transaction'] = True


from neutron.wsgi.api import application  # noqa: E402,F401
