//! Token estimates for context management. Exact counts need each model's tokenizer (and a
//! network round trip for some providers); compaction only needs to know when the history nears
//! the window, so text is estimated at four characters a token (JSON and code run denser, so
//! tool calls and results count their serialised length) and images by each provider's published
//! formula from the image's real dimensions, read from its PNG/JPEG/GIF/WebP header.

use base64::Engine;
use osprey_types::ContentBlock;

use crate::message::{ChatRequest, Message, Part, ToolSpec};

/// Which image formula applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageCost {
    /// Anthropic: scaled to fit a 1568 px long edge and 1,568 patches of 28 x 28 px
    /// ([`osprey_types::model_image_size`]), then one token per patch.
    Anthropic,
    /// OpenAI, detail high: fit 2048 x 2048, then shortest side 768, then 170 per 512 px tile
    /// plus 85.
    OpenAiHigh,
    /// OpenAI, detail low: 85 whatever the size.
    OpenAiLow,
    /// Ollama's vision models each have their own encoder (LLaVA's CLIP gives 576 tokens per
    /// image, Gemma 3 256, Qwen-VL grows with resolution, Llama 3.2 Vision tiles); with no way to
    /// ask the server, a fixed cost above all of the common ones keeps compaction on the safe
    /// side.
    Fixed(u64),
}

/// What Ollama images are counted as.
pub const OLLAMA_IMAGE_TOKENS: u64 = 1024;
/// An image whose header cannot be read counts as the largest Anthropic image (about 1,600).
const UNKNOWN_IMAGE_TOKENS: u64 = 1600;
/// Per-message framing (role markers and separators).
const MESSAGE_OVERHEAD: u64 = 4;

impl ImageCost {
    /// The formula for a provider by its [`crate::Provider::name`]; unknown providers (an app's
    /// gateway) get Anthropic's, the most expensive of the published ones for screenshots.
    pub fn for_provider(provider: &str) -> ImageCost {
        match provider {
            "openai" => ImageCost::OpenAiHigh,
            "ollama" => ImageCost::Fixed(OLLAMA_IMAGE_TOKENS),
            _ => ImageCost::Anthropic,
        }
    }

    /// Tokens for an image of `width` x `height` pixels.
    pub fn tokens(self, width: u32, height: u32) -> u64 {
        match self {
            ImageCost::Anthropic => anthropic_image_tokens(width, height),
            ImageCost::OpenAiHigh => openai_high_image_tokens(width, height),
            ImageCost::OpenAiLow => 85,
            ImageCost::Fixed(n) => n,
        }
    }

    /// Tokens for base64 image bytes (the header is decoded for the size).
    pub fn tokens_for_data(self, data: &str) -> u64 {
        match self {
            ImageCost::OpenAiLow => 85,
            ImageCost::Fixed(n) => n,
            _ => match image_size(data) {
                Some((w, h)) => self.tokens(w, h),
                None => UNKNOWN_IMAGE_TOKENS,
            },
        }
    }
}

fn anthropic_image_tokens(width: u32, height: u32) -> u64 {
    let (w, h) = osprey_types::model_image_size(width, height);
    osprey_types::model_image_patches(w, h)
}

fn openai_high_image_tokens(width: u32, height: u32) -> u64 {
    if width == 0 || height == 0 {
        return 0;
    }
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    let fit = (2048.0 / w).min(2048.0 / h);
    if fit < 1.0 {
        w *= fit;
        h *= fit;
    }
    let shortest = w.min(h);
    if shortest > 768.0 {
        let scale = 768.0 / shortest;
        w *= scale;
        h *= scale;
    }
    let tiles = (w / 512.0).ceil() as u64 * (h / 512.0).ceil() as u64;
    170 * tiles + 85
}

