//! The store as the desktop's Store page sees it: the front page (featured, popular,
//! categories), searched and paged catalog lists, an app's page with its permissions explained
//! in plain words and what an update would add, its reviews, and installing from the store with
//! progress events ([`CoreEvent::AppInstallProgress`]), and its skills (listed, installed at the
//! version shown, removed). The store is the one `store.url` (or
//! `$OSPREY_STORE_URL`) names now, read at each call so a changed setting applies at once.

use std::collections::HashMap;

use osprey_apps::store_client::{Shelf, StoreClient};
use osprey_types::{
    PermissionExplained, StoreAppDetails, StoreAppSummary, StoreCatalogPage, StoreCategory,
    StoreHome, StoreInstallState, StoreReview, UiErrorCode,
};
use serde_json::Value;

use crate::{Core, CoreError, CoreResult};

/// Apps per catalog page.
pub const PER_PAGE: u32 = 24;
/// Apps on each shelf of the front page.
pub const SHELF_SIZE: u32 = 8;

/// Each permission of `permissions` in plain words (the install prompt, the store tool's
/// approval question, `osprey app`).
pub fn explain_permissions(permissions: &[String]) -> Vec<PermissionExplained> {
    osprey_apps::permissions::explained(permissions)
}

/// What is installed here, by app id: (version, permissions, pending permissions).
type Installed = HashMap<String, (String, Vec<String>, Option<Vec<String>>)>;

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_string()
}

fn not_valid(what: &str) -> CoreError {
    CoreError::new(
        UiErrorCode::StoreUnavailable,
        format!("the store's answer is not a valid {what}"),
    )
}

fn summary(entry: &Value, installed: &Installed) -> CoreResult<StoreAppSummary> {
    let id = entry["id"].as_str().ok_or_else(|| not_valid("app entry"))?;
    Ok(StoreAppSummary {
        id: id.to_string(),
        name: text(entry, "name"),
        description: text(entry, "description"),
        version: text(entry, "version"),
        size: entry["size"].as_u64().unwrap_or_default(),
        publisher: entry["publisher"].as_str().map(String::from),
        category: entry["category"].as_str().map(String::from),
        rating: entry["rating"].as_f64(),
        review_count: entry["reviews"].as_u64().unwrap_or_default(),
        downloads: entry["downloads"].as_u64().unwrap_or_default(),
        featured: entry["featured"].as_bool().unwrap_or_default(),
        installed_version: installed.get(id).map(|(version, _, _)| version.clone()),
    })
}

fn page(value: &Value, installed: &Installed) -> CoreResult<StoreCatalogPage> {
    let apps = value["apps"]
        .as_array()
        .ok_or_else(|| not_valid("catalog page"))?
        .iter()
        .map(|entry| summary(entry, installed))
        .collect::<CoreResult<Vec<_>>>()?;
    Ok(StoreCatalogPage {
        apps,
        total: value["total"].as_u64().unwrap_or_default(),
        page: value["page"].as_u64().unwrap_or(1) as u32,
        per_page: value["per_page"].as_u64().unwrap_or(u64::from(PER_PAGE)) as u32,
    })
}

/// The secret that holds the person's store token (`osprey config set store.token -`): it ties
/// this Osprey's store event stream to the person, so it also carries their installs and
/// removals on other devices.
pub const STORE_TOKEN_SECRET: &str = "store.token";

/// The person's store token, when they gave one (`osprey config set store.token -`): trimmed,
/// and `None` when blank. It reads the secret store (the keyring may block): call it through
/// `spawn_blocking`, as the store event follower and the apps' configuration do.
pub(crate) fn read_store_token(secrets: &crate::secrets::Secrets) -> Option<String> {
    secrets
        .get(STORE_TOKEN_SECRET)
        .ok()
        .flatten()
        .map(|token| token.trim().to_string())
        .filter(|token| !token.is_empty())
}

impl Core {
    /// Stores (or, given `None` or an empty one, removes) the person's store token, reconnects
    /// the store's event stream with it (here, and in a running Osprey that reads the setting
    /// this writes) and passes it to the running apps that hold `user:token`. Returns where it
    /// is kept, when stored.
    pub async fn set_store_token(
        &self,
        token: Option<&str>,
    ) -> CoreResult<Option<crate::secrets::SecretLocation>> {
        let token = token
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .map(str::to_owned);
        let secrets = self.secrets();
        let location = tokio::task::spawn_blocking(move || match token {
            Some(token) => secrets.set(STORE_TOKEN_SECRET, &token).map(Some),
            None => secrets.remove(STORE_TOKEN_SECRET).map(|_| None),
        })
        .await
        .map_err(anyhow::Error::from)??;
        // Another process's Osprey hears of it through this setting (`settings.applied`).
        self.set_setting(
            crate::settings::STORE_TOKEN_CHANGED,
            serde_json::json!(osprey_db::now_ms()),
        )
        .await?;
        self.push_store_token_to_apps().await;
        Ok(location)
    }

