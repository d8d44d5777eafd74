//! Every browser action on the managed profile, with the real Chromium, against pages served on
//! loopback inside the test.

mod common;

use common::{Rig, chromium, image_of, ref_of, serve};
use osprey_browser::SearchConfig;
use osprey_types::ErrorCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_are_read_filled_and_submitted_by_ref() {
    if chromium().is_none() {
        return;
    }
    let base = serve("127.0.0.1").await;
    let rig = Rig::new(true, SearchConfig::default());
    // `open` is an alias of navigate; the resource is inferred from the action.
    let page = rig
        .ok(json!({"action": "open", "url": format!("{base}/form")}))
        .await;
    assert!(page.contains("Title: Form"), "{page}");
    assert!(
        page.contains("<<<page-content"),
        "page text is fenced: {page}"
    );
    assert!(
        page.lines()
            .any(|l| l.starts_with('e') && l.ends_with(r#" heading "Sign up" (level=1)"#)),
        "{page}"
    );
    assert!(
        page.contains(r#"textbox "Name""#) && page.contains(r#"= "old""#),
        "{page}"
    );
    assert!(
        page.contains(r#"textbox "Email""#) && page.contains("required"),
        "{page}"
    );
    assert!(
        page.contains(r#"button "Later""#) && page.contains("disabled"),
        "{page}"
    );
    assert!(
        page.contains(r#"combobox "Color""#) && page.contains(r#"option "Green""#),
        "{page}"
    );
    assert!(
        page.contains("\ntext: Fill the form and press Send."),
        "{page}"
    );

    let name = ref_of(&page, r#"textbox "Name""#);
    let email = ref_of(&page, r#"textbox "Email""#);
    let agree = ref_of(&page, r#"checkbox "I agree""#);
    let color = ref_of(&page, r#"combobox "Color""#);
    rig.ok(json!({"action": "fill", "ref": name, "value": "Ada Lovelace"}))
        .await;
    rig.ok(json!({"action": "fill", "ref": email, "value": "ada@example.com"}))
        .await;
    rig.ok(json!({"action": "click", "ref": agree})).await;
    let picked = rig
        .ok(json!({"action": "select", "ref": color, "value": "Blue"}))
        .await;
    assert!(picked.contains("[\"Blue\"]"), "{picked}");
    rig.ok(json!({"action": "type", "selector": "textarea", "text": "hi there"}))
        .await;
    rig.ok(json!({"action": "type", "selector": "#keys", "text": "abc"}))
        .await;

    // Refs are stable within the document; the states follow the page.
    let snap = rig.ok(json!({"action": "snapshot"})).await;
    assert_eq!(ref_of(&snap, r#"textbox "Name""#), name);
    assert!(
        snap.contains(r#"= "Ada Lovelace""#),
        "fill cleared the old value: {snap}"
    );
    assert!(
        ref_of(&snap, "I agree") == agree && snap.contains("(checked)"),
        "{snap}"
    );
    assert!(
        snap.contains(r#"= "Blue""#) && snap.contains(r#"= "hi there""#),
        "{snap}"
    );
    let typed = rig.ok(json!({"action": "evaluate", "script": "document.querySelector('#keys').dataset.count"})).await;
    assert!(
        typed.contains("\"3\""),
        "one key event per character: {typed}"
    );

    // Errors a model can act on.
    let later = ref_of(&snap, r#"button "Later""#);
    let r = rig.call(json!({"action": "click", "ref": later})).await;
    assert!(
        r.is_error && r.text_content().contains("disabled"),
        "{}",
        r.text_content()
    );
    let r = rig.call(json!({"action": "click", "ref": "e999"})).await;
    assert!(
        r.is_error && r.text_content().contains("take a new snapshot"),
        "{}",
        r.text_content()
    );
    let r = rig
        .call(json!({"action": "click", "selector": "input"}))
        .await;
    assert!(r.text_content().contains("matches"), "{}", r.text_content());
    let r = rig
        .call(json!({"action": "select", "ref": color, "value": "Purple"}))
        .await;
    assert!(
        r.text_content().contains("\"Green\""),
        "{}",
        r.text_content()
    );

    let send = ref_of(&snap, r#"button "Send""#);
    rig.ok(json!({"action": "click", "ref": send})).await;
    rig.ok(json!({"action": "wait", "text": "Submitted", "timeout": 10000}))
        .await;
    // `read_page` is an alias of text.
    let text = rig.ok(json!({"action": "read_page"})).await;
    for expected in [
        "name=Ada Lovelace",
        "email=ada@example.com",
        "agree=on",
        "color=b",
        "note=hi there",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    // Paged text.
    let part = rig.ok(json!({"action": "text", "max_chars": 5})).await;
    assert!(part.contains("text with offset: 5"), "{part}");
    // Press: Enter in a field submits its form.
    rig.ok(json!({"action": "back"})).await;
    let snap = rig.ok(json!({"action": "snapshot"})).await;
    assert!(snap.contains("Title: Form"), "{snap}");
    rig.ok(json!({"action": "fill", "selector": "#name", "value": "Grace"}))
        .await;
    rig.ok(json!({"action": "press", "selector": "#name", "key": "Enter"}))
        .await;
    rig.ok(json!({"action": "wait", "url": "name=Grace", "load_state": "load"}))
        .await;
    rig.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_history_tabs_waits_and_screenshots() {
    if chromium().is_none() {
        return;
    }
    let base = serve("127.0.0.1").await;
    let rig = Rig::new(true, SearchConfig::default());
    let status = rig.ok(json!({"action": "status"})).await;
    assert!(status.contains("\"running\":false"), "{status}");
    let launched = rig
        .ok(json!({"resource": "browser", "action": "launch"}))
        .await;
    assert!(launched.contains("\"running\":true"), "{launched}");

    // Links and their targets.
    let links = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/links")}))
        .await;
    // Each element is a line: its ref, role, name, target. A target on this origin is its path,
    // a place on this very page its fragment, anything else the whole URL.
    let line_of = |needle: &str| {
        let line = links
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_default();
        line.trim_start()
            .split_once(' ')
            .map(|(first, rest)| (first.to_string(), rest.to_string()))
            .unwrap_or_default()
    };
    for (name, target) in [
        ("Go to form", "/form"),
        ("Elsewhere", "https://example.com/x"),
        ("To the end", "#end"),
        ("Next page", "/links?page=2#end"),
    ] {
        let (first, rest) = line_of(name);
        assert_eq!(
            rest,
            format!("link \"{name}\" -> {target}"),
            "the line of {name:?} in:\n{links}"
        );
        assert_eq!(first, ref_of(&links, name), "{links}");
    }
    assert!(links.contains("\ntext: The end of the links."), "{links}");
    let go = ref_of(&links, "Go to form");
    rig.ok(json!({"action": "click", "ref": go})).await;
    rig.ok(json!({"action": "wait", "selector": "#name"})).await;
    let back = rig.ok(json!({"action": "back"})).await;
    assert!(back.contains("/links"), "{back}");
    let forward = rig.ok(json!({"action": "forward"})).await;
    assert!(forward.contains("/form"), "{forward}");
    let reload = rig.ok(json!({"action": "reload"})).await;
    assert!(reload.contains("/form"), "{reload}");

    // A page that navigates itself: wait for the URL it goes to.
    rig.ok(json!({"action": "navigate", "url": format!("{base}/self-nav")}))
        .await;
    let moved = rig
        .ok(json!({"action": "wait", "url": "/form", "load_state": "load", "timeout": 5000}))
        .await;
    assert!(moved.contains("Title: Form"), "{moved}");

    // A slow page: `load` times out, `domcontentloaded` does not.
    let r = rig
        .call(json!({"action": "navigate", "url": format!("{base}/slow"), "timeout": 800}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{}", r.text_content());
    let fast = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/slow"), "wait_until": "domcontentloaded"}))
        .await;
    assert!(fast.contains("Text arrives first"), "{fast}");
    let r = rig
        .call(json!({"action": "wait", "text": "never there", "timeout": 300}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout));

    // Hover reveals a menu; scroll moves the page; the summary shows its state.
    let menu = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/menu")}))
        .await;
    assert!(!menu.contains("Hidden item"), "{menu}");
    assert!(
        menu.contains(r#"button "More""#) && menu.contains("collapsed"),
        "{menu}"
    );
    rig.ok(json!({"action": "hover", "ref": ref_of(&menu, r#"button "Menu""#)}))
        .await;
    let shown = rig.ok(json!({"action": "snapshot"})).await;
    assert!(shown.contains(r#"link "Hidden item""#), "{shown}");
    let scrolled = rig
        .ok(json!({"action": "scroll", "direction": "down", "amount": 1000}))
        .await;
    assert!(scrolled.contains("y 1000"), "{scrolled}");

    // evaluate: JSON values, page globals, errors and a timeout for a script that never ends.
    let v = rig
        .ok(json!({"action": "evaluate", "script": "({a: 1, b: [document.title]})"}))
        .await;
    assert!(v.contains(r#"{"a":1,"b":["Menu"]}"#), "{v}");
    let v = rig.ok(json!({"action": "evaluate", "script": "new Promise(r => setTimeout(() => r(42), 50))"})).await;
    assert!(v.contains("42"), "{v}");
    let r = rig
        .call(json!({"action": "evaluate", "script": "nope()"}))
        .await;
    assert!(
        r.is_error && r.text_content().contains("nope"),
        "{}",
        r.text_content()
    );
    let r = rig
        .call(json!({"action": "evaluate", "script": "while (true) {}", "timeout": 500}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::Timeout), "{}", r.text_content());
    let v = rig
        .ok(json!({"action": "evaluate", "script": "1 + 1"}))
        .await;
    assert!(
        v.contains('2'),
        "the page still answers after a stopped script: {v}"
    );

    // Screenshots: inline PNG of the viewport, a taller full page, a file by name.
    let shot = rig.call(json!({"action": "screenshot"})).await;
    let (mime, data) = image_of(&shot).expect("an image block");
    assert_eq!(mime, "image/png");
    let full = rig
        .call(json!({"action": "screenshot", "full_page": true}))
        .await;
    assert!(image_of(&full).unwrap().1.len() > data.len() / 2);
    let saved = rig
        .ok(json!({"action": "screenshot", "path": "menu.png"}))
        .await;
    assert!(saved.contains("menu.png"), "{saved}");
    assert!(rig.dir.path().join("shots/menu.png").is_file());
    let r = rig
        .call(json!({"action": "screenshot", "path": "../escape.png"}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::InvalidInput));

    // Tabs.
    let opened = rig
        .ok(json!({"action": "tab_open", "url": format!("{base}/links")}))
        .await;
    let new_id = opened
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("Opened page ")
        .to_string();
    let pages = rig.ok(json!({"action": "list_pages"})).await;
    assert!(pages.contains(&format!("* {new_id}")), "{pages}");
    let other = pages
        .lines()
        .find(|l| l.starts_with("- "))
        .and_then(|l| l.split(' ').nth(1))
        .unwrap()
        .to_string();
    let menu_text = rig.ok(json!({"action": "text", "target_id": other})).await;
    assert!(
        menu_text.contains("The end"),
        "target_id reaches another page: {menu_text}"
    );
    rig.ok(json!({"action": "tab_focus", "target_id": other}))
        .await;
    rig.ok(json!({"action": "tab_close", "target_id": new_id}))
        .await;
    let pages = rig.ok(json!({"action": "list_pages"})).await;
    assert!(
        !pages.contains(&new_id) && pages.contains(&format!("* {other}")),
        "{pages}"
    );

    // Dialogs are answered, not left to block the page.
    let d = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/dialog")}))
        .await;
    assert!(d.contains("after"), "{d}");
    rig.ok(json!({"action": "close"})).await;
    let status = rig.ok(json!({"action": "status"})).await;
    assert!(status.contains("\"running\":false"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_inline_same_origin_frames_and_keep_to_a_budget() {
    if chromium().is_none() {
        return;
    }
    let base = serve("127.0.0.1").await;
    let other = serve("127.0.0.2").await;
    let rig = Rig::new(true, SearchConfig::default());
    let page = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/iframe?other={other}")}))
        .await;
    assert!(page.contains(r#"iframe "inner""#), "{page}");
    assert!(
        page.contains("Inside the frame"),
        "same-origin frames are inlined: {page}"
    );
    assert!(
        page.contains(r#"iframe "foreign""#) && page.contains("(cross-origin"),
        "{page}"
    );
    assert!(page.matches("Frame button").count() == 1, "{page}");
    let button = ref_of(&page, r#"button "Frame button""#);
    rig.ok(json!({"action": "click", "ref": button})).await;
    let after = rig.ok(json!({"action": "snapshot"})).await;
    assert!(
        after.contains("frame clicked"),
        "a click inside a frame lands there: {after}"
    );

    let many = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/many"), "max_chars": 4000}))
        .await;
    assert!(many.contains("[truncated,"), "{many}");
    assert!(many.len() < 6000, "{}", many.len());
    let next: usize = many
        .split("snapshot with offset: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the next offset");
    let more = rig
        .ok(json!({"action": "snapshot", "offset": next, "max_chars": 4000}))
        .await;
    assert!(
        !more.contains(r#"button "Button 0""#) && more.contains("Button"),
        "{more}"
    );
    let whole = rig
        .ok(json!({"action": "snapshot", "max_chars": 100000}))
        .await;
    assert_eq!(
        whole.matches(" button \"Button").count(),
        250,
        "{}",
        &whole[..400]
    );
    assert!(!whole.contains("[truncated"));
    // Scoped to one element by selector, and by ref.
    let scoped = rig
        .ok(json!({"action": "snapshot", "selector": "#b7"}))
        .await;
    assert!(
        scoped.contains(r#"button "Button 7""#) && !scoped.contains("Button 8"),
        "{scoped}"
    );
    let b9 = ref_of(&whole, r#"button "Button 9""#);
    let scoped = rig.ok(json!({"action": "snapshot", "ref": b9})).await;
    assert!(
        scoped.contains(&format!(r#"{b9} button "Button 9""#)),
        "{scoped}"
    );
    // Navigation resets refs.
    rig.ok(json!({"action": "navigate", "url": format!("{base}/links")}))
        .await;
    let r = rig.call(json!({"action": "click", "ref": b9})).await;
    assert!(r.is_error, "{}", r.text_content());
    rig.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_navigation_policy_refuses_private_targets_schemes_and_subrequests() {
    if chromium().is_none() {
        return;
    }
    let base = serve("127.0.0.1").await;
    // Loopback allowed (the test pages), everything private still refused.
    let rig = Rig::new(true, SearchConfig::default());
    for url in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,<p>x",
        "chrome://settings",
    ] {
        let r = rig.call(json!({"action": "navigate", "url": url})).await;
        assert_eq!(
            r.code,
            Some(ErrorCode::SsrfBlocked),
            "{url}: {}",
            r.text_content()
        );
    }
    for url in [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:192.168.0.1]/",
    ] {
        let r = rig.call(json!({"action": "navigate", "url": url})).await;
        assert_eq!(
            r.code,
            Some(ErrorCode::SsrfBlocked),
            "{url}: {}",
            r.text_content()
        );
    }
    // A redirect to a metadata address is refused by the guard on the way.
    let r = rig
        .call(
            json!({"action": "navigate", "url": format!("{base}/redirect/169.254.169.254/latest")}),
        )
        .await;
    let text = r.text_content();
    assert!(text.contains("169.254.169.254"), "{text}");
    assert!(!text.contains("ami-id"), "{text}");
    // A page's own request to a private address is refused and reported.
    let loaded = rig
        .ok(json!({"action": "navigate", "url": format!("{base}/leak")}))
        .await;
    let waited = rig
        .ok(json!({"action": "wait", "text": "blocked", "timeout": 10000}))
        .await;
    let later = rig.ok(json!({"action": "snapshot"})).await;
    assert!(
        format!("{loaded}{waited}{later}").contains("10.1.2.3"),
        "the refusal is reported: {loaded}\n{waited}\n{later}"
    );
    // Downloads are denied by default, and said to be (not left to time out).
    let r = rig
        .call(json!({"action": "navigate", "url": format!("{base}/download")}))
        .await;
    assert!(r.is_error, "{}", r.text_content());
    assert!(
        r.text_content().contains("downloads are turned off"),
        "{}",
        r.text_content()
    );
    rig.close().await;

    // Without allow_loopback, loopback is refused before and inside the browser.
    let strict = Rig::new(false, SearchConfig::default());
    let r = strict
        .call(json!({"action": "navigate", "url": format!("{base}/form")}))
        .await;
    assert_eq!(r.code, Some(ErrorCode::SsrfBlocked), "{}", r.text_content());
    strict.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_person_has_taken_the_browser_over_the_agent_waits_for_it_back() {
    use osprey_tools::DomainTool;
    if chromium().is_none() {
        return;
    }
    let base = serve("127.0.0.1").await;
    let rig = std::sync::Arc::new(Rig::new(true, SearchConfig::default()));
    assert!(rig.actions.take_over("nowhere").is_err());
    rig.actions.take_over("managed").unwrap();
    assert_eq!(rig.actions.taken_over(), ["managed"]);

    // Looking is fine; acting waits.
    rig.ok(json!({"resource": "browser", "action": "status"}))
        .await;
    let navigating = tokio::spawn({
        let rig = rig.clone();
        let url = format!("{base}/form");
        async move { rig.call(json!({"action": "navigate", "url": url})).await }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while rig.actions.waiting_for_person() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never waited"
        );
        tokio::task::yield_now().await;
    }
    assert!(!navigating.is_finished());
    // Handed back: the waiting call goes on and does its work.
    assert!(rig.actions.hand_back("managed"));
    let navigated = navigating.await.unwrap();
    assert!(!navigated.is_error, "{}", navigated.text_content());
    assert!(
        navigated.text_content().contains("Name"),
        "{}",
        navigated.text_content()
    );
    assert_eq!(rig.actions.waiting_for_person(), 0);
    assert!(
        !rig.actions.hand_back("managed"),
        "it was not taken over any more"
    );

    // Not handed back in time: the call fails with `paused`, saying who has the browser.
    rig.actions.take_over("managed").unwrap();
    let call = rig
        .tool
        .domain()
        .resolve(json!({"action": "snapshot"}))
        .unwrap();
    let refused = rig
        .actions
        .run_waiting(&call, std::time::Duration::from_millis(50))
        .await;
    assert_eq!(refused.code, Some(ErrorCode::Paused));
    assert!(
        refused
            .text_content()
            .contains("took over the managed browser"),
        "{}",
        refused.text_content()
    );
    rig.actions.hand_back("managed");
    rig.close().await;
}
