//! The store server on a loopback port with the real client: publish, catalog, reviews,
//! download, install into an apps directory, launch, revoke, and the refusals.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use osprey_apps::runtime::{LaunchOptions, Launcher};
use osprey_apps::store_client::StoreClient;
use osprey_apps::trust::Trust;
use osprey_apps::{InstallOutcome, Installer, napp};
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
        let project = self.root.path().join(format!("{id}-{version}"));
        std::fs::create_dir_all(&project).unwrap();
        let manifest = json!({
            "id": id, "name": id.to_uppercase(), "version": version,
            "description": description, "provides": ["tool:convert"]
        });
        std::fs::write(project.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(project.join("SKILL.md"), "# skill\n").unwrap();
        std::fs::write(project.join("binary"), binary).unwrap();
        std::fs::set_permissions(
            project.join("binary"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let mut bytes = Vec::new();
        napp::pack(&project, &mut bytes).unwrap();
        bytes
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
