//! What the real model APIs refuse before they answer, so the loopback model servers refuse it
//! too: a client that passes against them passes against the real service. Each rule is one the
//! service documents or was seen enforcing, with its real status and error body.
//!
//! - Anthropic Messages (`/v1/messages`): a tool's `input_schema` must be an object schema with
//!   `type: object` and no `oneOf`, `allOf` or `anyOf` at its top level; tool names match
//!   `^[a-zA-Z0-9_-]{1,128}$`; an image block (in a message or a tool result) is base64 of
//!   `image/jpeg`, `image/png`, `image/gif` or `image/webp`, the data must decode, and its bytes
//!   must be of the format named; the base64 of one image is at most 5 MiB, its sides at most
//!   8,000 px (2,000 px in a request of more than 20 images); a request carries at most 100
//!   images, and is at most 32 MB (413 `request_too_large`); a text block (a tool result's too)
//!   is neither empty nor only whitespace, and every message but a final assistant one has
//!   content.
//! - OpenAI Chat Completions (`/chat/completions`): a function's `parameters` must have
//!   `type: object` at the top; names match `^[a-zA-Z0-9_-]{1,64}$`; images (`image_url` parts)
//!   only in `user` messages.

use serde_json::{Value, json};

/// The status and JSON body the real service answers `body` (sent to `path`) with, when it
/// refuses it; `None` when it would take it.
pub fn refusal(path: &str, body: &Value) -> Option<(u16, Value)> {
    if path.ends_with("/messages") {
        // Before anything is read: the size of the request itself.
        if body.to_string().len() > MAX_REQUEST_BYTES {
            return Some((
                413,
                json!({"type": "error", "error": {"type": "request_too_large",
                       "message": "Request exceeds the maximum size"}}),
            ));
        }
        anthropic(body).map(|message| {
            (
                400,
                json!({"type": "error",
                       "error": {"type": "invalid_request_error", "message": message}}),
            )
        })
    } else if path.ends_with("/chat/completions") {
        openai(body).map(|(message, param)| {
            (
                400,
                json!({"error": {"message": message, "type": "invalid_request_error",
                                 "param": param, "code": "invalid_value"}}),
            )
        })
    } else {
        None
    }
}

