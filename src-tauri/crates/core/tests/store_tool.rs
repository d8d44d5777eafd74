//! The agent's `store` tool against a real store process (`osprey store serve`, started with the
//! shared harness) on a loopback port and a real data folder: browsing and searching apps and
//! skills in pages, installing a skill after the person's approval (usable by the skill loader at
//! once) and removing it, skills whose signature is wrong or whose archive is hostile refused
//! with nothing left behind, and an app install whose question shows the app's publisher,
//! signer, version and permissions in plain words, which installs nothing when denied and, once
//! approved, runs (the unit-converter fixture as a real sandboxed sidecar). Installs and
//! uninstalls are asked at the most permissive policy level, from every origin.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use osprey_apps::KeyPair;
use osprey_apps::skill_package::pack_skill;
use osprey_apps::store_client::{Listing, StoreClient};
use osprey_core::{Core, CoreOptions, PolicyOverride};
use osprey_tests::store::StoreProcess;
use osprey_tests::{cli_binary, fixture_binary};
use osprey_tools::{FixedApprover, Level, ToolContext};
use osprey_types::{ApprovalAnswer, ApprovalRequest, ErrorCode, Origin, ToolResult};
use serde_json::{Value, json};

const TOKEN: &str = "store-tool-token";

struct Fixture {
    root: tempfile::TempDir,
    store: StoreProcess,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let store = StoreProcess::start(&cli_binary(), root.path(), TOKEN);
        Fixture { root, store }
    }

    fn client(&self) -> StoreClient {
        StoreClient::new(&self.store.url)
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// A core on `<root>/data` pointed at the store, at the most permissive policy level.
    fn core(&self) -> Core {
        osprey_db::Database::open_in(&self.data())
            .unwrap()
            .settings()
            .set("store.url", &json!(self.store.url))
            .unwrap();
        Core::open(CoreOptions {
            data_dir: Some(self.data()),
            policy: Some(PolicyOverride {
                level: Some(Level::Full),
                ask: None,
            }),
            ..CoreOptions::default()
        })
        .unwrap()
    }

    /// Publishes the unit-converter fixture as `id` (the store signs it).
    async fn publish_app(&self, id: &str, name: &str, permissions: &[&str], listing: Listing) {
        let project = self.root.path().join(format!("project-{id}"));
        let manifest = json!({"id": id, "name": name, "version": "1.0.0",
            "description": format!("{name} converts units of length and mass"),
            "provides": ["tool:convert"], "permissions": permissions});
        let package = osprey_tests::app_package(
            &project,
            &manifest,
            &std::fs::read(fixture_binary("osprey-fixture-unit-converter")).unwrap(),
        );
        self.client()
            .publish_listed(package, TOKEN, &listing)
            .await
            .unwrap();
    }

    /// A skill folder `name` with a script and a reference, packed and published.
    async fn publish_skill(&self, name: &str, version: &str, description: &str, listing: Listing) {
        let folder = self
            .root
            .path()
            .join(format!("skill-{name}-{version}"))
            .join(name);
        std::fs::create_dir_all(folder.join("scripts")).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: {description}\nlicense: MIT\nmetadata:\n  \
                 author: Ana Lopez\n  version: \"{version}\"\n---\n# {name}\n\nRun \
                 `python scripts/run.py` in this skill's folder. Version {version}.\n"
            ),
        )
        .unwrap();
        std::fs::write(folder.join("scripts/run.py"), "print('hello')\n").unwrap();
        std::fs::write(folder.join("reference.md"), "# Reference\n").unwrap();
        let (archive, _) = pack_skill(&folder).unwrap();
        self.client()
            .publish_skill(archive, TOKEN, &listing, None)
            .await
            .unwrap();
    }

    /// Everything in `<data>/skills`, hidden entries included.
    fn skills_entries(&self) -> Vec<String> {
        entries(&self.data().join("skills"))
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(list) => list
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn listed(category: &str, featured: bool) -> Listing {
    Listing {
        featured,
        category: Some(category.into()),
        publisher: Some("Acme Apps".into()),
    }
}

/// A call from `origin` answered by `approver`.
async fn call(
    core: &Core,
    origin: Origin,
    approver: &Arc<FixedApprover>,
    input: Value,
) -> ToolResult {
    let ctx = ToolContext::new(origin, Duration::from_secs(120))
        .with_approver(Arc::clone(approver) as Arc<dyn osprey_tools::Approver>);
    core.call_tool_with(&ctx, "store", input).await
}

/// A reading call, which nobody is asked about.
async fn read(core: &Core, input: Value) -> String {
    let nobody = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
    let result = call(core, Origin::User, &nobody, input.clone()).await;
    assert!(!result.is_error, "{input}: {result:?}");
    assert_eq!(nobody.count(), 0, "{input} was asked about");
    result.text_content()
}

fn only_question(approver: &FixedApprover) -> ApprovalRequest {
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    asked.into_iter().next().unwrap()
}

fn store_key(fixture: &Fixture) -> KeyPair {
    KeyPair::from_secret_json(&fixture.store.secret_key_json()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_tool_lists_gets_and_searches_apps_and_skills_in_pages() {
    let fixture = Fixture::new();
    fixture
        .publish_app(
            "com.example.units",
            "Units",
            &["network:api.example.com"],
            listed("productivity", true),
        )
        .await;
    fixture
        .publish_app("com.example.lint", "Lint", &[], listed("developer", false))
        .await;
    reqwest::Client::new()
        .post(format!(
            "{}/api/v1/apps/com.example.units/reviews",
            fixture.store.url
        ))
        .json(&json!({"author": "ana", "rating": 4, "body": "Handy for recipes."}))
        .send()
        .await
        .unwrap();
    fixture
        .publish_skill(
            "pdf-forms",
            "1.0.0",
            "Fill in PDF forms",
            listed("documents", true),
        )
        .await;
    fixture
        .publish_skill(
            "csv-report",
            "2.1.0",
            "Summarize CSV files as a report",
            Listing::default(),
        )
        .await;
    let core = fixture.core();
    assert!(core.info().tools.contains(&"store".to_string()));

    let all = read(&core, json!({"resource": "apps", "action": "list"})).await;
    assert!(all.contains("Apps: 2 in all, page 1 of 1"), "{all}");
    assert!(
        all.contains(
            "- com.example.units — Units 1.0.0 by Acme Apps [productivity], rated 4.0/5 (1 review)"
        ),
        "{all}"
    );
    assert!(all.contains("- com.example.lint — Lint 1.0.0"), "{all}");

    let paged = read(
        &core,
        json!({"resource": "apps", "action": "list", "page_size": 1}),
    )
    .await;
    assert!(
        paged.contains("page 1 of 2 (1 a page, 1 here); next: page=2"),
        "{paged}"
    );
    let second = read(
        &core,
        json!({"resource": "apps", "action": "list", "page_size": 1, "page": 2}),
    )
    .await;
    assert!(second.contains("page 2 of 2"), "{second}");
    assert!(!second.contains("next: page"), "{second}");

    let found = read(
        &core,
        json!({"action": "list", "resource": "apps", "query": "lint"}),
    )
    .await;
    assert!(
        found.contains("Apps matching \"lint\": 1 in all"),
        "{found}"
    );
    assert!(!found.contains("com.example.units"), "{found}");
    let shelf = read(
        &core,
        json!({"resource": "apps", "action": "list", "category": "developer"}),
    )
    .await;
    assert!(
        shelf.contains("in developer: 1 in all") && shelf.contains("com.example.lint"),
        "{shelf}"
    );
    let featured = read(&core, json!({"resource": "apps", "action": "featured"})).await;
    assert!(
        featured.contains("com.example.units") && !featured.contains("com.example.lint"),
        "{featured}"
    );
    let popular = read(&core, json!({"resource": "apps", "action": "popular"})).await;
    assert!(popular.starts_with("Popular apps"), "{popular}");

    let page = read(
        &core,
        json!({"resource": "apps", "action": "get", "id": "com.example.units"}),
    )
    .await;
    assert!(
        page.contains("Units (com.example.units) 1.0.0 by Acme Apps, category productivity"),
        "{page}"
    );
    assert!(
        page.contains("- Connect to api.example.com over the internet (network:api.example.com"),
        "{page}"
    );
    assert!(page.contains("State: not installed."), "{page}");
    let reviews = read(
        &core,
        json!({"resource": "apps", "action": "reviews", "id": "com.example.units"}),
    )
    .await;
    assert!(
        reviews.contains("- 4/5 by ana: Handy for recipes."),
        "{reviews}"
    );
    let unknown = call(
        &core,
        Origin::User,
        &Arc::new(FixedApprover::new(ApprovalAnswer::Deny)),
        json!({"resource": "apps", "action": "get", "id": "com.example.none"}),
    )
    .await;
    assert!(
        unknown.is_error && unknown.text_content().contains("no app"),
        "{unknown:?}"
    );

    let skills = read(&core, json!({"resource": "skills", "action": "list"})).await;
    assert!(skills.contains("Skills: 2 in all, page 1 of 1"), "{skills}");
    assert!(
        skills
            .contains("- pdf-forms 1.0.0 by Ana Lopez [documents], 0 installs: Fill in PDF forms"),
        "{skills}"
    );
    let searched = read(
        &core,
        json!({"resource": "skills", "action": "list", "query": "csv"}),
    )
    .await;
    assert!(
        searched.contains("csv-report 2.1.0") && !searched.contains("pdf-forms"),
        "{searched}"
    );
    let skill = read(
        &core,
        json!({"resource": "skills", "action": "get", "id": "pdf-forms"}),
    )
    .await;
    assert!(
        skill.contains("Skill pdf-forms 1.0.0 by Ana Lopez, category documents, license MIT"),
        "{skill}"
    );
    assert!(
        skill.contains("Files (3): SKILL.md, reference.md, scripts/run.py."),
        "{skill}"
    );
    assert!(skill.contains("State: not installed."), "{skill}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_installs_after_approval_is_loadable_at_once_and_uninstalls_when_asked() {
    let fixture = Fixture::new();
    fixture
        .publish_skill(
            "pdf-forms",
            "1.0.0",
            "Fill in PDF forms",
            Listing::default(),
        )
        .await;
    let core = fixture.core();
    let key_id = store_key(&fixture).public().key_id();

    // Asked from every origin, at level `full`: a denial installs nothing.
    for origin in [Origin::User, Origin::Skill, Origin::App] {
        let deny = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
        let result = call(
            &core,
            origin,
            &deny,
            json!({"resource": "skills", "action": "install", "id": "pdf-forms"}),
        )
        .await;
        assert_eq!(
            result.code,
            Some(ErrorCode::ApprovalDenied),
            "{origin}: {result:?}"
        );
        only_question(&deny);
        assert!(
            fixture.skills_entries().is_empty(),
            "{:?}",
            fixture.skills_entries()
        );
    }
    assert!(core.skills().catalog().get("pdf-forms").is_none());

    let yes = Arc::new(FixedApprover::new(ApprovalAnswer::AlwaysThisSession));
    let result = call(
        &core,
        Origin::User,
        &yes,
        json!({"resource": "skills", "action": "install", "id": "pdf-forms"}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result
            .text_content()
            .contains("Installed the skill pdf-forms 1.0.0"),
        "{result:?}"
    );
    let question = only_question(&yes);
    assert!(
        question.once_only,
        "an install is answered for this call only"
    );
    assert!(question.suggested_scopes.is_empty());
    let details = question
        .details
        .expect("the question says what is installed");
    assert_eq!(details.kind, "skill");
    assert_eq!(details.version.as_deref(), Some("1.0.0"));
    assert_eq!(details.publisher.as_deref(), Some("Ana Lopez"));
    assert!(
        details.signer.as_deref().unwrap().contains(&key_id),
        "{details:?}"
    );
    assert_eq!(
        details.files,
        ["SKILL.md", "reference.md", "scripts/run.py"]
    );

    // The loader has it now, without a restart.
    let skill = core.skills().catalog().load("pdf-forms").unwrap();
    assert!(skill.body.contains("Version 1.0.0"), "{}", skill.body);
    assert_eq!(skill.meta.source.kind(), "user");
    let loaded = core
        .call_tool_with(
            &ToolContext::new(Origin::User, Duration::from_secs(30)).with_session("chat-1"),
            "skill",
            json!({"action": "load", "name": "pdf-forms"}),
        )
        .await;
    assert!(
        loaded
            .text_content()
            .contains("Run `python scripts/run.py`"),
        "{loaded:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.data().join("skills/pdf-forms/scripts/run.py")).unwrap(),
        "print('hello')\n"
    );
    let record: Value = serde_json::from_slice(
        &std::fs::read(fixture.data().join("skills/pdf-forms/.osprey-store.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["version"], "1.0.0");
    assert_eq!(record["store_url"], fixture.store.url.as_str());
    assert_eq!(fixture.skills_entries(), ["pdf-forms"], "no staging left");

    let listing = read(&core, json!({"resource": "skills", "action": "list"})).await;
    assert!(listing.contains("[installed 1.0.0]"), "{listing}");
    assert!(listing.contains("1 installs"), "{listing}");

    // A new version: shown as an update, installed over the old one after a new question
    // ("always this session" did not carry over).
    fixture
        .publish_skill(
            "pdf-forms",
            "1.1.0",
            "Fill in PDF forms",
            Listing::default(),
        )
        .await;
    let listing = read(
        &core,
        json!({"resource": "skills", "action": "get", "id": "pdf-forms"}),
    )
    .await;
    assert!(
        listing.contains("installed 1.0.0; update available: 1.1.0"),
        "{listing}"
    );
    let again = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let result = call(
        &core,
        Origin::User,
        &again,
        json!({"resource": "skills", "action": "install", "id": "pdf-forms"}),
    )
    .await;
    assert!(
        result
            .text_content()
            .contains("Updated the skill pdf-forms from 1.0.0 to 1.1.0"),
        "{result:?}"
    );
    assert!(
        only_question(&again)
            .details
            .unwrap()
            .title
            .contains("Update the skill pdf-forms from 1.0.0 to 1.1.0")
    );
    assert!(
        core.skills()
            .catalog()
            .load("pdf-forms")
            .unwrap()
            .body
            .contains("Version 1.1.0")
    );
    assert_eq!(fixture.skills_entries(), ["pdf-forms"]);

    // The person's own skill of another name is not the store's to remove.
    std::fs::create_dir_all(fixture.data().join("skills/mine")).unwrap();
    std::fs::write(
        fixture.data().join("skills/mine/SKILL.md"),
        "---\nname: mine\ndescription: my own\n---\nbody\n",
    )
    .unwrap();
    let refused = call(
        &core,
        Origin::User,
        &Arc::new(FixedApprover::new(ApprovalAnswer::Once)),
        json!({"resource": "skills", "action": "uninstall", "id": "mine"}),
    )
    .await;
    assert_eq!(refused.code, Some(ErrorCode::InvalidInput), "{refused:?}");
    assert!(fixture.data().join("skills/mine/SKILL.md").is_file());

    // Uninstall is asked too: denied keeps it, approved removes it from disk and the catalog.
    let deny = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
    let result = call(
        &core,
        Origin::User,
        &deny,
        json!({"resource": "skills", "action": "uninstall", "id": "pdf-forms"}),
    )
    .await;
    assert_eq!(result.code, Some(ErrorCode::ApprovalDenied), "{result:?}");
    assert!(
        only_question(&deny)
            .details
            .unwrap()
            .title
            .contains("Remove the skill pdf-forms 1.1.0")
    );
    assert!(core.skills().catalog().get("pdf-forms").is_some());
    let yes = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let result = call(
        &core,
        Origin::User,
        &yes,
        json!({"resource": "skills", "action": "uninstall", "id": "pdf-forms"}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    only_question(&yes);
    assert!(core.skills().catalog().get("pdf-forms").is_none());
    assert_eq!(fixture.skills_entries(), ["mine"]);
}

/// Rewrites the store's entry for a skill as a compromised store would serve it.
fn tamper(
    fixture: &Fixture,
    name: &str,
    archive: Option<&[u8]>,
    signature: &osprey_apps::ArchiveSignature,
) {
    let version: String = {
        let db = rusqlite::Connection::open(fixture.store.dir.join("store.db")).unwrap();
        db.busy_timeout(Duration::from_secs(5)).unwrap();
        db.execute(
            "UPDATE skills SET signature = ?2, sha256 = ?3 WHERE name = ?1",
            rusqlite::params![
                name,
                serde_json::to_string(signature).unwrap(),
                signature.sha256
            ],
        )
        .unwrap();
        db.query_row(
            "SELECT version FROM skills WHERE name = ?1",
            [name],
            |row| row.get(0),
        )
        .unwrap()
    };
    if let Some(archive) = archive {
        std::fs::write(
            fixture
                .store
                .dir
                .join("skills")
                .join(format!("{name}-{version}.tar.gz")),
            archive,
        )
        .unwrap();
    }
}

/// A `.tar.gz` holding a SKILL.md and one more entry under a raw (hostile) name.
fn hostile_archive(name: &str, hostile: &str) -> Vec<u8> {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for (entry, data) in [
        (
            "SKILL.md".to_string(),
            format!("---\nname: {name}\ndescription: looks fine\n---\nbody\n").into_bytes(),
        ),
        (hostile.to_string(), b"planted\n".to_vec()),
    ] {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.as_old_mut().name[..entry.len()].copy_from_slice(entry.as_bytes());
        header.set_cksum();
        builder.append(&header, &data[..]).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_with_a_bad_signature_or_a_hostile_archive_are_refused_and_leave_nothing() {
    let fixture = Fixture::new();
    fixture
        .publish_skill(
            "forged",
            "1.0.0",
            "Signed by someone else",
            Listing::default(),
        )
        .await;
    fixture
        .publish_skill(
            "escape",
            "1.0.0",
            "Reaches out of its folder",
            Listing::default(),
        )
        .await;
    let store_key = store_key(&fixture);

    // A signature by another key, presented under the store key's id.
    let served = fixture
        .client()
        .download_skill("forged", "1.0.0")
        .await
        .unwrap();
    let mut forged = KeyPair::generate().unwrap().sign_archive(&served);
    forged.key_id = store_key.public().key_id();
    tamper(&fixture, "forged", None, &forged);

    // An archive that climbs out of its folder, signed with the store's own key (a store that
    // signed what it should have refused): the client's unpacking refuses it all the same.
    let escape = hostile_archive("escape", "../escaped.txt");
    tamper(
        &fixture,
        "escape",
        Some(&escape),
        &store_key.sign_archive(&escape),
    );

    let core = fixture.core();
    for (name, expected) in [
        ("forged", "archive_signature_mismatch"),
        ("escape", "parent_dir"),
    ] {
        let yes = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
        let result = call(
            &core,
            Origin::User,
            &yes,
            json!({"resource": "skills", "action": "install", "id": name}),
        )
        .await;
        assert!(result.is_error, "{name}: {result:?}");
        assert!(
            result.text_content().contains(expected),
            "{name}: {result:?}"
        );
        only_question(&yes);
        assert!(
            fixture.skills_entries().is_empty(),
            "{name} left {:?}",
            fixture.skills_entries()
        );
        assert!(core.skills().catalog().get(name).is_none());
    }
    assert!(!fixture.data().join("escaped.txt").exists());
    assert!(!fixture.data().join("skills/escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_install_asks_with_its_permissions_installs_nothing_when_denied_and_runs_once_approved()
 {
    let fixture = Fixture::new();
    fixture
        .publish_app(
            "com.example.units",
            "Units",
            &["network:api.example.com"],
            listed("productivity", true),
        )
        .await;
    let core = fixture.core();
    let key_id = store_key(&fixture).public().key_id();
    let install = json!({"resource": "apps", "action": "install", "id": "com.example.units"});

    let deny = Arc::new(FixedApprover::new(ApprovalAnswer::Deny));
    let result = call(&core, Origin::User, &deny, install.clone()).await;
    assert_eq!(result.code, Some(ErrorCode::ApprovalDenied), "{result:?}");
    let question = only_question(&deny);
    assert_eq!(question.tool, "store");
    assert!(question.once_only);
    let details = question.details.expect("the permission prompt's contents");
    assert_eq!(details.title, "Install the app Units 1.0.0 from the store");
    assert_eq!(details.kind, "app");
    assert_eq!(details.name, "Units");
    assert_eq!(details.id, "com.example.units");
    assert_eq!(details.version.as_deref(), Some("1.0.0"));
    assert_eq!(details.publisher.as_deref(), Some("Acme Apps"));
    let signer = details.signer.unwrap();
    assert!(
        signer.contains(&key_id) && signer.contains(&fixture.store.url),
        "{signer}"
    );
    assert_eq!(details.permissions.len(), 1);
    assert_eq!(details.permissions[0].permission, "network:api.example.com");
    assert_eq!(
        details.permissions[0].explanation,
        "Connect to api.example.com over the internet"
    );
    assert!(core.installed_apps().await.is_empty());
    assert!(
        entries(&fixture.data().join("apps")).is_empty(),
        "nothing downloaded or staged"
    );

    // With asking off, an install cannot be approved at all.
    let off = Core::open(CoreOptions {
        data_dir: Some(fixture.root.path().join("data-off")),
        policy: Some(PolicyOverride {
            level: Some(Level::Full),
            ask: Some(osprey_tools::AskMode::Off),
        }),
        ..CoreOptions::default()
    })
    .unwrap();
    let refused = call(&off, Origin::User, &deny, install.clone()).await;
    assert_eq!(refused.code, Some(ErrorCode::PolicyDenied), "{refused:?}");
    drop(off);

    let yes = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let result = call(&core, Origin::User, &yes, install.clone()).await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result
            .text_content()
            .contains("installed com.example.units 1.0.0"),
        "{result:?}"
    );
    only_question(&yes);
    let got = read(
        &core,
        json!({"resource": "apps", "action": "get", "id": "com.example.units"}),
    )
    .await;
    assert!(got.contains("State: installed."), "{got}");

    // It runs: the supervisor launches it in its sandbox and its tool answers.
    core.start_apps().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !core.has_tool("convert") {
        assert!(
            Instant::now() < deadline,
            "the installed app's tool never appeared"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let converted = core
        .call_tool(
            Origin::User,
            "convert",
            json!({"value": 2, "from": "lb", "to": "kg"}),
        )
        .await;
    assert!(!converted.is_error, "{converted:?}");
    assert!(converted.text_content().contains("0.907"), "{converted:?}");

    // Uninstalling is asked, with what goes.
    let yes = Arc::new(FixedApprover::new(ApprovalAnswer::Once));
    let result = call(
        &core,
        Origin::User,
        &yes,
        json!({"resource": "apps", "action": "uninstall", "id": "com.example.units"}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    let details = only_question(&yes).details.unwrap();
    assert!(
        details.title.starts_with("Uninstall the app Units 1.0.0"),
        "{details:?}"
    );
    assert_eq!(details.permissions.len(), 1);
    assert!(core.installed_apps().await.is_empty());
    tokio::time::timeout(Duration::from_secs(20), core.stop_apps())
        .await
        .expect("apps stop");
}
