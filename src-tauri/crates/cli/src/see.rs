//! `osprey see`: an annotated snapshot of a window or the screen, printed as the element list the
//! agent sees (`B3 button "Save"`; `--bounds` adds each one's screen box, `(812,440 96x32)`),
//! with the image written to `--out`. The IDs are saved in the data dir, so a later
//! `osprey tool desktop '{"action": "click", "element": "B3"}'` can act on them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use osprey_screen::{Quality, SeeOptions, SeeTarget};

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("target").multiple(false))]
pub struct SeeArgs {
    /// A window by title (exact, else a case-insensitive substring).
    #[arg(long, group = "target", value_name = "TITLE")]
    window: Option<String>,
    /// The front-most window of an application.
    #[arg(long, group = "target", value_name = "NAME")]
    app: Option<String>,
    /// The whole screen, with the elements of every visible window.
    #[arg(long, group = "target")]
    screen: bool,
    /// Where to write the annotated image (PNG, or JPEG with `--quality small`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// fast (PNG, default), lossless (smaller PNG, slower) or small (JPEG).
    #[arg(long, default_value = "fast", value_parser = parse_quality)]
    quality: Quality,
    /// Downscale the image to at most this many pixels wide (IDs still map to the screen).
    #[arg(long, value_name = "PIXELS")]
    max_width: Option<u32>,
    /// The raw capture, without boxes and labels.
    #[arg(long)]
    no_annotations: bool,
    /// List each element's screen box (left,top width x height).
    #[arg(long)]
    bounds: bool,
}

fn parse_quality(text: &str) -> Result<Quality, String> {
    Quality::parse(text)
        .ok_or_else(|| format!("unknown quality `{text}` (expected fast, lossless or small)"))
}

pub async fn run(data_dir: Option<PathBuf>, args: SeeArgs) -> anyhow::Result<ExitCode> {
    let data_dir = osprey_core::resolve_data_dir(data_dir.as_deref());
    let target = match (args.window, args.app, args.screen) {
        (Some(title), _, _) => SeeTarget::WindowTitle(title),
        (_, Some(app), _) => SeeTarget::App(app),
        (_, _, true) => SeeTarget::Screen,
        _ => SeeTarget::Focused,
    };
    let options = SeeOptions {
        quality: args.quality,
        max_width: args.max_width,
        annotate: !args.no_annotations,
        bounds: args.bounds,
        ..SeeOptions::default()
    };
    let seen = osprey_screen::see_once(osprey_core::desktop_config(&data_dir), target, options)
        .await
        .context("taking the snapshot")?;
    if let Some(out) = &args.out {
        std::fs::write(out, &seen.image.bytes)
            .with_context(|| format!("writing the image to {}", out.display()))?;
        eprintln!(
            "wrote {} ({}x{}, {})",
            out.display(),
            seen.width,
            seen.height,
            seen.image.mime_type
        );
    }
    println!("{}", seen.text);
    Ok(ExitCode::SUCCESS)
}
