"""Create Neutron's schema from its SQLAlchemy models.

``neutron-db-manage upgrade heads`` cannot run on SQLite (the migrations ALTER
constraints), so, as Neutron's own unit tests do, the tables are created from
the models of the head revision; ``scripts/real-neutron.sh`` then runs
``neutron-db-manage stamp heads`` so the database is recorded as up to date.

Usage: netcache_neutron_schema.py DATABASE_URL
"""
import sys

import sqlalchemy as sa

from neutron.db.migration.models import head


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    url = sys.argv[1]
    engine = sa.create_engine(url)
    metadata = head.get_metadata()
    metadata.create_all(engine)
    engine.dispose()
    print('created %d tables in %s' % (len(metadata.tables), url))


if __name__ == '__main__':
    main()
