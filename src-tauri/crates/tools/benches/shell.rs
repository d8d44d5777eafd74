//! The kernel sandbox's cost per shell command: `true` run by the shell tool through the
//! `osprey-sandbox` launcher (policy built, landlock rules for the readable tree, seccomp, exec)
//! against the same command run unsandboxed, in the same process, and the share of it spent
//! building the policy here. Goal: under 5 ms added.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use osprey_tools::shell::{ShellConfig, ShellSandbox, ShellTool};
use osprey_tools::{DomainTool, ToolContext};
use osprey_types::Origin;
use serde_json::json;

fn run_true(runtime: &tokio::runtime::Runtime, tool: &ShellTool) {
    let call = tool
        .domain()
        .resolve(json!({"action": "exec", "command": "true", "yield_ms": 0}))
        .expect("a valid call");
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30));
    let result = runtime.block_on(tool.run(&ctx, call));
    assert!(
        result.text_content().contains("exit code 0"),
        "{}",
        result.text_content()
    );
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let launcher = osprey_tests::build_sandbox_launcher();
    let sandboxed = ShellTool::new(ShellConfig {
        sandbox: ShellSandbox {
            launcher: Some(launcher),
            ..ShellSandbox::default()
        },
        ..ShellConfig::default()
    });
    let plain = ShellTool::new(ShellConfig {
        sandbox: ShellSandbox::off(),
        ..ShellConfig::default()
    });
    let mut group = c.benchmark_group("shell");
    group.bench_function("true_sandboxed", |b| {
        b.iter(|| run_true(&runtime, &sandboxed))
    });
    group.bench_function("true_unsandboxed", |b| {
        b.iter(|| run_true(&runtime, &plain))
    });
    // The part of the sandbox's cost spent in this process: the readable tree around the hidden
    // paths and the policy's JSON, built for every command.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    group.bench_function("policy_for_shell", |b| {
        b.iter(|| {
            let mut hidden = osprey_tools::security::paths::secret_paths(home.as_deref());
            hidden.push(std::path::PathBuf::from("/tmp/osprey-bench-data"));
            let policy = osprey_sandbox::Policy::for_shell(&osprey_sandbox::ShellScope {
                program: "/bin/bash".into(),
                args: vec!["-c".into(), "true".into()],
                writable: vec![std::env::temp_dir()],
                hidden,
                network: true,
                ..osprey_sandbox::ShellScope::default()
            });
            std::hint::black_box(policy.to_arguments())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
