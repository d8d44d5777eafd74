//! Benchmarks of the snapshot pipeline on a real display, with the peers' way of doing the same
//! thing run in the same process for ratios: `xwd -root` and `import -window root` for capture,
//! `import` plus a python3 pyatspi walk for `see`, and the image crate's default PNG encoder.
//! Run in release only: `cargo bench -p osprey-screen --bench pipeline`. The display is the
//! one in `DISPLAY` (plus `DBUS_SESSION_BUS_ADDRESS`), or a private 1920x1080 Xvfb.

#[allow(dead_code)]
#[path = "../tests/display/harness.rs"]
mod harness;

use std::io::Cursor;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use osprey_screen::accessibility::TreeLimits;
use osprey_screen::render::{Quality, encode};
use osprey_screen::{Desktop, SeeOptions, SeeTarget};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Counts tokens with the browser bench's Node peer (`tokens.mjs`: Anthropic's tokenizer and
/// OpenAI's o200k), one `[claude, o200k]` per text; `None` (with the reason printed) when its
/// modules are not installed.
fn count_tokens(texts: &[&str]) -> Option<Vec<[f64; 2]>> {
    use std::io::Write;
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../browser/benches/playwright");
    if !dir.join("node_modules/gpt-tokenizer").exists() {
        eprintln!(
            "see tokens: not counted; run `npm ci --prefix {}`",
            dir.display()
        );
        return None;
    }
    let mut child = Command::new("node")
        .arg(dir.join("tokens.mjs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    for text in texts {
        writeln!(stdin, "{}", serde_json::to_string(text).ok()?).ok()?;
    }
    drop(stdin);
    let output = child.wait_with_output().ok()?;
    let counts: Vec<[f64; 2]> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.strip_prefix("ok ")?.split(' ');
            Some([words.next()?.parse().ok()?, words.next()?.parse().ok()?])
        })
        .collect();
    (counts.len() == texts.len()).then_some(counts)
}

/// What one `see` costs a model: its text in tokens (the element list without boxes, as the
/// agent gets it, against the same list with each element's screen box), and its image by
/// Anthropic's published rule (a token per 28 x 28 px patch, for an image it takes as it is).
fn print_see_tokens(seen: &osprey_screen::Seen, boxed_text: &str) {
    let Some(counts) = count_tokens(&[&seen.text, boxed_text]) else {
        return;
    };
    let image = osprey_types::model_image_patches(seen.width, seen.height) as f64;
    let [text, boxed] = [counts[0], counts[1]];
    println!(
        "see tokens of the {}-element window (Anthropic's tokenizer / OpenAI's o200k): text {:.0} / \
         {:.0}, with the boxes {:.0} / {:.0} ({:.2}x / {:.2}x); with the {}x{} image (~{image:.0} \
         tokens) {:.0} against {:.0} ({:.2}x)",
        seen.snapshot.elements.len(),
        text[0],
        text[1],
        boxed[0],
        boxed[1],
        text[0] / boxed[0],
        text[1] / boxed[1],
        seen.width,
        seen.height,
        text[0] + image,
        boxed[0] + image,
        (text[0] + image) / (boxed[0] + image),
    );
}

