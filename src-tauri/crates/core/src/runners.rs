//! A runner per session, kept between a person's messages (the desktop's chat, comm
//! conversations, reminders), so what a runner learns lives as long as the conversation: the
//! provider's calibration, a context window asked of the server, its caches. Resolving the
//! provider again (a keyring read, an Ollama probe) happens only when the provider settings or
//! the run's choice changed: each entry remembers the fingerprint it was built for.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::Core;
use crate::agent::{ChatChoice, ChatOptions, Runner};

/// How many sessions keep their runner; the least recently used one goes first.
pub const CAPACITY: usize = 32;

/// What a session's runner was built from: the stored provider settings, when a key last
/// changed, and the run's own choice or fixed options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint(String);

struct Entry {
    fingerprint: Fingerprint,
    runner: Runner,
    used: u64,
}

/// The kept runners, by session id.
#[derive(Default)]
pub(crate) struct SessionRunners {
    entries: Mutex<(u64, HashMap<String, Entry>)>,
}

impl SessionRunners {
    fn get(&self, session: &str, fingerprint: &Fingerprint) -> Option<Runner> {
        let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (clock, entries) = &mut *guard;
        *clock += 1;
        let entry = entries.get_mut(session)?;
        if entry.fingerprint != *fingerprint {
            return None;
        }
        entry.used = *clock;
        Some(entry.runner.clone())
    }

    fn forget(&self, session: &str) {
        let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        guard.1.remove(session);
    }

    fn put(&self, session: &str, fingerprint: Fingerprint, runner: Runner) {
        let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (clock, entries) = &mut *guard;
        *clock += 1;
        entries.insert(
            session.to_string(),
            Entry {
                fingerprint,
                runner,
                used: *clock,
            },
        );
        while entries.len() > CAPACITY {
            let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            entries.remove(&oldest);
        }
    }
}

/// How a session's runner is chosen: resolved from the stored settings and a run's choice, or
/// fixed options (tests, a reminder scheduler given its model).
#[derive(Clone, Debug)]
pub enum RunnerSource {
    Choice(ChatChoice),
    Fixed(ChatOptions),
}

impl Core {
    /// The runner for `session`: the one kept from its last turn while the provider settings
    /// and `source` are unchanged, else a new one (resolved once, then kept).
    pub async fn session_runner(
        &self,
        session: &str,
        source: &RunnerSource,
    ) -> anyhow::Result<Runner> {
        let fingerprint = self.runner_fingerprint(source);
        let runners = &self.inner.session_runners;
        if let Some(runner) = runners.get(session, &fingerprint) {
            return Ok(runner);
        }
        let options = match source {
            RunnerSource::Choice(choice) => self.resolve_chat(choice).await?,
            RunnerSource::Fixed(options) => options.clone(),
        };
        let runner = self.chat_runner(&options)?;
        runners.put(session, fingerprint, runner.clone());
        Ok(runner)
    }

    /// Drops the session's kept runner (the session was deleted).
    pub(crate) fn forget_session_runner(&self, session: &str) {
        self.inner.session_runners.forget(session);
    }

    /// Two settings rows and the source: no keyring read, no network.
    fn runner_fingerprint(&self, source: &RunnerSource) -> Fingerprint {
        let settings = self.db().settings();
        let read = |key: &str| {
            settings
                .get(key)
                .ok()
                .flatten()
                .map(|value| value.to_string())
                .unwrap_or_default()
        };
        Fingerprint(format!(
            "{}\n{}\n{source:?}",
            read(crate::settings::PROVIDERS),
            read(crate::settings::PROVIDER_KEYS_CHANGED)
        ))
    }
}
