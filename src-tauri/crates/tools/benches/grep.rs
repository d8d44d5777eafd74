//! The file tool's in-process grep (ripgrep's libraries, parallel walk) against `rg` run as a
//! process, on the same pattern over this repository's source. Both honour `.gitignore`, so
//! `target/` and `node_modules/` are skipped by each; the match counts are printed first so
//! the comparison is known to be like for like. Without `rg` on PATH the comparison is skipped
//! with a note.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use osprey_tools::file::FileTool;
use osprey_tools::{Call, DomainTool, PathGuard, ToolContext};
use osprey_types::Origin;
use serde_json::json;

const PATTERN: &str = r"fn\s+\w+";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn rg() -> Option<PathBuf> {
    let candidates = [PathBuf::from("/usr/bin/rg"), PathBuf::from("rg")];
    candidates.into_iter().find(|rg| {
        Command::new(rg)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn rg_search(rg: &Path, root: &Path) -> Vec<u8> {
    Command::new(rg)
        .args(["-n", "--no-heading", "--color", "never", PATTERN])
        .arg(root)
        .output()
        .expect("rg runs")
        .stdout
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    tool: FileTool,
    call: Call,
    ctx: ToolContext,
}

impl Setup {
    fn new(root: &Path) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let data_dir = std::env::temp_dir().join("osprey-grep-bench-data");
        let tool = FileTool::new(PathGuard::new(home, data_dir));
        let call = tool
            .domain()
            .resolve(json!({
                "action": "grep",
                "pattern": PATTERN,
                "path": root,
                "limit": 100_000_000u64,
            }))
            .expect("a valid call");
        Setup {
            runtime: tokio::runtime::Runtime::new().expect("a runtime"),
            tool,
            call,
            ctx: ToolContext::new(Origin::User, Duration::from_secs(24 * 3600)),
        }
    }

    fn grep(&self) -> String {
        let result = self
            .runtime
            .block_on(self.tool.run(&self.ctx, self.call.clone()));
        assert!(!result.is_error, "{}", result.text_content());
        result.text_content()
    }
}

/// Mean wall time of `runs` calls, after one warm-up.
fn mean(runs: u32, mut f: impl FnMut()) -> Duration {
    f();
    let started = Instant::now();
    for _ in 0..runs {
        f();
    }
    started.elapsed() / runs
}

fn bench(c: &mut Criterion) {
    let root = workspace_root();
    let setup = Setup::new(&root);
    let tool_output = setup.grep();
    let tool_matches = tool_output.lines().filter(|l| !l.starts_with('[')).count();
    let rg = rg();
    match &rg {
        Some(rg) => {
            let rg_matches = rg_search(rg, &root)
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count();
            println!(
                "grep /{PATTERN}/ over {}: file tool {tool_matches} matching lines, rg {rg_matches}",
                root.display()
            );
        }
        None => println!(
            "rg is not installed; benchmarking the file tool alone ({tool_matches} matching lines)"
        ),
    }

    let mut group = c.benchmark_group("grep");
    group.sample_size(10);
    group.bench_function("file_tool", |b| b.iter(|| black_box(setup.grep())));
    if let Some(rg) = &rg {
        group.bench_function("rg_process", |b| b.iter(|| black_box(rg_search(rg, &root))));
    }
    group.finish();

    if let Some(rg) = &rg {
        // A plain summary line, since criterion reports each benchmark separately.
        let tool_time = mean(5, || {
            black_box(setup.grep());
        });
        let rg_time = mean(5, || {
            black_box(rg_search(rg, &root));
        });
        println!(
            "file tool {:.1} ms, rg {:.1} ms: the file tool takes {:.2}x rg's time",
            tool_time.as_secs_f64() * 1000.0,
            rg_time.as_secs_f64() * 1000.0,
            tool_time.as_secs_f64() / rg_time.as_secs_f64()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
