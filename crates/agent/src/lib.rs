//! The agent: model providers (Anthropic, OpenAI-compatible, Ollama), the turn loop, sessions,
//! memory, skills, the scheduler, sub-agents, and MCP client and server. It must not depend on the
//! apps crate or on Tauri; core adapts apps into providers and hands over the hook dispatcher.
//!
//! Status: not built yet (see the agent issue).
