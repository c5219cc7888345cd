//! The daemon's credential broker on the control socket: `credentials/list` and
//! `credentials/revoke`, with vouchers described by id, launch, capabilities and age — never by
//! value.

use std::time::UNIX_EPOCH;

use paddock_client::control::{
    ControlError, CredentialsRevokeParams, ErrorCode, GrantEntry, RevokedResult, VoucherEntry,
    VoucherListResult,
};
use paddock_credentials::{CredentialBroker, VoucherInfo};
use tracing::info;

/// `credentials/list`.
pub fn list(broker: &CredentialBroker) -> VoucherListResult {
    VoucherListResult {
        vouchers: broker.list().iter().map(entry).collect(),
    }
}

/// `credentials/revoke`: one voucher, or every voucher of a launch.
pub fn revoke(
    broker: &CredentialBroker,
    params: CredentialsRevokeParams,
) -> Result<RevokedResult, ControlError> {
    let revoked = match (params.id, params.launch) {
        (Some(id), None) => vec![
            broker
                .revoke(&id)
                .map_err(|error| ControlError::new(ErrorCode::NotFound, error.to_string()))?,
        ],
        (None, Some(launch)) => {
            let revoked = broker.revoke_launch(&launch);
            if revoked.is_empty() {
                return Err(ControlError::new(
                    ErrorCode::NotFound,
                    format!("launch `{launch}` holds no live vouchers"),
                ));
            }
            revoked
        }
        _ => {
            return Err(ControlError::new(
                ErrorCode::InvalidParams,
                "name exactly one of a voucher id or a launch",
            ));
        }
    };
    for voucher in &revoked {
        info!(voucher = %voucher.id, launch = %voucher.launch, "voucher revoked over the control socket");
    }
    Ok(RevokedResult {
        revoked: revoked.iter().map(entry).collect(),
    })
}

fn entry(info: &VoucherInfo) -> VoucherEntry {
    VoucherEntry {
        id: info.id.clone(),
        launch: info.launch.clone(),
        capabilities: info
            .capabilities
            .grants()
            .iter()
            .map(|grant| GrantEntry {
                upstream: grant.upstream().to_owned(),
                method: grant.method().to_owned(),
                path_prefix: grant.path_prefix().to_owned(),
            })
            .collect(),
        age_ms: u64::try_from(info.age.as_millis()).unwrap_or(u64::MAX),
        minted_at_unix_ms: info
            .minted_at
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
    }
}
