//! Start-up with 150 installed apps and 2,500 skills on disk (issues 3 and 5): the time until
//! the registry is ready, which is `Core::open` returning (apps launch later, in the background,
//! from `start_apps`; skills are indexed on first use), the first index of all the skills (what
//! the first chat turn pays), and the `app` tool's listing of all 150 installed apps with no
//! supervisor running.

#[cfg(unix)]
mod startup {
    use std::hint::black_box;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use criterion::Criterion;
    use osprey_core::{Core, CoreOptions};
    use osprey_types::Origin;
    use serde_json::json;

    const APPS: usize = 150;
    const SKILLS: usize = 2_500;

    fn write_skills(skills_dir: &Path) {
        for n in 0..SKILLS {
            let dir = skills_dir.join(format!("skill-{n:04}"));
            std::fs::create_dir_all(&dir).unwrap();
            let body = format!(
                "---\nname: skill-{n:04}\ndescription: Bench skill number {n}\ntriggers: [\"topic{n}\", \"task {n}\"]\n---\n\n# Skill {n}\n\n{}",
                "Steps to follow. ".repeat(20)
            );
            std::fs::write(dir.join("SKILL.md"), body).unwrap();
        }
    }

    fn install_apps(apps_dir: &Path) {
        for n in 0..APPS {
            let id = format!("app-{n:03}");
            let dir = apps_dir.join(&id);
            std::fs::create_dir_all(&dir).unwrap();
            let manifest = json!({
                "id": id,
                "name": format!("Bench {id}"),
                "version": "1.0.0",
                "provides": ["tool:fixture"],
            });
            std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
            std::fs::write(dir.join("SKILL.md"), "# bench\n").unwrap();
            std::fs::copy("/bin/true", dir.join("binary")).unwrap();
            std::fs::set_permissions(dir.join("binary"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
    }

    fn open(data: &Path) -> Core {
        Core::open(CoreOptions {
            data_dir: Some(data.to_path_buf()),
            policy: None,
            ..CoreOptions::default()
        })
        .unwrap()
    }

    pub fn benches(c: &mut Criterion) {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        install_apps(&data.join("apps"));
        write_skills(&data.join("skills"));
        // The first open creates the database; the benchmark measures a warm start.
        drop(open(&data));

        c.bench_function("core_open_150_apps_2500_skills_registry_ready", |b| {
            b.iter(|| black_box(open(&data)));
        });
        c.bench_function("core_open_then_first_index_of_2500_skills", |b| {
            b.iter(|| {
                let core = open(&data);
                let skills = core.skills().catalog().len();
                assert!(skills >= SKILLS, "{skills}");
                black_box(core)
            });
        });

        let core = open(&data);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        c.bench_function("app_list_150_apps", |b| {
            b.iter(|| {
                let result = runtime.block_on(core.call_tool(
                    Origin::User,
                    "app",
                    json!({"action": "list"}),
                ));
                assert!(!result.is_error, "{result:?}");
                black_box(result)
            });
        });
    }
}

#[cfg(unix)]
criterion::criterion_group!(benches, startup::benches);
#[cfg(unix)]
criterion::criterion_main!(benches);

#[cfg(not(unix))]
fn main() {}
