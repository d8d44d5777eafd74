//! The core's one error type for front ends: a stable [`UiErrorCode`] from the crate that
//! refused, and the message a person reads. Errors from below keep their code on the way up:
//! [`CoreError::from`] an `anyhow::Error` looks through the whole context chain for an error that
//! knows its code (an `osprey_apps::Error` under "approving the update of units" still says
//! `no_pending_update`), and the shells turn a `CoreError` into a `UiError` (desktop) or a JSON
//! `code` (CLI) in one place.

use osprey_types::{UiError, UiErrorCode};

/// An error with the stable code front ends branch on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreError {
    pub code: UiErrorCode,
    /// The stable reason within the code, where the refusing crate gives one
    /// (`signature_invalid` / `digest_mismatch`).
    pub reason: Option<String>,
    pub message: String,
}

pub type CoreResult<T> = Result<T, CoreError>;

impl CoreError {
    pub fn new(code: UiErrorCode, message: impl Into<String>) -> CoreError {
        CoreError {
            code,
            reason: None,
            message: message.into(),
        }
    }

    /// The code of the first error in the chain that has one, else `fallback`; the message is
    /// the whole chain, outermost first.
    pub fn with_fallback(error: &anyhow::Error, fallback: UiErrorCode) -> CoreError {
        let apps = error
            .chain()
            .find_map(|cause| cause.downcast_ref::<osprey_apps::Error>());
        CoreError {
            code: code_in_chain(error).unwrap_or(fallback),
            reason: apps.and_then(osprey_apps::Error::reason).map(str::to_owned),
            message: format!("{error:#}"),
        }
    }
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CoreError {}

/// The code carried by the first error in the chain that knows its own.
fn code_in_chain(error: &anyhow::Error) -> Option<UiErrorCode> {
    error.chain().find_map(|cause| {
        if let Some(error) = cause.downcast_ref::<CoreError>() {
            return Some(error.code);
        }
        if let Some(error) = cause.downcast_ref::<UiError>() {
            return Some(error.code);
        }
        if let Some(error) = cause.downcast_ref::<osprey_apps::Error>() {
            return Some(apps_code(error));
        }
        if let Some(error) = cause.downcast_ref::<osprey_agent::Error>() {
            return Some(error.turn_failure().into());
        }
        if cause.is::<crate::FolderInUse>() {
            return Some(UiErrorCode::DataFolderInUse);
        }
        if cause.is::<crate::approvals::AnswerError>() {
            return Some(UiErrorCode::ApprovalNotPending);
        }
        if cause.is::<osprey_db::Error>() {
            return Some(UiErrorCode::Storage);
        }
        None
    })
}

/// An app platform error's code. Every code `osprey_apps::Error::code` returns is in the list
/// (a test holds them together), so `internal` here would be a bug.
fn apps_code(error: &osprey_apps::Error) -> UiErrorCode {
    error.code().parse().unwrap_or(UiErrorCode::Internal)
}

impl From<anyhow::Error> for CoreError {
    fn from(error: anyhow::Error) -> CoreError {
        CoreError::with_fallback(&error, UiErrorCode::Internal)
    }
}

impl From<osprey_apps::Error> for CoreError {
    fn from(error: osprey_apps::Error) -> CoreError {
        CoreError {
            code: apps_code(&error),
            reason: error.reason().map(str::to_owned),
            message: error.to_string(),
        }
    }
}

impl From<crate::approvals::AnswerError> for CoreError {
    fn from(error: crate::approvals::AnswerError) -> CoreError {
        CoreError::new(UiErrorCode::ApprovalNotPending, error.to_string())
    }
}

impl From<CoreError> for UiError {
    fn from(error: CoreError) -> UiError {
        UiError {
            code: error.code,
            message: error.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use anyhow::Context;
    use osprey_apps::Error as AppsError;

    use super::*;

    /// One of each app platform error: every code it gives is in the UI's list.
    fn every_apps_error() -> Vec<AppsError> {
        let io = || std::io::Error::other("disk");
        vec![
            AppsError::PackageRejected {
                reason: osprey_apps::Rejection::ParentDir("../x".into()),
            },
            AppsError::ManifestInvalid {
                field: "id".into(),
                reason: "empty".into(),
            },
            AppsError::SignatureInvalid {
                reason: osprey_apps::signing::SignatureFailure::Malformed("x".into()),
            },
            AppsError::BinaryInvalid {
                path: "binary".into(),
                problem: osprey_apps::BinaryProblem::Missing,
            },
            AppsError::LaunchFailed {
                id: "a".into(),
                reason: "spawn",
                message: "no".into(),
            },
            AppsError::BuildFailed {
                id: "a".into(),
                message: "exit 101".into(),
            },
            AppsError::KeyInvalid("k".into()),
            AppsError::AlreadyInstalled("a".into()),
            AppsError::Revoked {
                id: "a".into(),
                reason: "malware".into(),
            },
            AppsError::RevocationUnavailable("x".into()),
            AppsError::StoreUnavailable("x".into()),
            AppsError::StoreRefused {
                code: "unauthorized".into(),
                message: "x".into(),
            },
            AppsError::SettingsRejected("x".into()),
            AppsError::NotInstalled("a".into()),
            AppsError::NoPendingUpdate("a".into()),
            AppsError::SendFailed("x".into()),
            AppsError::OAuth {
                reason: "invalid_grant",
                message: "x".into(),
            },
            AppsError::Io {
                context: "write".into(),
                source: io(),
            },
        ]
    }

    #[test]
    fn every_app_platform_code_is_a_ui_code() {
        for error in every_apps_error() {
            let code = error.code();
            let parsed: UiErrorCode = code
                .parse()
                .unwrap_or_else(|why| panic!("{code} is missing from UiErrorCode: {why}"));
            assert_eq!(parsed.as_str(), code);
            assert_eq!(CoreError::from(error).code, parsed);
        }
    }

    #[test]
    fn a_code_under_context_reaches_the_ui_unchanged() {
        let refused: anyhow::Result<()> = Err(AppsError::NoPendingUpdate("units".into()).into());
        let wrapped = refused
            .context("approving the update of units")
            .context("the Apps page")
            .unwrap_err();
        let error = CoreError::from(wrapped);
        assert_eq!(error.code, UiErrorCode::NoPendingUpdate);
        assert!(
            error.message.starts_with("the Apps page: approving"),
            "{}",
            error.message
        );
        let ui = UiError::from(error);
        assert_eq!(ui.code, UiErrorCode::NoPendingUpdate);
        // On the wire the UI reads the same snake_case code the CLI prints.
        assert_eq!(
            serde_json::to_value(&ui).unwrap()["code"],
            "no_pending_update"
        );
    }

    #[test]
    fn reasons_travel_with_their_codes_and_plain_failures_fall_back() {
        let refused = anyhow::Error::from(AppsError::SignatureInvalid {
            reason: osprey_apps::signing::SignatureFailure::Malformed("x".into()),
        })
        .context("installing units");
        let error = CoreError::from(refused);
        assert_eq!(error.code, UiErrorCode::SignatureInvalid);
        assert_eq!(error.reason.as_deref(), Some("signatures_malformed"));

        let agent = anyhow::Error::from(osprey_agent::Error::Auth("bad key".into()));
        assert_eq!(CoreError::from(agent).code, UiErrorCode::Auth);

        let plain = anyhow::anyhow!("something odd");
        assert_eq!(CoreError::from(plain).code, UiErrorCode::Internal);
        let storage = CoreError::with_fallback(&anyhow::anyhow!("locked"), UiErrorCode::Storage);
        assert_eq!(storage.code, UiErrorCode::Storage);
    }

    #[test]
    fn every_turn_failure_is_a_ui_code_of_the_same_name() {
        for code in osprey_types::TurnFailureCode::ALL {
            assert_eq!(UiErrorCode::from(*code).as_str(), code.as_str());
        }
    }
}
