//! The composition root: builds the database, the security layers, the registry and the
//! built-in tools from a data directory and settings, and offers the API both shells (the Tauri
//! desktop app and the `osprey` CLI) call. It emits events on channels; it must not know Tauri.

pub mod accounts;
pub mod agent;
pub mod app_status;
#[cfg(unix)]
pub mod app_tools;
pub mod approvals;
pub mod apps;
pub mod audit;
pub mod automation;
pub mod chat;
#[cfg(unix)]
pub mod comm;
#[cfg(unix)]
pub mod control;
pub mod dav_settings;
pub mod error;
pub mod events;
#[cfg(unix)]
pub mod gateway;
pub mod live_settings;
pub mod mcp;
mod os_accounts;
#[cfg(unix)]
mod outbox;
pub mod provider_settings;
pub mod runners;
pub mod scheduler;
pub mod secrets;
pub mod services;
pub mod settings;
pub mod store;
#[cfg(unix)]
pub mod store_push;
#[cfg(unix)]
pub mod store_tool;
pub mod team;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
pub use error::{CoreError, CoreResult};
use osprey_agent::AgentTool;
pub use osprey_db::DATA_DIR_ENV;
use osprey_db::Database;
use osprey_screen::{DesktopConfig, ScreenTools};
use osprey_tools::file::FileTool;
use osprey_tools::shell::{ShellConfig, ShellSandbox, ShellTool};
use osprey_tools::web::{WebConfig, WebTool};
use osprey_tools::{
    AskMode, AuditSink, ExecTool, Level, OriginRules, PathGuard, Policy, PolicyConfig, Registry,
    RegistryConfig, Safeguard, ToolContext,
};
use osprey_types::{CoreInfo, Origin, ToolResult};
use serde_json::Value;
pub use services::{FolderInUse, Services, Start};

/// How to build a [`Core`].
#[derive(Clone, Debug, Default)]
pub struct CoreOptions {
    /// The data directory; `None` means `$OSPREY_DATA_DIR` or the platform default.
    pub data_dir: Option<PathBuf>,
    /// Overrides parts of the stored policy for this run (CLI `--policy`/`--ask`).
    pub policy: Option<PolicyOverride>,
    /// Where provider keys live; `None` means as `$OSPREY_SECRETS` says (the OS keyring, else
    /// `<data>/secrets.json`). Tests pass the file so they never touch the person's keyring.
    pub secrets: Option<secrets::Backend>,
}

/// A run's override of the stored policy's level and ask mode; the stored allowlist, safe bins
/// and grants still apply.
#[derive(Clone, Copy, Debug, Default)]
pub struct PolicyOverride {
    pub level: Option<Level>,
    pub ask: Option<AskMode>,
}

/// The running core. Cheap to clone.
#[derive(Clone)]
pub struct Core {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    secrets: secrets::Backend,
    db: Database,
    registry: Registry,
    skills: osprey_agent::Skills,
    events: events::EventBus,
    approvals: approvals::ApprovalBroker,
    reminders: scheduler::Reminders,
    /// Where messages leave Osprey through apps (a reminder's `deliver` too).
    outbox: osprey_agent::outbox::OutboxSlot,
    /// Every chat runner built, offered to sub-agents (the agent tool's task resource).
    subagent_runners: osprey_agent::RunnerPool,
    /// Sub-agents, for the runners' inbox (a branch's answer joins its conversation).
    subagents: osprey_agent::SubAgents,
    /// Each conversation's runner, kept between its turns.
    session_runners: runners::SessionRunners,
    mcp: mcp::McpSlot,
    /// The `web` tool's browser profiles (a shell adds its own with [`Core::add_browser_profile`]).
    browser: osprey_browser::BrowserActions,
    /// `web.allow_loopback` as read at start: the rule a shell's own browser profile follows too.
    web_allow_loopback: bool,
    /// Where every browser profile saves downloads (`web.downloads`, live).
    downloads: osprey_browser::DownloadFolder,
    /// A shell's own browser profile opens its pages hidden (`web.native_windows`, live).
    hidden_windows: Arc<std::sync::atomic::AtomicBool>,
    /// The turns running now (the tray's and the window's state of running work).
    turns: automation::RunningTurns,
    #[cfg(unix)]
    apps: apps::AppPlatform,
    /// The apps' accounts (OAuth tokens in the secret store) and their refresher's wake-up.
    #[cfg(unix)]
    accounts: accounts::Accounts,
}

