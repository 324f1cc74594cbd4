//! Embeds the built web app (`web/dist`) into the agent binary, gzip-compressed
//! at build time. Without a build of the web app, a one-page notice is embedded
//! instead, telling how to build it.

use std::io::Write;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            walk(&p, base, out);
        } else {
            let rel = p
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((format!("/{rel}"), p));
        }
    }
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        "map" => "application/json",
        _ => "application/octet-stream",
    }
}

/// The release binary has a 4 MB target (bench/footprint.mjs). Where the
/// linker is rustc's own lld (x86_64 glibc Linux, the default since Rust
/// 1.90, no other linker asked for) a build for size folds identical
/// functions (`--icf=all`: Rust promises no distinct addresses for
/// functions) and packs its relative relocations (`-z
/// pack-relative-relocs`, DT_RELR, read by glibc 2.36 on: only where the
/// glibc it is built against has it, as it runs there): 4.15 -> 3.99 MB on
/// 07c518f (docs/performance.md, footprint). Other targets, a chosen linker
/// and the speed-built test profile link as before.
fn size_link_args() {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let for_size = matches!(env("OPT_LEVEL").as_str(), "s" | "z");
    let target = env("TARGET");
    let own_lld = target == "x86_64-unknown-linux-gnu"
        && env("HOST") == target
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !env("CARGO_ENCODED_RUSTFLAGS").contains("link")
        && rustc_minor() >= Some(90);
    if !(for_size && own_lld) {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    if glibc_minor() >= Some(36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The minor version of the rustc building this (1.x), from `rustc -vV`.
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let release = text.lines().find_map(|l| l.strip_prefix("release: "))?;
    release.split('.').nth(1)?.parse().ok()
}

/// The minor version of the host's glibc (2.x), from `getconf GNU_LIBC_VERSION`.
fn glibc_minor() -> Option<u32> {
    let out = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc 2.")?;
    version.split('.').next()?.parse().ok()
}

fn main() {
    size_link_args();
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dist = manifest.join("../web/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut files = Vec::new();
    walk(&dist, &dist, &mut files);
    for (_, p) in &files {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let mut table = String::from("pub static ASSETS: &[Asset] = &[\n");
    if files.iter().all(|(name, _)| name != "/index.html") {
        let notice = out_dir.join("notice.html");
        std::fs::write(
            &notice,
            "<!doctype html><title>meshperf</title><p>The meshperf web app was not built into this agent. \
             Run <code>npm run build</code> (or <code>npm start</code>) and rebuild the agent.</p>",
        )
        .unwrap();
        files.push(("/index.html".into(), notice));
    }
    for (i, (name, path)) in files.iter().enumerate() {
        let raw = std::fs::read(path).unwrap();
        let gz_path = out_dir.join(format!("asset{i}.gz"));
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&raw).unwrap();
        std::fs::write(&gz_path, enc.finish().unwrap()).unwrap();
        table.push_str(&format!(
            "    Asset {{ path: {name:?}, content_type: {:?}, gzip: include_bytes!({:?}), len: {} }},\n",
            content_type(name),
            gz_path.display().to_string(),
            raw.len()
        ));
    }
    table.push_str("];\n");
    std::fs::write(out_dir.join("assets.rs"), table).unwrap();
}
