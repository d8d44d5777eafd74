//! The calendar against a real CalDAV server: Radicale on loopback (see `harness::radicale`),
//! found from its base URL, with events created, listed, searched, changed and deleted through
//! the tool, and the stored iCalendar read back over HTTP as another client would.

use std::time::Duration;

use osprey_platform::{OsConfig, OsTool};
use osprey_tools::{CheckOutcome, Policy, PolicyConfig, Registry, RegistryConfig, ToolContext};
use osprey_types::Origin;
use serde_json::{Value, json};

use crate::harness::{Radicale, call, code, input, ok_text, radicale, uid_in};

async fn with_calendars(server: &Radicale) {
    server.collection("alice/work/", "calendar", "Work").await;
    server.collection("alice/home/", "calendar", "Home").await;
}

fn cal(action: &str, rest: Value) -> Value {
    input("calendar", action, rest)
}

#[tokio::test(flavor = "multi_thread")]
async fn events_are_found_created_listed_searched_changed_and_deleted() {
    let Some(server) = radicale("events_are_found_created_listed_searched_changed_and_deleted")
    else {
        return;
    };
    with_calendars(&server).await;
    let tool = OsTool::new(server.config(Some("secret"), "Europe/Berlin"));

    // Discovery from the bare server URL: principal, home set, both calendars.
    let calendars = ok_text(&call(&tool, cal("calendars", json!({}))).await);
    assert!(calendars.contains("Work (account home)"), "{calendars}");
    assert!(calendars.contains("Home (account home)"), "{calendars}");

    // Two calendars and none named: the tool asks which.
    let result = call(
        &tool,
        cal("create", json!({"title": "x", "start": "2026-03-27T10:00"})),
    )
    .await;
    assert_eq!(code(&result), "invalid_input");
    assert!(
        result.text_content().contains("several calendars"),
        "{result:?}"
    );

    let create = cal(
        "create",
        json!({
            "title": "Planning, Q2",
            "start": "2026-03-27T10:00",
            "end": "2026-03-27T11:30",
            "timezone": "Europe/Berlin",
            "location": "Room 4",
            "description": "agenda: budget; hiring",
            "calendar": "work",
        }),
    );
    let created = ok_text(&call(&tool, create.clone()).await);
    assert!(
        created.starts_with("Created \"Planning, Q2\" 2026-03-27 Fri 10:00-11:30 in Work"),
        "{created}"
    );
    let uid = uid_in(&created);
    assert!(uid.starts_with("osprey-"), "{uid}");

    // As stored: the zone kept, a VTIMEZONE for it, the text escaped.
    let (status, _, stored) = server
        .request("GET", &format!("alice/work/{uid}.ics"), &[], None)
        .await;
    assert_eq!(status, 200);
    assert!(
        stored.contains("DTSTART;TZID=Europe/Berlin:20260327T100000"),
        "{stored}"
    );
    assert!(stored.contains("BEGIN:VTIMEZONE"), "{stored}");
    assert!(stored.contains("SUMMARY:Planning\\, Q2"), "{stored}");

    // The same create again (no uid given: it is derived) makes no duplicate.
    let again = ok_text(&call(&tool, create).await);
    assert!(again.starts_with("Not created again"), "{again}");
    let list = ok_text(
        &call(
            &tool,
            cal(
                "list",
                json!({"start": "2026-03-27", "end": "2026-03-27", "calendar": "Work"}),
            ),
        )
        .await,
    );
    assert_eq!(list.matches("Planning, Q2").count(), 1, "{list}");
    assert!(
        list.contains("2026-03-27 Fri 10:00-11:30  Planning, Q2 @ Room 4  [uid "),
        "{list}"
    );
    assert!(list.contains("agenda: budget; hiring"), "{list}");

    // A caller-given uid is used, and twice is still once.
    let explicit = cal(
        "create",
        json!({"title": "Dentist", "start": "2026-03-28T08:15", "calendar": "Home", "uid": "dentist-1"}),
    );
    ok_text(&call(&tool, explicit.clone()).await);
    assert!(ok_text(&call(&tool, explicit).await).starts_with("Not created again"));

    // All calendars by default; search looks at title, location and description.
    let week = ok_text(
        &call(
            &tool,
            cal("list", json!({"start": "2026-03-23", "end": "2026-03-29"})),
        )
        .await,
    );
    assert!(
        week.contains("Dentist") && week.contains("Planning"),
        "{week}"
    );
    assert!(
        week.find("Planning").unwrap() < week.find("Dentist").unwrap(),
        "not in time order:\n{week}"
    );
    let found = ok_text(&call(&tool, cal("search", json!({"query": "HIRING"}))).await);
    assert!(
        found.contains("Planning, Q2") && !found.contains("Dentist"),
        "{found}"
    );
    let none = ok_text(&call(&tool, cal("search", json!({"query": "zebra"}))).await);
    assert!(none.ends_with("none."), "{none}");
    let result = call(&tool, cal("search", json!({}))).await;
    assert!(
        result.text_content().contains("needs `query`"),
        "{result:?}"
    );

    // Update: a new start keeps the length; other lines stay.
    let updated = ok_text(
        &call(
            &tool,
            cal(
                "update",
                json!({"uid": uid, "title": "Planning", "start": "2026-03-27T14:00"}),
            ),
        )
        .await,
    );
    assert!(updated.contains("2026-03-27 Fri 14:00-15:30"), "{updated}");
    let (_, _, stored) = server
        .request("GET", &format!("alice/work/{uid}.ics"), &[], None)
        .await;
    assert!(stored.contains("SEQUENCE:1"), "{stored}");
    assert!(stored.contains("LOCATION:Room 4"), "{stored}");
    assert!(stored.contains("SUMMARY:Planning\r\n"), "{stored}");

    let deleted = ok_text(&call(&tool, cal("delete", json!({"uid": uid}))).await);
    assert!(
        deleted.starts_with("Deleted the event \"Planning\""),
        "{deleted}"
    );
    let (status, _, _) = server
        .request("GET", &format!("alice/work/{uid}.ics"), &[], None)
        .await;
    assert_eq!(status, 404);
    let result = call(&tool, cal("delete", json!({"uid": uid}))).await;
    assert!(
        result.text_content().contains("no event with uid"),
        "{result:?}"
    );
    let result = call(&tool, cal("update", json!({"title": "x"}))).await;
    assert!(result.text_content().contains("needs `uid`"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn time_zones_dst_recurrences_and_all_day_events() {
    let Some(server) = radicale("time_zones_dst_recurrences_and_all_day_events") else {
        return;
    };
    server.collection("alice/work/", "calendar", "Work").await;
    let berlin = OsTool::new(server.config(Some("secret"), "Europe/Berlin"));
    let utc = OsTool::new(server.config(Some("secret"), "UTC"));

    // New York moved its clocks on 8 March, Berlin on 29 March: 09:00 New York is 14:00 in
    // Berlin on the 20th and 15:00 on the 30th.
    for (day, title) in [("2026-03-20", "NY before"), ("2026-03-30", "NY after")] {
        ok_text(
            &call(
                &berlin,
                cal(
                    "create",
                    json!({"title": title, "start": format!("{day}T09:00"), "timezone": "America/New_York"}),
                ),
            )
            .await,
        );
    }
    let list = ok_text(
        &call(
            &berlin,
            cal("list", json!({"start": "2026-03-19", "end": "2026-03-31"})),
        )
        .await,
    );
    assert!(list.contains("(times in Europe/Berlin)"), "{list}");
    assert!(
        list.contains(
            "2026-03-20 Fri 14:00-15:00 (2026-03-20 Fri 09:00-10:00 America/New_York)  NY before"
        ),
        "{list}"
    );
    assert!(
        list.contains(
            "2026-03-30 Mon 15:00-16:00 (2026-03-30 Mon 09:00-10:00 America/New_York)  NY after"
        ),
        "{list}"
    );

    // Across the switch itself: 01:30 to 03:30 Berlin time is one hour.
    ok_text(
        &call(
            &berlin,
            cal(
                "create",
                json!({"title": "Night shift", "start": "2026-03-29T01:30", "end": "2026-03-29T03:30"}),
            ),
        )
        .await,
    );
    let night = ok_text(
        &call(
            &utc,
            cal(
                "search",
                json!({"query": "night shift", "start": "2026-03-28", "end": "2026-03-29"}),
            ),
        )
        .await,
    );
    assert!(night.contains("2026-03-29 Sun 00:30-01:30"), "{night}");
    // The hour the clocks skip does not exist.
    let result = call(
        &berlin,
        cal(
            "create",
            json!({"title": "Ghost", "start": "2026-03-29T02:30"}),
        ),
    )
    .await;
    assert_eq!(code(&result), "invalid_input");
    assert!(
        result
            .text_content()
            .contains("does not exist in Europe/Berlin")
    );

    // A weekly series at 10:00 Berlin time stays at 10:00 there: 09:00 UTC, then 08:00 UTC.
    let file = server.dir.path().join("weekly.ics");
    std::fs::write(
        &file,
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:weekly-sync\r\n\
         DTSTAMP:20260101T000000Z\r\nSUMMARY:Weekly sync\r\n\
         DTSTART;TZID=Europe/Berlin:20260322T100000\r\nDTEND;TZID=Europe/Berlin:20260322T103000\r\n\
         RRULE:FREQ=WEEKLY;COUNT=3\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
    )
    .unwrap();
    ok_text(
        &call(
            &berlin,
            cal("import", json!({"path": file.to_str().unwrap()})),
        )
        .await,
    );
    let series = ok_text(
        &call(
            &utc,
            cal(
                "search",
                json!({"query": "weekly", "start": "2026-03-01", "end": "2026-04-30"}),
            ),
        )
        .await,
    );
    let lines: Vec<&str> = series.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{series}");
    assert!(
        lines[0].starts_with("2026-03-22 Sun 09:00-09:30"),
        "{series}"
    );
    assert!(
        lines[1].starts_with("2026-03-29 Sun 08:00-08:30"),
        "{series}"
    );
    assert!(
        lines[2].starts_with("2026-04-05 Sun 08:00-08:30"),
        "{series}"
    );
    assert!(lines[0].contains("repeats FREQ=WEEKLY;COUNT=3"), "{series}");
    // A range inside the series shows only the occurrence in it.
    let one = ok_text(
        &call(
            &berlin,
            cal("list", json!({"start": "2026-03-29", "end": "2026-03-29"})),
        )
        .await,
    );
    assert!(
        one.contains("2026-03-29 Sun 10:00-10:30  Weekly sync"),
        "{one}"
    );
    assert!(!one.contains("2026-03-22"), "{one}");

    // All-day: dates, end inclusive for the person, exclusive in the file.
    let created = ok_text(
        &call(
            &berlin,
            cal(
                "create",
                json!({"title": "Easter trip", "start": "2026-04-03", "end": "2026-04-06", "all_day": true}),
            ),
        )
        .await,
    );
    assert!(
        created.contains("2026-04-03 Fri - 2026-04-06 Mon all day"),
        "{created}"
    );
    let (_, _, stored) = server
        .request(
            "GET",
            &format!("alice/work/{}.ics", uid_in(&created)),
            &[],
            None,
        )
        .await;
    assert!(stored.contains("DTSTART;VALUE=DATE:20260403"), "{stored}");
    assert!(stored.contains("DTEND;VALUE=DATE:20260407"), "{stored}");
    for (day, shown) in [("2026-04-06", true), ("2026-04-07", false)] {
        let list = ok_text(&call(&utc, cal("list", json!({"start": day, "end": day}))).await);
        assert_eq!(list.contains("Easter trip"), shown, "{day}: {list}");
    }
    let result = call(
        &berlin,
        cal(
            "create",
            json!({"title": "x", "start": "2026-04-03T10:00", "timezone": "Mars/Olympus"}),
        ),
    )
    .await;
    assert!(
        result.text_content().contains("unknown time zone"),
        "{result:?}"
    );
}

/// An event whose times name their zone, one of its own (not an IANA name, so the server cannot
/// make it up), before another parameter.
const ZONED: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n\
    BEGIN:VTIMEZONE\r\nTZID:Osprey Test Time\r\n\
    BEGIN:STANDARD\r\nDTSTART:19701025T030000\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\n\
    RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nEND:STANDARD\r\n\
    BEGIN:DAYLIGHT\r\nDTSTART:19700329T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\n\
    RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n\
    BEGIN:VEVENT\r\nUID:zoned-1\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:Zoned\r\n\
    DTSTART;TZID=Osprey Test Time;VALUE=DATE-TIME:20260507T100000\r\n\
    DTEND;TZID=Osprey Test Time;VALUE=DATE-TIME:20260507T110000\r\nEND:VEVENT\r\n\
    END:VCALENDAR\r\n";

#[tokio::test(flavor = "multi_thread")]
async fn changes_made_elsewhere_are_not_overwritten_and_files_round_trip() {
    let Some(server) = radicale("changes_made_elsewhere_are_not_overwritten_and_files_round_trip")
    else {
        return;
    };
    with_calendars(&server).await;
    let tool = OsTool::new(server.config(Some("secret"), "Europe/Berlin"));
    let created = ok_text(
        &call(
            &tool,
            cal(
                "create",
                json!({"title": "Review", "start": "2026-05-04T09:00", "calendar": "Work", "uid": "review-1"}),
            ),
        )
        .await,
    );
    assert!(created.starts_with("Created"), "{created}");
    // The model sees the event...
    ok_text(
        &call(
            &tool,
            cal("list", json!({"start": "2026-05-04", "end": "2026-05-04"})),
        )
        .await,
    );
    // ...then another client changes it.
    let (_, etag, stored) = server
        .request("GET", "alice/work/review-1.ics", &[], None)
        .await;
    let theirs = stored.replace("SUMMARY:Review", "SUMMARY:Review (moved by Bob)");
    let (status, _, _) = server
        .request(
            "PUT",
            "alice/work/review-1.ics",
            &[
                ("If-Match", etag.as_deref().unwrap()),
                ("Content-Type", "text/calendar"),
            ],
            Some(&theirs),
        )
        .await;
    assert!(status == 201 || status == 204, "{status}");
    let result = call(
        &tool,
        cal(
            "update",
            json!({"uid": "review-1", "title": "Review (ours)"}),
        ),
    )
    .await;
    assert_eq!(code(&result), "invalid_input");
    let message = result.text_content();
    assert!(
        message.contains("conflict") && message.contains("List it again"),
        "{message}"
    );
    let result = call(&tool, cal("delete", json!({"uid": "review-1"}))).await;
    assert!(result.text_content().contains("conflict"), "{result:?}");
    let (_, _, kept) = server
        .request("GET", "alice/work/review-1.ics", &[], None)
        .await;
    assert!(kept.contains("Review (moved by Bob)"), "{kept}");
    // After listing again the change goes through.
    let list = ok_text(
        &call(
            &tool,
            cal("list", json!({"start": "2026-05-04", "end": "2026-05-04"})),
        )
        .await,
    );
    assert!(list.contains("Review (moved by Bob)"), "{list}");
    ok_text(
        &call(
            &tool,
            cal(
                "update",
                json!({"uid": "review-1", "title": "Review (ours)"}),
            ),
        )
        .await,
    );

    // Export Work to a file and import it into Home: the same events, once however often.
    ok_text(
        &call(
            &tool,
            cal(
                "create",
                json!({"title": "Offsite", "start": "2026-05-06", "all_day": true, "calendar": "Work"}),
            ),
        )
        .await,
    );
    let file = server.dir.path().join("work.ics");
    let exported = ok_text(
        &call(
            &tool,
            cal(
                "export",
                json!({"calendar": "Work", "path": file.to_str().unwrap()}),
            ),
        )
        .await,
    );
    assert!(exported.starts_with("Wrote 2 events"), "{exported}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("BEGIN:VEVENT").count(), 2, "{text}");
    assert_eq!(text.matches("BEGIN:VTIMEZONE").count(), 1, "{text}");
    assert!(text.contains("Review (ours)"), "{text}");
    let imported = ok_text(
        &call(
            &tool,
            cal(
                "import",
                json!({"calendar": "Home", "path": file.to_str().unwrap()}),
            ),
        )
        .await,
    );
    assert!(imported.starts_with("Imported 2 events"), "{imported}");
    let again = ok_text(
        &call(
            &tool,
            cal(
                "import",
                json!({"calendar": "Home", "path": file.to_str().unwrap()}),
            ),
        )
        .await,
    );
    assert!(
        again.contains("Imported 0 events") && again.contains("2 were already there"),
        "{again}"
    );
    // A zone named beside other parameters comes along with its event.
    let zoned = server.dir.path().join("zoned.ics");
    std::fs::write(&zoned, ZONED).unwrap();
    let imported = ok_text(
        &call(
            &tool,
            cal(
                "import",
                json!({"calendar": "Home", "path": zoned.to_str().unwrap()}),
            ),
        )
        .await,
    );
    assert!(imported.starts_with("Imported 1 event "), "{imported}");
    let (_, _, stored) = server
        .request("GET", "alice/home/zoned-1.ics", &[], None)
        .await;
    assert!(
        stored.contains("BEGIN:VTIMEZONE\r\nTZID:Osprey Test Time\r\n"),
        "{stored}"
    );
    let home = ok_text(
        &call(
            &tool,
            cal(
                "list",
                json!({"calendar": "Home", "start": "2026-05-01", "end": "2026-05-10"}),
            ),
        )
        .await,
    );
    assert!(
        home.contains("2026-05-04 Mon 09:00-10:00  Review (ours)")
            && home.contains("2026-05-06 Wed all day  Offsite"),
        "{home}"
    );
    // A range narrows the export.
    let narrow = ok_text(
        &call(
            &tool,
            cal(
                "export",
                json!({"calendar": "Work", "start": "2026-05-06", "end": "2026-05-06", "path": file.to_str().unwrap()}),
            ),
        )
        .await,
    );
    assert!(narrow.starts_with("Wrote 1 event "), "{narrow}");
    let result = call(&tool, cal("import", json!({"calendar": "Home"}))).await;
    assert!(result.text_content().contains("needs `path`"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn files_go_through_the_path_guard() {
    let Some(server) = radicale("files_go_through_the_path_guard") else {
        return;
    };
    server.collection("alice/work/", "calendar", "Work").await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    let guard = osprey_tools::PathGuard::new(
        Some(home.path().to_path_buf()),
        home.path().join(".local/share/osprey"),
    );
    let tool = OsTool::new(server.config(Some("secret"), "UTC")).with_path_guard(guard);
    let secret = home.path().join(".ssh/calendar.ics");
    let result = call(
        &tool,
        cal("export", json!({"path": secret.to_str().unwrap()})),
    )
    .await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(!secret.exists());
    let result = call(&tool, cal("import", json!({"path": "relative.ics"}))).await;
    assert_eq!(code(&result), "invalid_input", "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn accounts_that_do_not_work_say_why_and_how_to_fix_it() {
    // No account at all (and not the stores of whatever desktop runs the tests).
    let tool = OsTool::new(OsConfig {
        dav: osprey_platform::DavConfig {
            desktop: false,
            ..Default::default()
        },
        ..OsConfig::default()
    });
    let result = call(&tool, cal("list", json!({}))).await;
    assert_eq!(code(&result), "not_configured");
    let message = result.text_content();
    assert!(
        message.contains("osprey config set dav.<name>.url")
            && message.contains("osprey config set dav.<name>.password -"),
        "{message}"
    );
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    assert!(
        status.contains("calendar (productivity): unavailable - not_configured: No CalDAV account"),
        "{status}"
    );

    // Nothing listens on the port: service_unavailable naming it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let tool = OsTool::new(unreachable_config(port, Duration::from_secs(5)));
    let result = call(&tool, cal("calendars", json!({}))).await;
    assert_eq!(code(&result), "service_unavailable", "{result:?}");
    assert!(
        result.text_content().contains(&format!("127.0.0.1:{port}")),
        "{result:?}"
    );

    // Something accepts connections and never answers: a timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let tool = OsTool::new(unreachable_config(port, Duration::from_millis(500)));
    let result = call(&tool, cal("calendars", json!({}))).await;
    assert_eq!(code(&result), "timeout", "{result:?}");
    drop(silent);

    let Some(server) = radicale("accounts_that_do_not_work_say_why_and_how_to_fix_it") else {
        return;
    };
    server.collection("alice/work/", "calendar", "Work").await;
    // A wrong password: permission_denied with the steps.
    let tool = OsTool::new(server.config(Some("wrong"), "UTC"));
    let result = call(&tool, cal("calendars", json!({}))).await;
    assert_eq!(code(&result), "permission_denied", "{result:?}");
    assert!(
        result
            .text_content()
            .contains("osprey config set dav.home.password -"),
        "{result:?}"
    );
    // No password stored: not_configured, with the command that stores one.
    let tool = OsTool::new(server.config(None, "UTC"));
    let result = call(&tool, cal("calendars", json!({}))).await;
    assert_eq!(code(&result), "not_configured", "{result:?}");
    assert!(
        result
            .text_content()
            .contains("none is stored for the account `home`"),
        "{result:?}"
    );
    // Working: the status names the calendars.
    let tool = OsTool::new(server.config(Some("secret"), "UTC"));
    let status = ok_text(&call(&tool, json!({"resource": "capability", "action": "list"})).await);
    assert!(
        status.contains("calendar (productivity): available - account `home`: 1 calendar (Work)"),
        "{status}"
    );
}

/// The account's URL may be the server's root, the principal, or one calendar itself.
#[tokio::test(flavor = "multi_thread")]
async fn an_account_may_name_the_principal_or_one_calendar() {
    let Some(server) = radicale("an_account_may_name_the_principal_or_one_calendar") else {
        return;
    };
    with_calendars(&server).await;
    let principal = OsTool::new(server.config_at("alice/", Some("secret"), "UTC"));
    let calendars = ok_text(&call(&principal, cal("calendars", json!({}))).await);
    assert_eq!(calendars.lines().count(), 2, "{calendars}");
    let one = OsTool::new(server.config_at("alice/home/", Some("secret"), "UTC"));
    let calendars = ok_text(&call(&one, cal("calendars", json!({}))).await);
    assert!(
        calendars.starts_with("Home (account home): ") && calendars.lines().count() == 1,
        "{calendars}"
    );
    // With one calendar there is nothing to choose.
    let created = ok_text(
        &call(
            &one,
            cal(
                "create",
                json!({"title": "Call mum", "start": "2026-06-07T18:00"}),
            ),
        )
        .await,
    );
    assert!(created.contains("in Home"), "{created}");
    let missing = OsTool::new(server.config_at("alice/nothing/", Some("secret"), "UTC"));
    let result = call(&missing, cal("calendars", json!({}))).await;
    assert!(
        result.text_content().contains("HTTP 404")
            && result
                .text_content()
                .contains("osprey config set dav.home.url"),
        "{result:?}"
    );
}

fn unreachable_config(port: u16, timeout: Duration) -> OsConfig {
    use osprey_platform::{DavAccount, DavConfig, DavKind, StaticDavSettings};
    OsConfig {
        dav: DavConfig {
            settings: Some(std::sync::Arc::new(StaticDavSettings {
                accounts: vec![DavAccount {
                    name: "home".into(),
                    kind: DavKind::Caldav,
                    url: format!("http://127.0.0.1:{port}/"),
                    username: "alice".into(),
                }],
                passwords: [("home".to_string(), "x".to_string())].into(),
            })),
            timezone: Some("UTC".into()),
            timeout,
            desktop: false,
            ..DavConfig::default()
        },
        ..OsConfig::default()
    }
}

fn check(registry: &Registry, input: Value) -> CheckOutcome {
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(5));
    futures::executor::block_on(registry.check(&ctx, "os", input))
}

/// Reading events or contacts is reading private data, and every change is a change: both
/// are asked under the default policy, even for the person's own calls. Only the names of the
/// calendars and address books are not.
#[test]
fn reading_and_changing_calendars_and_contacts_need_approval() {
    let data = tempfile::tempdir().unwrap();
    let policy = Policy::new(PolicyConfig::default(), None).unwrap();
    let registry = Registry::new(RegistryConfig::new(policy, data.path()));
    registry.register_domain(OsTool::new(OsConfig::default()));
    let asks = |outcome: &CheckOutcome| matches!(outcome, CheckOutcome::Ask { .. });
    for resource in ["calendar", "contacts"] {
        for action in [
            "list", "search", "create", "update", "delete", "import", "export",
        ] {
            let input = json!({"resource": resource, "action": action, "uid": "u", "query": "q",
                "title": "t", "start": "2026-01-01", "name": "n", "path": "/tmp/x"});
            assert!(
                asks(&check(&registry, input.clone())),
                "{resource} {action} runs unasked"
            );
        }
    }
    for input in [
        json!({"resource": "calendar", "action": "calendars"}),
        json!({"resource": "contacts", "action": "books"}),
    ] {
        assert!(!asks(&check(&registry, input.clone())), "{input} is asked");
    }
}
