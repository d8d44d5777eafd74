//! What the desktop's Store page shows: catalog pages, an app's details with its permissions in
//! plain words, reviews and categories.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How much a permission lets an app do; the install prompt shows `high` ones first and marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PermissionSensitivity {
    Low,
    Medium,
    High,
}

/// One permission an app declares, with what it lets the app do in plain words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PermissionExplained {
    /// As the manifest says it: `network:api.example.com`.
    pub permission: String,
    /// "Connect to api.example.com over the internet".
    pub explanation: String,
    pub sensitivity: PermissionSensitivity,
}

/// One app in a catalog list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct StoreAppSummary {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The store's latest version.
    pub version: String,
    /// The package's size in bytes.
    #[ts(type = "number")]
    pub size: u64,
    pub publisher: Option<String>,
    pub category: Option<String>,
    /// Mean rating 1 to 5, when there are reviews.
    pub rating: Option<f64>,
    #[ts(type = "number")]
    pub review_count: u64,
    #[ts(type = "number")]
    pub downloads: u64,
    pub featured: bool,
    /// The version installed here, if any.
    pub installed_version: Option<String>,
}

/// One page of a catalog list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct StoreCatalogPage {
    pub apps: Vec<StoreAppSummary>,
    /// How many apps match in all.
    #[ts(type = "number")]
    pub total: u64,
    /// This page's number, from 1.
    pub page: u32,
    pub per_page: u32,
}

/// A category with its number of apps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StoreCategory {
    pub name: String,
    #[ts(type = "number")]
    pub count: u64,
}

/// The Store page's front: the featured and popular shelves and the categories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct StoreHome {
    pub featured: Vec<StoreAppSummary>,
    pub popular: Vec<StoreAppSummary>,
    pub categories: Vec<StoreCategory>,
    /// The store's URL.
    pub store_url: String,
}

/// One review of an app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StoreReview {
    pub author: String,
    /// 1 to 5.
    pub rating: u8,
    pub body: String,
    /// Unix milliseconds.
    #[ts(type = "number")]
    pub created_ms: i64,
}

/// Where an app of the store stands here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StoreInstallState {
    NotInstalled,
    /// Installed at the store's version.
    Installed,
    /// The store has another version; installing it updates.
    UpdateAvailable,
    /// An update waits for the person to approve its new permissions.
    UpdatePending,
}

/// One skill in the store's skill list (a folder of instructions, with a SKILL.md, that the
/// agent loads when a task needs it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StoreSkillSummary {
    pub name: String,
    pub description: String,
    /// The store's latest version.
    pub version: String,
    /// `metadata.author` from its SKILL.md, else the publisher the store names.
    pub author: Option<String>,
    pub license: Option<String>,
    pub publisher: Option<String>,
    pub category: Option<String>,
    /// Every file in the skill's folder (what installing it puts on this computer).
    pub files: Vec<String>,
    /// The archive's size in bytes.
    #[ts(type = "number")]
    pub size: u64,
    #[ts(type = "number")]
    pub installs: u64,
    pub featured: bool,
    /// The archive's SHA-256: an install refuses anything but what was shown.
    pub sha256: String,
    /// The version the store installed here, if any.
    pub installed_version: Option<String>,
}

/// One page of the store's skills.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StoreSkillPage {
    pub skills: Vec<StoreSkillSummary>,
    #[ts(type = "number")]
    pub total: u64,
    pub page: u32,
    pub per_page: u32,
}

/// What installing or removing a store skill did, with the sentence a person reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StoreSkillReport {
    pub name: String,
    /// The version now installed (`None` after a removal).
    pub version: Option<String>,
    pub message: String,
}

/// An app's page in the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct StoreAppDetails {
    pub app: StoreAppSummary,
    /// Every permission the store's version asks for, explained.
    pub permissions: Vec<PermissionExplained>,
    /// The permissions the store's version asks for that the installed one does not hold
    /// (empty when not installed): an update with any waits for approval.
    pub added_permissions: Vec<String>,
    pub install_state: StoreInstallState,
    pub reviews: Vec<StoreReview>,
    /// Unix milliseconds.
    #[ts(type = "number")]
    pub published_ms: i64,
    /// The package's SHA-256, as the store lists it.
    pub sha256: String,
}

/// What an install is doing now (the desktop's progress bar).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InstallStage {
    /// Receiving the package; `received` of `total` bytes.
    Downloading,
    /// Checking the archive, signatures and the revocation list, then placing it.
    Verifying,
}