    /// The store named by the settings now, or `store_unavailable` saying how to set one.
    pub(crate) fn store_client(&self) -> CoreResult<(StoreClient, String)> {
        let url = self.store_url().ok_or_else(|| {
            CoreError::new(
                UiErrorCode::StoreUnavailable,
                "no store is set: enter the store's address in Settings (store.url), or run \
                 `osprey config set store.url URL`",
            )
        })?;
        Ok((StoreClient::new(url.clone()), url))
    }

    async fn installed_for_store(&self) -> Installed {
        #[cfg(unix)]
        {
            self.installed_apps()
                .await
                .into_iter()
                .filter(|app| !app.sideloaded)
                .map(|app| {
                    (
                        app.manifest.id,
                        (
                            app.manifest.version,
                            app.manifest.permissions,
                            app.pending_permissions,
                        ),
                    )
                })
                .collect()
        }
        #[cfg(not(unix))]
        {
            Installed::new()
        }
    }

    /// The Store page's front: featured and popular apps and the categories.
    pub async fn store_home(&self) -> CoreResult<StoreHome> {
        let (client, store_url) = self.store_client()?;
        let (featured, popular, categories) = tokio::join!(
            client.listing(Shelf::Featured, "", None, 1, Some(SHELF_SIZE)),
            client.listing(Shelf::Popular, "", None, 1, Some(SHELF_SIZE)),
            client.categories(),
        );
        let installed = self.installed_for_store().await;
        let categories = categories?
            .as_array()
            .ok_or_else(|| not_valid("category list"))?
            .iter()
            .map(|c| StoreCategory {
                name: text(c, "name"),
                count: c["count"].as_u64().unwrap_or_default(),
            })
            .collect();
        Ok(StoreHome {
            featured: page(&featured?, &installed)?.apps,
            popular: page(&popular?, &installed)?.apps,
            categories,
            store_url,
        })
    }

    /// One page (from 1) of the catalog: every app, or those matching `query` (name, id or
    /// description), within `category` when given.
    pub async fn store_catalog(
        &self,
        query: &str,
        category: Option<&str>,
        page_number: u32,
    ) -> CoreResult<StoreCatalogPage> {
        self.store_listing(Shelf::All, query, category, page_number, PER_PAGE)
            .await
    }

    /// One page (from 1, `per_page` apps) of a shelf of the catalog: every app (searched by
    /// `query`), the featured or the popular ones, within `category` when given.
    pub async fn store_listing(
        &self,
        shelf: Shelf,
        query: &str,
        category: Option<&str>,
        page_number: u32,
        per_page: u32,
    ) -> CoreResult<StoreCatalogPage> {
        let (client, _) = self.store_client()?;
        let listed = client
            .listing(
                shelf,
                query.trim(),
                category.filter(|c| !c.trim().is_empty()),
                page_number.max(1),
                Some(per_page.clamp(1, 100)),
            )
            .await?;
        page(&listed, &self.installed_for_store().await)
    }

    /// An app's page: its entry, permissions explained, what an update adds, its reviews.
    pub async fn store_app(&self, id: &str) -> CoreResult<StoreAppDetails> {
        let (client, _) = self.store_client()?;
        let (entry, reviews) = tokio::join!(client.app(id), client.reviews(id));
        let entry = entry.map_err(|error| match &error {
            osprey_apps::Error::StoreRefused { code, .. } if code == "not_found" => CoreError::new(
                UiErrorCode::UnknownApp,
                format!("the store has no app `{id}`"),
            ),
            _ => error.into(),
        })?;
        let installed = self.installed_for_store().await;
        let app = summary(&entry, &installed)?;
        let permissions: Vec<String> = entry["permissions"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|p| p.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let (added_permissions, install_state) = match installed.get(id) {
            None => (Vec::new(), StoreInstallState::NotInstalled),
            Some((version, held, pending)) => {
                let added = permissions
                    .iter()
                    .filter(|p| !held.contains(p))
                    .cloned()
                    .collect();
                let state = if pending.is_some() {
                    StoreInstallState::UpdatePending
                } else if *version == app.version {
                    StoreInstallState::Installed
                } else {
                    StoreInstallState::UpdateAvailable
                };
                (added, state)
            }
        };
        // Reviews are a nicety: an app page still shows when they cannot be read.
        let reviews = reviews
            .ok()
            .and_then(|list| list.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|r| StoreReview {
                author: text(r, "author"),
                rating: r["rating"].as_u64().unwrap_or_default().min(5) as u8,
                body: text(r, "body"),
                created_ms: r["created_at"].as_i64().unwrap_or_default() * 1000,
            })
            .collect();
        Ok(StoreAppDetails {
            app,
            permissions: explain_permissions(&permissions),
            added_permissions,
            install_state,
            reviews,
            published_ms: entry["published_at"].as_i64().unwrap_or_default() * 1000,
            sha256: text(&entry, "sha256"),
        })
    }
}

/// The Store page's Skills tab. Skills install through the store tool's paths, which need the
/// app platform (Unix today); elsewhere each says so.
#[cfg(unix)]
mod skills {
    use std::collections::HashMap;

