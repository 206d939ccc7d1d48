//! Flavors: the fixed catalog of server sizes (Nova's classic defaults). A boot's
//! `flavorRef` names one; the quotas count a server's cores and RAM from it.

/// A flavor of the fixed catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavor {
    pub id: &'static str,
    pub name: &'static str,
    pub ram_mb: u32,
    pub disk_gb: u32,
    pub vcpus: u32,
}

/// Nova's classic default flavors, by id.
pub const FLAVORS: &[Flavor] = &[
    Flavor {
        id: "1",
        name: "m1.tiny",
        ram_mb: 512,
        disk_gb: 1,
        vcpus: 1,
    },
    Flavor {
        id: "2",
        name: "m1.small",
        ram_mb: 2048,
        disk_gb: 20,
        vcpus: 1,
    },
    Flavor {
        id: "3",
        name: "m1.medium",
        ram_mb: 4096,
        disk_gb: 40,
        vcpus: 2,
    },
    Flavor {
        id: "4",
        name: "m1.large",
        ram_mb: 8192,
        disk_gb: 80,
        vcpus: 4,
    },
    Flavor {
        id: "5",
        name: "m1.xlarge",
        ram_mb: 16384,
        disk_gb: 160,
        vcpus: 8,
    },
];

/// The flavor with this id.
#[must_use]
pub fn find(id: &str) -> Option<&'static Flavor> {
    FLAVORS.iter().find(|f| f.id == id)
}
