//! One start and one stop. [`Core::start`] claims the data folder (an OS lock on
//! `<data>/osprey.lock`), then starts the background services in one order: app events, apps
//! (with comm and the revocation sweep), the store's event stream (`store_push`), the reminder
//! scheduler and its follower, MCP clients, the control socket.
//! [`Services::shutdown`] stops them in the reverse order and releases the folder last. The
//! desktop, `osprey daemon` and `osprey chat` all start this way, so a second Osprey on the same
//! folder learns it is taken before it touches any app process.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::Core;

/// The lock file inside the data folder; it holds the holder's pid and program while locked.
pub const LOCK_FILE: &str = "osprey.lock";

/// Which background services a front end wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The installed apps under the supervisor (and comm turns, and app state events).
    pub apps: bool,
    /// Following the store's pushed changes (needs `apps`): revocations, updates, the person's
    /// installs and removals elsewhere (`crate::store_push`).
    pub store_events: bool,
    /// The reminder scheduler (an app that provides `schedule` takes over while it runs).
    pub scheduler: bool,
    /// Connections to the configured MCP servers.
    pub mcp: bool,
    /// `<data>/control.sock`, so `osprey app launch | stop | sweep` reach this supervisor.
    pub control: bool,
    /// Who is starting ("osprey daemon", "the Osprey desktop app"): a second Osprey refused the
    /// folder is told this name and the process id.
    pub by: &'static str,
}

impl Start {
    /// Everything: the desktop and `osprey daemon`.
    pub fn all(by: &'static str) -> Start {
        Start {
            apps: true,
            store_events: true,
            scheduler: true,
            mcp: true,
            control: true,
            by,
        }
    }

    /// `osprey chat`: MCP servers, and the apps when a gateway app is the model.
    pub fn chat(apps: bool) -> Start {
        Start {
            apps,
            store_events: false,
            scheduler: false,
            mcp: true,
            control: false,
            by: "osprey chat",
        }
    }

    /// Whether this start must own the data folder: apps, reminders and the control socket each
    /// exist once per folder. MCP clients are this process's own children and need no claim.
    fn claims_folder(self) -> bool {
        self.apps || self.scheduler || self.control
    }
}

/// The data folder is held by another running Osprey.
#[derive(Debug, thiserror::Error)]
#[error(
    "Osprey's data folder {} is in use by {holder}: stop that one first, or give this run its \
     own folder with --data-dir (or OSPREY_DATA_DIR)",
    folder.display()
)]
pub struct FolderInUse {
    pub folder: PathBuf,
    /// "osprey daemon (pid 1234)", as the holder wrote it; "another process" when unreadable.
    pub holder: String,
}

impl FolderInUse {
    /// The stable code front ends show and scripts match on.
    pub const CODE: &'static str = "data_folder_in_use";
}

/// An exclusive OS lock on the data folder, released when dropped (or when the process dies,
/// however it dies: the kernel drops the lock with the file descriptor).
#[derive(Debug)]
pub struct FolderLock {
    file: File,
}

impl FolderLock {
    /// Takes the lock without waiting and records `by` and this process in the lock file.
    pub fn claim(data_dir: &Path, by: &str) -> anyhow::Result<FolderLock> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let path = data_dir.join(LOCK_FILE);
        // Never truncated on open: the holder's line must survive a failed claim.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(FolderInUse {
                    folder: data_dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "another process".to_string()
                    } else {
                        holder.to_string()
                    },
                }
                .into());
            }
            Err(TryLockError::Error(error)) => {
                return Err(error).with_context(|| format!("locking {}", path.display()));
            }
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{by} (pid {})", std::process::id())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(FolderLock { file })
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Cleared first, so nobody reads a stale holder between the unlock and the close.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// The running background services of one [`Core::start`]; [`Services::shutdown`] stops them.
/// Dropping it without a shutdown stops what can stop without waiting (the control socket, the
/// followers, the folder lock); apps and MCP servers then end with the last `Core`.
#[must_use = "the services stop when this is dropped"]
pub struct Services {
    core: Core,
    started: Start,
    app_events: Option<tokio::task::JoinHandle<()>>,
    schedule_apps: Option<tokio::task::JoinHandle<()>>,
    #[cfg(unix)]
    control: Option<crate::control::ControlServer>,
    folder: Option<FolderLock>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

impl Core {
    /// Claims the data folder when `start` needs it (see [`Start`]), then starts the services in
    /// order: app events, apps, the store's event stream, the scheduler and its app follower,
    /// MCP clients, the control socket. Must run inside a tokio runtime. A folder held by another Osprey fails with
    /// [`FolderInUse`] before any app process is touched; a service that fails to start stops
    /// the ones already started.
    pub async fn start(&self, start: Start) -> anyhow::Result<Services> {
        tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("starting Osprey's services needs a tokio runtime"))?;
        let folder = if start.claims_folder() {
            Some(FolderLock::claim(self.data_dir(), start.by)?)
        } else {
            None
        };
        let mut services = Services {
            core: self.clone(),
            started: Start {
                apps: false,
                store_events: false,
                scheduler: false,
                mcp: false,
                control: false,
                by: start.by,
            },
            app_events: None,
            schedule_apps: None,
            #[cfg(unix)]
            control: None,
            folder,
        };
        if let Err(error) = services.start_each(start) {
            services.shutdown().await;
            return Err(error);
        }
        Ok(services)
    }
}

impl Services {
    fn start_each(&mut self, start: Start) -> anyhow::Result<()> {
        let core = self.core.clone();
        if start.apps {
            self.app_events = Some(core.forward_app_events());
            self.started.apps = true;
            core.start_apps()?;
        }
        #[cfg(unix)]
        if start.store_events && start.apps {
            self.started.store_events = true;
            core.start_store_events()?;
        }
        if start.scheduler {
            self.started.scheduler = true;
            core.start_scheduler()?;
            #[cfg(unix)]
            {
                self.schedule_apps = Some(core.follow_schedule_apps());
            }
        }
        if start.mcp {
            self.started.mcp = true;
            core.start_mcp()?;
        }
        #[cfg(unix)]
        if start.control {
            self.control = Some(core.serve_control()?);
            self.started.control = true;
        }
        Ok(())
    }

    /// The core these services run for.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// What was started.
    pub fn started(&self) -> Start {
        self.started
    }

    /// Stops everything in the reverse order of the start and returns once apps and MCP servers
    /// are gone; the data folder is released last.
    pub async fn shutdown(mut self) {
        #[cfg(unix)]
        drop(self.control.take());
        if self.started.mcp {
            self.core.stop_mcp().await;
        }
        if let Some(follower) = self.schedule_apps.take() {
            follower.abort();
        }
        if self.started.scheduler {
            self.core.stop_scheduler().await;
        }
        #[cfg(unix)]
        if self.started.store_events {
            self.core.stop_store_events().await;
        }
        if self.started.apps {
            self.core.stop_apps().await;
        }
        // Last of the services, so the apps' final states still reach the front end.
        if let Some(forwarder) = self.app_events.take() {
            forwarder.abort();
        }
        drop(self.folder.take());
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        for follower in [&self.schedule_apps, &self.app_events]
            .into_iter()
            .flatten()
        {
            follower.abort();
        }
    }
}
