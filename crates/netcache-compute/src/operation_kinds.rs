//! Which step runs each operation kind: the table the runner is handed, one
//! floor above both the runner and the kinds' code.

use netcache_domain::operation::OperationKind;

use crate::attachment::fixed_ips::RemoveFixedIpStep;
use crate::attachment::gc::ReleaseStep;
use crate::attachment::interfaces::{AttachStep, DetachStep};
use crate::attachment::security_groups::SecurityGroupStep;
use crate::lifecycle::build::{BuildStep, DeleteStep};
use crate::lifecycle::power::PowerStep;
use crate::lifecycle::rebuild::RebuildStep;
use crate::runner::step::OperationStep;

/// The step of an operation kind.
pub(crate) fn step_for(kind: OperationKind) -> &'static dyn OperationStep {
    match kind {
        OperationKind::Build => &BuildStep,
        OperationKind::Delete => &DeleteStep,
        OperationKind::Attach => &AttachStep,
        OperationKind::Detach => &DetachStep,
        OperationKind::Release => &ReleaseStep,
        OperationKind::Power => &PowerStep,
        OperationKind::RemoveFixedIp => &RemoveFixedIpStep,
        OperationKind::Rebuild => &RebuildStep,
        OperationKind::SecurityGroup => &SecurityGroupStep,
    }
}
