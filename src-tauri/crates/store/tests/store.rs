//! The store server on a loopback port with the real client: publish, catalog, reviews,
//! download, install into an apps directory, launch, revoke, and the refusals.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use osprey_apps::runtime::{LaunchOptions, Launcher};
use osprey_apps::store_client::StoreClient;
use osprey_apps::trust::Trust;
use osprey_apps::{InstallOutcome, Installer};
use osprey_store::{Store, StoreConfig};
use serde_json::{Value, json};
use tempfile::TempDir;

const TOKEN: &str = "admin-secret";

use osprey_tests::fixture_binary;

struct Running {
    root: TempDir,
    base: String,
    http: reqwest::Client,
}

async fn start() -> Running {
    let root = tempfile::tempdir().unwrap();
    let store = Store::open(StoreConfig {
        data_dir: root.path().join("store"),
        admin_token: TOKEN.into(),
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(store.serve(listener));
    std::fs::create_dir(root.path().join("apps")).unwrap();
    Running {
        root,
        base,
        http: reqwest::Client::new(),
    }
}

impl Running {
    fn apps(&self) -> PathBuf {
        self.root.path().join("apps")
    }

    /// An unsigned package of an app project (the store signs what it publishes).
    fn package(&self, id: &str, version: &str, description: &str, binary: &[u8]) -> Vec<u8> {
        let manifest = json!({
            "id": id, "name": id.to_uppercase(), "version": version,
            "description": description, "provides": ["tool:convert"]
        });
        osprey_tests::app_package(
            &self.root.path().join(format!("{id}-{version}")),
            &manifest,
            binary,
        )
    }

    async fn publish(&self, bytes: Vec<u8>, token: &str) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/api/v1/apps", self.base))
            .bearer_auth(token)
            .body(bytes)
            .send()
            .await
            .unwrap();
        (
            response.status().as_u16(),
            response.json().await.unwrap_or(Value::Null),
        )
    }

    async fn get_text(&self, path: &str) -> String {
        self.http
            .get(format!("{}/api/v1/apps{path}", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// `POST /api/v1/skills` with `token`: the status and the JSON answer.
    async fn post_skill(&self, archive: Vec<u8>, token: &str) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/api/v1/skills", self.base))
            .bearer_auth(token)
            .body(archive)
            .send()
            .await
            .unwrap();
        (
            response.status().as_u16(),
            response.json().await.unwrap_or(Value::Null),
        )
    }

    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}/api/v1/apps{path}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

const FAKE_ELF: &[u8] = b"\x7FELF\x02\x01\x01\x00fixture binary";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_install_launch_and_revoke_through_the_store() {
    let store = start().await;
    let binary = std::fs::read(fixture_binary("osprey-fixture-unit-converter")).unwrap();
    let (status, published) = store
        .publish(
            store.package("units", "1.0.0", "Converts units", &binary),
            TOKEN,
        )
        .await;
    assert_eq!(status, 201, "{published}");
    assert_eq!(published["version"], "1.0.0");

    let client = StoreClient::new(&store.base);
    let trust = Arc::new(Trust::new(
        client.clone(),
        store.root.path().join("trust"),
        Duration::from_secs(7 * 86400),
    ));
    let installer = Installer::new(store.apps());
    let outcome = client.install("units", &installer, &trust).await.unwrap();
    assert_eq!(
        outcome,
        InstallOutcome::Installed {
            id: "units".into(),
            version: "1.0.0".into()
        }
    );
    let names: Vec<String> = std::fs::read_dir(store.apps())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["units"], "no download or staging file left");
    assert_eq!(store.get("/units").await["downloads"], 1);

    let launcher = Launcher::new(
        store.apps(),
        LaunchOptions {
            echo_logs: false,
            ..LaunchOptions::default()
        },
    )
    .with_trust(Arc::clone(&trust));
    launcher.launch("units").await.unwrap().stop().await;

    // Revoked at the store: a fresh list quarantines it and launches are refused.
    let response = store
        .http
        .post(format!("{}/api/v1/apps/units/revoke", store.base))
        .bearer_auth(TOKEN)
        .json(&json!({"reason": "malware"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let trust = Arc::new(Trust::new(
        client.clone(),
        store.root.path().join("trust-fresh"),
        Duration::from_secs(7 * 86400),
    ));
    assert_eq!(
        installer.quarantine_revoked(&trust).await.unwrap(),
        ["units"]
    );
    let launcher = Launcher::new(store.apps(), LaunchOptions::default()).with_trust(trust);
    assert_eq!(
        launcher.launch("units").await.unwrap_err().code(),
        "revoked"
    );
}

#[tokio::test]
async fn publishing_is_refused_without_the_token_or_for_hostile_packages() {
    let store = start().await;
    let (status, body) = store
        .publish(store.package("units", "1.0.0", "", FAKE_ELF), "wrong")
        .await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));

    // A package with a symlink entry.
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Symlink);
    header.set_path("ui").unwrap();
    header.set_link_name("/etc").unwrap();
    header.set_size(0);
    header.set_cksum();
    builder.append(&header, std::io::empty()).unwrap();
    let hostile = builder.into_inner().unwrap().finish().unwrap();
    let (status, body) = store.publish(hostile, TOKEN).await;
    assert_eq!(status, 422);
    assert_eq!(body["code"], "package_rejected");
    assert_eq!(body["reason"], "link");

    let (status, _) = store
        .publish(store.package("units", "1.0.0", "", FAKE_ELF), TOKEN)
        .await;
    assert_eq!(status, 201);
    let (status, body) = store
        .publish(store.package("units", "1.0.0", "", FAKE_ELF), TOKEN)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("version_exists"))
    );
}

