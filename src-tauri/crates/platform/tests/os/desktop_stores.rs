//! Calendars and contacts in the desktop's own stores: the real Evolution Data Server (the
//! Debian package), activated on a private D-Bus session bus of the test's own, with a throwaway
//! HOME and XDG folders (the activated services inherit the bus's environment, so nothing of
//! the machine's real stores is touched). At the end every process on that bus is stopped.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use osprey_platform::{DavAccount, DavConfig, DavSettings, OsConfig, OsTool};
use serde_json::{Value, json};
use zbus::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use crate::harness::{Guarded, STARTUP, call, code, input, ok_text, private_bus, uid_in};

const REGISTRY: &str = "org.gnome.evolution.dataserver.Sources5";
const REGISTRY_BINARY: &str = "/usr/libexec/evolution-source-registry";

/// A private session bus with service activation (so EDS starts on demand), its HOME, and the
/// cleanup of everything that connected to it.
struct Desktop {
    address: String,
    _home: tempfile::TempDir,
    bus: Option<Guarded>,
}

impl Desktop {
    /// `None` (with the reason printed) where EDS is not installed; on CI it must be.
    fn start(test: &str) -> Option<Desktop> {
        if !std::path::Path::new(REGISTRY_BINARY).exists() {
            assert!(
                std::env::var("CI").is_err(),
                "evolution-data-server must be installed on CI (scripts/setup)"
            );
            eprintln!("skipped {test}: evolution-data-server is not installed (scripts/setup)");
            return None;
        }
        let home = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let path = home.path().join(name);
            std::fs::create_dir_all(&path).unwrap();
            path.display().to_string()
        };
        let (config, data, cache, runtime) =
            (dir("config"), dir("data"), dir("cache"), dir("runtime"));
        let home_path = home.path().display().to_string();
        let mut bus = Guarded::spawn(
            "dbus-daemon",
            &["--session", "--nofork", "--print-address=1"],
            &[
                ("HOME", &home_path),
                ("XDG_CONFIG_HOME", &config),
                ("XDG_DATA_HOME", &data),
                ("XDG_CACHE_HOME", &cache),
                ("XDG_RUNTIME_DIR", &runtime),
                // GSettings in memory: no dconf service with the real HOME.
                ("GSETTINGS_BACKEND", "memory"),
            ],
        );
        let address = bus
            .lines()
            .wait_for("dbus address", STARTUP, |l| l.contains('='))
            .trim()
            .to_string();
        Some(Desktop {
            address,
            _home: home,
            bus: Some(bus),
        })
    }

    /// Waits (with a deadline) until the registry answers with its built-in local sources.
    async fn wait_for_registry(&self) {
        let connection = self.connect().await;
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = connection
                .call_method(
                    Some(REGISTRY),
                    "/org/gnome/evolution/dataserver/SourceManager",
                    Some("org.freedesktop.DBus.ObjectManager"),
                    "GetManagedObjects",
                    &(),
                )
                .await;
            if let Ok(reply) = &answer {
                type Managed =
                    HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>>;
                let managed: Managed = reply.body().deserialize().unwrap();
                let uids: Vec<String> = managed
                    .values()
                    .filter_map(|i| i.get("org.gnome.evolution.dataserver.Source"))
                    .filter_map(|p| String::try_from(p.get("UID")?.clone()).ok())
                    .collect();
                if uids.iter().any(|u| u == "system-calendar")
                    && uids.iter().any(|u| u == "system-address-book")
                {
                    return;
                }
            }
            assert!(
                Instant::now() < end,
                "the EDS source registry did not answer within a minute: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn connect(&self) -> Connection {
        zbus::connection::Builder::address(self.address.as_str())
            .unwrap()
            .build()
            .await
            .unwrap()
    }

    fn tool(&self, zone: &str) -> OsTool {
        OsTool::new(OsConfig {
            session_bus_address: Some(self.address.clone()),
            dav: DavConfig {
                timezone: Some(zone.into()),
                timeout: Duration::from_secs(30),
                ..DavConfig::default()
            },
            ..OsConfig::default()
        })
    }

    /// A calendar object or card as EDS holds it (through its own D-Bus API, not the tool).
    async fn raw(&self, kind: &str, source: &str, sexp: &str) -> Vec<String> {
        let connection = self.connect().await;
        let (bus, path, interface, method, object_interface, list) = match kind {
            "calendar" => (
                "org.gnome.evolution.dataserver.Calendar8",
                "/org/gnome/evolution/dataserver/CalendarFactory",
                "org.gnome.evolution.dataserver.CalendarFactory",
                "OpenCalendar",
                "org.gnome.evolution.dataserver.Calendar",
                "GetObjectList",
            ),
            _ => (
                "org.gnome.evolution.dataserver.AddressBook10",
                "/org/gnome/evolution/dataserver/AddressBookFactory",
                "org.gnome.evolution.dataserver.AddressBookFactory",
                "OpenAddressBook",
                "org.gnome.evolution.dataserver.AddressBook",
                "GetContactList",
            ),
        };
        let reply = connection
            .call_method(Some(bus), path, Some(interface), method, &(source,))
            .await
            .unwrap();
        let (object, owner): (String, String) = reply.body().deserialize().unwrap();
        connection
            .call_method(
                Some(owner.as_str()),
                object.as_str(),
                Some(object_interface),
                "Open",
                &(),
            )
            .await
            .unwrap();
        let reply = connection
            .call_method(
                Some(owner.as_str()),
                object.as_str(),
                Some(object_interface),
                list,
                &(sexp,),
            )
            .await
            .unwrap();
        reply.body().deserialize().unwrap()
    }

    /// Changes a card behind the tool's back (as another app would).
    async fn modify_card(&self, card: String) {
        let connection = self.connect().await;
        let reply = connection
            .call_method(
                Some("org.gnome.evolution.dataserver.AddressBook10"),
                "/org/gnome/evolution/dataserver/AddressBookFactory",
                Some("org.gnome.evolution.dataserver.AddressBookFactory"),
                "OpenAddressBook",
                &("system-address-book",),
            )
            .await
            .unwrap();
        let (object, owner): (String, String) = reply.body().deserialize().unwrap();
        let book = "org.gnome.evolution.dataserver.AddressBook";
        connection
            .call_method(
                Some(owner.as_str()),
                object.as_str(),
                Some(book),
                "Open",
                &(),
            )
            .await
            .unwrap();
        connection
            .call_method(
                Some(owner.as_str()),
                object.as_str(),
                Some(book),
                "ModifyContacts",
                &(vec![card], 0u32),
            )
            .await
            .unwrap();
    }

    /// Stops every process on the bus (the registry, the factories and their backends), then
    /// the bus, and checks none is left.
    async fn stop(mut self) {
        let connection = self.connect().await;
        let dbus = zbus::fdo::DBusProxy::new(&connection).await.unwrap();
        let mut pids = Vec::new();
        for name in dbus.list_names().await.unwrap() {
            if !name.starts_with(':') {
                continue;
            }
            if let Ok(pid) = dbus.get_connection_unix_process_id(name.as_ref()).await
                && pid != std::process::id()
                && !pids.contains(&pid)
            {
                pids.push(pid);
            }
        }
        drop(dbus);
        drop(connection);
        assert!(!pids.is_empty(), "EDS processes were expected on the bus");
        for pid in &pids {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
        }
        let alive = |pid: &u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
        let end = Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|pid| alive(pid) && !zombie(*pid)) && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for pid in pids.iter().filter(|p| alive(p) && !zombie(**p)) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        drop(self.bus.take());
        let left: Vec<&u32> = pids.iter().filter(|p| alive(p) && !zombie(**p)).collect();
        assert!(left.is_empty(), "processes left running: {left:?}");
    }
}

