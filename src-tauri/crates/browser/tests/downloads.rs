//! Downloads in the managed profile: saved to the folder the person named, never opened, and
//! turned off again live.

mod common;

use std::time::{Duration, Instant};

use common::{Rig, chromium, serve};
use osprey_browser::SearchConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_lands_in_the_chosen_folder_and_stops_when_the_folder_is_unset() {
    if chromium().is_none() {
        return;
    }
    let base = serve("127.0.0.1").await;
    let rig = Rig::new(true, SearchConfig::default());
    let folder = rig.dir.path().join("Downloads");
    rig.driver.config().downloads.set(Some(folder.clone()));

    let r = rig
        .call(json!({"action": "navigate", "url": format!("{base}/download")}))
        .await;
    assert!(r.is_error, "a download is not a page: {}", r.text_content());
    assert!(
        r.text_content().contains(&format!(
            "saved to {} as x.bin, not opened",
            folder.display()
        )),
        "{}",
        r.text_content()
    );
    let saved = folder.join("x.bin");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&saved).ok().as_deref() != Some("binary") {
        assert!(
            Instant::now() < deadline,
            "the download never landed: {:?}",
            std::fs::read_dir(&folder)
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Unset while the browser runs: the next download is refused and nothing more is saved.
    rig.driver.config().downloads.set(None);
    std::fs::remove_file(&saved).unwrap();
    let r = rig
        .call(json!({"action": "navigate", "url": format!("{base}/download")}))
        .await;
    assert!(r.is_error);
    assert!(
        r.text_content().contains("downloads are turned off"),
        "{}",
        r.text_content()
    );
    // Whatever the browser would have written would be there by the time it answered a page.
    rig.ok(json!({"action": "navigate", "url": format!("{base}/form")}))
        .await;
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    rig.close().await;
}
