//! A test double around any [`NeutronApi`]: every call goes through to it,
//! and a callback sees the port calls once they have answered (to record
//! them, or to change the world right after one).

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use netcache_domain::neutron::{FloatingIp, Network, Port, SecurityGroup, SecurityGroupRule, Subnet};
use netcache_domain::security_group_rule::NewIngressRule;
use netcache_domain::{NetworkId, PortId, ProjectId};

use crate::{
    FloatingIpCreate, FloatingIpFilter, FloatingIpTarget, NetworkFilter, NeutronApi, PortCreate, PortFilter,
    PortUpdate, Result, SecurityGroupFilter, SubnetFilter,
};

/// A port call that has answered.
#[derive(Debug)]
pub enum TapCall<'a> {
    ShowPort(&'a PortId),
    ListPorts(&'a PortFilter),
    UpdatePort { id: &'a PortId, if_revision: Option<u64> },
    DeletePort { id: &'a PortId, if_revision: Option<u64> },
}

type OnCall = Box<dyn Fn(&TapCall<'_>) + Send + Sync>;

pub struct Tap {
    inner: Arc<dyn NeutronApi>,
    on: OnCall,
}

impl Tap {
    pub fn new(inner: Arc<dyn NeutronApi>, on: impl Fn(&TapCall<'_>) + Send + Sync + 'static) -> Self {
        Self {
            inner,
            on: Box::new(on),
        }
    }
}

#[async_trait]
impl NeutronApi for Tap {
    async fn list_extensions(&self) -> Result<BTreeSet<String>> {
        self.inner.list_extensions().await
    }
    async fn list_networks(&self, filter: &NetworkFilter) -> Result<Vec<Network>> {
        self.inner.list_networks(filter).await
    }
    async fn list_subnets(&self, filter: &SubnetFilter) -> Result<Vec<Subnet>> {
        self.inner.list_subnets(filter).await
    }
    async fn create_port(&self, port: &PortCreate) -> Result<Port> {
        self.inner.create_port(port).await
    }
    async fn show_port(&self, id: &PortId) -> Result<Port> {
        let answer = self.inner.show_port(id).await;
        (self.on)(&TapCall::ShowPort(id));
        answer
    }
    async fn list_ports(&self, filter: &PortFilter) -> Result<Vec<Port>> {
        let answer = self.inner.list_ports(filter).await;
        (self.on)(&TapCall::ListPorts(filter));
        answer
    }
    async fn update_port(&self, id: &PortId, update: &PortUpdate, if_revision: Option<u64>) -> Result<Port> {
        let answer = self.inner.update_port(id, update, if_revision).await;
        (self.on)(&TapCall::UpdatePort { id, if_revision });
        answer
    }
    async fn delete_port(&self, id: &PortId, if_revision: Option<u64>) -> Result<()> {
        let answer = self.inner.delete_port(id, if_revision).await;
        (self.on)(&TapCall::DeletePort { id, if_revision });
        answer
    }
    async fn replace_port_tags(&self, id: &PortId, tags: &[String]) -> Result<()> {
        self.inner.replace_port_tags(id, tags).await
    }
    async fn list_floating_ips(&self, filter: &FloatingIpFilter) -> Result<Vec<FloatingIp>> {
        self.inner.list_floating_ips(filter).await
    }
    async fn show_floating_ip(&self, id: &str) -> Result<FloatingIp> {
        self.inner.show_floating_ip(id).await
    }
    async fn create_floating_ip(&self, create: &FloatingIpCreate) -> Result<FloatingIp> {
        self.inner.create_floating_ip(create).await
    }
    async fn update_floating_ip(&self, id: &str, target: Option<&FloatingIpTarget>) -> Result<FloatingIp> {
        self.inner.update_floating_ip(id, target).await
    }
    async fn delete_floating_ip(&self, id: &str) -> Result<()> {
        self.inner.delete_floating_ip(id).await
    }
    async fn list_security_groups(&self, filter: &SecurityGroupFilter) -> Result<Vec<SecurityGroup>> {
        self.inner.list_security_groups(filter).await
    }
    async fn show_security_group(&self, id: &str) -> Result<SecurityGroup> {
        self.inner.show_security_group(id).await
    }
    async fn create_security_group(&self, project: &ProjectId, name: &str, description: &str) -> Result<SecurityGroup> {
        self.inner.create_security_group(project, name, description).await
    }
    async fn update_security_group(&self, id: &str, name: &str, description: &str) -> Result<SecurityGroup> {
        self.inner.update_security_group(id, name, description).await
    }
    async fn delete_security_group(&self, id: &str) -> Result<()> {
        self.inner.delete_security_group(id).await
    }
    async fn show_security_group_rule(&self, id: &str) -> Result<SecurityGroupRule> {
        self.inner.show_security_group_rule(id).await
    }
    async fn create_security_group_rule(&self, rule: &NewIngressRule) -> Result<SecurityGroupRule> {
        self.inner.create_security_group_rule(rule).await
    }
    async fn delete_security_group_rule(&self, id: &str) -> Result<()> {
        self.inner.delete_security_group_rule(id).await
    }
    async fn auto_allocated_topology(&self, project: &ProjectId) -> Result<NetworkId> {
        self.inner.auto_allocated_topology(project).await
    }
}