/// A handle that does not keep the core alive, for background tasks that must end with it.
#[cfg(unix)]
#[derive(Clone)]
pub(crate) struct WeakCore(std::sync::Weak<Inner>);

#[cfg(unix)]
impl WeakCore {
    pub(crate) fn upgrade(&self) -> Option<Core> {
        self.0.upgrade().map(|inner| Core { inner })
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("data_dir", &self.inner.data_dir)
            .finish_non_exhaustive()
    }
}

/// The data directory a run uses: the explicit one, else `$OSPREY_DATA_DIR`, else the platform's.
pub fn resolve_data_dir(explicit: Option<&Path>) -> PathBuf {
    osprey_db::data_dir(explicit)
}

/// How the screen tools reach the display: the X display and session bus this process was
/// started with, and `<data>/snapshots` so element IDs from one `osprey see` stay usable by a
/// later `osprey tool desktop` process.
pub fn desktop_config(data_dir: &Path) -> DesktopConfig {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    DesktopConfig {
        x11_display: env("DISPLAY"),
        session_bus_address: env("DBUS_SESSION_BUS_ADDRESS"),
        snapshot_dir: Some(data_dir.join("snapshots")),
        ..DesktopConfig::default()
    }
}

/// How the `os` tool reaches the desktop: the X display and session bus this process was
/// started with (the clipboard follows the process's own DISPLAY / WAYLAND_DISPLAY).
pub fn os_config() -> osprey_platform::OsConfig {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    osprey_platform::OsConfig {
        x11_display: env("DISPLAY"),
        session_bus_address: env("DBUS_SESSION_BUS_ADDRESS"),
        ..osprey_platform::OsConfig::default()
    }
}

/// [`os_config`] with what the stored settings and the secret store add: the mail accounts
/// (setting `os.mail`) and the calendar and contacts accounts (`dav.accounts`), each read at
/// every call so a change applies at once, and their passwords.
pub fn os_config_with(
    stored: &osprey_db::Settings,
    data_dir: &Path,
    secrets: secrets::Backend,
) -> osprey_platform::OsConfig {
    let dav = dav_settings::dav_config(stored.clone(), secrets::Secrets::new(data_dir, secrets));
    let stored = stored.clone();
    let secrets = secrets::Secrets::new(data_dir, secrets);
    osprey_platform::OsConfig {
        dav,
        mail: osprey_platform::mail::MailConfig::live(
            Arc::new(move || settings::read(&stored, settings::OS_MAIL)),
            Arc::new(move |name| secrets.get(name).map_err(|e| format!("{e:#}"))),
        ),
        ..os_config()
    }
}

/// What `osprey os status` prints: each `os` capability, whether it works here, and why not,
/// with the settings of the data directory (`None`: as [`resolve_data_dir`] says).
pub async fn os_status(
    data_dir: Option<&Path>,
) -> anyhow::Result<Vec<osprey_platform::Availability>> {
    let data_dir = resolve_data_dir(data_dir);
    let db = Database::open_in(&data_dir)
        .with_context(|| format!("opening Osprey's database in {}", data_dir.display()))?;
    let config = os_config_with(
        &db.settings(),
        &data_dir,
        secrets::Backend::from_environment(),
    );
    Ok(osprey_platform::OsTool::new(config).status().await)
}

/// What storing a mail account's password did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MailPasswordStored {
    /// Where it went; `None` when an empty password removed it.
    pub location: Option<secrets::SecretLocation>,
    /// Whether `os.mail` has an account by that name yet.
    pub account_configured: bool,
}

impl Core {
    /// Keeps the password of the mail account `account` in the secret store (the system
    /// keyring, else the private file), or forgets it when `password` is empty. It never goes
    /// into the settings table.
    pub fn set_mail_password(
        &self,
        account: &str,
        password: &str,
    ) -> anyhow::Result<MailPasswordStored> {
        let account = account.trim();
        if account.is_empty()
            || account.len() > 64
            || !account
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            anyhow::bail!(
                "a mail account name is 1 to 64 letters, digits, `.`, `_` or `-`, not {account:?}"
            );
        }
        let configured: osprey_platform::mail::MailSettings =
            settings::read(&self.settings(), settings::OS_MAIL);
        let account_configured = configured
            .accounts
            .iter()
            .any(|a| a.name.eq_ignore_ascii_case(account));
        // The name the tool looks up: the account's own spelling when it is set up.
        let name = configured
            .accounts
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(account))
            .map_or(account, |a| a.name.as_str());
        let store = secrets::Secrets::new(self.data_dir(), self.inner.secrets);
        let key = osprey_platform::mail::password_secret(name);
        let location = if password.is_empty() {
            store.remove(&key)?;
            None
        } else {
            Some(store.set(&key, password)?)
        };
        Ok(MailPasswordStored {
            location,
            account_configured,
        })
    }
}

