//! Turning a response body into [`StreamEvent`]s: SSE (through `eventsource-stream`) and NDJSON
//! framing, and the driver that feeds frames to a wire format's decoder and notices a stream that
//! ends before the provider said it was done (a mid-stream disconnect).

use std::collections::VecDeque;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};

use crate::message::StreamEvent;
use crate::provider::{EventStream, network};
use crate::{Error, Result};

/// A wire format's frame decoder.
pub(crate) trait Decoder: Send + 'static {
    type Frame: Send;
    fn decode(&mut self, frame: Self::Frame, out: &mut Vec<StreamEvent>) -> Result<()>;
    /// The provider said the response is complete; later bytes are ignored.
    fn complete(&self) -> bool;
    /// The body ended. `Err` when it ended before the provider finished.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<()>;
}

/// An SSE frame: the event name (empty for unnamed) and its data.
pub(crate) struct SseFrame {
    pub event: String,
    pub data: String,
}

/// The SSE frames of a response body.
pub(crate) fn sse_frames(
    response: reqwest::Response,
) -> impl Stream<Item = Result<SseFrame>> + Send + 'static {
    response
        .bytes_stream()
        .eventsource()
        .map(|item| match item {
            Ok(event) => Ok(SseFrame {
                event: event.event,
                data: event.data,
            }),
            Err(eventsource_stream::EventStreamError::Transport(error)) => Err(network(error)),
            Err(other) => Err(Error::Protocol(other.to_string())),
        })
}

/// The lines of an NDJSON response body (empty lines skipped; a last line without a newline
/// counts).
pub(crate) fn ndjson_lines(
    response: reqwest::Response,
) -> impl Stream<Item = Result<String>> + Send + 'static {
    struct State<S> {
        body: S,
        buffer: Vec<u8>,
        lines: VecDeque<String>,
        ended: bool,
    }
    let state = State {
        body: response.bytes_stream(),
        buffer: Vec::new(),
        lines: VecDeque::new(),
        ended: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(line) = state.lines.pop_front() {
                return Some((Ok(line), state));
            }
            if state.ended {
                return None;
            }
            match state.body.next().await {
                Some(Ok(bytes)) => {
                    state.buffer.extend_from_slice(&bytes);
                    while let Some(pos) = state.buffer.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = state.buffer.drain(..=pos).collect();
                        let text = String::from_utf8_lossy(&line).trim().to_string();
                        if !text.is_empty() {
                            state.lines.push_back(text);
                        }
                    }
                }
                Some(Err(error)) => {
                    state.ended = true;
                    return Some((Err(network(error)), state));
                }
                None => {
                    state.ended = true;
                    let text = String::from_utf8_lossy(&state.buffer).trim().to_string();
                    state.buffer.clear();
                    if !text.is_empty() {
                        state.lines.push_back(text);
                    }
                }
            }
        }
    })
}

/// Feeds frames to `decoder` and yields its events; the first error ends the stream.
pub(crate) fn drive<S, D>(frames: S, decoder: D) -> EventStream
where
    S: Stream<Item = Result<D::Frame>> + Send + 'static,
    D: Decoder,
{
    struct State<S, D> {
        frames: std::pin::Pin<Box<S>>,
        decoder: D,
        queue: VecDeque<Result<StreamEvent>>,
        done: bool,
    }
    let state = State {
        frames: Box::pin(frames),
        decoder,
        queue: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.done {
                return None;
            }
            let mut out = Vec::new();
            let outcome = match state.frames.next().await {
                Some(Ok(frame)) => {
                    let result = state.decoder.decode(frame, &mut out);
                    if state.decoder.complete() {
                        state.done = true;
                    }
                    result
                }
                Some(Err(error)) => Err(error),
                None => {
                    state.done = true;
                    state.decoder.end(&mut out)
                }
            };
            state.queue.extend(out.into_iter().map(Ok));
            if let Err(error) = outcome {
                state.done = true;
                state.queue.push_back(Err(error));
            }
        }
    })
    .boxed()
}

/// The error for a body that ended before the provider finished.
pub(crate) fn disconnected(what: &str) -> Error {
    Error::Network(format!(
        "the connection closed mid-response (no {what} was received)"
    ))
}
