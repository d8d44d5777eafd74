//! Runner overhead, excluding the model: an in-process provider replays a two-step turn (one tool
//! call, then an answer) instantly, with 30 tools registered and the session in a SQLite file, so
//! what is left is the runner's own work (prompt, request building, persistence of every message
//! and call, the registry's seven steps). The baseline replays the same events without a runner.
//! Also: first-token passthrough, the time from the provider yielding a text delta to the
//! runner's event reaching a listener; the same turn with every prompt section filled (2,500
//! skills on disk matched against the message, 1,000 memories searched, an apps section); and
//! start-up with 2,500 skills: opening the catalog and playing the first turn (which builds the
//! index and the first prompt) until the answer is back.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;
use futures::{StreamExt, stream};
use osprey_agent::skills::{Frontmatter, SkillCatalog, SkillDir, SkillSource, Skills, write_skill};
use osprey_agent::{
    AgentEvent, ChatRequest, EventStream, Provider, Runner, RunnerConfig, StopReason, StreamEvent,
    TurnRequest, Usage,
};
use osprey_db::{MemoryLayer, NewMemory};
use osprey_tools::domain::Domain;
use osprey_tools::{
    ApprovalNeed, Call, CallFacts, DomainTool, FieldType, Level, Policy, Registry, RegistryConfig,
    ToolContext,
};
use osprey_types::ToolResult;
use tokio::sync::{Notify, mpsc};

struct Noop {
    domain: Domain,
}

impl DomainTool for Noop {
    fn domain(&self) -> &Domain {
        &self.domain
    }
    fn facts(&self, _call: &Call) -> CallFacts {
        CallFacts::default()
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { ToolResult::text("ok") })
    }
}

fn tool_step() -> Vec<StreamEvent> {
    vec![
        StreamEvent::Usage(Usage {
            input_tokens: 100,
            output_tokens: 1,
        }),
        StreamEvent::TextDelta("Looking.".into()),
        StreamEvent::ToolCallStart {
            index: 0,
            id: "call_1".into(),
            name: "tool07".into(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            json: r#"{"action": "poke", "#.into(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            json: r#""q": "x"}"#.into(),
        },
        StreamEvent::ToolCallEnd { index: 0 },
        StreamEvent::Stop(StopReason::ToolUse),
    ]
}

fn answer_step() -> Vec<StreamEvent> {
    let mut events: Vec<StreamEvent> = (0..20)
        .map(|i| StreamEvent::TextDelta(format!("word{i} ")))
        .collect();
    events.push(StreamEvent::Stop(StopReason::EndTurn));
    events
}

/// Replays a tool step then an answer step, alternately.
struct Replay {
    calls: AtomicUsize,
}

impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }
    fn stream(&self, _request: ChatRequest) -> BoxFuture<'_, osprey_agent::Result<EventStream>> {
        let events = if self.calls.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            tool_step()
        } else {
            answer_step()
        };
        Box::pin(async move { Ok(stream::iter(events.into_iter().map(Ok)).boxed()) })
    }
}

/// Yields one text delta (noting when), then waits until the listener has seen it.
struct FirstToken {
    yielded: Arc<Mutex<Option<Instant>>>,
    seen: Arc<Notify>,
}

impl Provider for FirstToken {
    fn name(&self) -> &str {
        "first-token"
    }
    fn stream(&self, _request: ChatRequest) -> BoxFuture<'_, osprey_agent::Result<EventStream>> {
        let yielded = self.yielded.clone();
        let seen = self.seen.clone();
        Box::pin(async move {
            let first = stream::once(async move {
                *yielded.lock().unwrap() = Some(Instant::now());
                Ok(StreamEvent::TextDelta("Hi".into()))
            });
            let rest = stream::once(async move {
                seen.notified().await;
                Ok(StreamEvent::Stop(StopReason::EndTurn))
            });
            Ok(first.chain(rest).boxed())
        })
    }
}