/// Registers the built-in tools (`file`, `shell`, `exec`, `web`, `screenshot`, `desktop`, `os`) with their
/// stored settings. The screen tools connect to the display on first use, so registering them
/// on a machine without one costs nothing; their calls then say no display is available.
fn register_builtin_tools(
    registry: &Registry,
    stored: &osprey_db::Settings,
    paths: &PathGuard,
    secrets: secrets::Backend,
    downloads: &osprey_browser::DownloadFolder,
) -> anyhow::Result<Builtin> {
    let (screenshot, desktop) = ScreenTools::new(desktop_config(paths.data_dir()));
    registry.register_domain(screenshot);
    registry.register_domain(desktop);
    // The `os` tool connects to the display and buses on first use, as the screen tools do; its
    // mail, calendar and contacts read their accounts from the settings at each call.
    registry.register_domain(
        osprey_platform::OsTool::new(os_config_with(stored, paths.data_dir(), secrets))
            .with_path_guard(paths.clone()),
    );
    // The workspace folders: where shell commands may write, and where the file tool reads
    // unasked.
    let sandbox: settings::ShellSandboxSetting = settings::read(stored, settings::SHELL_SANDBOX);
    let home = paths.home().map(Path::to_path_buf);
    let workspaces: Vec<PathBuf> = sandbox
        .workspaces
        .iter()
        .map(|dir| match (dir.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(dir),
        })
        .collect();
    let files = FileTool::new(paths.clone()).with_workspaces(workspaces.clone());
    let image_files = FileTool::new(paths.clone()).with_workspaces(workspaces.clone());
    registry.register_domain(files);
    let shell = ShellConfig {
        extra_env: settings::read(stored, settings::SHELL_EXTRA_ENV),
        sandbox: ShellSandbox {
            workspaces,
            home_caches: sandbox.caches,
            // Osprey's own database, keys and app data.
            hidden: vec![paths.data_dir().to_path_buf()],
            // And what the person denied by name (`tools.denied_paths`, live).
            denied: paths.denied().clone(),
            network: sandbox.network,
            ..ShellSandbox::default()
        },
        ..ShellConfig::default()
    };
    // `exec` runs programs with the shell tool's sandbox, environment and limits.
    registry.register_domain(ExecTool::new(shell.clone()));
    registry.register_domain(ShellTool::new(shell));
    let allow_loopback: bool = settings::read(stored, settings::WEB_ALLOW_LOOPBACK);
    let browsing = web_browsing(stored, paths.data_dir(), allow_loopback, secrets, downloads);
    let browser = browsing.browser().clone();
    let web = WebTool::new(WebConfig {
        allow_loopback,
        ..WebConfig::default()
    })
    .context("building the web tool")?
    .with_extension(Arc::new(browsing));
    registry.register_domain(web);
    Ok(Builtin {
        browser,
        allow_loopback,
        image_files,
    })
}

/// The packs the installed apps ship, as `(source, manifest JSON)`.
type AppPacks = Arc<dyn Fn() -> Vec<(String, String)> + Send + Sync>;

