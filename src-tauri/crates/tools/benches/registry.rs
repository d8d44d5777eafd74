//! Registry overhead: a no-op domain tool called through all seven steps (name, validation,
//! hook check, origin rules, policy, safeguard, execution with deadline, audit row handed to the
//! SQLite writer), against calling the same tool directly in the same process.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::future::BoxFuture;
use osprey_tools::domain::Domain;
use osprey_tools::{
    ApprovalNeed, AuditSink, Call, CallFacts, DomainTool, FieldType, Level, OriginRules, PathGuard,
    Policy, PolicyConfig, Registry, RegistryConfig, Safeguard, Tool, ToolContext,
};
use osprey_types::{Origin, ToolResult};
use serde_json::json;

struct Noop {
    domain: Domain,
}

impl DomainTool for Noop {
    fn domain(&self) -> &Domain {
        &self.domain
    }
    fn facts(&self, call: &Call) -> CallFacts {
        CallFacts {
            summary: call.str("path").unwrap_or_default().to_string(),
            ..Default::default()
        }
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext, _call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { ToolResult::text("ok") })
    }
}

fn noop() -> Noop {
    Noop {
        domain: Domain::new("noop", "Does nothing")
            .resource("thing", &[], &[("poke", "Poke it", ApprovalNeed::Required)])
            .field("path", FieldType::String, "A path")
            .required_for(&["poke"]),
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = osprey_db::Database::open_in(dir.path()).unwrap();
    let registry = Registry::new(RegistryConfig {
        policy: Policy::new(
            PolicyConfig {
                level: Level::Full,
                ..Default::default()
            },
            Some(db.grants()),
        )
        .unwrap(),
        origin_rules: OriginRules::default(),
        safeguard: Safeguard::new(PathGuard::new(
            Some("/home/bench".into()),
            dir.path().join("data"),
        )),
        audit: AuditSink::new(db.audit()),
        output_cap: osprey_tools::registry::DEFAULT_OUTPUT_CAP,
    });
    registry.register_domain(noop());
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(60));
    let input = json!({"action": "poke", "path": "/tmp/x"});

    let mut group = c.benchmark_group("registry");
    group.bench_function("direct_tool_call", |b| {
        let tool = osprey_tools::tool::DomainAdapter::new(noop());
        b.iter(|| {
            let call = Call {
                resource: Some("thing".into()),
                action: Some("poke".into()),
                input: input.as_object().unwrap().clone(),
            };
            runtime.block_on(tool.execute(&ctx, black_box(call)))
        })
    });
    group.bench_function("noop_through_seven_steps", |b| {
        b.iter(|| runtime.block_on(registry.execute(&ctx, "noop", black_box(input.clone()))))
    });
    group.finish();
    registry.audit().flush();
}

criterion_group!(benches, bench);
criterion_main!(benches);
