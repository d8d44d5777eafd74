//! Memory and skills at scale. FTS5 search over 100,000 memories in a SQLite file (a synthetic
//! vocabulary with a skewed word frequency, so common and rare terms both occur), and the skill
//! catalog with 2,500 SKILL.md files on disk: the start-up cost (until chat is usable, which is
//! creating the catalog: no I/O) and the cost of the lazy index built on first use.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use osprey_agent::skills::{Frontmatter, SkillCatalog, SkillDir, SkillSource, write_skill};
use osprey_db::{Database, MemoryLayer, MemoryQuery, NewMemory};

const MEMORIES: usize = 100_000;
const SKILLS: usize = 2_500;

/// A small deterministic generator (no dependency needed for synthetic text).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// A word index skewed towards small numbers (common words).
    fn word(&mut self, vocabulary: u64) -> u64 {
        let a = self.next() % vocabulary;
        let b = self.next() % vocabulary;
        a.min(b)
    }
}

fn memories(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let mut rng = Lcg(42);
    let texts: Vec<String> = (0..MEMORIES)
        .map(|_| {
            let n = 8 + rng.next() % 24;
            (0..n)
                .map(|_| format!("w{}", rng.word(20_000)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let items: Vec<NewMemory<'_>> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| NewMemory {
            layer: MemoryLayer::ALL[i % 3],
            namespace: if i % 2 == 0 { "user" } else { "work" },
            key: None,
            content: t,
            ..NewMemory::default()
        })
        .collect();
    let memory = db.memory();
    for chunk in items.chunks(10_000) {
        memory.store_many(chunk).unwrap();
    }
    let query = MemoryQuery {
        limit: Some(20),
        ..Default::default()
    };
    let mut group = c.benchmark_group("memory_100k");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("search_common_term", |b| {
        b.iter(|| black_box(memory.search("w3", &query).unwrap()))
    });
    group.bench_function("search_two_mid_terms", |b| {
        b.iter(|| black_box(memory.search("w500 w900", &query).unwrap()))
    });
    group.bench_function("search_rare_term_in_namespace", |b| {
        let q = MemoryQuery {
            namespace: Some("work"),
            ..query.clone()
        };
        b.iter(|| black_box(memory.search("w15000", &q).unwrap()))
    });
    group.bench_function("search_hostile_text", |b| {
        b.iter(|| black_box(memory.search("\"w42\" AND NEAR( w7 *", &query).unwrap()))
    });
    group.finish();
}

fn skills(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..SKILLS {
        let front = Frontmatter {
            name: Some(format!("skill-{i:04}")),
            description: Some(format!("Does thing number {i}")),
            triggers: vec![format!("trigger{i}"), format!("do thing {i}")],
        };
        let body = format!("# Skill {i}\n{}", "Step by step instructions.\n".repeat(40));
        write_skill(dir.path(), &format!("skill-{i:04}"), &front, &body).unwrap();
    }
    let dirs = vec![SkillDir::new(dir.path(), SkillSource::User)];
    let mut group = c.benchmark_group("skills_2500");
    group.sample_size(20);
    group.bench_function("startup_catalog_new", |b| {
        b.iter(|| black_box(SkillCatalog::new(dirs.clone())))
    });
    group.bench_function("first_use_index_build", |b| {
        b.iter(|| {
            let catalog = SkillCatalog::new(dirs.clone());
            black_box(catalog.len())
        })
    });
    let catalog = SkillCatalog::new(dirs.clone());
    catalog.len();
    group.bench_function("trigger_match_warm", |b| {
        b.iter(|| black_box(catalog.matching("could you do thing 1234 for me please")))
    });
    group.finish();
}

criterion_group!(benches, memories, skills);
criterion_main!(benches);
