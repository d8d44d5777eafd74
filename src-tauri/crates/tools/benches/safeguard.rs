//! How long the safeguard takes on a typical command: parse and analyse it, then judge it.
//! The goal is well under 20 µs, since every shell call pays it (twice: before asking and after).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use osprey_tools::security::shell_syntax::analyze;
use osprey_tools::{PathGuard, Safeguard};

const TYPICAL: &str = "git status && cargo test -p osprey-tools 2>&1 | tail -n 20";
const NESTED: &str =
    "cd /tmp/build && bash -c 'rm -rf ./out && make -j4' > log.txt 2>&1; echo $(date)";

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
    c.bench_function("analyze/typical", |b| {
        b.iter(|| analyze(black_box(TYPICAL)))
    });
}

criterion_group!(benches, safeguard);
criterion_main!(benches);
