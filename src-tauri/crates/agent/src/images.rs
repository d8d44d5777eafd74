//! Images as the model APIs take them. One image a provider refuses is sent again with every
//! later request of its session and stops the session for good, so every image that joins a
//! conversation (a tool's screenshot, an app's or an MCP server's image, a picture the person
//! attaches) is kept within the strictest published limits of the providers Osprey speaks to:
//!
//! - Anthropic refuses an image whose base64 is over 5 MiB (`image exceeds 5 MB maximum`), one
//!   over 8,000 px on a side, and, in a request of more than 20 images, one over 2,000 px; it
//!   takes at most 100 images a request, and scales anything over 1,568 px on the long edge or
//!   1,568 patches of 28 px down itself before Claude looks (the points Claude answers are then
//!   in the scaled picture).
//! - OpenAI (detail high) scales to 2,048 px, then to 768 px on the short side.
//!
//! So an image larger than a model takes as it is ([`osprey_types::model_image_size`]: within
//! 1,568 px on the long edge and 1,568 of Claude's 28 px patches, the size Claude would scale it
//! to anyway, more than OpenAI keeps) or over [`MODEL_IMAGE_MAX_BYTES`] (the limits the
//! screenshots keep to as well) is scaled to that size and encoded again: PNG when that is small
//! enough, else JPEG. A tool result then says so, with the factor, because its
//! coordinates are the original's. An image that cannot be read, or a GIF or WebP too large
//! (only PNG and JPEG are decoded here), is left out with a note saying why. A request carries at
//! most [`MAX_IMAGES`] and [`MAX_IMAGE_BYTES`] of them (Anthropic refuses a request over 32 MB):
//! older ones give way to a note.

use base64::Engine;
use osprey_types::{ContentBlock, MODEL_IMAGE_MAX_BYTES, fits_model, model_image_size};

use crate::message::{Message, Part};
use crate::runner::tokens::image_size;

/// The most images one request carries (Anthropic's limit; OpenAI takes 500).
pub const MAX_IMAGES: usize = 100;

/// The most image data (base64) one request carries: Anthropic refuses a request over 32 MB
/// (`request_too_large`), which some 30 full screenshots reach long before the context window
/// fills; this leaves the rest for the text. At least four of the largest images fit.
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// What replaces an image beyond [`MAX_IMAGES`] or [`MAX_IMAGE_BYTES`].
pub const IMAGE_OVER_BUDGET: &str = "[an earlier image was left out here: a request carries at \
     most 100 images and 20 MB of them]";

/// The format of image bytes by their first bytes (the `image` crate's magic numbers, which it
/// knows whatever decoders are built in), when it is one the model APIs take: PNG, JPEG, GIF or
/// WebP.
pub fn mime_of(bytes: &[u8]) -> Option<&'static str> {
    use image::ImageFormat::{Gif, Jpeg, Png, WebP};
    image::guess_format(bytes)
        .ok()
        .filter(|format| matches!(format, Png | Jpeg | Gif | WebP))
        .map(|format| format.to_mime_type())
}

/// A PNG or JPEG as it is when within the limits, else scaled to [`model_image_size`] and
/// encoded again (PNG stays PNG when that is small enough); with its size before and after.
pub fn fit(bytes: &[u8], mime: &'static str) -> Result<Fit, String> {
    let format = match mime {
        "image/png" => image::ImageFormat::Png,
        "image/jpeg" => image::ImageFormat::Jpeg,
        other => {
            return Err(format!(
                "it is {other} larger than models take, and only PNG and JPEG can be scaled here"
            ));
        }
    };
    let decoded = image::load_from_memory_with_format(bytes, format)
        .map_err(|e| format!("the image cannot be decoded: {e}"))?;
    let from = (decoded.width(), decoded.height());
    let size = model_image_size(from.0, from.1);
    if size == from && bytes.len() <= MODEL_IMAGE_MAX_BYTES {
        return Ok(Fit {
            bytes: bytes.to_vec(),
            mime,
            from,
            to: from,
        });
    }
    let scaled = if size != from {
        decoded.resize_exact(size.0, size.1, image::imageops::FilterType::Triangle)
    } else {
        decoded
    };
    let to = (scaled.width(), scaled.height());
    let encode = |image: &image::DynamicImage, format| {
        let mut out = std::io::Cursor::new(Vec::new());
        image
            .write_to(&mut out, format)
            .map(|_| out.into_inner())
            .map_err(|e| format!("the scaled image cannot be encoded: {e}"))
    };
    if mime == "image/png" {
        let png = encode(&scaled, image::ImageFormat::Png)?;
        if png.len() <= MODEL_IMAGE_MAX_BYTES {
            return Ok(Fit {
                bytes: png,
                mime: "image/png",
                from,
                to,
            });
        }
    }
    let rgb = image::DynamicImage::ImageRgb8(scaled.to_rgb8());
    let jpeg = encode(&rgb, image::ImageFormat::Jpeg)?;
    if jpeg.len() > MODEL_IMAGE_MAX_BYTES {
        return Err(format!(
            "it is {} bytes even scaled to {}x{} as a JPEG",
            jpeg.len(),
            to.0,
            to.1
        ));
    }
    Ok(Fit {
        bytes: jpeg,
        mime: "image/jpeg",
        from,
        to,
    })
}

