//! Finding a Chromium-family browser on this machine: `OSPREY_CHROMIUM`, then the names on
//! `PATH`, then the usual install places of each platform.

use std::path::{Path, PathBuf};

use crate::error::{BrowserError, Result};

/// The environment variable that names the browser program explicitly.
pub const CHROMIUM_VARIABLE: &str = "OSPREY_CHROMIUM";

#[cfg(target_os = "windows")]
const PATH_NAMES: &[&str] = &["chrome.exe", "msedge.exe", "chromium.exe"];
#[cfg(not(target_os = "windows"))]
const PATH_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "microsoft-edge",
    "brave-browser",
];

/// Where the installers put it, for when it is not on `PATH`.
fn usual_places() -> Vec<PathBuf> {
    let mut out = Vec::new();
    #[cfg(target_os = "linux")]
    {
        for p in [
            "/usr/bin/chromium",
            "/usr/bin/chromium-browser",
            "/usr/bin/google-chrome",
            "/snap/bin/chromium",
            "/opt/google/chrome/chrome",
        ] {
            out.push(PathBuf::from(p));
        }
    }
    #[cfg(target_os = "macos")]
    {
        let apps = [
            "Google Chrome.app/Contents/MacOS/Google Chrome",
            "Chromium.app/Contents/MacOS/Chromium",
            "Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
            "Brave Browser.app/Contents/MacOS/Brave Browser",
        ];
        let mut roots = vec![PathBuf::from("/Applications")];
        if let Some(home) = std::env::var_os("HOME") {
            roots.push(PathBuf::from(home).join("Applications"));
        }
        for root in roots {
            for app in apps {
                out.push(root.join(app));
            }
        }
    }
    #[cfg(target_os = "windows")]
    {
        let suffixes = [
            r"Google\Chrome\Application\chrome.exe",
            r"Chromium\Application\chrome.exe",
            r"Microsoft\Edge\Application\msedge.exe",
        ];
        for var in ["ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"] {
            if let Some(root) = std::env::var_os(var) {
                for s in suffixes {
                    out.push(PathBuf::from(&root).join(s));
                }
            }
        }
    }
    out
}

fn is_program(path: &Path) -> bool {
    path.is_file()
}

/// The browser program to start, or an error that names what to install.
pub fn find_chromium() -> Result<PathBuf> {
    if let Some(explicit) = std::env::var_os(CHROMIUM_VARIABLE) {
        let path = PathBuf::from(explicit);
        if is_program(&path) {
            return Ok(path);
        }
        return Err(BrowserError::NotInstalled(format!(
            "{CHROMIUM_VARIABLE} names {}, which is not a file",
            path.display()
        )));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            for name in PATH_NAMES {
                let candidate = dir.join(name);
                if is_program(&candidate) {
                    return Ok(candidate);
                }
            }
        }
    }
    usual_places()
        .into_iter()
        .find(|p| is_program(p))
        .ok_or_else(|| BrowserError::NotInstalled(install_hint()))
}

fn install_hint() -> String {
    let how = if cfg!(target_os = "macos") {
        "install Google Chrome or Chromium (for example `brew install --cask chromium`)"
    } else if cfg!(target_os = "windows") {
        "install Google Chrome or Microsoft Edge"
    } else {
        "install Chromium (Debian and Ubuntu: `sudo apt install chromium`; Fedora: \
         `sudo dnf install chromium`)"
    };
    format!(
        "no Chromium-family browser was found for the managed browser profile: {how}, or set \
         {CHROMIUM_VARIABLE} to the browser program"
    )
}
