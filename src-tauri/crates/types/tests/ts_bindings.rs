//! The UI's TypeScript types in `ui/src/gen/` are generated from this crate with ts-rs. This test
//! regenerates them into a temporary directory and fails if the committed files differ, so the UI
//! and the Rust types cannot drift apart. To rewrite the files after changing a type:
//!
//! ```sh
//! OSPREY_WRITE_BINDINGS=1 cargo test -p osprey-types --test ts_bindings
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use osprey_types::{
    AppAccount, AppAccountState, AppExchange, AppInstallOutcome, AppInstallReport, AppRunState,
    AppStatus, AppTraffic, ApprovalAnswer, ApprovalDetails, ApprovalRequest, ApprovalResolution,
    ChatSessionSummary, ContentBlock, CoreEvent, CoreInfo, ErrorCode, GrantDuration, GrantScope,
    Origin, PendingApproval, ProviderOverview, ProviderRow, ToolResult, TranscriptItem,
    TurnFailureCode, UiError, UiErrorCode,
};
use osprey_types::{
    AuditFilter, AuditOutcome, AuditRow, GrantRow, InstallStage, PermissionExplained,
    PermissionSensitivity, StoreAppDetails, StoreAppSummary, StoreCatalogPage, StoreCategory,
    StoreHome, StoreInstallState, StoreReview, StoreSkillPage, StoreSkillReport, StoreSkillSummary,
};
use ts_rs::{Config, TS};

const WRITE_ENV: &str = "OSPREY_WRITE_BINDINGS";

fn gen_dir() -> PathBuf {
    // The run-time value first: a test binary reused from another checkout sharing the target
    // directory would otherwise check that checkout's files.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir.join("../../../ui/src/gen")
}

/// Exports one type (and what it refers to) and notes its name for the index.
fn export<T: TS + 'static>(config: &Config, index: &mut Vec<String>) {
    T::export_all(config).unwrap_or_else(|e| panic!("exporting {}: {e}", T::ident(config)));
    index.push(T::ident(config));
}

