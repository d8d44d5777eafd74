//! The backend of platforms without native code for a capability yet: every trait's default,
//! which answers `platform_not_supported`. Cross-platform capabilities (clipboard, system facts,
//! search) do not go through it.

use crate::app::Applications;
use crate::audio::Audio;
use crate::config::OsConfig;
use crate::keychain::Keychain;
use crate::music::MediaPlayers;
use crate::notification::Notifications;
use crate::search::FileIndex;
use crate::system::SystemServices;
use crate::tts::Speech;
use crate::window::Windows;

#[derive(Debug)]
pub struct Unsupported {
    config: OsConfig,
}

impl Unsupported {
    pub fn new(config: OsConfig) -> Unsupported {
        Unsupported { config }
    }

    pub fn config(&self) -> &OsConfig {
        &self.config
    }

    /// Why a capability without a backend here does not work.
    pub async fn probe(&self, _name: &str) -> Result<String, crate::Error> {
        Err(crate::Error::unsupported("this capability"))
    }
}

impl Applications for Unsupported {}
impl Audio for Unsupported {}
impl FileIndex for Unsupported {}
impl Keychain for Unsupported {}
impl MediaPlayers for Unsupported {}
impl Notifications for Unsupported {}
impl Speech for Unsupported {}
impl SystemServices for Unsupported {}
impl Windows for Unsupported {}
