//! The installable package: the `.deb` that `scripts/package` builds with the Tauri bundler is
//! extracted with `dpkg-deb -x`, its control fields and contents are checked (the app, the
//! sandbox launcher beside it, the desktop entry, the icons), and the extracted binary is run
//! under Xvfb through WebDriver until the chat view is painted.
//!
//! A package is not rebuilt here while it is current (a release build takes about half an hour
//! on 2 cores): the newest of `<target>/release/bundle/deb/*.deb` and
//! `<target>/debug/bundle/deb/*.deb` not older than its profile's desktop binary is used. With
//! none, `scripts/package --debug` builds one first (about 4 minutes on 2 cores when the debug
//! build exists).
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use osprey_tests::{DesktopApp, LaunchOptions, target_dir, workspace_root};

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    path.metadata().and_then(|m| m.modified()).ok()
}

/// The newest package; with `current_only`, only one not older than the desktop binary of its
/// profile: a binary rebuilt since (the sources changed) makes the package stale.
fn newest_deb(current_only: bool) -> Option<PathBuf> {
    ["release", "debug"]
        .iter()
        .filter_map(|profile| {
            let dir = target_dir().join(profile);
            let binary = modified(&dir.join("osprey-desktop")).filter(|_| current_only);
            let debs = std::fs::read_dir(dir.join("bundle/deb")).ok()?;
            Some(
                debs.filter_map(|entry| entry.ok().map(|e| e.path()))
                    .filter(|path| path.extension().is_some_and(|e| e == "deb"))
                    // The bundler touches the binary again just after writing the package.
                    .filter(move |path| {
                        binary.is_none_or(|built| {
                            modified(path).map(|made| made + Duration::from_secs(10)) >= Some(built)
                        })
                    })
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .max_by_key(|path| modified(path))
}

fn package() -> Result<PathBuf> {
    if let Some(deb) = newest_deb(true) {
        return Ok(deb);
    }
    let status = Command::new(workspace_root().join("scripts/package"))
        .arg("--debug")
        .current_dir(workspace_root())
        .status()
        .context("running scripts/package --debug")?;
    ensure!(status.success(), "scripts/package --debug failed");
    newest_deb(false).context("scripts/package made no .deb")
}

fn dpkg_deb(args: &[&str], deb: &Path) -> Result<String> {
    let output = Command::new("dpkg-deb")
        .args(args)
        .arg(deb)
        .output()
        .context("running dpkg-deb (apt-get install dpkg)")?;
    ensure!(
        output.status.success(),
        "dpkg-deb {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[test]
fn the_deb_installs_the_app_the_sandbox_launcher_a_desktop_entry_and_icons_and_runs() -> Result<()>
{
    let deb = package()?;
    eprintln!("checking {}", deb.display());

    let control = dpkg_deb(&["-f"], &deb)?;
    ensure!(control.contains("Package: osprey"), "control:\n{control}");
    ensure!(
        control.contains("libwebkit2gtk-4.1-0") && control.contains("libayatana-appindicator3-1"),
        "the dependencies are missing from:\n{control}"
    );

    let root = tempfile::Builder::new().prefix("osprey-deb-").tempdir()?;
    let listing = dpkg_deb(&["-c"], &deb)?;
    Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(root.path())
        .status()
        .context("dpkg-deb -x")?
        .success()
        .then_some(())
        .context("dpkg-deb -x failed")?;

    let app = root.path().join("usr/bin/osprey-desktop");
    let launcher = root.path().join("usr/bin/osprey-sandbox");
    ensure!(
        is_executable(&app),
        "no executable /usr/bin/osprey-desktop in:\n{listing}"
    );
    ensure!(
        is_executable(&launcher),
        "no sandbox launcher /usr/bin/osprey-sandbox beside the app in:\n{listing}"
    );
    let entry = std::fs::read_to_string(root.path().join("usr/share/applications/Osprey.desktop"))
        .with_context(|| format!("no desktop entry in:\n{listing}"))?;
    for line in [
        "Exec=osprey-desktop",
        "Icon=osprey-desktop",
        "Name=Osprey",
        "Type=Application",
    ] {
        ensure!(
            entry.contains(line),
            "the desktop entry lacks {line:?}:\n{entry}"
        );
    }
    let icons: Vec<&str> = listing
        .lines()
        // `dpkg-deb -c` names entries `./usr/...` or `usr/...` depending on the builder.
        .filter(|l| l.contains("usr/share/icons/hicolor/") && l.ends_with("osprey-desktop.png"))
        .collect();
    ensure!(icons.len() >= 2, "icons in the package: {icons:?}");

    // The installed binary, run as installed: the window opens on the chat and paints.
    let started = Instant::now();
    let desktop = DesktopApp::launch_program(
        "desktop_package",
        &app,
        LaunchOptions {
            env: vec![("OSPREY_SECRETS".into(), "file".into())],
            ..LaunchOptions::default()
        },
    )?;
    desktop
        .driver
        .wait_for_text("main h1", Duration::from_secs(30), |t| t == "Chat")?;
    desktop
        .driver
        .wait_for("[data-testid='chat-input']", Duration::from_secs(30))?;
    desktop.driver.wait_for_paint()?;
    eprintln!(
        "first painted chat view {} ms after launch",
        started.elapsed().as_millis()
    );
    let info = desktop.driver.execute_async(
        "const done = arguments[arguments.length - 1]; \
         window.__TAURI_INTERNALS__.invoke('app_info').then(done, (e) => done({error: e}));",
        vec![],
    )?;
    if info.get("error").is_some() {
        bail!("the installed app's core did not answer: {info}");
    }
    ensure!(
        info["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "no tools: {info}"
    );
    desktop.save_screenshot("installed-chat")?;
    Ok(())
}
