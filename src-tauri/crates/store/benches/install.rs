//! Installing a 20 MB app from a store (issue 3): a real store server on a loopback port, the
//! package published to it (so the store signs it), then the client's whole install: download
//! (size-capped, to a temporary file), verify against the store's key and revocation list (both
//! cached after the first install, as on a person's machine), extract and place. The baseline is
//! `tar xzf` + `sha256sum` of the same package file, run as processes.

#[cfg(unix)]
mod install {
    use std::hint::black_box;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    use criterion::Criterion;
    use osprey_apps::store_client::StoreClient;
    use osprey_apps::trust::Trust;
    use osprey_apps::{Installer, napp};
    use osprey_store::{Store, StoreConfig};
    use serde_json::json;

    const TOKEN: &str = "bench-admin";

    pub fn benches(c: &mut Criterion) {
        let root = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let store = Store::open(StoreConfig {
            data_dir: root.path().join("store"),
            admin_token: TOKEN.into(),
        })
        .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(store.serve(listener));

        let project = root.path().join("project");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(
            project.join("binary"),
            osprey_tests::incompressible_elf(20 * 1024 * 1024),
        )
        .unwrap();
        std::fs::set_permissions(
            project.join("binary"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let manifest =
            json!({"id": "big", "name": "Big", "version": "1.0.0", "provides": ["tool:big"]});
        std::fs::write(project.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(project.join("SKILL.md"), "# big\n").unwrap();
        let mut unsigned = Vec::new();
        napp::pack(&project, &mut unsigned).unwrap();
        let published = runtime.block_on(async {
            reqwest::Client::new()
                .post(format!("{base}/api/v1/apps"))
                .bearer_auth(TOKEN)
                .body(unsigned)
                .send()
                .await
                .unwrap()
                .status()
        });
        assert!(published.is_success(), "{published}");

        let client = StoreClient::new(base.clone());
        let trust = Trust::new(
            client.clone(),
            root.path().join("trust"),
            Duration::from_secs(3600),
        );
        let install = |apps: &std::path::Path| {
            std::fs::create_dir_all(apps).unwrap();
            runtime
                .block_on(client.install("big", &Installer::new(apps), &trust))
                .unwrap()
        };
        // The first install fetches the key and the revocation list; later ones use the cache.
        install(&root.path().join("warm-up"));
        // The signed package as the store serves it, for the baseline.
        let downloads = root.path().join("downloads");
        std::fs::create_dir(&downloads).unwrap();
        let package = downloads.join("big.napp");
        {
            let mut file = runtime
                .block_on(client.download("big", &downloads))
                .unwrap();
            let mut out = std::fs::File::create(&package).unwrap();
            std::io::copy(&mut file, &mut out).unwrap();
        }

        let mut group = c.benchmark_group("store");
        group.sample_size(10);
        group.bench_function("install_20mb_from_store", |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let apps = tempfile::tempdir_in(root.path()).unwrap();
                    let started = Instant::now();
                    black_box(install(apps.path()));
                    total += started.elapsed();
                }
                total
            })
        });
        group.bench_function("tar_xzf_sha256sum_20mb", |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let out = tempfile::tempdir_in(root.path()).unwrap();
                    total += osprey_tests::tar_xzf_sha256sum(&package, out.path());
                }
                total
            })
        });
        group.finish();
    }
}

#[cfg(unix)]
criterion::criterion_group!(benches, install::benches);
#[cfg(unix)]
criterion::criterion_main!(benches);

#[cfg(not(unix))]
fn main() {}