/// An image within the limits: its bytes and format, its size before and after.
#[derive(Debug)]
pub struct Fit {
    pub bytes: Vec<u8>,
    pub mime: &'static str,
    pub from: (u32, u32),
    pub to: (u32, u32),
}

/// Whether base64 image data may be over the limits: too long, larger than a model takes by its
/// header ([`fits_model`]), or with no header to read. Cheap: no decoding beyond the header.
pub fn may_be_over(data: &str) -> bool {
    data.len() > MODEL_IMAGE_MAX_BYTES.div_ceil(3) * 4
        || image_size(data).is_none_or(|(w, h)| !fits_model(w, h))
}

/// What takes the place of one base64 image: `None` when it may go as it is, else the fitted
/// image followed by a note of the factor when its size changed (coordinates elsewhere in a
/// result are the original's), or a note alone when it cannot be sent.
fn refit(mime_type: &str, data: &str) -> Option<Vec<ContentBlock>> {
    if !may_be_over(data) {
        return None;
    }
    let note = |text: String| Some(vec![ContentBlock::Text { text }]);
    let engine = base64::engine::general_purpose::STANDARD;
    let Ok(bytes) = engine.decode(data) else {
        return note("[an image was left out here: its base64 is damaged]".into());
    };
    let Some(mime) = mime_of(&bytes) else {
        return note(format!(
            "[an image was left out here: it is not a PNG, JPEG, GIF or WebP ({mime_type} by its \
             label)]"
        ));
    };
    let fit = match fit(&bytes, mime) {
        Ok(fit) => fit,
        Err(why) => return note(format!("[an image was left out here: {why}]")),
    };
    if fit.from == fit.to && fit.mime == mime_type {
        return None;
    }
    let mut blocks = vec![ContentBlock::Image {
        mime_type: fit.mime.to_string(),
        data: engine.encode(&fit.bytes),
    }];
    if fit.from != fit.to {
        blocks.push(ContentBlock::Text {
            text: format!(
                "[the image above was scaled from {}x{} to {}x{} to fit what models take: its \
                 pixels are the original's times {:.3}]",
                fit.from.0,
                fit.from.1,
                fit.to.0,
                fit.to.1,
                f64::from(fit.to.0) / f64::from(fit.from.0.max(1))
            ),
        });
    }
    Some(blocks)
}

/// Whether any image of the message may be over the limits (see [`may_be_over`]).
pub fn needs_fitting(message: &Message) -> bool {
    message.content.iter().any(|part| match part {
        Part::Image { data, .. } => may_be_over(data),
        Part::ToolResult { content, .. } => content
            .iter()
            .any(|block| matches!(block, ContentBlock::Image { data, .. } if may_be_over(data))),
        _ => false,
    })
}