/// Whether `pid` has exited and only waits for its parent to reap it.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

fn cal(action: &str, rest: Value) -> Value {
    input("calendar", action, rest)
}

fn contacts(action: &str, rest: Value) -> Value {
    input("contacts", action, rest)
}

#[tokio::test(flavor = "multi_thread")]
async fn desktop_calendar_and_contacts_are_kept_in_evolution_data_server() {
    let Some(desktop) =
        Desktop::start("desktop_calendar_and_contacts_are_kept_in_evolution_data_server")
    else {
        return;
    };
    desktop.wait_for_registry().await;
    let tool = desktop.tool("Europe/Berlin");

    // The built-in local sources appear as the account "On This Computer".
    let calendars = ok_text(&call(&tool, cal("calendars", json!({}))).await);
    assert!(
        calendars.contains("Personal (account On This Computer): eds:///calendar/system-calendar/"),
        "{calendars}"
    );
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    assert!(
        status.contains("calendar (productivity): available - Evolution Data Server answers"),
        "{status}"
    );

    // An event across the night the clocks go forward (Berlin, 2026-03-29 02:00 -> 03:00):
    // 23:30 CET to 03:30 CEST is three hours. No calendar named: the only writable one is used
    // (the birthdays calendar is read-only).
    let create = cal(
        "create",
        json!({
            "title": "Night train",
            "start": "2026-03-28T23:30",
            "end": "2026-03-29T03:30",
            "timezone": "Europe/Berlin",
            "location": "Berlin Hbf",
        }),
    );
    let created = ok_text(&call(&tool, create.clone()).await);
    assert!(
        created.starts_with("Created \"Night train\" 2026-03-28 Sat 23:30")
            && created.contains("in Personal"),
        "{created}"
    );
    let uid = uid_in(&created);
    assert!(uid.starts_with("osprey-"), "{uid}");
    let again = ok_text(&call(&tool, create).await);
    assert!(again.starts_with("Not created again"), "{again}");

    // As EDS holds it: one object, the zone kept.
    let stored = desktop
        .raw("calendar", "system-calendar", &format!("(uid? \"{uid}\")"))
        .await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(
        stored[0].contains("DTSTART;TZID=Europe/Berlin:20260328T233000")
            && stored[0].contains("DTEND;TZID=Europe/Berlin:20260329T033000"),
        "{stored:?}"
    );

    // Listed in Berlin time, and in UTC by a tool that lives there: 22:30Z to 01:30Z.
    let range = json!({"start": "2026-03-28", "end": "2026-03-29"});
    let list = ok_text(&call(&tool, cal("list", range.clone())).await);
    assert_eq!(list.matches("Night train").count(), 1, "{list}");
    assert!(list.contains("Night train @ Berlin Hbf  [uid "), "{list}");
    assert!(list.contains("Personal"), "{list}");
    let utc = desktop.tool("UTC");
    let in_utc = ok_text(&call(&utc, cal("list", range)).await);
    assert!(
        in_utc.contains("22:30") && in_utc.contains("01:30"),
        "{in_utc}"
    );
    let outside = ok_text(
        &call(
            &tool,
            cal("list", json!({"start": "2026-04-01", "end": "2026-04-02"})),
        )
        .await,
    );
    assert!(!outside.contains("Night train"), "{outside}");

    // A desktop calendar whose backend is not installed is named in the listing instead of
    // hiding the others; asked for alone, its error is the answer.
    desktop
        .connect()
        .await
        .call_method(
            Some(REGISTRY),
            "/org/gnome/evolution/dataserver/SourceManager",
            Some("org.gnome.evolution.dataserver.SourceManager"),
            "CreateSources",
            &(HashMap::from([(
                "broken-calendar",
                "[Data Source]\nDisplayName=Broken\nEnabled=true\nParent=local-stub\n\n[Calendar]\nBackendName=no-such-backend\n",
            )]),),
        )
        .await
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    while !ok_text(&call(&tool, cal("calendars", json!({}))).await).contains("Broken") {
        assert!(Instant::now() < end, "the new source was not listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let with_broken = ok_text(
        &call(
            &tool,
            cal("list", json!({"start": "2026-03-28", "end": "2026-03-29"})),
        )
        .await,
    );
    assert!(with_broken.contains("Night train"), "{with_broken}");
    assert!(
        with_broken.contains("Not read: Broken (On This Computer): "),
        "{with_broken}"
    );
    let alone = call(&tool, cal("list", json!({"calendar": "Broken"}))).await;
    assert!(alone.is_error, "{alone:?}");

    // Exported with its zone, imported again: still one (same UID); a file's new event with a
    // zone of its own arrives with that zone; `account` names the desktop's account.
    let files = tempfile::tempdir().unwrap();
    let ics = files.path().join("night.ics");
    let exported = ok_text(
        &call(
            &tool,
            cal(
                "export",
                json!({"path": ics.to_str().unwrap(), "start": "2026-03-28", "end": "2026-03-29"}),
            ),
        )
        .await,
    );
    assert!(exported.starts_with("Wrote 1 event"), "{exported}");
    let text = std::fs::read_to_string(&ics).unwrap();
    assert!(
        text.contains("BEGIN:VTIMEZONE")
            && text.contains("DTSTART;TZID=Europe/Berlin:20260328T233000"),
        "{text}"
    );
    let added = text.replace("END:VCALENDAR", "BEGIN:VEVENT\r\nUID:ferry-1\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:Ferry\r\nDTSTART;TZID=America/New_York:20260308T013000\r\nDTEND;TZID=America/New_York:20260308T033000\r\nEND:VEVENT\r\nEND:VCALENDAR");
    std::fs::write(&ics, added).unwrap();
    let imported = ok_text(
        &call(
            &tool,
            cal(
                "import",
                json!({"path": ics.to_str().unwrap(), "account": "On This Computer", "calendar": "Personal"}),
            ),
        )
        .await,
    );
    assert!(
        imported.contains("Imported 1 event") && imported.contains("1 was already there"),
        "{imported}"
    );
    let ferry = desktop
        .raw("calendar", "system-calendar", "(uid? \"ferry-1\")")
        .await;
    assert!(
        ferry.len() == 1 && ferry[0].contains("DTSTART;TZID=America/New_York:20260308T013000"),
        "{ferry:?}"
    );
    let mine = ok_text(
        &call(
            &tool,
            cal(
                "search",
                json!({"query": "ferry", "account": "on this computer"}),
            ),
        )
        .await,
    );
    // 01:30 in New York (EST, UTC-5) is 07:30 in Berlin (CET), the day New York's clocks change.
    assert!(
        mine.contains("2026-03-08 Sun 07:30") && mine.contains("Ferry"),
        "{mine}"
    );
    let nobody = call(&tool, cal("list", json!({"account": "work"}))).await;
    assert_eq!(code(&nobody), "invalid_input", "{nobody:?}");
    assert!(
        nobody.text_content().contains("On This Computer"),
        "{nobody:?}"
    );
    ok_text(&call(&tool, cal("delete", json!({"uid": "ferry-1"}))).await);

    // Search, update (title and a new start: the length stays the person's to give), delete.
    let found = ok_text(&call(&tool, cal("search", json!({"query": "night"}))).await);
    assert!(found.contains(&uid), "{found}");
    let updated = ok_text(
        &call(
            &tool,
            cal(
                "update",
                json!({"uid": uid, "title": "Night train (later)", "start": "2026-03-29T01:00", "end": "2026-03-29T05:00"}),
            ),
        )
        .await,
    );
    assert!(updated.contains("Night train (later)"), "{updated}");
    let stored = desktop
        .raw("calendar", "system-calendar", &format!("(uid? \"{uid}\")"))
        .await;
    assert!(
        stored[0].contains("SUMMARY:Night train (later)")
            && stored[0].contains("DTSTART;TZID=Europe/Berlin:20260329T010000"),
        "{stored:?}"
    );
    let deleted = ok_text(&call(&tool, cal("delete", json!({"uid": uid}))).await);
    assert!(deleted.starts_with("Deleted the event"), "{deleted}");
    assert!(
        desktop
            .raw("calendar", "system-calendar", &format!("(uid? \"{uid}\")"))
            .await
            .is_empty()
    );
    let gone = call(&tool, cal("delete", json!({"uid": uid}))).await;
    assert_eq!(code(&gone), "invalid_input", "{gone:?}");
    assert!(
        gone.text_content().contains("no event with uid")
            && gone
                .text_content()
                .contains("not read: Broken (On This Computer)"),
        "{gone:?}"
    );

    // Contacts: created once, found by search, changed, refused when changed behind our back,
    // deleted.
    let ada = contacts(
        "create",
        json!({"name": "Ada Lovelace", "emails": ["ada@example.org"], "org": "Analytical Engines"}),
    );
    let created = ok_text(&call(&tool, ada.clone()).await);
    assert!(
        created.starts_with("Created the contact \"Ada Lovelace\""),
        "{created}"
    );
    assert!(created.contains("in Personal"), "{created}");
    let uid = uid_in(&created);
    let again = ok_text(&call(&tool, ada).await);
    assert!(again.starts_with("Not created again"), "{again}");
    let cards = desktop
        .raw(
            "contacts",
            "system-address-book",
            "(contains \"x-evolution-any-field\" \"ada\")",
        )
        .await;
    assert_eq!(cards.len(), 1, "{cards:?}");
    assert!(cards[0].contains("ada@example.org"), "{cards:?}");

    let found = ok_text(&call(&tool, contacts("search", json!({"query": "lovelace"}))).await);
    assert!(
        found.contains("Ada Lovelace") && found.contains(&uid),
        "{found}"
    );
    let updated = ok_text(
        &call(
            &tool,
            contacts(
                "update",
                json!({"uid": uid, "emails": ["ada@engines.example"]}),
            ),
        )
        .await,
    );
    assert!(updated.contains("ada@engines.example"), "{updated}");
    let cards = desktop
        .raw(
            "contacts",
            "system-address-book",
            &format!("(is \"id\" \"{uid}\")"),
        )
        .await;
    assert!(
        cards[0].contains("ada@engines.example") && !cards[0].contains("ada@example.org"),
        "{cards:?}"
    );

    // Listed (the model saw this version), then changed by another app: the update is refused.
    ok_text(&call(&tool, contacts("list", json!({}))).await);
    desktop
        .modify_card(cards[0].replace("Analytical Engines", "Difference Engines"))
        .await;
    let conflict = call(
        &tool,
        contacts("update", json!({"uid": uid, "org": "Someone else"})),
    )
    .await;
    assert_eq!(code(&conflict), "invalid_input", "{conflict:?}");
    assert!(conflict.text_content().contains("conflict"), "{conflict:?}");
    // Listed again, the change goes through.
    ok_text(&call(&tool, contacts("list", json!({}))).await);
    ok_text(
        &call(
            &tool,
            contacts("update", json!({"uid": uid, "org": "Someone else"})),
        )
        .await,
    );

    let deleted = ok_text(&call(&tool, contacts("delete", json!({"uid": uid}))).await);
    assert!(
        deleted.starts_with("Deleted the contact \"Ada Lovelace\""),
        "{deleted}"
    );
    let none = ok_text(&call(&tool, contacts("search", json!({"query": "lovelace"}))).await);
    assert_eq!(none, "No contact matches.");

    // The setting `os.desktop_stores false` (here the settings' answer) hides them at once.
    struct Off;
    impl DavSettings for Off {
        fn accounts(&self) -> Vec<DavAccount> {
            Vec::new()
        }
        fn password(&self, _: &str) -> Option<String> {
            None
        }
        fn desktop(&self) -> bool {
            false
        }
    }
    let off = OsTool::new(OsConfig {
        session_bus_address: Some(desktop.address.clone()),
        dav: DavConfig {
            settings: Some(std::sync::Arc::new(Off)),
            ..DavConfig::default()
        },
        ..OsConfig::default()
    });
    let hidden = call(&off, contacts("list", json!({}))).await;
    assert_eq!(code(&hidden), "not_configured", "{hidden:?}");
    assert!(!hidden.text_content().contains("Evolution"), "{hidden:?}");

    drop(off);
    drop(tool);
    drop(utc);
    desktop.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_evolution_data_server_the_capability_says_why() {
    // A bus that starts nothing: no EDS answers there.
    let (_bus, address) = private_bus();
    let tool = OsTool::new(OsConfig {
        session_bus_address: Some(address),
        ..OsConfig::default()
    });
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    let line = status
        .lines()
        .find(|l| l.starts_with("calendar (productivity)"))
        .expect("a calendar line");
    assert!(line.contains("unavailable"), "{line}");
    assert!(
        line.contains("nothing owns or can start org.gnome.evolution.dataserver.Sources5"),
        "{line}"
    );
    let listed = call(&tool, cal("list", json!({}))).await;
    assert_eq!(code(&listed), "not_configured", "{listed:?}");
    assert!(
        listed.text_content().contains("Evolution Data Server"),
        "{listed:?}"
    );
}
