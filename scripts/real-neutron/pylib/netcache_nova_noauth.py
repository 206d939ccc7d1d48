"""keystoneauth1 plugin ``netcache_noauth`` for Neutron's Nova notifier without Keystone.

scripts/real-neutron.sh copies pylib (this module and the dist-info that
registers its ``keystoneauth1.plugin`` entry point) into WORKDIR, so the venv
is untouched.  ``[nova] auth_type = netcache_noauth`` posts the events to
the fixed ``endpoint`` with Keystone-style identity headers instead of a token
(keystoneauth1's own ``none`` plugin sends none): netcache's noauth mode reads
the caller from ``X-Roles`` (and ``X-User-Id`` / ``X-Project-Id``), and
external events need the ``service`` role.
"""
from keystoneauth1 import loading
from keystoneauth1 import plugin


class NetcacheNoAuth(plugin.FixedEndpointPlugin):
    """A fixed endpoint; every request carries the identity headers."""

    def __init__(self, endpoint=None, roles='service', user_id='neutron', project_id=None):
        super().__init__(endpoint)
        self._headers = {'X-Roles': roles, 'X-User-Id': user_id}
        if project_id:
            self._headers['X-Project-Id'] = project_id

    def get_headers(self, session, **kwargs):
        return dict(self._headers)


class NetcacheNoAuthLoader(loading.BaseLoader):
    @property
    def plugin_class(self):
        return NetcacheNoAuth

    def get_options(self):
        options = super().get_options()
        options.extend([
            loading.Opt('endpoint', help='The endpoint that will always be used'),
            loading.Opt('roles', default='service', help='X-Roles (comma-separated role names)'),
            loading.Opt('user-id', default='neutron', help='X-User-Id'),
            loading.Opt('project-id', help='X-Project-Id (unset: not sent)'),
        ])
        return options
