//! The provider-neutral conversation: messages made of parts, tool specs, the request a provider
//! turns into its wire format, and the events a provider streams back.

use osprey_types::ContentBlock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message. Tool results travel in `user` messages (as the Anthropic API has them);
/// providers with a `tool` role split them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One part of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// Base64 image bytes.
    Image {
        mime_type: String,
        data: String,
    },
    /// The model's reasoning, kept so providers that sign it (Anthropic) get it back verbatim.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        call_id: String,
        content: Vec<ContentBlock>,
        is_error: bool,
    },
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Part>,
}

/// An image the person attached to their message (a window snapshot), base64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputImage {
    pub mime_type: String,
    pub data: String,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Part::Text { text: text.into() }],
        }
    }

    /// The person's message with the images they attached, the images first (as the providers
    /// advise: the question then reads with the image already seen).
    pub fn user_with_images(text: impl Into<String>, images: &[InputImage]) -> Self {
        let mut content: Vec<Part> = images
            .iter()
            .map(|image| Part::Image {
                mime_type: image.mime_type.clone(),
                data: image.data.clone(),
            })
            .collect();
        content.push(Part::Text { text: text.into() });
        Message {
            role: Role::User,
            content,
        }
    }

    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![Part::Text { text: text.into() }],
        }
    }

    /// The text parts joined (thinking, tool calls and images left out).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolCall { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// A tool as the model is told about it (its schema in the portable dialect).
pub use osprey_tools::ToolSpec;

/// Everything a provider needs for one model call.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    /// A refusal or anything else the provider named.
    Other(String),
}

/// Token counts for one model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What a provider streams. Tool calls are identified by `index` (their position among the
/// message's tool calls) so argument deltas of parallel calls can interleave.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    /// An opaque signature over the thinking so far (Anthropic).
    ThinkingSignature(String),
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A fragment of the call's JSON arguments.
    ToolCallDelta {
        index: usize,
        json: String,
    },
    ToolCallEnd {
        index: usize,
    },
    /// Counts so far (providers may send several; later ones replace earlier fields that are
    /// non-zero).
    Usage(Usage),
    Stop(StopReason),
}
