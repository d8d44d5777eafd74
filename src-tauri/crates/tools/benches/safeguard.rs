//! How long the safeguard takes on a typical command: parse and analyse it, then judge it.
//! The goal is well under 20 µs, since every shell call pays it (twice: before asking and after).
//! `safeguard/short` against `safeguard/pipeline-40` shows how the cost grows with the command:
//! a single `ls -la` against a 40-stage pipeline with command substitutions, each judged
//! (blocked shapes and the reasons to ask) as the registry does for every call.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use osprey_tools::security::shell_syntax::analyze;
use osprey_tools::{PathGuard, Safeguard};

const TYPICAL: &str = "git status && cargo test -p osprey-tools 2>&1 | tail -n 20";
const NESTED: &str =
    "cd /tmp/build && bash -c 'rm -rf ./out && make -j4' > log.txt 2>&1; echo $(date)";

const SHORT: &str = "ls -la";

/// A 40-stage pipeline, every stage with a substitution and a path to judge.
fn long_pipeline() -> String {
    (0..40)
        .map(|i| match i % 4 {
            0 => format!("grep -n \"$(echo pattern{i})\" src/file{i}.rs"),
            1 => format!("sed -e 's/a{i}/b/' \"$(basename ./dir/x{i})\""),
            2 => format!("sort -u -k{i} > /tmp/out{i}.txt"),
            _ => format!("awk '{{print ${}}}' $(ls ./logs/{i})", i % 9 + 1),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn safeguard(c: &mut Criterion) {
    let guard = Safeguard::new(PathGuard::new(
        Some(PathBuf::from("/home/tester")),
        PathBuf::from("/home/tester/.local/share/osprey"),
    ));
    c.bench_function("safeguard/typical", |b| {
        b.iter(|| guard.check_command(&analyze(black_box(TYPICAL))))
    });
    c.bench_function("safeguard/nested", |b| {
        b.iter(|| guard.check_command(&analyze(black_box(NESTED))))
    });
    let judge = |command: &str| {
        let analysis = analyze(command);
        let blocked = guard.check_command(&analysis).is_err();
        (blocked, guard.must_ask(&analysis, None))
    };
    c.bench_function("safeguard/short", |b| b.iter(|| judge(black_box(SHORT))));
    let pipeline = long_pipeline();
    c.bench_function("safeguard/pipeline-40", |b| {
        b.iter(|| judge(black_box(&pipeline)))
    });
    c.bench_function("analyze/typical", |b| {
        b.iter(|| analyze(black_box(TYPICAL)))
    });
}

criterion_group!(benches, safeguard);
criterion_main!(benches);
