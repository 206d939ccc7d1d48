//! `cache::build_network_info`: how one VIF renders (Nova's `_build_vif_model`).

use super::*;

const PORT_UUID: &str = "9a1f7f7e-3c1b-4f7e-8a3e-2b8f1d0c5e11";

struct RenderCase {
    name: &'static str,
    /// Changes to the plain port (a port of SERVER on net1/sub1 at FRESH, OVS).
    tweak: fn(&mut Port),
    origin: VifOrigin,
    /// Floating IPs: (floating address, fixed address it points at).
    floating: &'static [(&'static str, &'static str)],
    /// JSON pointer into the VIF's cache JSON.
    pointer: &'static str,
    want: Value,
}

impl Case for RenderCase {
    type Decision = Value;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Value {
        let mut p = port(PORT_UUID);
        (self.tweak)(&mut p);
        let floating_ips = self
            .floating
            .iter()
            .map(|(floating, fixed)| FloatingIp {
                id: format!("fip-{floating}"),
                project_id: ProjectId::from("demo"),
                floating_network_id: NetworkId::from("public"),
                floating_ip_address: floating.parse().unwrap(),
                fixed_ip_address: Some(fixed.parse().unwrap()),
                port_id: Some(p.id.clone()),
                device_id: None,
            })
            .collect();
        let vifs = [vif(PORT_UUID, 0, VifState::Attached, self.origin)];
        let observed = HashMap::from([(
            p.id.clone(),
            Observed::Present {
                port: Arc::new(p),
                floating_ips,
            },
        )]);
        let out = build(&vifs, &NetworkInfo::default(), &observed, OnLost::Drop);
        let json = serde_json::to_value(&out.info).unwrap();
        json.pointer(&format!("/0{}", self.pointer))
            .cloned()
            .unwrap_or_else(|| json!("<absent>"))
    }
    fn expected(&self) -> Value {
        self.want.clone()
    }
}

fn fixed(subnet: &str, ip: &str) -> PortFixedIp {
    PortFixedIp {
        subnet_id: SubnetId::from(subnet),
        ip_address: ip.parse().unwrap(),
    }
}