/// Brings every image of the message within the limits, in place: scaled (with a note of the
/// factor after it) or left out with a note. Returns how many changed. Decodes only images
/// that may be over, so a message within them costs a header read each.
pub fn fit_message(message: &mut Message) -> usize {
    let mut changed = 0;
    // Each image, as the blocks that take its place.
    let mut replace = |mime_type: String, data: String| match refit(&mime_type, &data) {
        None => vec![ContentBlock::Image { mime_type, data }],
        Some(blocks) => {
            changed += 1;
            blocks
        }
    };
    // A message's own parts hold the same two kinds as a tool result's blocks.
    let as_part = |block| match block {
        ContentBlock::Image { mime_type, data } => Part::Image { mime_type, data },
        ContentBlock::Text { text } => Part::Text { text },
    };
    let parts = std::mem::take(&mut message.content);
    for part in parts {
        match part {
            Part::Image { mime_type, data } => {
                message
                    .content
                    .extend(replace(mime_type, data).into_iter().map(as_part));
            }
            Part::ToolResult {
                call_id,
                is_error,
                content,
            } => {
                let content = content
                    .into_iter()
                    .flat_map(|block| match block {
                        ContentBlock::Image { mime_type, data } => replace(mime_type, data),
                        other => vec![other],
                    })
                    .collect();
                message.content.push(Part::ToolResult {
                    call_id,
                    is_error,
                    content,
                });
            }
            other => message.content.push(other),
        }
    }
    changed
}