fn registry(dir: &std::path::Path) -> Registry {
    let registry = Registry::new(RegistryConfig {
        output_cap: 64 * 1024,
        ..RegistryConfig::new(Policy::at_level(Level::Full), dir)
    });
    for i in 0..30 {
        registry.register_domain(Noop {
            domain: Domain::new(format!("tool{i:02}"), "A no-op tool for the benchmark")
                .resource("thing", &[], &[("poke", "Poke it", ApprovalNeed::Required)])
                .field("q", FieldType::String, "Anything"),
        });
    }
    registry
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = osprey_db::Database::open_in(dir.path()).unwrap();
    let registry = registry(dir.path());
    let config = RunnerConfig {
        model: "bench".into(),
        ..RunnerConfig::default()
    };
    let runner = Runner::new(
        Arc::new(Replay {
            calls: AtomicUsize::new(0),
        }),
        registry.clone(),
        db.sessions(),
        config.clone(),
    );
    let mut group = c.benchmark_group("runner");
    let mut session = 0u64;
    group.bench_function("two_step_turn_30_tools", |b| {
        b.iter(|| {
            session += 1;
            let outcome = runtime
                .block_on(runner.run_turn(TurnRequest::new(format!("s{session}"), "go")))
                .unwrap();
            black_box(outcome);
        })
    });
    // The model's part alone: the same two streams, consumed.
    let replay = Replay {
        calls: AtomicUsize::new(0),
    };
    let request = ChatRequest {
        model: "bench".into(),
        system: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
        max_tokens: 1,
    };
    group.bench_function("provider_streams_only", |b| {
        b.iter(|| {
            runtime.block_on(async {
                for _ in 0..2 {
                    let mut events = replay.stream(request.clone()).await.unwrap();
                    while let Some(event) = events.next().await {
                        black_box(event.unwrap());
                    }
                }
            })
        })
    });

    let yielded = Arc::new(Mutex::new(None));
    let seen = Arc::new(Notify::new());
    let first = Runner::new(
        Arc::new(FirstToken {
            yielded: yielded.clone(),
            seen: seen.clone(),
        }),
        registry.clone(),
        db.sessions(),
        config.clone(),
    );
    // Every section filled.
    let skill_dir = dir.path().join("skills");
    for i in 0..2_500 {
        let front = Frontmatter {
            name: Some(format!("skill-{i:04}")),
            description: Some(format!("Skill number {i} for topic{i}")),
            triggers: vec![format!("topic{i}"), format!("task number {i}")],
        };
        let body = format!("# Skill {i}\n{}", "Step by step instructions.\n".repeat(40));
        write_skill(&skill_dir, &format!("skill-{i:04}"), &front, &body).unwrap();
    }
    let contents: Vec<String> = (0..1_000)
        .map(|i| format!("memory {i} about project{} and person{}", i % 37, i % 11))
        .collect();
    let memories: Vec<NewMemory<'_>> = contents
        .iter()
        .enumerate()
        .map(|(i, content)| NewMemory {
            layer: if i % 100 == 0 {
                MemoryLayer::Tacit
            } else {
                MemoryLayer::Daily
            },
            namespace: "default",
            key: None,
            content,
            ..NewMemory::default()
        })
        .collect();
    db.memory().store_many(&memories).unwrap();
    let skill_dirs = vec![SkillDir::new(&skill_dir, SkillSource::User)];
    let full = Runner::new(
        Arc::new(Replay {
            calls: AtomicUsize::new(0),
        }),
        registry.clone(),
        db.sessions(),
        config.clone(),
    );
    let skills = Skills::new(SkillCatalog::new(skill_dirs.clone()), None);
    skills.catalog().warm_in_background().join().unwrap();
    full.set_skills(skills);
    full.set_memory(db.memory());
    full.set_installed_apps(Arc::new(|| {
        Box::pin(async { "## Installed apps\n- Weather (weather 1.0.0): forecasts".to_string() })
    }));
    group.bench_function("two_step_turn_30_tools_all_sections", |b| {
        b.iter(|| {
            session += 1;
            let outcome = runtime
                .block_on(full.run_turn(TurnRequest::new(
                    format!("p{session}"),
                    "go on with project7 for person3",
                )))
                .unwrap();
            black_box(outcome);
        })
    });

    // Start-up: a catalog over 2,500 skills nobody has read yet, then the first turn (the
    // replayed model answers at once) builds the index and the prompt.
    group.sample_size(10);
    group.bench_function("startup_2500_skills_first_turn", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                session += 1;
                let runner = Runner::new(
                    Arc::new(Replay {
                        calls: AtomicUsize::new(1),
                    }),
                    registry.clone(),
                    db.sessions(),
                    config.clone(),
                );
                let started = Instant::now();
                let skills = Skills::new(SkillCatalog::new(skill_dirs.clone()), None);
                runner.set_skills(skills);
                let outcome = runtime
                    .block_on(runner.run_turn(TurnRequest::new(format!("u{session}"), "hi")))
                    .unwrap();
                total += started.elapsed();
                black_box(outcome);
            }
            total
        })
    });
    group.sample_size(100);

    group.bench_function("first_token_passthrough", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                session += 1;
                let (events, mut received) = mpsc::unbounded_channel();
                let mut turn = TurnRequest::new(format!("f{session}"), "hi");
                turn.events = Some(events);
                let first = first.clone();
                total += runtime.block_on(async {
                    let task = tokio::spawn(async move { first.run_turn(turn).await });
                    let latency = loop {
                        match received.recv().await {
                            Some(AgentEvent::TextDelta(_)) => {
                                let at = Instant::now();
                                break at - yielded.lock().unwrap().take().unwrap();
                            }
                            Some(_) => continue,
                            None => panic!("the turn ended without text"),
                        }
                    };
                    seen.notify_one();
                    task.await.unwrap().unwrap();
                    latency
                });
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
