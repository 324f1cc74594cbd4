//! Payload files: a stream test whose writes carry a file's bytes, as the
//! Perl transfer test sends `--file testdata-1G.dat`. An agent reads files
//! only when its operator named a directory (`--payload-dir`), only regular
//! files directly in it (the parameter is a plain name; a symbolic link, and
//! a file with more than one hard link, are refused), and none larger than `--max-payload-bytes`. The file is
//! opened and checked when the test is asked for (a missing, unreadable or
//! oversized file refuses the test before any traffic) and read into memory
//! once in the test's thread before its data connections, so the disk is
//! never part of what is measured.

use super::buf::PageBuf;
use super::error::Refusal;
use meshperf_protocol::msg::ErrorCode;
use std::fs::File;
use std::io::{self, Read};
#[cfg(target_os = "linux")]
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

/// What the operator allowed (`--payload-dir`, `--max-payload-bytes`).
#[derive(Debug, Clone)]
pub struct PayloadDir {
    pub dir: PathBuf,
    pub max_bytes: u64,
}

/// Default of `--max-payload-bytes`: 256 MiB held in memory per test.
pub const MAX_PAYLOAD_BYTES: u64 = 256 << 20;

/// A payload file opened and checked, not read yet.
pub struct Opened {
    file: File,
    len: u64,
    name: String,
}

/// A payload file in memory: `buf` holds its bytes and after them its
/// start again (cyclically, `msg_bytes` more), so any write of up to
/// `msg_bytes` from any offset of the file is one contiguous slice.
pub struct FileData {
    pub buf: PageBuf,
    /// The bytes held (the file's length, or what a stream can send of it
    /// at most); a stream's write at byte `b` starts at `b % len`.
    pub len: usize,
    /// The file's length.
    pub file_bytes: u64,
    pub name: String,
}

impl std::fmt::Debug for FileData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileData({:?}, {} bytes)", self.name, self.len)
    }
}

#[cfg(target_os = "linux")]
fn refuse(name: &str, why: impl std::fmt::Display) -> Refusal {
    (
        ErrorCode::BadParams,
        format!("payload_file: {name:?} {why}"),
    )
}

/// Off Linux no payload file is read (`payload_file` is refused before
/// any traffic, [`crate::platform::linux_only`]).
#[cfg(not(target_os = "linux"))]
pub fn open(_dir: Option<&PayloadDir>, _name: &str) -> Result<Opened, Refusal> {
    Err((
        ErrorCode::BadParams,
        crate::platform::needs_linux("payload_file", "--payload-dir's no-symlink open"),
    ))
}

/// Opens `name` in `dir` (the test's `payload_file`, a plain name checked
/// by the parameter's parser) and checks it before the test is accepted.
#[cfg(target_os = "linux")]
pub fn open(dir: Option<&PayloadDir>, name: &str) -> Result<Opened, Refusal> {
    let Some(d) = dir else {
        return Err(refuse(
            name,
            "cannot be sent: this agent reads no files (its operator can allow a directory with --payload-dir)",
        ));
    };
    meshperf_protocol::params::payload_file_name(name)
        .map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        // No link out of the directory; a FIFO must not block the agent.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(d.dir.join(name))
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => refuse(name, "is not in this agent's --payload-dir"),
            Some(libc::ELOOP) => refuse(name, "is a symbolic link; give a regular file"),
            _ => refuse(name, format_args!("cannot be opened: {e}")),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| refuse(name, format_args!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(refuse(name, "is not a regular file"));
    }
    if meta.nlink() > 1 {
        // O_NOFOLLOW stops symbolic links only: a hard link in the
        // directory may be any file of the same file system.
        return Err(refuse(
            name,
            format_args!(
                "has {} hard links; give a file with one (a link may be a file outside --payload-dir)",
                meta.nlink()
            ),
        ));
    }
    if meta.len() == 0 {
        return Err(refuse(name, "is empty"));
    }
    if meta.len() > d.max_bytes {
        return Err(refuse(
            name,
            format_args!(
                "is {} bytes, above this agent's --max-payload-bytes of {}",
                meta.len(),
                d.max_bytes
            ),
        ));
    }
    Ok(Opened {
        file,
        len: meta.len(),
        name: name.to_string(),
    })
}