/// Walks the images of `messages` from the newest, the person's and the tools' alike; each one
/// `keep` turns down (given its base64 and whether a tool returned it) becomes the text `note`.
/// Returns how many went. What compaction and the per-request budget leave out both go through
/// here.
pub fn leave_out_images(
    messages: &mut [Message],
    note: &str,
    mut keep: impl FnMut(&str, bool) -> bool,
) -> usize {
    let mut dropped = 0;
    for message in messages.iter_mut().rev() {
        for part in message.content.iter_mut().rev() {
            match part {
                Part::Image { data, .. } if !keep(data, false) => {
                    *part = Part::Text { text: note.into() };
                    dropped += 1;
                }
                Part::ToolResult { content, .. } => {
                    for block in content.iter_mut().rev() {
                        if let ContentBlock::Image { data, .. } = block
                            && !keep(data, true)
                        {
                            *block = ContentBlock::Text { text: note.into() };
                            dropped += 1;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    dropped
}

/// Keeps the newest images of the messages that fit in `max` images and `max_bytes` of base64
/// (a request's [`MAX_IMAGES`] and [`MAX_IMAGE_BYTES`]) and replaces every older one with
/// [`IMAGE_OVER_BUDGET`]; returns how many went.
pub fn cap_images(messages: &mut [Message], max: usize, max_bytes: usize) -> usize {
    let (mut count, mut bytes, mut full) = (0usize, 0usize, false);
    leave_out_images(messages, IMAGE_OVER_BUDGET, |data, _| {
        if !full {
            count += 1;
            bytes += data.len();
            full = count > max || bytes > max_bytes;
        }
        !full
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;

    fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
        if noisy {
            return osprey_tests::noise_png(width, height);
        }
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        });
        let mut out = std::io::Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn tool_result(blocks: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::User,
            content: vec![Part::ToolResult {
                call_id: "c1".into(),
                is_error: false,
                content: blocks,
            }],
        }
    }

    fn image_block(mime: &str, data: String) -> ContentBlock {
        ContentBlock::Image {
            mime_type: mime.into(),
            data,
        }
    }

    #[test]
    fn an_image_within_the_limits_is_left_as_it_is() {
        let data = b64(&png(1100, 720, false));
        assert!(!may_be_over(&data));
        let mut message = tool_result(vec![image_block("image/png", data.clone())]);
        assert!(!needs_fitting(&message));
        assert_eq!(fit_message(&mut message), 0);
        let Part::ToolResult { content, .. } = &message.content[0] else {
            panic!()
        };
        assert!(matches!(&content[..], [ContentBlock::Image { data: d, .. }] if *d == data));
    }

    #[test]
    fn a_4k_screenshot_is_scaled_to_what_models_see_and_says_so() {
        let data = b64(&png(3840, 2160, false));
        let mut message = tool_result(vec![
            ContentBlock::Text {
                text: "Snapshot s1".into(),
            },
            image_block("image/png", data),
        ]);
        assert!(needs_fitting(&message));
        assert_eq!(fit_message(&mut message), 1);
        let Part::ToolResult { content, .. } = &message.content[0] else {
            panic!()
        };
        let [
            _,
            ContentBlock::Image { mime_type, data },
            ContentBlock::Text { text },
        ] = &content[..]
        else {
            panic!("{content:?}")
        };
        assert_eq!(mime_type, "image/png");
        assert_eq!(image_size(data), Some((1456, 819)));
        assert!(
            text.contains("from 3840x2160 to 1456x819") && text.contains("times 0.379"),
            "{text}"
        );
        // Fitted once, it is left alone after.
        assert!(!needs_fitting(&message));
    }

    #[test]
    fn a_photo_too_large_as_png_becomes_a_jpeg_under_anthropics_5_mib() {
        // RGBA noise 1000 x 1000 is about 4 MB as PNG: over 5 MiB of base64 at a size models
        // take as it is.
        let mut state = 0x2545_f491_u32;
        let noise = image::RgbaImage::from_fn(1000, 1000, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            image::Rgba(state.to_le_bytes())
        });
        let mut bytes = std::io::Cursor::new(Vec::new());
        noise.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
        let data = b64(&bytes.into_inner());
        assert!(data.len() > 5 * 1024 * 1024, "{}", data.len());
        let mut message = Message {
            role: Role::User,
            content: vec![
                Part::Image {
                    mime_type: "image/png".into(),
                    data,
                },
                Part::Text {
                    text: "what is this?".into(),
                },
            ],
        };
        assert_eq!(fit_message(&mut message), 1);
        let Part::Image { mime_type, data } = &message.content[0] else {
            panic!("{:?}", message.content[0])
        };
        assert_eq!(mime_type, "image/jpeg");
        assert!(data.len() <= 5 * 1024 * 1024, "{}", data.len());
        assert_eq!(image_size(data), Some((1000, 1000)));
    }

    #[test]
    fn formats_are_known_by_their_first_bytes() {
        assert_eq!(mime_of(&png(4, 4, false)), Some("image/png"));
        assert_eq!(
            mime_of(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]),
            Some("image/jpeg")
        );
        assert_eq!(mime_of(b"GIF87a\x01\x00\x01\x00"), Some("image/gif"));
        assert_eq!(mime_of(b"RIFF\x24\0\0\0WEBPVP8 "), Some("image/webp"));
        // Images the model APIs do not take, and what is no image.
        assert_eq!(mime_of(b"BM\x36\0\0\0\0\0\0\0"), None);
        assert_eq!(mime_of(b"%PDF-1.7"), None);
        assert_eq!(mime_of(b""), None);
    }

    #[test]
    fn what_cannot_be_read_is_left_out_with_a_reason() {
        // A GIF header saying 3000 x 10: too wide, and GIFs are not decoded here.
        let mut gif = b"GIF89a".to_vec();
        gif.extend_from_slice(&3000u16.to_le_bytes());
        gif.extend_from_slice(&10u16.to_le_bytes());
        gif.extend_from_slice(&[0; 16]);
        let mut message = tool_result(vec![
            image_block("image/png", "not base64!".into()),
            image_block("image/png", b64(b"plain text, not an image at all")),
            image_block("image/gif", b64(&gif)),
        ]);
        assert_eq!(fit_message(&mut message), 3);
        let Part::ToolResult { content, .. } = &message.content[0] else {
            panic!()
        };
        let texts: Vec<&str> = content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(texts[0].contains("base64 is damaged"), "{texts:?}");
        assert!(
            texts[1].contains("not a PNG, JPEG, GIF or WebP"),
            "{texts:?}"
        );
        assert!(
            texts[2].contains("image/gif larger than models take"),
            "{texts:?}"
        );
    }

    #[test]
    fn a_request_keeps_the_newest_images_within_its_count_and_bytes() {
        let small = b64(&png(8, 8, false));
        let mut messages: Vec<Message> = (0..105)
            .map(|i| {
                tool_result(vec![
                    ContentBlock::Text {
                        text: format!("shot {i}"),
                    },
                    image_block("image/png", small.clone()),
                ])
            })
            .collect();
        assert_eq!(cap_images(&mut messages, MAX_IMAGES, MAX_IMAGE_BYTES), 5);
        let is_image = |m: &Message| {
            let Part::ToolResult { content, .. } = &m.content[0] else {
                panic!()
            };
            matches!(content[1], ContentBlock::Image { .. })
        };
        assert!(messages[..5].iter().all(|m| !is_image(m)));
        assert!(messages[5..].iter().all(is_image));
        assert_eq!(cap_images(&mut messages, MAX_IMAGES, MAX_IMAGE_BYTES), 0);
        // By size: in the bytes of three images, the newest three stay and the rest go.
        let budget = 3 * small.len();
        assert_eq!(cap_images(&mut messages, MAX_IMAGES, budget), 97);
        assert!(messages[..102].iter().all(|m| !is_image(m)));
        assert!(messages[102..].iter().all(is_image));
    }
}