/// Width and height from the first bytes of base64 PNG, JPEG, GIF or WebP data.
pub fn image_size(data: &str) -> Option<(u32, u32)> {
    let decode = |chars: usize| {
        let take = data.len().min(chars) / 4 * 4;
        base64::engine::general_purpose::STANDARD
            .decode(data.get(..take)?)
            .ok()
    };
    // PNG, GIF and WebP say their size in their first 30 bytes (40 characters of base64); it is
    // read for every image at every step, so only a JPEG, whose size marker can sit after large
    // metadata, is decoded further: up to 64 KiB of its header.
    let head = decode(40)?;
    if let Some(size) = image_size_bytes(&head) {
        return Some(size);
    }
    if !head.starts_with(&[0xff, 0xd8]) {
        return None;
    }
    image_size_bytes(&decode(87_384)?)
}

fn image_size_bytes(b: &[u8]) -> Option<(u32, u32)> {
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let be16 = |i: usize| {
        Some(u32::from(u16::from_be_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    let le16 = |i: usize| {
        Some(u32::from(u16::from_le_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some((be32(16)?, be32(20)?));
    }
    if b.starts_with(b"GIF8") {
        return Some((le16(6)?, le16(8)?));
    }
    if b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        let le24 = |i: usize| -> Option<u32> {
            let s = b.get(i..i + 3)?;
            Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
        };
        return match b.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8L" => {
                let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            _ => None,
        };
    }
    if b.starts_with(&[0xff, 0xd8]) {
        let mut i = 2;
        while i + 4 <= b.len() {
            if b[i] != 0xff {
                i += 1;
                continue;
            }
            let marker = b[i + 1];
            // Start-of-frame markers (baseline, progressive, ...) carry the size; C4, C8 and CC
            // are other tables.
            if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
                return Some((be16(i + 7)?, be16(i + 5)?));
            }
            if marker == 0xd8 || marker == 0x01 || (0xd0..=0xd7).contains(&marker) {
                i += 2;
                continue;
            }
            i += 2 + be16(i + 2)? as usize;
        }
    }
    None
}

/// Text estimate: four characters a token, rounded up.
pub fn text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// One message's estimate.
pub fn message_tokens(message: &Message, images: ImageCost) -> u64 {
    let mut total = MESSAGE_OVERHEAD;
    for part in &message.content {
        total += match part {
            Part::Text { text } => text_tokens(text),
            Part::Thinking { text, .. } => text_tokens(text),
            Part::Image { data, .. } => images.tokens_for_data(data),
            Part::ToolCall { name, input, .. } => {
                text_tokens(name) + text_tokens(&input.to_string()) + MESSAGE_OVERHEAD
            }
            Part::ToolResult { content, .. } => {
                MESSAGE_OVERHEAD
                    + content
                        .iter()
                        .map(|block| match block {
                            ContentBlock::Text { text } => text_tokens(text),
                            ContentBlock::Image { data, .. } => images.tokens_for_data(data),
                        })
                        .sum::<u64>()
            }
        };
    }
    total
}

/// The tool definitions' estimate.
pub fn tools_tokens(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| {
            text_tokens(&t.name)
                + text_tokens(&t.description)
                + text_tokens(&t.input_schema.to_string())
        })
        .sum()
}

/// A whole request's estimate (system prompt, tools, messages; not the reply).
pub fn request_tokens(request: &ChatRequest, images: ImageCost) -> u64 {
    text_tokens(&request.system)
        + tools_tokens(&request.tools)
        + request
            .messages
            .iter()
            .map(|m| message_tokens(m, images))
            .sum::<u64>()
}

/// The context window of a model by name, when neither configured nor reported by the provider
/// (Ollama reports it from `/api/show`, which the runner asks first): the families' published
/// windows. For a model it does not recognise it knows nothing, except on Ollama, whose server
/// then could not say: 8,192 tokens, so that compacting early protects a prompt Ollama would
/// otherwise cut silently. Elsewhere an unknown window is learned from the provider's
/// "context too long" error instead ([`Runner`](crate::Runner) then compacts and retries).
pub fn default_context_window(provider: &str, model: &str) -> Option<u64> {
    let model = model.to_ascii_lowercase();
    if provider == "anthropic" || model.starts_with("claude") {
        return Some(200_000);
    }
    if model.starts_with("gpt-4.1") {
        return Some(1_047_576);
    }
    let reasoning = ["o1", "o3", "o4"].iter().any(|p| model.starts_with(p));
    if model.starts_with("gpt-4o") || model.starts_with("gpt-4-turbo") || reasoning {
        return Some(128_000);
    }
    if model.starts_with("gpt-5") {
        return Some(400_000);
    }
    if provider == "openai" && model.starts_with("gpt") {
        return Some(128_000);
    }
    if model.starts_with("llama3.1") || model.starts_with("llama3.2") || model.starts_with("qwen") {
        return Some(128_000);
    }
    (provider == "ollama").then_some(8_192)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_images_follow_the_published_formula() {
        // One token per 28 x 28 patch, a part patch counting whole.
        assert_eq!(ImageCost::Anthropic.tokens(200, 200), 64);
        assert_eq!(ImageCost::Anthropic.tokens(1000, 1000), 36 * 36);
        assert_eq!(ImageCost::Anthropic.tokens(1092, 1092), 39 * 39);
        // A 1920x1080 screenshot is scaled to 1456x819 first.
        assert_eq!(ImageCost::Anthropic.tokens(1920, 1080), 52 * 30);
        // A tall narrow image is limited by its long edge (1568).
        assert_eq!(ImageCost::Anthropic.tokens(100, 3136), 2 * 56);
        assert_eq!(ImageCost::Anthropic.tokens(0, 10), 0);
    }

    #[test]
    fn openai_images_follow_the_tile_formula() {
        // The documented examples: 1024x1024 high -> 765; 2048x4096 -> 1105; low -> 85.
        assert_eq!(ImageCost::OpenAiHigh.tokens(1024, 1024), 765);
        assert_eq!(ImageCost::OpenAiHigh.tokens(2048, 4096), 1105);
        assert_eq!(ImageCost::OpenAiLow.tokens(4096, 4096), 85);
        // Small images are not scaled up: one tile.
        assert_eq!(ImageCost::OpenAiHigh.tokens(300, 200), 255);
        assert_eq!(
            ImageCost::for_provider("ollama").tokens(10, 10),
            OLLAMA_IMAGE_TOKENS
        );
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn image_sizes_come_from_the_headers() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(1920u32.to_be_bytes());
        png.extend(1080u32.to_be_bytes());
        png.extend([8, 6, 0, 0, 0]);
        assert_eq!(image_size(&b64(&png)), Some((1920, 1080)));

        // JPEG: an APP0 segment, then a baseline SOF0 with height 600, width 800.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
        jpeg.extend([0u8; 14]);
        jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03]);
        jpeg.extend([0u8; 12]);
        assert_eq!(image_size(&b64(&jpeg)), Some((800, 600)));
        // A phone's JPEG: 40 kB of EXIF (APP1) before the frame, far past the first bytes.
        let mut phone = vec![0xff, 0xd8, 0xff, 0xe1, 0x9c, 0x42];
        phone.extend(vec![0u8; 0x9c42 - 2]);
        phone.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x0b, 0xd0, 0x0f, 0xc0, 0x03]);
        phone.extend([0u8; 12]);
        assert_eq!(image_size(&b64(&phone)), Some((4032, 3024)));

        let gif = b"GIF89a\x40\x01\xf0\x00".to_vec();
        assert_eq!(image_size(&b64(&gif)), Some((320, 240)));

        assert_eq!(image_size("not base64 !!"), None);
        assert_eq!(
            ImageCost::Anthropic.tokens_for_data(&b64(b"garbage bytes")),
            UNKNOWN_IMAGE_TOKENS
        );
        assert_eq!(
            ImageCost::OpenAiHigh.tokens_for_data(&b64(&png)),
            openai_high_image_tokens(1920, 1080)
        );
    }

    #[test]
    fn text_is_four_characters_a_token() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        let message = Message::user_text("x".repeat(400));
        assert_eq!(
            message_tokens(&message, ImageCost::Anthropic),
            100 + MESSAGE_OVERHEAD
        );
    }
}
