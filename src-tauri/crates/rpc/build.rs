//! Generates the app protocol's Rust code from `/proto` with `protox` (pure Rust), so building
//! needs no system `protoc`.

use std::path::PathBuf;

const FILES: [&str; 8] = [
    "common", "tool", "gateway", "comm", "channel", "ui", "schedule", "hooks",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../../proto");
    let files: Vec<PathBuf> = FILES
        .iter()
        .map(|name| root.join(format!("osprey/app/v1/{name}.proto")))
        .collect();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let descriptors = protox::compile(&files, [&root])?;
    // The schema itself, for the gRPC inspector to decode the traffic it keeps.
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("app_v1_descriptors.bin");
    std::fs::write(out, prost::Message::encode_to_vec(&descriptors))?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
