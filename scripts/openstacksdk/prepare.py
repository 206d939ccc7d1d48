"""Set-up for openstacksdk's functional tests (scripts/openstacksdk-check.sh).

Usage: prepare.py USER_PASSWORD   (the clouds of OS_CLIENT_CONFIG_FILE)

As devstack-admin (Keystone's admin), idempotently: projects demo and alt_demo
(devstack's names: some tests name `demo`), each with a member user of the
same name (password USER_PASSWORD, reset when the user exists) and one
network with a subnet (so that Nova's "auto" finds exactly one); the external
network `public` (reused if there is one, as scripts/openstack-cli-check.sh
makes it) and a router from demo's subnet to it (floating IPs).
"""
import sys

import openstack

(user_password,) = sys.argv[1:]
admin = openstack.connect(cloud='devstack-admin')
identity, network = admin.identity, admin.network
member = identity.find_role('member', ignore_missing=False)


def first(iterator):
    return next(iter(iterator), None)


def ensure(kind, find, create):
    found = find()
    if found:
        print(f'{kind} {found.name} exists: {found.id}')
        return found
    made = create()
    print(f'created {kind} {made.name} {made.id}')
    return made


public = ensure(
    'external network', lambda: first(network.networks(is_router_external=True, name='public')),
    lambda: network.create_network(
        name='public', is_router_external=True,
        provider_network_type='flat', provider_physical_network='public'))
if not first(network.subnets(network_id=public.id)):
    network.create_subnet(
        name='public-subnet', network_id=public.id, ip_version=4,
        cidr='172.24.4.0/24', is_dhcp_enabled=False)

for index, name in enumerate(['demo', 'alt_demo']):
    project = ensure(
        'project', lambda: identity.find_project(name, domain_id='default'),
        lambda: identity.create_project(
            name=name, domain_id='default', description='scripts/openstacksdk-check.sh'))
    user = identity.find_user(name, domain_id='default')
    if user:
        identity.update_user(user, password=user_password)
        print(f'user {name} exists: {user.id} (password reset)')
    else:
        user = identity.create_user(
            name=name, domain_id='default', password=user_password,
            default_project_id=project.id)
        print(f'created user {name} {user.id}')
    identity.assign_project_role_to_user(project, user, member)
    net = ensure(
        'network', lambda: first(network.networks(name=f'{name}-net', project_id=project.id)),
        lambda: network.create_network(name=f'{name}-net', project_id=project.id))
    subnet = first(network.subnets(network_id=net.id)) or network.create_subnet(
        name=f'{name}-subnet', network_id=net.id, project_id=project.id,
        ip_version=4, cidr=f'10.{88 + index}.0.0/24')
    if name == 'demo':
        router = ensure(
            'router', lambda: first(network.routers(name='demo-router', project_id=project.id)),
            lambda: network.create_router(
                name='demo-router', project_id=project.id,
                external_gateway_info={'network_id': public.id}))
        if not first(network.ports(device_id=router.id, network_id=net.id)):
            network.add_interface_to_router(router, subnet_id=subnet.id)
