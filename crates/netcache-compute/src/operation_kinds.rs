//! Which step runs each operation kind: the table the runner is handed, one
//! floor above both the runner and the kinds' code.

use netcache_domain::operation::OperationKind;

use crate::build::{BuildStep, DeleteStep};
use crate::fixed_ips::RemoveFixedIpStep;
use crate::gc::ReleaseStep;
use crate::interfaces::{AttachStep, DetachStep};
use crate::power::PowerStep;
use crate::rebuild::RebuildStep;
use crate::runner::step::OperationStep;
use crate::security_groups::SecurityGroupStep;

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
