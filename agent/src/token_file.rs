//! `--token-file PATH`: the token read from a file, as Kubernetes mounts a
//! Secret (`/etc/meshperf/token`) or systemd a credential, so that it is
//! neither on the command line (every user of the machine sees that) nor in
//! the environment of every process the container starts.
//!
//! The file holds the token alone; one trailing newline (`echo` writes one,
//! `kubectl create secret --from-literal` none) is dropped. A missing,
//! unreadable or empty file, or one of several lines, is a one-line error;
//! a file every user may read is taken with a one-line warning.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The largest token file read (a token is a few dozen characters).
const MAX_BYTES: u64 = 4096;

/// The token in `path`; `who` (e.g. `meshperf agent`) prefixes the warning
/// about a world-readable file on stderr.
#[cfg_attr(not(unix), allow(unused_variables))]
pub fn read(path: &Path, who: &str) -> Result<String, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("--token-file {shown}: cannot read it: {}", plain(&e)))?;
    if !meta.is_file() {
        return Err(format!(
            "--token-file {shown}: not a file; give the file holding the token (e.g. a mounted Secret's key)"
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "--token-file {shown}: {} bytes, too large for a token (at most {MAX_BYTES})",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| format!("--token-file {shown}: cannot read it: {}", plain(&e)))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--token-file {shown}: not text (the token is printable ASCII)"))?;
    let token = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text);
    if token.trim().is_empty() {
        return Err(format!(
            "--token-file {shown} is empty: put the token in it (one line)"
        ));
    }
    if token.contains(['\n', '\r']) {
        return Err(format!(
            "--token-file {shown}: more than one line; the file must hold the token alone"
        ));
    }
    if token.trim() != token {
        return Err(format!(
            "--token-file {shown}: the token begins or ends with spaces; the file must hold the token alone"
        ));
    }
    #[cfg(unix)]
    if meta.permissions().mode() & 0o004 != 0 {
        eprintln!(
            "{who}: warning: --token-file {shown} is readable by every user of this machine (chmod o-r it)"
        );
    }
    Ok(token.to_string())
}

/// An I/O error without Rust's ` (os error N)` tail.
fn plain(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &[u8], mode: u32) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("meshperf-token-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn the_token_alone_with_one_trailing_newline_dropped() {
        let w = "meshperf test";
        assert_eq!(
            read(&file("a", b"0123456789abcdef\n", 0o600), w).unwrap(),
            "0123456789abcdef"
        );
        assert_eq!(
            read(&file("b", b"0123456789abcdef", 0o600), w).unwrap(),
            "0123456789abcdef"
        );
        assert_eq!(
            read(&file("c", b"0123456789abcdef\r\n", 0o644), w).unwrap(),
            "0123456789abcdef"
        );
        let bad = |name: &str, text: &[u8], what: &str| {
            let e = read(&file(name, text, 0o600), w).unwrap_err();
            assert!(e.contains(what) && !e.contains('\n'), "{e}");
        };
        bad("d", b"", "is empty");
        bad("e", b"\n", "is empty");
        bad("f", b"abc\ndef\n", "more than one line");
        bad("g", b"abc\n\n", "more than one line");
        bad("h", b" abc\n", "spaces");
        bad("i", &[0xff, 0xfe], "not text");
        let e = read(Path::new("/nonexistent/meshperf/token"), w).unwrap_err();
        assert_eq!(
            e,
            "--token-file /nonexistent/meshperf/token: cannot read it: No such file or directory"
        );
        let e = read(&std::env::temp_dir(), w).unwrap_err();
        assert!(e.contains("not a file"), "{e}");
    }
}