/// Every file the UI should have, by path relative to `ui/src/gen/`.
fn generate(out_dir: &Path) -> BTreeMap<PathBuf, String> {
    // i64 travels as a JSON number, not a bigint.
    let config = Config::new().with_large_int("number").with_out_dir(out_dir);
    let mut index = Vec::new();
    // Add new UI-facing types here.
    export::<Origin>(&config, &mut index);
    export::<ErrorCode>(&config, &mut index);
    export::<ContentBlock>(&config, &mut index);
    export::<ToolResult>(&config, &mut index);
    export::<ApprovalRequest>(&config, &mut index);
    export::<ApprovalDetails>(&config, &mut index);
    export::<GrantScope>(&config, &mut index);
    export::<GrantDuration>(&config, &mut index);
    export::<ApprovalAnswer>(&config, &mut index);
    export::<CoreInfo>(&config, &mut index);
    export::<UiErrorCode>(&config, &mut index);
    export::<TurnFailureCode>(&config, &mut index);
    export::<UiError>(&config, &mut index);
    export::<CoreEvent>(&config, &mut index);
    export::<ApprovalResolution>(&config, &mut index);
    export::<AppStatus>(&config, &mut index);
    export::<AppRunState>(&config, &mut index);
    export::<AppAccount>(&config, &mut index);
    export::<AppAccountState>(&config, &mut index);
    export::<AppExchange>(&config, &mut index);
    export::<AppTraffic>(&config, &mut index);
    export::<AppInstallReport>(&config, &mut index);
    export::<AppInstallOutcome>(&config, &mut index);
    export::<ChatSessionSummary>(&config, &mut index);
    export::<osprey_types::ChatSearchHit>(&config, &mut index);
    export::<osprey_types::ChatUsage>(&config, &mut index);
    export::<TranscriptItem>(&config, &mut index);
    export::<PendingApproval>(&config, &mut index);
    export::<ProviderOverview>(&config, &mut index);
    export::<ProviderRow>(&config, &mut index);
    // The settings page and the tray (issue 12).
    export::<osprey_types::Theme>(&config, &mut index);
    export::<osprey_types::Persona>(&config, &mut index);
    export::<osprey_types::OsCapabilityView>(&config, &mut index);
    export::<osprey_types::QuietHours>(&config, &mut index);
    export::<osprey_types::PolicySettings>(&config, &mut index);
    export::<osprey_types::McpServerView>(&config, &mut index);
    export::<osprey_types::SkillView>(&config, &mut index);
    export::<osprey_types::SettingsOverview>(&config, &mut index);
    export::<osprey_types::RunningTurn>(&config, &mut index);
    export::<osprey_types::AutomationStatus>(&config, &mut index);
    export::<osprey_types::ToolGovernanceView>(&config, &mut index);
    export::<osprey_types::ToolQuotaView>(&config, &mut index);
    export::<osprey_types::ToolBreakerView>(&config, &mut index);
    export::<osprey_types::ToolCategoryView>(&config, &mut index);
    export::<osprey_types::WindowSnapshot>(&config, &mut index);
    export::<osprey_types::WindowAsk>(&config, &mut index);
    export::<osprey_types::UiEvent>(&config, &mut index);
    export::<osprey_types::UiEventBatch>(&config, &mut index);
    // Settings' Accounts section (issue 13).
    export::<osprey_types::MailServerView>(&config, &mut index);
    export::<osprey_types::MailAccountView>(&config, &mut index);
    export::<osprey_types::DavAccountView>(&config, &mut index);
    export::<osprey_types::OsAccountsView>(&config, &mut index);
    export::<osprey_types::MailAccountInput>(&config, &mut index);
    export::<osprey_types::DavAccountInput>(&config, &mut index);
    export::<osprey_types::AccountCheck>(&config, &mut index);
    // The store and the approvals page.
    export::<PermissionExplained>(&config, &mut index);
    export::<PermissionSensitivity>(&config, &mut index);
    export::<StoreAppSummary>(&config, &mut index);
    export::<StoreCatalogPage>(&config, &mut index);
    export::<StoreCategory>(&config, &mut index);
    export::<StoreHome>(&config, &mut index);
    export::<StoreReview>(&config, &mut index);
    export::<StoreSkillSummary>(&config, &mut index);
    export::<StoreSkillPage>(&config, &mut index);
    export::<StoreSkillReport>(&config, &mut index);
    export::<StoreInstallState>(&config, &mut index);
    export::<StoreAppDetails>(&config, &mut index);
    export::<InstallStage>(&config, &mut index);
    export::<AuditOutcome>(&config, &mut index);
    export::<AuditRow>(&config, &mut index);
    export::<AuditFilter>(&config, &mut index);
    export::<GrantRow>(&config, &mut index);
    // The team under a conversation and the agent types in Settings (issue 14).
    export::<osprey_types::TeamView>(&config, &mut index);
    export::<osprey_types::TeamAgent>(&config, &mut index);
    export::<osprey_types::TeamGraphTask>(&config, &mut index);
    export::<osprey_types::AgentCatalogView>(&config, &mut index);
    export::<osprey_types::UnavailablePack>(&config, &mut index);
    export::<osprey_types::AgentTypeView>(&config, &mut index);
    export::<osprey_types::ToolPackView>(&config, &mut index);
    export::<osprey_types::AgentTypeDraft>(&config, &mut index);

    index.sort();
    let mut index_ts = String::from(
        "// Generated by src-tauri/crates/types/tests/ts_bindings.rs. Do not edit this file manually.\n",
    );
    for name in &index {
        index_ts.push_str(&format!("export type {{ {name} }} from \"./{name}\";\n"));
    }
    std::fs::write(out_dir.join("index.ts"), index_ts).unwrap();
    read_tree(out_dir)
}

fn read_tree(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "ts") {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                files.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn ui_bindings_match_the_rust_types() {
    let scratch = tempfile::tempdir().unwrap();
    let expected = generate(scratch.path());
    let gen_dir = gen_dir();

    if std::env::var_os(WRITE_ENV).is_some_and(|v| v == "1") {
        if gen_dir.exists() {
            std::fs::remove_dir_all(&gen_dir).unwrap();
        }
        for (relative, text) in &expected {
            let path = gen_dir.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        return;
    }

    let actual = read_tree(&gen_dir);
    let mut problems = Vec::new();
    for (relative, text) in &expected {
        match actual.get(relative) {
            None => problems.push(format!("missing {}", relative.display())),
            Some(committed) if committed != text => {
                problems.push(format!("out of date {}", relative.display()))
            }
            Some(_) => {}
        }
    }
    for relative in actual.keys().filter(|r| !expected.contains_key(*r)) {
        problems.push(format!("not generated from Rust {}", relative.display()));
    }
    assert!(
        problems.is_empty(),
        "ui/src/gen/ does not match osprey-types:\n  {}\nRegenerate with `{WRITE_ENV}=1 cargo test -p osprey-types --test ts_bindings` and commit the result.",
        problems.join("\n  ")
    );
}
