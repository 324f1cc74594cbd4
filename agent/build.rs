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

/// The release binary has a 4 MB target (bench/footprint.mjs). A build
/// for size (opt-level "s" or "z": release) for the machine it is built on
/// folds identical functions (`--icf=all`: Rust promises no distinct
/// addresses for functions) and packs its relative relocations (`-z
/// pack-relative-relocs`, DT_RELR, read by glibc 2.36 on): 4.15 -> 3.99 MB
/// on 07c518f (docs/performance.md, footprint). Each only where a probe
/// program links with it (rustc's own lld, the default on x86_64 Linux
/// since Rust 1.90, mold and gold have both; GNU ld has no `--icf`), with
/// the linker and flags this build uses, and for the relocations where the
/// probe then runs (a glibc before 2.36 refuses it). Cross builds, other
/// systems and the speed-built test profile link as before.
fn size_link_args() {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let for_size = matches!(env("OPT_LEVEL").as_str(), "s" | "z");
    let target = env("TARGET");
    if !for_size || env("HOST") != target || !target.contains("-linux-") {
        return;
    }
    let out = PathBuf::from(env("OUT_DIR"));
    let src = out.join("link_probe.rs");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return;
    }
    for (i, (arg, run)) in [
        ("-Wl,--icf=all", false),
        ("-Wl,-z,pack-relative-relocs", true),
    ]
    .into_iter()
    .enumerate()
    {
        if link_probe(&src, &out.join(format!("link_probe{i}")), arg, run) {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}

/// Whether `src` compiles and links to `exe` with the link argument `arg`
/// (and the linker and flags of this build), and with `run`, runs.
fn link_probe(src: &Path, exe: &Path, arg: &str, run: bool) -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut cmd = std::process::Command::new(rustc);
    cmd.arg(src)
        .arg("-o")
        .arg(exe)
        .arg("-C")
        .arg(format!("link-arg={arg}"));
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        let mut set = std::ffi::OsString::from("linker=");
        set.push(linker);
        cmd.arg("-C").arg(set);
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    let linked = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    linked
        && (!run
            || std::process::Command::new(exe)
                .status()
                .is_ok_and(|s| s.success()))
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