    use osprey_apps::skill_package::SkillExpectation;
    use osprey_types::{StoreSkillPage, StoreSkillReport, StoreSkillSummary};
    use serde_json::Value;

    use super::{PER_PAGE, not_valid, text};
    use crate::{Core, CoreResult};

    fn skill_summary(
        entry: &Value,
        installed: &HashMap<String, String>,
    ) -> CoreResult<StoreSkillSummary> {
        let name = entry["name"]
            .as_str()
            .ok_or_else(|| not_valid("skill entry"))?;
        let optional = |key: &str| entry[key].as_str().map(String::from);
        Ok(StoreSkillSummary {
            name: name.to_string(),
            description: text(entry, "description"),
            version: text(entry, "version"),
            author: optional("author"),
            license: optional("license"),
            publisher: optional("publisher"),
            category: optional("category"),
            files: entry["files"]
                .as_array()
                .map(|files| {
                    files
                        .iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            size: entry["size"].as_u64().unwrap_or_default(),
            installs: entry["installs"].as_u64().unwrap_or_default(),
            featured: entry["featured"].as_bool().unwrap_or_default(),
            sha256: text(entry, "sha256"),
            installed_version: installed.get(name).cloned(),
        })
    }

    impl Core {
        /// One page of the store's skills for the Store page (searched by `query`, within
        /// `category`), each with the version the store installed here.
        pub async fn store_skills(
            &self,
            query: &str,
            category: Option<&str>,
            page: u32,
        ) -> CoreResult<StoreSkillPage> {
            let value = self
                .store_skill_listing(query, category, page, PER_PAGE)
                .await?;
            let installer = self.skill_installer()?;
            let installed: HashMap<String, String> =
                tokio::task::spawn_blocking(move || installer.installed())
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .map(|record| (record.name, record.version))
                    .collect();
            let skills = value["skills"]
                .as_array()
                .ok_or_else(|| not_valid("skill list"))?
                .iter()
                .map(|entry| skill_summary(entry, &installed))
                .collect::<CoreResult<Vec<_>>>()?;
            Ok(StoreSkillPage {
                skills,
                total: value["total"].as_u64().unwrap_or_default(),
                page: value["page"].as_u64().unwrap_or(1) as u32,
                per_page: value["per_page"].as_u64().unwrap_or(u64::from(PER_PAGE)) as u32,
            })
        }

        /// Installs (or updates) the store skill `name` at the `version` and archive (`sha256`) the
        /// person was shown: anything else the store serves now is refused, nothing unpacked.
        pub async fn install_shown_store_skill(
            &self,
            name: &str,
            version: &str,
            sha256: &str,
        ) -> CoreResult<StoreSkillReport> {
            let expected = SkillExpectation {
                version: version.to_string(),
                sha256: sha256.to_string(),
            };
            let outcome = self.install_store_skill(name, Some(&expected)).await?;
            let message = match &outcome.from_version {
                Some(from) if *from == outcome.version => format!(
                    "The skill {} was at {from} already (the store may have updated it meanwhile); \
                     its files are installed afresh.",
                    outcome.name
                ),
                Some(from) => format!(
                    "Updated the skill {} from {from} to {}.",
                    outcome.name, outcome.version
                ),
                None => format!(
                    "Installed the skill {} {}: the agent can use it from your next message.",
                    outcome.name, outcome.version
                ),
            };
            Ok(StoreSkillReport {
                name: outcome.name,
                version: Some(outcome.version),
                message,
            })
        }

        /// Removes the store skill `name` (see [`Core::uninstall_store_skill`]).
        pub async fn remove_store_skill(&self, name: &str) -> CoreResult<StoreSkillReport> {
            let record = self.uninstall_store_skill(name).await?;
            Ok(StoreSkillReport {
                message: format!("Removed the skill {} {}.", record.name, record.version),
                name: record.name,
                version: None,
            })
        }
    }
}

#[cfg(not(unix))]
impl Core {
    pub async fn store_skills(
        &self,
        _query: &str,
        _category: Option<&str>,
        _page: u32,
    ) -> CoreResult<osprey_types::StoreSkillPage> {
        Err(skills_unsupported())
    }

    pub async fn install_shown_store_skill(
        &self,
        _name: &str,
        _version: &str,
        _sha256: &str,
    ) -> CoreResult<osprey_types::StoreSkillReport> {
        Err(skills_unsupported())
    }

    pub async fn remove_store_skill(
        &self,
        _name: &str,
    ) -> CoreResult<osprey_types::StoreSkillReport> {
        Err(skills_unsupported())
    }
}

#[cfg(not(unix))]
fn skills_unsupported() -> CoreError {
    CoreError::new(
        UiErrorCode::NotSupported,
        "store skills are not supported on this platform yet",
    )
}
