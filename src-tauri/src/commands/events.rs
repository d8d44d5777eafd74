//! The main window's event feed ([`crate::ui_feed`]): the page long-polls it.

use osprey_types::UiEventBatch;
use tauri::State;

use crate::ui_feed::UiFeed;

/// The shell's events from the cursor `after` on, answered once there is one; `after: null` starts
/// a reader at the end (no events, the cursor to send next).
#[tauri::command]
pub async fn next_ui_events(
    feed: State<'_, UiFeed>,
    after: Option<u64>,
) -> Result<UiEventBatch, osprey_types::UiError> {
    Ok(feed.next(after).await)
}
