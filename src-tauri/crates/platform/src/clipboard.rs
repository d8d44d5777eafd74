//! The clipboard through arboard: text and images (PNG in and out), clear. On Linux arboard
//! speaks X11 selections, or Wayland's data-control protocol when the compositor offers it; it
//! connects to the process's own `DISPLAY` / `WAYLAND_DISPLAY`. One [`SharedClipboard`] lives as
//! long as the tool: on X11 the owner of a selection must keep answering requests for it, so
//! what Osprey writes stays pasteable until another program takes the clipboard over.

use std::borrow::Cow;
use std::io::Cursor;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// A PNG image read from the clipboard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipboardImage {
    pub width: u32,
    pub height: u32,
    pub png: Vec<u8>,
}

/// One process-wide clipboard connection, opened on first use. Blocking: call from a blocking
/// thread (reads wait for the owning program to answer).
#[derive(Clone, Default)]
pub struct SharedClipboard {
    inner: Arc<Mutex<Option<arboard::Clipboard>>>,
}

impl std::fmt::Debug for SharedClipboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedClipboard")
    }
}

fn map_error(error: arboard::Error) -> Error {
    match error {
        arboard::Error::ClipboardNotSupported => Error::unsupported("the clipboard"),
        arboard::Error::ClipboardOccupied => Error::Failed(
            "another program holds the clipboard right now; try again in a moment".into(),
        ),
        arboard::Error::ConversionFailure => {
            Error::Failed("the clipboard content could not be converted".into())
        }
        other => Error::Failed(format!("clipboard: {other}")),
    }
}

impl SharedClipboard {
    fn with<T>(&self, work: impl FnOnce(&mut arboard::Clipboard) -> Result<T>) -> Result<T> {
        let mut slot = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let clipboard = arboard::Clipboard::new().map_err(|e| match e {
                arboard::Error::Unknown { description } => Error::unavailable(
                    "the clipboard",
                    format!(
                        "{description} (Osprey needs a graphical session: DISPLAY or WAYLAND_DISPLAY)"
                    ),
                ),
                other => map_error(other),
            })?;
            *slot = Some(clipboard);
        }
        work(slot.as_mut().expect("set above"))
    }

    /// The text on the clipboard; `None` when it holds none (empty, or only an image).
    pub fn read_text(&self) -> Result<Option<String>> {
        self.with(|c| match c.get_text() {
            Ok(text) => Ok(Some(text)),
            Err(arboard::Error::ContentNotAvailable) => Ok(None),
            Err(e) => Err(map_error(e)),
        })
    }

    /// The image on the clipboard as PNG; `None` when it holds none.
    pub fn read_image(&self) -> Result<Option<ClipboardImage>> {
        let image = self.with(|c| match c.get_image() {
            Ok(image) => Ok(Some(image)),
            Err(arboard::Error::ContentNotAvailable) => Ok(None),
            Err(e) => Err(map_error(e)),
        })?;
        let Some(image) = image else { return Ok(None) };
        let (width, height) = (image.width as u32, image.height as u32);
        let buffer = image::RgbaImage::from_raw(width, height, image.bytes.into_owned())
            .ok_or_else(|| Error::Failed("the clipboard image has a wrong size".into()))?;
        let mut png = Vec::new();
        buffer
            .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
            .map_err(|e| Error::Failed(format!("encoding the clipboard image: {e}")))?;
        Ok(Some(ClipboardImage { width, height, png }))
    }

    pub fn write_text(&self, text: &str) -> Result<()> {
        self.with(|c| c.set_text(text).map_err(map_error))
    }

    /// Puts an image (PNG, JPEG: any format the image crate reads here) on the clipboard.
    /// Returns its size.
    pub fn write_image(&self, encoded: &[u8]) -> Result<(u32, u32)> {
        let decoded = image::load_from_memory(encoded)
            .map_err(|e| Error::invalid(format!("not a readable PNG or JPEG image: {e}")))?
            .into_rgba8();
        let (width, height) = decoded.dimensions();
        let data = arboard::ImageData {
            width: width as usize,
            height: height as usize,
            bytes: Cow::Owned(decoded.into_raw()),
        };
        self.with(|c| c.set_image(data).map_err(map_error))?;
        Ok((width, height))
    }

    pub fn clear(&self) -> Result<()> {
        self.with(|c| c.clear().map_err(map_error))
    }
}