fn name_ok(name: &str, max: usize) -> bool {
    (1..=max).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn anthropic(body: &Value) -> Option<String> {
    anthropic_tools(body)
        .or_else(|| anthropic_texts(body))
        .or_else(|| anthropic_images(body))
}

/// Text blocks (a tool result's included) must hold some text, and not only whitespace; a
/// message must have content, except the last one when it is the assistant's (a prefill).
fn anthropic_texts(body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    for (i, message) in messages.iter().enumerate() {
        let content = &message["content"];
        let blocks: Vec<&Value> = match content {
            Value::String(text) => {
                if text.is_empty() && !(i + 1 == messages.len() && message["role"] == "assistant") {
                    return Some(format!(
                        "messages.{i}: all messages must have non-empty content except for the \
                         optional final assistant message"
                    ));
                }
                continue;
            }
            Value::Array(blocks) => blocks.iter().collect(),
            _ => continue,
        };
        if blocks.is_empty() && !(i + 1 == messages.len() && message["role"] == "assistant") {
            return Some(format!(
                "messages.{i}: all messages must have non-empty content except for the optional \
                 final assistant message"
            ));
        }
        let nested = blocks
            .iter()
            .flat_map(|b| b["content"].as_array().into_iter().flatten());
        for block in blocks.iter().copied().chain(nested) {
            if block["type"] != "text" {
                continue;
            }
            let text = block["text"].as_str().unwrap_or_default();
            if text.is_empty() {
                return Some("messages: text content blocks must be non-empty".into());
            }
            if text.trim().is_empty() {
                return Some(
                    "messages: text content blocks must contain non-whitespace text".into(),
                );
            }
        }
    }
    None
}

/// Every image block of the messages (a tool result's included) against the documented rules.
fn anthropic_images(body: &Value) -> Option<String> {
    use base64::Engine;
    const TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];
    let messages = body.get("messages")?.as_array()?;
    let mut images = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let blocks = message["content"].as_array().into_iter().flatten();
        for (j, block) in blocks.enumerate() {
            let nested = block["content"].as_array().into_iter().flatten();
            images.extend(
                std::iter::once((format!("messages.{i}.content.{j}"), block))
                    .chain(nested.enumerate().map(|(k, inner)| {
                        (
                            format!("messages.{i}.content.{j}.tool_result.content.{k}"),
                            inner,
                        )
                    }))
                    .filter(|(_, b)| b["type"] == "image" && b["source"]["type"] == "base64"),
            );
        }
    }
    if images.len() > MAX_IMAGES {
        return Some(format!(
            "too many images and documents: {} + 0 > {MAX_IMAGES}",
            images.len()
        ));
    }
    // In a request of more than 20 images, each must be smaller.
    let max_side = if images.len() > 20 { 2_000 } else { 8_000 };
    for (path, image) in images {
        let source = &image["source"];
        let media = source["media_type"].as_str().unwrap_or_default();
        if !TYPES.contains(&media) {
            return Some(format!(
                "{path}.image.source.base64.media_type: Input should be 'image/jpeg', \
                 'image/png', 'image/gif' or 'image/webp'"
            ));
        }
        let data = source["data"].as_str().unwrap_or_default();
        // The limit is on the base64 text, not on the bytes it stands for.
        if data.len() > MAX_BASE64 {
            return Some(format!(
                "{path}.image.source.base64: image exceeds 5 MB maximum: {} bytes > {MAX_BASE64} \
                 bytes",
                data.len()
            ));
        }
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
            return Some(format!(
                "{path}.image.source.base64.data: invalid base64 data"
            ));
        };
        // The API reads the image: bytes of another format than the one named are refused.
        let magic: &[u8] = match media {
            "image/png" => b"\x89PNG\r\n\x1a\n",
            "image/jpeg" => &[0xFF, 0xD8, 0xFF],
            "image/gif" => b"GIF8",
            _ => b"RIFF",
        };
        if !bytes.starts_with(magic) {
            return Some(format!(
                "{path}.image.source.base64: Image does not match the provided media type {media}"
            ));
        }
        let size = image::ImageReader::new(std::io::Cursor::new(&bytes))
            .with_guessed_format()
            .ok()
            .and_then(|reader| reader.into_dimensions().ok());
        if let Some((width, height)) = size
            && width.max(height) > max_side
        {
            let which = if max_side == 2_000 {
                " for many-image requests"
            } else {
                ""
            };
            return Some(format!(
                "{path}.image.source.base64.data: At least one of the image dimensions exceed max \
                 allowed size{which}: {max_side} pixels"
            ));
        }
    }
    None
}

/// The largest Anthropic Messages request, in bytes (32 MB).
const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

/// The most images (and documents) one Anthropic request may carry.
const MAX_IMAGES: usize = 100;

/// The longest base64 text of one image Anthropic takes (5 MiB).
const MAX_BASE64: usize = 5 * 1024 * 1024;

