//! Power actions (`os-stop`, `os-start`, `reboot`, `pause`, `suspend`, `rescue`
//! and their inverses) and the other things a guest is asked to do the same
//! way (`changePassword`): from which states Nova allows each, the task state a
//! server shows while it runs, and the state it ends in.

use serde::{Deserialize, Serialize};

use crate::server::{TaskState, VmState};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerAction {
    Stop,
    Start,
    Reboot {
        hard: bool,
    },
    Pause,
    Unpause,
    Suspend,
    Resume,
    /// Boots the guest from a rescue image, its own disk attached beside it.
    Rescue,
    Unrescue,
    /// The guest's agent sets its admin password (not kept: the fake guest has
    /// no account to set it on, as with Nova's fake driver).
    ChangePassword,
}

/// A power action refused in the server's current state (Nova's 409).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrongState {
    pub vm_state: VmState,
    pub task_state: Option<TaskState>,
}

impl PowerAction {
    /// The action's name in the instance actions (and in Nova's 409 message).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Start => "start",
            Self::Reboot { .. } => "reboot",
            Self::Pause => "pause",
            Self::Unpause => "unpause",
            Self::Suspend => "suspend",
            Self::Resume => "resume",
            Self::Rescue => "rescue",
            Self::Unrescue => "unrescue",
            Self::ChangePassword => "changePassword",
        }
    }

    /// The instance action event the compute records for it.
    #[must_use]
    pub fn event(self) -> String {
        match self {
            Self::ChangePassword => "compute_set_admin_password".to_owned(),
            other => format!("compute_{}_instance", other.name()),
        }
    }

    /// The vm_states Nova allows the action from (with no task running).
    #[must_use]
    pub fn allowed_from(self) -> &'static [VmState] {
        use VmState::{Active, Error, Paused, Rescued, Stopped, Suspended};
        match self {
            Self::Stop => &[Active, Error],
            Self::Rescue => &[Active, Stopped, Error],
            Self::Unrescue => &[Rescued],
            Self::Start => &[Stopped],
            Self::Reboot { hard: false } | Self::Pause | Self::Suspend | Self::ChangePassword => &[Active],
            Self::Reboot { hard: true } => &[Active, Stopped, Paused, Suspended, Error],
            Self::Unpause => &[Paused],
            Self::Resume => &[Suspended],
        }
    }

    /// The task state shown while the action runs.
    #[must_use]
    pub fn task_state(self) -> TaskState {
        match self {
            Self::Stop => TaskState::PoweringOff,
            Self::Start => TaskState::PoweringOn,
            Self::Reboot { hard: false } => TaskState::Rebooting,
            Self::Reboot { hard: true } => TaskState::RebootingHard,
            Self::Pause => TaskState::Pausing,
            Self::Unpause => TaskState::Unpausing,
            Self::Suspend => TaskState::Suspending,
            Self::Resume => TaskState::Resuming,
            Self::Rescue => TaskState::Rescuing,
            Self::Unrescue => TaskState::Unrescuing,
            Self::ChangePassword => TaskState::UpdatingPassword,
        }
    }

    /// The vm_state the server is in once the action is done.
    #[must_use]
    pub fn outcome(self) -> VmState {
        match self {
            Self::Stop => VmState::Stopped,
            Self::Pause => VmState::Paused,
            Self::Suspend => VmState::Suspended,
            Self::Rescue => VmState::Rescued,
            Self::Start
            | Self::Reboot { .. }
            | Self::Unpause
            | Self::Resume
            | Self::Unrescue
            | Self::ChangePassword => VmState::Active,
        }
    }

    /// The task state to start the action with, or why it may not start. A
    /// server with no host (a build that never placed it) has nothing to act on.
    pub fn begin(
        self,
        vm_state: VmState,
        task_state: Option<TaskState>,
        placed: bool,
    ) -> Result<TaskState, WrongState> {
        if task_state.is_none() && placed && self.allowed_from().contains(&vm_state) {
            Ok(self.task_state())
        } else {
            Err(WrongState { vm_state, task_state })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nova's `check_instance_state` table for these actions.
    #[test]
    fn each_action_starts_only_from_novas_states() {
        use VmState::{Active, Error, Paused, Rescued, Stopped, Suspended};
        let table: [(PowerAction, &[VmState]); 11] = [
            (PowerAction::Stop, &[Active, Error]),
            (PowerAction::Start, &[Stopped]),
            (PowerAction::Reboot { hard: false }, &[Active]),
            (
                PowerAction::Reboot { hard: true },
                &[Active, Stopped, Paused, Suspended, Error],
            ),
            (PowerAction::Pause, &[Active]),
            (PowerAction::Unpause, &[Paused]),
            (PowerAction::Suspend, &[Active]),
            (PowerAction::Resume, &[Suspended]),
            (PowerAction::Rescue, &[Active, Stopped, Error]),
            (PowerAction::Unrescue, &[Rescued]),
            (PowerAction::ChangePassword, &[Active]),
        ];
        for (action, allowed) in table {
            for &state in VmState::ALL {
                let started = action.begin(state, None, true);
                assert_eq!(started.is_ok(), allowed.contains(&state), "{action:?} from {state}");
                assert!(
                    action.begin(state, Some(TaskState::Deleting), true).is_err(),
                    "{action:?} during a task"
                );
                assert!(
                    action.begin(state, None, false).is_err(),
                    "{action:?} of an unplaced server"
                );
            }
        }
    }

    #[test]
    fn each_action_ends_where_nova_leaves_the_server() {
        assert_eq!(PowerAction::Stop.outcome(), VmState::Stopped);
        assert_eq!(PowerAction::Start.outcome(), VmState::Active);
        assert_eq!(PowerAction::Reboot { hard: true }.outcome(), VmState::Active);
        assert_eq!(PowerAction::Pause.outcome(), VmState::Paused);
        assert_eq!(PowerAction::Suspend.outcome(), VmState::Suspended);
        assert_eq!(PowerAction::Resume.outcome(), VmState::Active);
        assert_eq!(PowerAction::Rescue.outcome(), VmState::Rescued);
        assert_eq!(PowerAction::Unrescue.outcome(), VmState::Active);
    }
}