impl Opened {
    /// Reads the file into memory, ready for writes of `msg_bytes`: the
    /// whole of it, or only its first `need` bytes when no stream can send
    /// more (a count-bounded test), so a 256 KiB test of a 256 MiB file
    /// holds 256 KiB.
    pub fn read(mut self, msg_bytes: usize, need: Option<u64>) -> io::Result<FileData> {
        let len = need.map_or(self.len, |n| n.clamp(1, self.len)) as usize;
        let mut buf = PageBuf::new(len + msg_bytes, 0);
        self.file
            .read_exact(&mut buf[..len])
            .map_err(|e| io::Error::new(e.kind(), format!("payload_file {:?}: {e}", self.name)))?;
        // The file's start again after its end, as often as a write needs.
        let mut at = len;
        while at < buf.len() {
            let n = (buf.len() - at).min(len);
            buf.copy_within(0..n, at);
            at += n;
        }
        Ok(FileData {
            buf,
            len,
            file_bytes: self.len,
            name: self.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_once_with_its_start_after_its_end() {
        let dir = std::env::temp_dir().join(format!("meshperf-payload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("abc"), b"abc").unwrap();
        std::fs::write(dir.join("empty"), b"").unwrap();
        let _ = std::fs::remove_file(dir.join("link"));
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link")).unwrap();
        let d = PayloadDir {
            dir: dir.clone(),
            max_bytes: 3,
        };
        let f = open(Some(&d), "abc").unwrap().read(8, None).unwrap();
        assert_eq!(&f.buf[..], b"abcabcabcab");
        assert_eq!((f.len, f.file_bytes), (3, 3));
        // A test that can send 2 bytes per stream reads 2 of the 3.
        let f = open(Some(&d), "abc").unwrap().read(8, Some(2)).unwrap();
        assert_eq!((&f.buf[..2], f.len, f.file_bytes), (&b"ab"[..], 2, 3));
        assert_eq!(f.buf.len(), 2 + 8);
        let f = open(Some(&d), "abc")
            .unwrap()
            .read(1, Some(1 << 40))
            .unwrap();
        assert_eq!((f.len, f.file_bytes), (3, 3));
        let why = |name: &str, d: Option<&PayloadDir>| open(d, name).err().unwrap().1;
        assert!(why("abc", None).contains("--payload-dir"));
        assert!(why("nope", Some(&d)).contains("is not in this agent's --payload-dir"));
        assert!(why("empty", Some(&d)).contains("is empty"));
        assert!(why("link", Some(&d)).contains("symbolic link"));
        assert!(why("../abc", Some(&d)).contains("no path"));
        let small = PayloadDir { max_bytes: 2, ..d };
        assert!(why("abc", Some(&small)).contains("above this agent's --max-payload-bytes of 2"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Over a real socket pair, a sender's writes carry the file in order
    /// and start it again at its end, whatever the write size.
    #[test]
    fn the_writes_carry_the_file_over_and_over() {
        use crate::engine::bulk::{run_workers, Flow, LiveStream, Workload};
        use std::time::Duration;
        let file: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut buf = PageBuf::new(file.len() + 300, 0);
        buf[..1000].copy_from_slice(&file);
        buf.copy_within(0..300, 1000);
        let data = FileData {
            buf,
            len: 1000,
            file_bytes: 1000,
            name: "f".into(),
        };
        let plan = Workload {
            msg_bytes: 300,
            read_bytes: 300,
            bytes_per_stream: Some(2500),
            duration: None,
            wait: Duration::ZERO,
            interval: Duration::from_millis(10),
            stall: Duration::from_secs(5),
            random: true,
            file: Some(std::sync::Arc::new(data)),
            zerocopy: false,
        };
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let live = [LiveStream::default()];
        let out = run_workers(
            vec![(a, Flow::Send)],
            &plan,
            std::time::Instant::now(),
            &cancel,
            &live,
            &crate::engine::placement::Placement {
                workers: 1,
                cpus: Vec::new(),
            },
            || {},
        );
        assert_eq!(out[0].bytes, 2500, "{:?}", out[0].error);
        let got = reader.join().unwrap();
        let want: Vec<u8> = file.iter().copied().cycle().take(2500).collect();
        assert!(got == want, "the bytes sent are not the file's, in order");
    }
}