fn median(mut run: impl FnMut(), samples: usize) -> Duration {
    run(); // warm up
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn run_quietly(command: &mut Command) {
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("starting a baseline program");
    assert!(status.success(), "{command:?} failed");
}

fn big_form(environment: &harness::Environment) -> harness::FixtureApp {
    harness::FixtureApp::form(
        environment,
        "bench",
        &["--buttons", "190", "--width", "1900", "--height", "1000"],
    )
}

fn pipeline(c: &mut Criterion) {
    let (environment, _lock) = harness::environment();
    let desktop: Desktop = environment.desktop();
    let rt = runtime();
    let screen = desktop.capture().screen_bounds().unwrap();
    c.bench_function("capture full screen", |b| {
        b.iter(|| desktop.capture().capture_region(screen).unwrap())
    });
    let app = big_form(environment);
    let target = SeeTarget::WindowTitle(app.title.clone());
    c.bench_function("accessibility tree, 200-element window", |b| {
        b.iter(|| {
            rt.block_on(desktop.tree(&app.window, TreeLimits::default()))
                .unwrap()
        })
    });
    c.bench_function("see, 200-element window", |b| {
        b.iter(|| {
            rt.block_on(desktop.see(&target, SeeOptions::default()))
                .unwrap()
        })
    });
    let frame = desktop.capture().capture_region(screen).unwrap();
    let mut group = c.benchmark_group("encode full screen");
    group.sample_size(20);
    group.bench_function("png fast (default tier)", |b| {
        b.iter(|| encode(&frame, Quality::Fast).unwrap())
    });
    group.bench_function("jpeg 80 (small tier)", |b| {
        b.iter(|| encode(&frame, Quality::Small).unwrap())
    });
    group.bench_function("png deflate default (lossless tier)", |b| {
        b.iter(|| encode(&frame, Quality::Lossless).unwrap())
    });
    group.finish();
}

/// Medians of ours and the peers' in one run, printed as a table with ratios.
fn ratios() {
    let (environment, _lock) = harness::environment();
    let desktop = environment.desktop();
    let rt = runtime();
    let display = environment.display.clone();
    let screen = desktop.capture().screen_bounds().unwrap();
    let mut rows: Vec<(String, Duration, String, Duration)> = Vec::new();

    let ours = median(
        || drop(desktop.capture().capture_region(screen).unwrap()),
        30,
    );
    let x11 = osprey_screen::capture::PlatformCapture::connect(Some(&display)).unwrap();
    let socket = median(|| drop(x11.capture_over_socket(screen).unwrap()), 30);
    eprintln!(
        "capture: shared memory {}; GetImage over the socket {:.2} ms",
        x11.uses_shared_memory(),
        socket.as_secs_f64() * 1000.0
    );
    let xwd = median(
        || {
            run_quietly(Command::new("xwd").args([
                "-root",
                "-silent",
                "-display",
                &display,
                "-out",
                "/dev/null",
            ]))
        },
        10,
    );
    rows.push((
        format!("capture {}x{}", screen.width, screen.height),
        ours,
        "xwd -root".into(),
        xwd,
    ));
    let import = median(
        || {
            run_quietly(Command::new("import").args([
                "-display",
                &display,
                "-window",
                "root",
                "png:/dev/null",
            ]))
        },
        5,
    );
    rows.push(("".into(), ours, "import -window root".into(), import));
    rows.push(("".into(), ours, "GetImage over the socket".into(), socket));
    // What any helper process pays before it reads a pixel: fork + exec of a do-nothing program.
    let spawn = median(|| run_quietly(&mut Command::new("true")), 20);
    rows.push(("".into(), ours, "process start (`true`)".into(), spawn));

    let app = big_form(environment);
    let target = SeeTarget::WindowTitle(app.title.clone());
    let seen = rt
        .block_on(desktop.see(&target, SeeOptions::default()))
        .unwrap();
    let tree = rt
        .block_on(desktop.tree(&app.window, TreeLimits::default()))
        .unwrap();
    eprintln!(
        "see: {} elements with IDs from {} nodes; stages {:?}",
        seen.snapshot.elements.len(),
        tree.nodes.len(),
        seen.timings
    );
    let boxed = rt
        .block_on(desktop.see(
            &target,
            SeeOptions {
                bounds: true,
                ..SeeOptions::default()
            },
        ))
        .unwrap();
    print_see_tokens(&seen, &boxed.text);
    let see = median(
        || {
            drop(
                rt.block_on(desktop.see(&target, SeeOptions::default()))
                    .unwrap(),
            )
        },
        15,
    );
    // The same see without the AT-SPI fast paths (no Cache, every request through the bus
    // daemon): their gain.
    let walk_only = Desktop::new(osprey_screen::DesktopConfig {
        tree_limits: TreeLimits {
            use_cache: false,
            direct: false,
            ..TreeLimits::default()
        },
        ..environment.config()
    })
    .unwrap();
    let see_walk = median(
        || {
            drop(
                rt.block_on(walk_only.see(&target, SeeOptions::default()))
                    .unwrap(),
            )
        },
        15,
    );
    let tree_cache = median(
        || {
            drop(
                rt.block_on(desktop.tree(&app.window, TreeLimits::default()))
                    .unwrap(),
            )
        },
        15,
    );
    let tree_walk = median(
        || {
            drop(
                rt.block_on(walk_only.tree(
                    &app.window,
                    TreeLimits {
                        use_cache: false,
                        direct: false,
                        ..TreeLimits::default()
                    },
                ))
                .unwrap(),
            )
        },
        15,
    );
    eprintln!(
        "tree: {} of {} nodes from the AT-SPI cache",
        tree.from_cache,
        tree.nodes.len()
    );
    let script = harness::fixture_path("baseline_see.py");
    let out = std::env::temp_dir().join("osprey-baseline-see.png");
    let window_id = app.window.id.to_string();
    let baseline = median(
        || {
            run_quietly(
                Command::new(harness::python_with_gi())
                    .arg(&script)
                    .args([app.title.as_str(), window_id.as_str()])
                    .arg(&out)
                    .env("DISPLAY", &display)
                    .env("DBUS_SESSION_BUS_ADDRESS", &environment.bus),
            )
        },
        5,
    );
    rows.push((
        format!(
            "see ({} IDs, {} nodes)",
            seen.snapshot.elements.len(),
            tree.nodes.len()
        ),
        see,
        "import + pyatspi walk".into(),
        baseline,
    ));
    rows.push((
        "".into(),
        see,
        "see, plain walk via the bus".into(),
        see_walk,
    ));
    rows.push((
        "tree, cache + direct socket".into(),
        tree_cache,
        "tree, plain walk via the bus".into(),
        tree_walk,
    ));

    let frame = desktop.capture().capture_region(screen).unwrap();
    let fast = median(|| drop(encode(&frame, Quality::Fast).unwrap()), 15);
    let default_png = median(
        || {
            let mut out = Cursor::new(Vec::new());
            image::DynamicImage::ImageRgb8(frame.clone())
                .write_to(&mut out, image::ImageFormat::Png)
                .unwrap();
        },
        15,
    );
    let lossless = median(|| drop(encode(&frame, Quality::Lossless).unwrap()), 5);
    rows.push((
        "encode png fast".into(),
        fast,
        "image default write_to(Png)".into(),
        default_png,
    ));
    rows.push(("".into(), fast, "png deflate level 6".into(), lossless));

    println!(
        "\n{:<34} {:>10}   {:<28} {:>10} {:>8}",
        "ours", "median", "peer", "median", "ratio"
    );
    for (ours_name, ours, peer_name, peer) in rows {
        println!(
            "{:<34} {:>8.2}ms   {:<28} {:>8.2}ms {:>7.1}x",
            ours_name,
            ours.as_secs_f64() * 1000.0,
            peer_name,
            peer.as_secs_f64() * 1000.0,
            peer.as_secs_f64() / ours.as_secs_f64()
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(4));
    targets = pipeline
}

fn main() {
    benches();
    ratios();
    Criterion::default().configure_from_args().final_summary();
}
