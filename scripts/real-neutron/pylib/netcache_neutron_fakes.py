"""Stand-ins that let a real Neutron API server run alone on loopback.

``FakeBind`` (ML2 mechanism driver, entry point ``fakebind``)
    Binds every port to the first segment it is offered, on any
    ``binding:host_id``, with ``vif_type`` ``ovs``, and sets the port status
    (``ACTIVE`` unless ``NETCACHE_FAKEBIND_STATUS`` says otherwise; ``none``
    leaves it ``DOWN``), as if an L2 agent had wired the port at once.  With it
    Neutron's Nova notifier sends ``network-vif-plugged`` for bound ports.

``HeaderContext`` (paste filter ``header_context``)
    The request context for ``auth_strategy = noauth``.  A request with
    ``X-Project-Id`` gets the context Keystone's middleware would build from
    ``X-Project-Id``, ``X-User-Id`` and ``X-Roles`` (policy applies: a project
    member sends ``X-Roles: member,reader``).  A request without it is the
    local operator: an admin context (project ``fake_project_id``), which is
    what netcache and the ``openstack`` client (auth_type none) get.

The entry point is registered by ``netcache_neutron_fakes-0.1.dist-info``
beside this file, found through ``PYTHONPATH``, so the venv is not modified.
"""
import os

from neutron_lib.api.definitions import portbindings
from neutron_lib import context
from neutron_lib.plugins.ml2 import api
from oslo_log import log as logging
from oslo_middleware import base
import webob.dec

LOG = logging.getLogger(__name__)


class FakeBind(api.MechanismDriver):
    """Binds any host: vif_type ovs, status ACTIVE (configurable)."""

    def initialize(self):
        status = os.environ.get('NETCACHE_FAKEBIND_STATUS', 'ACTIVE')
        self.status = None if status.lower() == 'none' else status
        LOG.info('fakebind: binding every host, port status %s', self.status)

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(
                segment[api.ID],
                portbindings.VIF_TYPE_OVS,
                {portbindings.CAP_PORT_FILTER: True,
                 portbindings.OVS_HYBRID_PLUG: False},
                status=self.status)
            return


class HeaderContext(base.ConfigurableMiddleware):
    """Context from Keystone-style headers; admin when no project is named."""

    @webob.dec.wsgify
    def __call__(self, req):
        ctx = context.Context.from_environ(req.environ)
        if not ctx.project_id:
            ctx.project_id = 'fake_project_id'
            ctx = ctx.elevated()
        req.environ['neutron.context'] = ctx
        return self.application