/// The packs of the installed apps that are not quarantined (`manifest.json`'s `packs`), each
/// with the source `app <id>`.
#[cfg(unix)]
fn installed_app_packs(installer: osprey_apps::Installer) -> AppPacks {
    Arc::new(move || {
        installer
            .list()
            .into_iter()
            .filter(|app| app.quarantined.is_none())
            .flat_map(|app| {
                let source = format!("app {}", app.manifest.id);
                app.manifest
                    .packs
                    .iter()
                    .map(|pack| (source.clone(), pack.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect()
    })
}

/// Builds the role catalog as at start (built-in, `<data>/packs`, `<data>/agents`) plus the
/// apps' packs, against the registry as it is now and the `agents` setting as it is now.
fn roles_loader(
    data_dir: PathBuf,
    registry: osprey_tools::WeakRegistry,
    stored: osprey_db::Settings,
    app_packs: AppPacks,
) -> osprey_agent::RolesLoader {
    Arc::new(move || {
        let Some(registry) = registry.upgrade() else {
            return osprey_agent::RoleCatalog::default();
        };
        let settings: osprey_agent::AgentSettings = settings::read(&stored, settings::AGENTS);
        osprey_agent::RoleCatalog::load_with(Some(&data_dir), app_packs(), &registry, &settings)
    })
}

/// What registering the built-in tools hands on.
struct Builtin {
    browser: osprey_browser::BrowserActions,
    /// `web.allow_loopback`.
    allow_loopback: bool,
    /// A file tool configured as the `file` tool is, for the vision tool's image files.
    image_files: FileTool,
}

/// What a shell needs to build its own browser profile (the desktop's `native` webview): the
/// profile's folder under the data directory and whether pages may reach loopback
/// (`web.allow_loopback`; private, link-local and metadata addresses are refused regardless).
#[derive(Clone, Debug)]
pub struct BrowserProfileConfig {
    pub profile_dir: PathBuf,
    pub allow_loopback: bool,
    /// Where downloads are saved (none refuses them); shared, changed live by `web.downloads`.
    pub downloads: osprey_browser::DownloadFolder,
    /// Pages open hidden (`web.native_windows: "hidden"`); shared, changed live.
    pub hidden_windows: Arc<std::sync::atomic::AtomicBool>,
}

/// The web tool's browser (the managed Chromium profile in `<data>/browser/`) and search
/// resources; search keys come from the environment or the secret store, like provider keys.
fn web_browsing(
    stored: &osprey_db::Settings,
    data_dir: &Path,
    allow_loopback: bool,
    secrets: secrets::Backend,
    downloads: &osprey_browser::DownloadFolder,
) -> osprey_browser::WebBrowsing {
    let mut managed = osprey_browser::ManagedConfig::new(data_dir.join("browser/managed"));
    managed.allow_loopback = allow_loopback;
    managed.downloads = downloads.clone();
    let driver = Arc::new(osprey_browser::ManagedDriver::new(managed));
    let actions = osprey_browser::BrowserActions::new(driver, allow_loopback)
        .with_screenshots(data_dir.join("browser/screenshots"));
    let chrome: Option<osprey_browser::ChromeAttach> = settings::read(stored, settings::WEB_CHROME);
    if let Some(chrome) = chrome {
        actions.add_profile(
            Arc::new(osprey_browser::ManagedDriver::attach(chrome.port.get())),
            false,
        );
    }
    let search: osprey_browser::SearchSettings = settings::read(stored, settings::WEB_SEARCH);
    let secrets = secrets::Secrets::new(data_dir, secrets);
    // Keys are looked up at the first search, not at every start.
    osprey_browser::WebBrowsing::new(actions, move || {
        let config = search.config(|secret, variable| {
            std::env::var(variable)
                .ok()
                .filter(|k| !k.is_empty())
                .or_else(|| secrets.get(secret).ok().flatten())
        });
        osprey_browser::Search::new(&config)
    })
}

impl Core {
    /// Opens the data directory (creating it) and builds everything.
    pub fn open(options: CoreOptions) -> anyhow::Result<Core> {
        let data_dir = osprey_db::data_dir(options.data_dir.as_deref());
        let db = Database::open_in(&data_dir)
            .with_context(|| format!("opening Osprey's database in {}", data_dir.display()))?;
        secrets::repair(&data_dir);
        let stored = db.settings();
        let mut policy_config: PolicyConfig = settings::read(&stored, settings::POLICY);
        if let Some(over) = options.policy {
            policy_config.level = over.level.unwrap_or(policy_config.level);
            policy_config.ask = over.ask.unwrap_or(policy_config.ask);
        }
        let policy =
            Policy::new(policy_config, Some(db.grants())).context("loading approval grants")?;
        let origin_rules: OriginRules = settings::read(&stored, settings::ORIGIN_RULES);
        let paths = PathGuard::for_current_user(data_dir.clone());
        // Tool governance (`tools.*`), its quotas counted in the database so a day's count
        // survives a restart. Its denied paths are shared with every path guard, so the file
        // tool's own reads, writes and directory walks refuse them too.
        let governance =
            osprey_tools::Governance::new(db.tool_usage(), paths.home().map(Path::to_path_buf));
        if let Err(why) = governance.set_config(settings::governance(&stored)) {
            tracing::warn!(%why, "ignoring the tools settings; using the defaults");
        }
        let paths = paths.with_denied(governance.denied_paths());
        let registry = Registry::new(RegistryConfig {
            policy,
            origin_rules,
            safeguard: Safeguard::new(paths.clone()),
            audit: AuditSink::new(db.audit()),
            output_cap: osprey_tools::registry::DEFAULT_OUTPUT_CAP,
        });
        registry.set_governance(governance);
        let secrets = options
            .secrets
            .unwrap_or_else(secrets::Backend::from_environment);
        // Shared by every browser profile; `web.downloads` changes it live.
        let downloads = osprey_browser::DownloadFolder::new(settings::downloads(&stored));
        let Builtin {
            browser,
            allow_loopback: web_allow_loopback,
            image_files,
        } = register_builtin_tools(&registry, &stored, &paths, secrets, &downloads)?;
        // Before the subsystems, so each can keep a handle to emit on.
        let events = events::EventBus::new();
        #[cfg(unix)]
        let accounts = accounts::Accounts::new(
            secrets::Secrets::new(&data_dir, secrets),
            apps::apps_dir(&data_dir),
            events.clone(),
        );
        #[cfg(unix)]
        let apps = apps::AppPlatform::open(
            &data_dir,
            &registry,
            accounts.wiring(),
            // Asked at each use: a store set in Settings serves the next request.
            osprey_apps::store_client::StoreLink::new({
                let stored = stored.clone();
                move || apps::store_url(&stored)
            }),
            apps::max_revocation_age(&stored),
            events.clone(),
            db.comm_subscriptions(),
        )?;
        // After the apps' dispatcher is in place, so memory hooks reach hook apps.
        // The reminder resource reads the slot; `start_scheduler` fills it.
        let reminders = scheduler::Reminders::default();
        reminders.slot.set(scheduler::stored_backend(&db));
        // Children run on the runners `runner_with` registers; none exist until a chat starts.
        let subagent_config =
            settings::read::<osprey_agent::SubAgentSettings>(&stored, settings::SUBAGENTS)
                .config()
                .unwrap_or_else(|why| {
                    tracing::warn!(%why, "ignoring the subagents setting; using the defaults");
                    osprey_agent::SubAgentConfig::default()
                });
        let subagent_runners = osprey_agent::RunnerPool::new(db.sessions());
        let subagents = osprey_agent::SubAgents::new(&db, subagent_config);
        subagents.set_factory(subagent_runners.factory());
        // The desktop's team panel under a conversation reloads on `team_changed`.
        subagents.set_observer(team::team_observer(db.subagent_tasks(), events.clone()));
        // `message send` to a channel, `comm` and reminders' `deliver` reach the apps here.
        let outbox = osprey_agent::outbox::OutboxSlot::default();
        #[cfg(unix)]
        outbox.set(Arc::new(outbox::AppOutbox {
            comms: apps.comms().clone(),
            channels: apps.channels().clone(),
            installer: apps.installer().clone(),
        }));
        let agent_settings: osprey_agent::AgentSettings = settings::read(&stored, settings::AGENTS);
        let advisors = osprey_agent::advisors::Advisors::new(subagents.clone());
        advisors.set_personas(osprey_agent::advisors::Personas::load(
            Some(&data_dir),
            &agent_settings,
        ));
        let mut agent_tool = AgentTool::new(&db)
            .with_hooks(registry.hooks())
            .with_outbox(outbox.clone())
            .with_schedule(reminders.slot.clone())
            .with_subagents(subagents.clone())
            .with_advisors(advisors);
        if let Some(embedder) = agent::memory_embedder(&stored, &data_dir) {
            agent_tool = agent_tool.with_embedder(embedder);
        }
        registry.register_domain(agent_tool);
        // Image analysis on the conversation's runner, or the `vision` setting's model.
        registry.register_domain(
            osprey_agent::VisionTool::new(db.sessions(), subagents.clone(), image_files)
                .with_model(Arc::new({
                    let stored = stored.clone();
                    move || {
                        settings::read::<osprey_agent::vision::VisionSettings>(
                            &stored,
                            settings::VISION,
                        )
                        .model
                    }
                })),
        );
        // Bundled, <data>/apps/*/SKILL.md and <data>/skills: indexed on first use, not here.
        let skills = osprey_agent::Skills::for_data_dir(&data_dir);
        // The revocation sweep removes revoked store skills too.
        #[cfg(unix)]
        apps.attach_skills(&skills);
        registry.register_domain(osprey_agent::SkillTool::new(skills.clone()));
        // The store tool reaches the core it is part of; the slot is filled once the core exists.
        #[cfg(unix)]
        let store_tool_core = Arc::new(std::sync::OnceLock::new());
        #[cfg(unix)]
        registry.register_domain(store_tool::StoreTool::new(Arc::clone(&store_tool_core)));
        // Packs and agent types, checked against the tools registered so far. MCP servers' and
        // apps' tools come and go later: every change marks the catalog stale, and its next use
        // builds it again, so packs naming those tools (the person's, or an app's own) load
        // while the tools are there.
        subagents.set_roles(osprey_agent::RoleCatalog::load(
            Some(&data_dir),
            &registry,
            &agent_settings,
        ));
        #[cfg(unix)]
        let app_packs = installed_app_packs(apps.installer().clone());
        #[cfg(not(unix))]
        let app_packs: AppPacks = Arc::new(Vec::new);
        subagents.set_roles_loader(roles_loader(
            data_dir.clone(),
            registry.downgrade(),
            stored.clone(),
            app_packs,
        ));
        registry.on_change({
            let subagents = subagents.clone();
            move |_| subagents.roles_changed()
        });
        let core = Core {
            inner: Arc::new(Inner {
                data_dir,
                secrets,
                db,
                registry,
                skills,
                approvals: approvals::ApprovalBroker::new(
                    events.clone(),
                    approvals::stored_timeout(&stored),
                ),
                events,
                reminders,
                outbox,
                subagent_runners,
                subagents,
                session_runners: runners::SessionRunners::default(),
                mcp: mcp::McpSlot::default(),
                browser,
                web_allow_loopback,
                downloads,
                hidden_windows: Arc::new(std::sync::atomic::AtomicBool::new(
                    settings::native_windows_hidden(&stored),
                )),
                turns: automation::RunningTurns::default(),
                #[cfg(unix)]
                apps,
                #[cfg(unix)]
                accounts,
            }),
        };
        #[cfg(unix)]
        let _ = store_tool_core.set(core.downgrade());
        core.apply_disabled_skills();
        Ok(core)
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// The folder and rules for a shell's own browser profile named `name` (`native`):
    /// `<data>/browser/<name>`, so its cookies and logins persist between runs.
    pub fn browser_profile_config(&self, name: &str) -> BrowserProfileConfig {
        BrowserProfileConfig {
            profile_dir: self.inner.data_dir.join("browser").join(name),
            allow_loopback: self.inner.web_allow_loopback,
            downloads: self.inner.downloads.clone(),
            hidden_windows: self.inner.hidden_windows.clone(),
        }
    }

    /// Adds a shell's own browser profile to the `web` tool's browser resource, so calls with
    /// `profile: <driver.profile()>` run in it; `default` makes it the profile of calls that
    /// name none. The desktop app adds its `native` webview profile this way (the core does not
    /// know Tauri).
    pub fn add_browser_profile(&self, driver: Arc<dyn osprey_browser::Driver>, default: bool) {
        self.inner.browser.add_profile(driver, default);
    }

    /// The person takes the browser `profile` over (the default one when `None`) to log in or
    /// do a step themselves: the agent's browser calls on it wait until they hand it back
    /// ([`Core::browser_hand_back`]), at most five minutes each. Returns the profile's name.
    pub fn browser_take_over(&self, profile: Option<&str>) -> anyhow::Result<String> {
        let profile = profile.map_or_else(|| self.inner.browser.default_profile(), String::from);
        self.inner.browser.take_over(&profile)?;
        Ok(profile)
    }

    /// The person hands `profile` (the default one when `None`) back to the agent; false when
    /// it was not taken over.
    pub fn browser_hand_back(&self, profile: Option<&str>) -> bool {
        let profile = profile.map_or_else(|| self.inner.browser.default_profile(), String::from);
        self.inner.browser.hand_back(&profile)
    }

    /// The browser profiles the person has taken over now.
    pub fn browser_taken_over(&self) -> Vec<String> {
        self.inner.browser.taken_over()
    }

    /// The `web` tool's browser profiles by name, and the default one.
    pub fn browser_profiles(&self) -> (Vec<String>, String) {
        (
            self.inner.browser.profile_names(),
            self.inner.browser.default_profile(),
        )
    }

    #[cfg(unix)]
    pub(crate) fn downgrade(&self) -> WeakCore {
        WeakCore(Arc::downgrade(&self.inner))
    }

    pub(crate) fn db(&self) -> &Database {
        &self.inner.db
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The database, for the core's own integration tests (feature `test-support`); front ends
    /// go through the core's methods.
    #[cfg(feature = "test-support")]
    #[doc(hidden)]
    pub fn test_db(&self) -> &Database {
        &self.inner.db
    }

    /// The registry, for the core's own integration tests (feature `test-support`).
    #[cfg(feature = "test-support")]
    #[doc(hidden)]
    pub fn test_registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The stored settings (`osprey config`); provider keys live in [`Core::secrets`].
    pub fn settings(&self) -> osprey_db::Settings {
        self.inner.db.settings()
    }

    /// The stored conversations (`osprey session`).
    pub fn sessions(&self) -> osprey_db::Sessions {
        self.inner.db.sessions()
    }

    /// The tools as a model sees them: names, descriptions and the portable schema every
    /// provider accepts (`osprey tools`).
    pub fn tool_specs(&self) -> Vec<osprey_tools::ToolSpec> {
        self.inner.registry.specs()
    }

    /// Whether a tool by this name is in the registry now.
    pub fn has_tool(&self, name: &str) -> bool {
        self.inner.registry.get(name).is_some()
    }

    /// What the registry would decide for a call, without running it (`osprey tool --check`).
    pub async fn check_tool(
        &self,
        ctx: &ToolContext,
        name: &str,
        input: Value,
    ) -> osprey_tools::CheckOutcome {
        self.inner.registry.check(ctx, name, input).await
    }

    /// The app store's URL: `$OSPREY_STORE_URL`, else the `store.url` setting, else none.
    pub fn store_url(&self) -> Option<String> {
        apps::store_url(&self.inner.db.settings())
    }

    /// The skills (catalog and each session's active ones) the `skill` tool and chat share.
    pub fn skills(&self) -> &osprey_agent::Skills {
        &self.inner.skills
    }

    /// Gives a chat runner its prompt's sources: the shared skills, the memory database, and the
    /// installed apps (one line each, asked for at each turn).
    pub fn attach_prompt_sources(&self, runner: &osprey_agent::Runner) {
        // The settings handle, not the core: a runner the core keeps must not keep the core.
        let stored = self.db().settings();
        runner.set_identity(Arc::new(move || {
            let persona = settings::read(&stored, settings::PERSONA);
            osprey_agent::persona::identity(&persona, chrono::Local::now().time())
        }));
        runner.set_skills(self.inner.skills.clone());
        runner.set_memory(self.inner.db.memory());
        #[cfg(unix)]
        {
            let installer = osprey_apps::Installer::new(self.inner.apps.apps_dir());
            let supervisor = self.inner.apps.supervisor().clone();
            runner.set_installed_apps(Arc::new(move || {
                let installer = installer.clone();
                let supervisor = supervisor.clone();
                Box::pin(async move {
                    let states = supervisor.status().await.unwrap_or_default();
                    osprey_apps::manage_tool::installed_apps_prompt(&installer.list(), &states)
                })
            }));
        }
    }

    /// What Settings lists of the `os` tool: each capability, whether it works on this machine
    /// and why not, with this data folder's accounts (probed now: a mail account's server is
    /// asked for its greeting).
    pub async fn os_capabilities(&self) -> Vec<osprey_types::OsCapabilityView> {
        let config = os_config_with(&self.db().settings(), self.data_dir(), self.inner.secrets);
        osprey_platform::OsTool::new(config)
            .status()
            .await
            .into_iter()
            .map(|a| osprey_types::OsCapabilityView {
                name: a.capability,
                category: a.category.as_str().to_string(),
                available: a.available,
                detail: a.detail,
            })
            .collect()
    }

    /// The agent's persona as stored now (`persona`; the default when unset or unreadable).
    pub fn persona(&self) -> osprey_types::Persona {
        settings::read(&self.db().settings(), settings::PERSONA)
    }

    /// Whether the persona's quiet hours hold now, by the local clock: shells hold back the
    /// notifications Osprey raises on its own while they do.
    pub fn quiet_hours_now(&self) -> bool {
        osprey_agent::persona::quiet_now(&self.persona(), chrono::Local::now().time())
    }

    /// The secret store for provider keys: the OS keyring, else a 0600 file in the data dir
    /// (`OSPREY_SECRETS=file` forces the file).
    pub fn secrets(&self) -> secrets::Secrets {
        secrets::Secrets::new(&self.inner.data_dir, self.inner.secrets)
    }

    /// Events emitted from now on (chat streaming, approvals, app states).
    pub fn subscribe(&self) -> events::Receiver {
        self.inner.events.subscribe()
    }

    /// Tells every subscriber; never blocks.
    pub fn emit(&self, event: events::CoreEvent) {
        self.inner.events.emit(event);
    }

    /// The bus itself, for parts of the core that emit from their own tasks.
    pub fn events(&self) -> &events::EventBus {
        &self.inner.events
    }

    /// The approval broker: questions the UI answers (see [`Core::attach_approvals`]).
    pub fn approvals(&self) -> &approvals::ApprovalBroker {
        &self.inner.approvals
    }

    /// Makes the broker the registry's default approver, so calls whose context names no
    /// approver ask the UI (and are denied after the broker's timeout). Only a shell with a UI
    /// listening to the events calls this; without it such calls are refused at once, which is
    /// what the CLI wants when it has no terminal to ask on.
    pub fn attach_approvals(&self) {
        self.inner
            .registry
            .set_approver(Some(Arc::new(self.inner.approvals.clone())));
    }

    pub fn info(&self) -> CoreInfo {
        CoreInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            data_dir: self.inner.data_dir.display().to_string(),
            tools: self.inner.registry.names(),
        }
    }

    /// Starts the installed apps in the background on the current tokio runtime (kills orphans
    /// of a previous run, starts the supervisor and the watcher, launches every installed,
    /// non-quarantined app; each app's tools and hooks appear as it becomes healthy; comm messages
    /// are answered and channel events recorded, see [`comm`]) and returns
    /// at once. Front ends start it through [`Core::start`], which claims the data folder
    /// first; a second call does nothing. Fails outside a tokio
    /// runtime; on platforms without the app runtime it does nothing.
    pub fn start_apps(&self) -> anyhow::Result<()> {
        #[cfg(unix)]
        {
            // Registered with every comm app that carries topics as it attaches.
            let (agent_id, display_name) = comm::agent_identity(self);
            self.inner
                .apps
                .comms()
                .set_identity(&agent_id, &display_name);
            self.inner.apps.start()?;
            // Comm messages become agent turns, channel events session messages.
            comm::start(self);
            // The running apps' account tokens are refreshed ahead of expiry.
            accounts::start_refresher(self);
        }
        Ok(())
    }

    /// Stops every running app and the watcher; returns once they are gone. Dropping the last
    /// `Core` handle stops them too, without waiting.
    pub async fn stop_apps(&self) {
        #[cfg(unix)]
        self.inner.apps.stop().await;
    }

    /// The app platform (supervisor, apps directory). Front ends go through the core's app
    /// methods ([`Core::install_app`], [`Core::app_statuses`], ...).
    #[cfg(unix)]
    pub(crate) fn apps(&self) -> &apps::AppPlatform {
        &self.inner.apps
    }

    /// The app platform, for the core's own integration tests (feature `test-support`).
    #[cfg(all(unix, feature = "test-support"))]
    #[doc(hidden)]
    pub fn test_apps(&self) -> &apps::AppPlatform {
        &self.inner.apps
    }

    /// Runs one tool call through the registry with the given origin and a 10-minute deadline.
    pub async fn call_tool(&self, origin: Origin, name: &str, input: Value) -> ToolResult {
        let ctx = ToolContext::new(origin, Duration::from_secs(600));
        self.call_tool_with(&ctx, name, input).await
    }

    /// Runs one tool call through the registry with a prepared context (session, approver,
    /// deadline, cancellation).
    pub async fn call_tool_with(&self, ctx: &ToolContext, name: &str, input: Value) -> ToolResult {
        self.inner.registry.execute(ctx, name, input).await
    }
}