#[test]
fn vif_rendering() {
    use VifOrigin::{Created, Preexisting};
    let row = |name, pointer, want| RenderCase {
        name,
        tweak: |_| {},
        origin: Created,
        floating: &[],
        pointer,
        want,
    };
    check(&[
        row("the port id is the VIF id", "/id", json!(PORT_UUID)),
        row("the MAC is the address", "/address", json!("fa:16:3e:4c:2a:10")),
        row(
            "devname is tap plus the id, cut to 14",
            "/devname",
            json!("tap9a1f7f7e-3c"),
        ),
        row(
            "OVS without bridge_name: the configured bridge",
            "/network/bridge",
            json!("br-int"),
        ),
        row(
            "OVS: ovs_interfaceid is the port id",
            "/ovs_interfaceid",
            json!(PORT_UUID),
        ),
        RenderCase {
            name: "OVS bridge_name from the details, cut to 14",
            tweak: |p| p.vif_details = json!({"bridge_name": "br-very-long-bridge-name"}),
            ..row("", "/network/bridge", json!("br-very-long-b"))
        },
        RenderCase {
            name: "not OVS: no bridge",
            tweak: |p| p.vif_type = Some("unbound".into()),
            ..row("", "/network/bridge", Value::Null)
        },
        RenderCase {
            name: "not OVS: no ovs_interfaceid",
            tweak: |p| p.vif_type = Some("unbound".into()),
            ..row("", "/ovs_interfaceid", Value::Null)
        },
        row(
            "the label and MTU come from the network",
            "/network/label",
            json!("private"),
        ),
        row(
            "network meta: the network's project, its MTU",
            "/network/meta",
            json!({"injected": false, "tenant_id": "proj-net", "mtu": 1442, "physical_network": null, "tunneled": null}),
        ),
        RenderCase {
            name: "an unknown network: no label",
            tweak: |p| p.network_id = NetworkId::from("net-x"),
            ..row("", "/network/label", Value::Null)
        },
        RenderCase {
            name: "an unknown network: the port's project, no MTU",
            tweak: |p| p.network_id = NetworkId::from("net-x"),
            ..row(
                "",
                "/network/meta",
                json!({"injected": false, "tenant_id": "proj", "mtu": null, "physical_network": null, "tunneled": null}),
            )
        },
        row("ACTIVE is active", "/active", json!(true)),
        RenderCase {
            name: "DOWN and admin up is not active",
            tweak: |p| p.status = "DOWN".into(),
            ..row("", "/active", json!(false))
        },
        RenderCase {
            name: "admin down counts as active, as in Nova",
            tweak: |p| {
                p.status = "DOWN".into();
                p.admin_state_up = false;
            },
            ..row("", "/active", json!(true))
        },
        RenderCase {
            name: "no vnic_type reads normal",
            tweak: |p| p.vnic_type = None,
            ..row("", "/vnic_type", json!("normal"))
        },
        RenderCase {
            name: "a direct vnic_type is kept",
            tweak: |p| p.vnic_type = Some("direct".into()),
            ..row("", "/vnic_type", json!("direct"))
        },
        row(
            "a port netcache created is not preserved",
            "/preserve_on_delete",
            json!(false),
        ),
        RenderCase {
            name: "a user's port is preserved on delete",
            origin: Preexisting,
            ..row("", "/preserve_on_delete", json!(true))
        },
        row("delegate_create is set", "/delegate_create", json!(true)),
        RenderCase {
            name: "the profile passes through",
            tweak: |p| p.profile = json!({"allocation": "rp-1"}),
            ..row("", "/profile", json!({"allocation": "rp-1"}))
        },
        RenderCase {
            name: "details that are not an object become {}",
            tweak: |p| p.vif_details = Value::Null,
            ..row("", "/details", json!({}))
        },
        row(
            "the gateway is an IP of type gateway",
            "/network/subnets/0/gateway",
            json!({"address": "10.0.0.1", "type": "gateway", "version": 4, "meta": {}}),
        ),
        row(
            "DNS servers are IPs of type dns",
            "/network/subnets/0/dns",
            json!([{"address": "8.8.8.8", "type": "dns", "version": 4, "meta": {}}]),
        ),
        row(
            "host routes become routes",
            "/network/subnets/0/routes",
            json!([{"cidr": "192.168.0.0/24", "gateway": {"address": "10.0.0.1", "type": "gateway", "version": 4, "meta": {}}, "interface": null, "meta": {}}]),
        ),
        row(
            "an IPv4 subnet's meta has enable_dhcp only",
            "/network/subnets/0/meta",
            json!({"enable_dhcp": true}),
        ),
        RenderCase {
            name: "a floating IP hangs under its fixed IP",
            floating: &[("172.24.4.228", FRESH)],
            ..row(
                "",
                "/network/subnets/0/ips/0/floating_ips",
                json!([{"address": "172.24.4.228", "type": "floating", "version": 4, "meta": {}}]),
            )
        },
        RenderCase {
            name: "a floating IP of another fixed IP is not shown",
            floating: &[("172.24.4.228", "10.0.0.6")],
            ..row("", "/network/subnets/0/ips/0/floating_ips", json!([]))
        },
        RenderCase {
            name: "two fixed IPs of one subnet share its entry",
            tweak: |p| p.fixed_ips.push(fixed("sub1", "10.0.0.6")),
            ..row("", "/network/subnets/0/ips/1/address", json!("10.0.0.6"))
        },
        RenderCase {
            name: "two fixed IPs of one subnet make one entry",
            tweak: |p| p.fixed_ips.push(fixed("sub1", "10.0.0.6")),
            ..row("", "/network/subnets/1", json!("<absent>"))
        },
        RenderCase {
            name: "subnets follow fixed-IP order",
            tweak: |p| p.fixed_ips.insert(0, fixed("sub6", "fd00:1::5")),
            ..row("", "/network/subnets/0/cidr", json!("fd00:1::/64"))
        },
        RenderCase {
            name: "an IPv6 subnet: version 6 and its address mode",
            tweak: |p| p.fixed_ips = vec![fixed("sub6", "fd00:1::5")],
            ..row(
                "",
                "/network/subnets/0",
                json!({
                    "cidr": "fd00:1::/64",
                    "dns": [],
                    "gateway": {"address": "fd00:1::1", "type": "gateway", "version": 6, "meta": {}},
                    "ips": [{"address": "fd00:1::5", "type": "fixed", "version": 6, "meta": {}, "floating_ips": []}],
                    "routes": [],
                    "version": 6,
                    "meta": {"enable_dhcp": true, "ipv6_address_mode": "slaac"},
                }),
            )
        },
        RenderCase {
            name: "a subnet we cannot see keeps its IP, with no cidr",
            tweak: |p| p.fixed_ips = vec![fixed("sub-x", "192.168.9.9")],
            ..row(
                "",
                "/network/subnets/0",
                json!({
                    "cidr": "",
                    "dns": [],
                    "gateway": {"address": null, "type": "gateway", "version": null, "meta": {}},
                    "ips": [{"address": "192.168.9.9", "type": "fixed", "version": 4, "meta": {}, "floating_ips": []}],
                    "routes": [],
                    "version": 4,
                    "meta": {"enable_dhcp": false},
                }),
            )
        },
        RenderCase {
            name: "a port without fixed IPs has no subnets",
            tweak: |p| p.fixed_ips.clear(),
            ..row("", "/network/subnets", json!([]))
        },
    ]);
}