fn anthropic_tools(body: &Value) -> Option<String> {
    let tools = body.get("tools")?.as_array()?;
    for (i, tool) in tools.iter().enumerate() {
        let name = tool["name"].as_str().unwrap_or_default();
        if !name_ok(name, 128) {
            return Some(format!(
                "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            ));
        }
        let schema = &tool["input_schema"];
        if !schema.is_object() {
            return Some(format!("tools.{i}.custom.input_schema: Field required"));
        }
        if ["oneOf", "allOf", "anyOf"]
            .iter()
            .any(|k| schema.get(*k).is_some())
        {
            return Some(format!(
                "tools.{i}.custom.input_schema: input_schema does not support oneOf, allOf, or \
                 anyOf at the top level"
            ));
        }
        if schema["type"] != "object" {
            return Some(format!(
                "tools.{i}.custom.input_schema.type: Input should be 'object'"
            ));
        }
    }
    None
}

fn openai(body: &Value) -> Option<(String, String)> {
    openai_tools(body).or_else(|| openai_images(body))
}

/// Images go only in the person's messages: a tool's screenshot in a `tool` message is refused.
fn openai_images(body: &Value) -> Option<(String, String)> {
    let messages = body.get("messages")?.as_array()?;
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        let has_image = message["content"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"));
        if has_image && role != "user" {
            return Some((
                format!(
                    "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role \
                     'user', but this message with role '{role}' contains an image URL."
                ),
                format!("messages[{i}]"),
            ));
        }
    }
    None
}

fn openai_tools(body: &Value) -> Option<(String, String)> {
    let tools = body.get("tools")?.as_array()?;
    for (i, tool) in tools.iter().enumerate() {
        let function = &tool["function"];
        let name = function["name"].as_str().unwrap_or_default();
        if !name_ok(name, 64) {
            return Some((
                format!(
                    "Invalid 'tools[{i}].function.name': string does not match pattern. Expected \
                     a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                ),
                format!("tools[{i}].function.name"),
            ));
        }
        let parameters = &function["parameters"];
        if !parameters.is_null() && parameters["type"] != "object" {
            let got = parameters.get("type").map_or("None".to_string(), |t| {
                t.as_str().map_or(t.to_string(), String::from)
            });
            return Some((
                format!(
                    "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \
                     \"object\"', got 'type: \"{got}\"'."
                ),
                format!("tools[{i}].function.parameters"),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_refuses_images_of_other_types_or_damaged_data() {
        let with = |media: &str, data: &str| {
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}},
                {"type": "text", "text": "what is this?"},
            ]}]})
        };
        assert!(refusal("/v1/messages", &with("image/png", "iVBORw0KGgo=")).is_none());
        // JPEG bytes sent as a PNG.
        let (_, body) = refusal("/v1/messages", &with("image/png", "/9j/4AAQ")).unwrap();
        assert!(
            body.to_string()
                .contains("does not match the provided media type"),
            "{body}"
        );
        let (_, body) = refusal("/v1/messages", &with("image/bmp", "iVBORw0KGgo=")).unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("messages.0.content.0.image.source.base64.media_type")
        );
        assert!(refusal("/v1/messages", &with("image/png", "not base64!")).is_some());
        let in_result = json!({"messages": [{"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": "t1", "content": [{"type": "image",
            "source": {"type": "base64", "media_type": "text/html", "data": ""}}]}]}]});
        assert!(refusal("/v1/messages", &in_result).is_some());
    }

    fn png_of(width: u32, height: u32) -> String {
        use base64::Engine;
        let mut out = std::io::Cursor::new(Vec::new());
        image::RgbImage::new(width, height)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(out.into_inner())
    }

    fn with_images(images: &[String]) -> Value {
        let blocks: Vec<Value> = images
            .iter()
            .map(|data| {
                json!({"type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": data}})
            })
            .collect();
        json!({"messages": [{"role": "user", "content": blocks}]})
    }

    fn message_of(body: &Value) -> String {
        let (status, error) = refusal("/v1/messages", body).expect("refused");
        assert_eq!(status, 400);
        error["error"]["message"].as_str().unwrap().to_string()
    }

    #[test]
    fn anthropic_refuses_images_over_its_size_and_count_limits() {
        let small = png_of(16, 16);
        assert!(refusal("/v1/messages", &with_images(&[png_of(8000, 10)])).is_none());
        assert_eq!(
            message_of(&with_images(&[png_of(8001, 10)])),
            "messages.0.content.0.image.source.base64.data: At least one of the image dimensions \
             exceed max allowed size: 8000 pixels"
        );
        // Over 20 images, a side of 2,001 is too long; with 20 it is not.
        let mut twenty = vec![small.clone(); 19];
        twenty.push(png_of(2001, 10));
        assert!(refusal("/v1/messages", &with_images(&twenty)).is_none());
        twenty.insert(0, small.clone());
        assert_eq!(
            message_of(&with_images(&twenty)),
            "messages.0.content.20.image.source.base64.data: At least one of the image dimensions \
             exceed max allowed size for many-image requests: 2000 pixels"
        );
        assert_eq!(
            message_of(&with_images(&vec![small.clone(); 101])),
            "too many images and documents: 101 + 0 > 100"
        );
        assert!(refusal("/v1/messages", &with_images(&vec![small; 100])).is_none());
        // 5 MiB of base64 at most; the text is measured, not what it decodes to.
        let over = format!("iVBORw0KGgo{}", "A".repeat(5 * 1024 * 1024));
        assert_eq!(
            message_of(&with_images(&[over])),
            "messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: 5242891 bytes \
             > 5242880 bytes"
        );
    }

    #[test]
    fn anthropic_refuses_a_request_over_32_mb() {
        let text = "x".repeat(16 * 1024 * 1024);
        let body = |n: usize| json!({"messages": [{"role": "user", "content": vec![json!({"type": "text", "text": text}); n]}]});
        assert!(refusal("/v1/messages", &body(1)).is_none());
        let (status, error) = refusal("/v1/messages", &body(2)).unwrap();
        assert_eq!(status, 413);
        assert_eq!(error["error"]["type"], "request_too_large");
    }

    #[test]
    fn anthropic_refuses_empty_and_blank_text_blocks() {
        let with = |content: Value| json!({"messages": [{"role": "user", "content": content}]});
        let text = |t: &str| json!([{"type": "text", "text": t}]);
        assert!(refusal("/v1/messages", &with(text("hi"))).is_none());
        assert_eq!(
            message_of(&with(text(""))),
            "messages: text content blocks must be non-empty"
        );
        assert_eq!(
            message_of(&with(text(" \n\n"))),
            "messages: text content blocks must contain non-whitespace text"
        );
        let in_result = json!([{"type": "tool_result", "tool_use_id": "t1",
            "content": [{"type": "text", "text": ""}]}]);
        assert_eq!(
            message_of(&with(in_result)),
            "messages: text content blocks must be non-empty"
        );
        // A tool result with no content at all is fine; a message with none is not.
        let bare = json!([{"type": "tool_result", "tool_use_id": "t1"}]);
        assert!(refusal("/v1/messages", &with(bare)).is_none());
        assert_eq!(
            message_of(&with(json!([]))),
            "messages.0: all messages must have non-empty content except for the optional final \
             assistant message"
        );
        let prefill = json!({"messages": [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""}]});
        assert!(refusal("/v1/messages", &prefill).is_none());
    }

    #[test]
    fn anthropic_refuses_a_top_level_all_of_with_its_message() {
        let body = json!({"tools": [
            {"name": "ok", "input_schema": {"type": "object", "properties": {}}},
            {"name": "file", "input_schema": {"type": "object", "allOf": []}},
        ]});
        let (status, error) = refusal("/v1/messages", &body).unwrap();
        assert_eq!(status, 400);
        assert_eq!(
            error["error"]["message"],
            "tools.1.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at \
             the top level"
        );
        assert!(refusal("/v1/messages", &json!({"tools": [body["tools"][0]]})).is_none());
        assert!(
            refusal(
                "/v1/messages",
                &json!({"tools": [{"name": "a.b", "input_schema": {"type": "object"}}]})
            )
            .is_some()
        );
    }

    #[test]
    fn openai_takes_images_only_from_the_user() {
        let image =
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}});
        let with = |role: &str| json!({"messages": [{"role": role, "content": [image.clone()]}]});
        assert!(refusal("/v1/chat/completions", &with("user")).is_none());
        let (status, body) = refusal("/v1/chat/completions", &with("tool")).unwrap();
        assert_eq!(status, 400);
        assert_eq!(
            body["error"]["message"],
            "Invalid 'messages[0]'. Image URLs are only allowed for messages with role 'user', but \
             this message with role 'tool' contains an image URL."
        );
    }

    #[test]
    fn openai_wants_an_object_at_the_top() {
        let body = json!({"tools": [{"type": "function",
            "function": {"name": "f", "parameters": {"anyOf": []}}}]});
        let (_, error) = refusal("/v1/chat/completions", &body).unwrap();
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("got 'type: \"None\"'")
        );
        assert!(refusal("/api/chat", &body).is_none());
    }
}
