//! `allocation::resolve_ambiguous_create`: adopt or abandon.

use super::*;

struct ResolveCase {
    name: &'static str,
    /// What the marker lookup returned.
    found: Vec<Port>,
    /// The port to adopt (`None`: abandon).
    want: Option<&'static str>,
}

impl Case for ResolveCase {
    type Decision = Resolution;
    fn name(&self) -> &str {
        self.name
    }
    fn decide(&self) -> Resolution {
        resolve_ambiguous_create(&marker(DEPLOYMENT, 1), &self.found)
    }
    fn expected(&self) -> Resolution {
        self.want.map_or(Resolution::Abandon, |id| {
            let port = self.found.iter().find(|p| p.id.as_str() == id);
            Resolution::Adopt(port.expect("the row adopts a port it lists").clone())
        })
    }
}

#[test]
fn ambiguous_creates() {
    check(&[
        ResolveCase {
            name: "nothing found: abandon",
            found: vec![],
            want: None,
        },
        ResolveCase {
            name: "a stranger without marker: abandon",
            found: vec![port("x").with_name("my-port")],
            want: None,
        },
        ResolveCase {
            name: "our intent in the tags: adopt",
            found: vec![port("a").tagged(DEPLOYMENT, 1)],
            want: Some("a"),
        },
        ResolveCase {
            name: "our intent in the name: adopt",
            found: vec![port("a").named(DEPLOYMENT, 1)],
            want: Some("a"),
        },
        ResolveCase {
            name: "only the carrier among strangers",
            found: vec![
                port("a").with_name("x"),
                port("b").tagged(DEPLOYMENT, 2),
                port("c").tagged(DEPLOYMENT, 1),
                port("d").named(DEPLOYMENT, 3),
            ],
            want: Some("c"),
        },
        ResolveCase {
            name: "another intent of ours: abandon",
            found: vec![port("a").tagged(DEPLOYMENT, 2), port("b").named(DEPLOYMENT, 3)],
            want: None,
        },
        ResolveCase {
            name: "intent tag without owner tag is no marker: abandon",
            found: vec![port("a").with_tags(&["netcache:intent=00000000-0000-4000-8000-000000000001"])],
            want: None,
        },
        ResolveCase {
            name: "tags naming another intent win over a name naming ours",
            found: vec![port("a").tagged(DEPLOYMENT, 2).named(DEPLOYMENT, 1)],
            want: None,
        },
        ResolveCase {
            name: "two carriers: the lowest id, whatever the order",
            found: vec![
                port("b").tagged(DEPLOYMENT, 1).rev(1),
                port("a").tagged(DEPLOYMENT, 1).rev(9),
            ],
            want: Some("a"),
        },
        ResolveCase {
            name: "the device_id does not matter",
            found: vec![port("a").tagged(DEPLOYMENT, 1).on("")],
            want: Some("a"),
        },
        // The intent id alone decides: the owner half of the marker is not compared.
        ResolveCase {
            name: "our intent under another deployment's owner tag: adopt",
            found: vec![port("a").tagged(OTHER_DEPLOYMENT, 1)],
            want: Some("a"),
        },
    ]);
}
