//! Nova's deferred-delete server actions, `forceDelete` and `restore` (202).
//! netcache deletes at once (Nova's `reclaim_instance_interval = 0`): a
//! `forceDelete` is the delete Nova does in any state, and a `restore` finds no
//! soft-deleted server (Nova's 409).

use crate::error::ApiResult;
use crate::{AppState, Caller};

pub async fn force_delete(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    let server = caller
        .server(state, id, "os_compute_api:os-deferred-delete:force")
        .await?;
    Ok(state.servers().delete_server(&caller.ctx, server.id).await?)
}

pub async fn restore(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    let server = caller
        .server(state, id, "os_compute_api:os-deferred-delete:restore")
        .await?;
    Ok(state.servers().restore(&caller.ctx, server.id).await?)
}
