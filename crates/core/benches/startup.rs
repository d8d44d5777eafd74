//! Start-up with 150 installed apps (issue 3): the time until the registry is ready, which is
//! `Core::open` returning (apps launch later, in the background, from `start_apps`), and the
//! `app` tool's listing of all 150 installed apps with no supervisor running.

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
        })
        .unwrap()
    }

    pub fn benches(c: &mut Criterion) {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        install_apps(&data.join("apps"));
        // The first open creates the database; the benchmark measures a warm start.
        drop(open(&data));

        c.bench_function("core_open_150_apps_registry_ready", |b| {
            b.iter(|| black_box(open(&data)));
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
