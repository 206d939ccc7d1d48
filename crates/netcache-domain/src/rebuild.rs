//! Rebuild (Nova's `rebuild` action): from which states Nova allows it, what
//! the server shows while it runs, and where it ends.

use crate::server::{TaskState, VmState};

/// The vm_states Nova rebuilds from (with no task running, launched once).
pub const ALLOWED_FROM: [VmState; 3] = [VmState::Active, VmState::Stopped, VmState::Error];

/// Why Nova refuses a rebuild, in the order its `check_instance_state` looks:
/// the vm_state, then a task in flight, then a server that never launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    VmState(VmState),
    TaskState(TaskState),
    NeverLaunched,
}

/// Whether a server in these states may be rebuilt.
pub fn check(vm_state: VmState, task_state: Option<TaskState>, launched: bool) -> Result<(), Refusal> {
    if !ALLOWED_FROM.contains(&vm_state) {
        return Err(Refusal::VmState(vm_state));
    }
    if let Some(task) = task_state {
        return Err(Refusal::TaskState(task));
    }
    if !launched {
        return Err(Refusal::NeverLaunched);
    }
    Ok(())
}

/// The vm_state a rebuilt server ends in: a stopped one is powered off again
/// (Nova's `test_rebuild_server_in_stop_state`), any other runs.
#[must_use]
pub fn outcome(before: VmState) -> VmState {
    if before == VmState::Stopped {
        VmState::Stopped
    } else {
        VmState::Active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_novas_states_are_rebuilt() {
        for &state in VmState::ALL {
            let checked = check(state, None, true);
            if ALLOWED_FROM.contains(&state) {
                assert_eq!(checked, Ok(()), "{state}");
            } else {
                assert_eq!(checked, Err(Refusal::VmState(state)));
            }
        }
    }

    #[test]
    fn the_vm_state_is_looked_at_first_then_the_task_then_the_launch() {
        let deleting = Some(TaskState::Deleting);
        assert_eq!(
            check(VmState::Paused, deleting, false),
            Err(Refusal::VmState(VmState::Paused))
        );
        assert_eq!(
            check(VmState::Active, deleting, false),
            Err(Refusal::TaskState(TaskState::Deleting))
        );
        assert_eq!(check(VmState::Error, None, false), Err(Refusal::NeverLaunched));
    }

    #[test]
    fn a_stopped_server_stays_stopped_and_others_run() {
        assert_eq!(outcome(VmState::Stopped), VmState::Stopped);
        assert_eq!(outcome(VmState::Active), VmState::Active);
        assert_eq!(outcome(VmState::Error), VmState::Active);
    }
}