#[tokio::test]
async fn catalog_search_paging_popular_and_reviews() {
    let store = start().await;
    for (id, description) in [
        ("alpha", "weather forecasts"),
        ("bravo", "unit conversion"),
        ("charlie", "weather radar"),
    ] {
        let (status, _) = store
            .publish(store.package(id, "1.0.0", description, FAKE_ELF), TOKEN)
            .await;
        assert_eq!(status, 201);
    }
    let page = store.get("?per_page=2&page=2").await;
    assert_eq!(page["total"], 3);
    assert_eq!(page["apps"].as_array().unwrap().len(), 1);
    assert_eq!(page["apps"][0]["id"], "charlie");

    let found = store.get("?q=weather").await;
    let ids: Vec<&str> = found["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha", "charlie"]);
    assert_eq!(
        store.get("?q=100%25").await["total"],
        0,
        "LIKE wildcards are literal"
    );

    let client = StoreClient::new(&store.base);
    assert_eq!(client.catalog("radar", 1).await.unwrap()["total"], 1);
    for _ in 0..2 {
        client.download("bravo", store.root.path()).await.unwrap();
    }
    assert_eq!(store.get("/popular").await["apps"][0]["id"], "bravo");

    let response = store
        .http
        .post(format!("{}/api/v1/apps/bravo/feature", store.base))
        .bearer_auth(TOKEN)
        .json(&json!({"featured": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert_eq!(store.get("/featured").await["apps"][0]["id"], "bravo");

    for (rating, author) in [(5, "ana"), (2, "bo")] {
        let response = store
            .http
            .post(format!("{}/api/v1/apps/bravo/reviews", store.base))
            .json(&json!({"author": author, "rating": rating, "body": "ok"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
    }
    let response = store
        .http
        .post(format!("{}/api/v1/apps/bravo/reviews", store.base))
        .json(&json!({"author": "cy", "rating": 9, "body": "!"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert_eq!(
        store.get("/bravo/reviews").await.as_array().unwrap().len(),
        2
    );
    assert_eq!(store.get("/bravo").await["rating"], 3.5);
    assert_eq!(store.get("/nope").await["code"], "not_found");
}

#[tokio::test]
async fn downloads_are_capped_on_the_bytes_received() {
    let store = start().await;
    // 128 KB that does not compress, so the package itself is larger than the cap.
    let mut binary = FAKE_ELF.to_vec();
    let mut state = 88_172_645_463_325_252u64;
    for _ in 0..16 * 1024 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        binary.extend_from_slice(&state.to_le_bytes());
    }
    let (status, _) = store
        .publish(store.package("units", "1.0.0", "", &binary), TOKEN)
        .await;
    assert_eq!(status, 201);
    let client = StoreClient::new(&store.base).with_max_download(32 * 1024);
    let trust = Trust::new(
        client.clone(),
        store.root.path().join("trust"),
        Duration::from_secs(3600),
    );
    let installer = Installer::new(store.apps());
    let error = client
        .install("units", &installer, &trust)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "package_rejected");
    assert_eq!(error.reason(), Some("total_too_large"));
    assert_eq!(std::fs::read_dir(store.apps()).unwrap().count(), 0);
}

#[tokio::test]
async fn categories_and_publishers_are_set_at_publishing_and_kept_by_updates() {
    let store = start().await;
    let publish = |id: &'static str, version: &'static str, query: &'static str| {
        let bytes = store.package(id, version, "", FAKE_ELF);
        let http = store.http.clone();
        let url = format!("{}/api/v1/apps{query}", store.base);
        async move {
            let response = http
                .post(url)
                .bearer_auth(TOKEN)
                .body(bytes)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, entry) = publish(
        "notes",
        "1.0.0",
        "?category=productivity&publisher=Acme%20Inc",
    )
    .await;
    assert_eq!(status, 201, "{entry}");
    assert_eq!(entry["category"], "productivity");
    assert_eq!(entry["publisher"], "Acme Inc");
    assert_eq!(
        publish("todo", "1.0.0", "?category=productivity").await.0,
        201
    );
    assert_eq!(publish("lint", "1.0.0", "?category=developer").await.0, 201);
    assert_eq!(publish("plain", "1.0.0", "").await.0, 201);
    // An update without options keeps them.
    let (status, entry) = publish("notes", "1.1.0", "").await;
    assert_eq!(status, 201);
    assert_eq!(
        (entry["category"].as_str(), entry["publisher"].as_str()),
        (Some("productivity"), Some("Acme Inc"))
    );
    let (status, body) = publish("bad", "1.0.0", "?category=Not%20Valid").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("invalid_request"))
    );

    assert_eq!(
        store.get("/categories").await,
        json!([{"name": "developer", "count": 1}, {"name": "productivity", "count": 2}])
    );
    let shelf = store.get("?category=productivity&per_page=1&page=2").await;
    assert_eq!(shelf["total"], 2);
    assert_eq!(shelf["apps"][0]["id"], "todo");
    let searched = store.get("?category=productivity&q=not").await;
    assert_eq!(searched["total"], 1);
    assert_eq!(searched["apps"][0]["id"], "notes");
    assert_eq!(store.get("/popular?category=developer").await["total"], 1);
    assert_eq!(store.get("/notes").await["reviews"], 0);
}

/// A skill folder `name` at `version`, packed as the store expects it.
fn skill_archive(root: &std::path::Path, name: &str, version: &str) -> Vec<u8> {
    let folder = root.join(format!("skill-{name}-{version}")).join(name);
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: Turns {name} into a report\nmetadata:\n  author: Ana\n  \
             version: \"{version}\"\n---\n# {name}\n"
        ),
    )
    .unwrap();
    std::fs::write(folder.join("scripts/run.py"), "print(1)\n").unwrap();
    osprey_apps::skill_package::pack_skill(&folder).unwrap().0
}

/// A `.tar.gz` with a SKILL.md and `hostile` (a raw name) beside it.
fn hostile_skill(hostile: &str) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let skill =
        b"---\nname: sneaky\ndescription: d\nmetadata:\n  version: \"1.0.0\"\n---\n".to_vec();
    for (name, data) in [("SKILL.md", skill), (hostile, b"x".to_vec())] {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, &data[..]).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_serves_skills_signed_by_its_key() {
    use osprey_apps::store_client::{Listing, Shelf};
    let store = start().await;
    let client = StoreClient::new(&store.base);
    let listing = Listing {
        featured: true,
        category: Some("documents".into()),
        publisher: Some("Acme".into()),
    };
    let entry = client
        .publish_skill(
            skill_archive(store.root.path(), "csv-report", "1.0.0"),
            TOKEN,
            &listing,
            None,
        )
        .await
        .unwrap();
    assert_eq!(entry["name"], "csv-report");
    assert_eq!(entry["version"], "1.0.0");
    assert_eq!(entry["author"], "Ana");
    assert_eq!(entry["files"], json!(["SKILL.md", "scripts/run.py"]));
    client
        .publish_skill(
            skill_archive(store.root.path(), "pdf-forms", "0.3.0"),
            TOKEN,
            &Listing::default(),
            None,
        )
        .await
        .unwrap();

    // Listed, searched, shelved, paged.
    let all = client
        .skill_listing(Shelf::All, "", None, 1, Some(1))
        .await
        .unwrap();
    assert_eq!(
        (all["total"].as_u64(), all["per_page"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(all["skills"][0]["name"], "csv-report");
    let found = client
        .skill_listing(Shelf::All, "pdf", None, 1, None)
        .await
        .unwrap();
    assert_eq!(found["skills"].as_array().unwrap().len(), 1);
    assert_eq!(found["skills"][0]["name"], "pdf-forms");
    let featured = client
        .skill_listing(Shelf::Featured, "", None, 1, None)
        .await
        .unwrap();
    assert_eq!(featured["total"], 1);
    let shelf = client
        .skill_listing(Shelf::All, "", Some("documents"), 1, None)
        .await
        .unwrap();
    assert_eq!(shelf["skills"][0]["name"], "csv-report");
    assert_eq!(
        client.skill_categories().await.unwrap(),
        json!([{"name": "documents", "count": 1}])
    );

    // The download is the archive the entry's signature covers, signed by the store's key.
    let details = client.skill("csv-report").await.unwrap();
    let archive = client.download_skill("csv-report", "1.0.0").await.unwrap();
    let signature: osprey_apps::ArchiveSignature =
        serde_json::from_value(details["signature"].clone()).unwrap();
    let key = osprey_apps::PublicKey::from_json(&store.get_text("/signing-key").await).unwrap();
    key.verify_archive(&signature, &archive).unwrap();
    assert_eq!(details["sha256"], signature.sha256);
    assert_eq!(client.skill("csv-report").await.unwrap()["installs"], 1);
    let popular = client
        .skill_listing(Shelf::Popular, "", None, 1, None)
        .await
        .unwrap();
    assert_eq!(popular["skills"][0]["name"], "csv-report");

    // Refusals: the same version twice, no version, hostile archives, no token, unknown names.
    let again = client
        .publish_skill(
            skill_archive(store.root.path(), "csv-report", "1.0.0"),
            TOKEN,
            &Listing::default(),
            None,
        )
        .await
        .unwrap_err();
    assert!(again.to_string().contains("version_exists"), "{again}");
    for (hostile, reason) in [
        ("../escape.txt", "parent_dir"),
        (".hidden", "name_not_allowed"),
    ] {
        let error = client
            .publish_skill(hostile_skill(hostile), TOKEN, &Listing::default(), None)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("package_rejected"), "{error}");
        let (status, body) = store.post_skill(hostile_skill(hostile), TOKEN).await;
        assert_eq!(
            (status, body["reason"].as_str()),
            (422, Some(reason)),
            "{body}"
        );
    }
    let (status, _) = store
        .post_skill(skill_archive(store.root.path(), "other", "1.0.0"), "wrong")
        .await;
    assert_eq!(status, 401);
    assert!(
        !store
            .root
            .path()
            .join("store/skills/sneaky-1.0.0.tar.gz")
            .exists()
    );
    let unknown = client.skill("no-such-skill").await.unwrap_err();
    assert!(unknown.to_string().contains("not_found"), "{unknown}");
    let missing = client
        .download_skill("csv-report", "9.9.9")
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("not_found"), "{missing}");
}

/// Serves no signing key: every fetch fails, as an unreachable store does.
struct NoKey;

impl osprey_apps::trust::TrustSource for NoKey {
    fn signing_key(&self) -> futures::future::BoxFuture<'_, osprey_apps::Result<String>> {
        Box::pin(async { Err(osprey_apps::Error::StoreUnavailable("no key today".into())) })
    }
    fn revocations(
        &self,
    ) -> futures::future::BoxFuture<'_, osprey_apps::Result<Vec<osprey_apps::trust::Revocation>>>
    {
        Box::pin(async { Err(osprey_apps::Error::StoreUnavailable("no list today".into())) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_install_without_the_store_key_is_refused_and_leaves_nothing() {
    use osprey_apps::skill_package::SkillInstaller;
    let store = start().await;
    let client = StoreClient::new(&store.base);
    client
        .publish_skill(
            skill_archive(store.root.path(), "csv-report", "1.0.0"),
            TOKEN,
            &osprey_apps::store_client::Listing::default(),
            None,
        )
        .await
        .unwrap();
    let skills = store.root.path().join("skills");
    let installer = SkillInstaller::new(&skills);
    let no_key = Trust::new(
        NoKey,
        store.root.path().join("trust-none"),
        Duration::from_secs(3600),
    );
    let error = installer
        .install_from_store(&client, &no_key, "csv-report", None)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "store_unavailable", "{error}");
    assert!(
        std::fs::read_dir(&skills).map(|d| d.count()).unwrap_or(0) == 0,
        "nothing unpacked"
    );

    // With the store's key it installs, and records where it came from.
    let trust = Trust::new(
        client.clone(),
        store.root.path().join("trust"),
        Duration::from_secs(3600),
    );
    let outcome = installer
        .install_from_store(&client, &trust, "csv-report", None)
        .await
        .unwrap();
    assert_eq!(outcome.version, "1.0.0");
    assert_eq!(
        installer.record("csv-report").unwrap().store_url,
        store.base
    );
    installer.uninstall("csv-report").unwrap();
    assert!(installer.installed().is_empty());
}
