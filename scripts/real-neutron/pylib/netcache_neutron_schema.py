"""Create Neutron's schema from its SQLAlchemy models.

``neutron-db-manage upgrade heads`` cannot run on SQLite (the migrations ALTER
constraints), so, as Neutron's own unit tests do, the tables are created from
the models of the head revision; ``scripts/real-neutron.sh`` then runs
``neutron-db-manage stamp heads`` so the database is recorded as up to date.

The migrations also fill one table with data: the security group rule
templates (migration c33da356b165, 2023.2) that give every default security
group its four rules and every other group its two egress rules. Without them
a Neutron made from the models creates groups with no rules at all, unlike any
deployed Neutron, so they are inserted here as that migration inserts them.

Usage: netcache_neutron_schema.py DATABASE_URL
"""
import sys
import uuid

import sqlalchemy as sa

from neutron.db.migration.models import head

RULES_TABLE = 'securitygroupdefaultrules'
INGRESS = 'Legacy default SG rule for ingress traffic'
EGRESS = 'Legacy default SG rule for egress traffic'
# (direction, ethertype, remote group, in default groups, in other groups, description)
DEFAULT_RULE_TEMPLATES = [
    ('egress', 'IPv4', None, True, True, EGRESS),
    ('egress', 'IPv6', None, True, True, EGRESS),
    ('ingress', 'IPv4', 'PARENT', True, False, INGRESS),
    ('ingress', 'IPv6', 'PARENT', True, False, INGRESS),
]


def seed_default_rule_templates(conn, metadata):
    rules = metadata.tables[RULES_TABLE]
    attrs = metadata.tables['standardattributes']
    if conn.execute(sa.select(sa.func.count()).select_from(rules)).scalar():
        return
    for direction, ethertype, remote, in_default, in_other, text in DEFAULT_RULE_TEMPLATES:
        attr_id = conn.execute(
            attrs.insert().values(resource_type=RULES_TABLE, description=text)
        ).inserted_primary_key[0]
        conn.execute(rules.insert().values(
            id=str(uuid.uuid4()), standard_attr_id=attr_id, direction=direction,
            ethertype=ethertype, remote_group_id=remote,
            used_in_default_sg=in_default, used_in_non_default_sg=in_other))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    url = sys.argv[1]
    engine = sa.create_engine(url)
    metadata = head.get_metadata()
    metadata.create_all(engine)
    with engine.begin() as conn:
        seed_default_rule_templates(conn, metadata)
    engine.dispose()
    print('created %d tables in %s' % (len(metadata.tables), url))


if __name__ == '__main__':
    main()
