//! The agent-to-agent control connection (`protocol::peer`): its JSON-line
//! framing (`engine::peer::read_line`, fed in pieces with "would block"
//! between them, as a slow or hostile peer sends), every line type either
//! agent reads, and the serving agent's answer to a hello
//! (`engine::peer::answer_hello`: `ok` only for the right key and kind).
//!
//! Input: byte 0 sets the piece size, byte 1 how many times the rest is
//! repeated (so lines can pass the 64 KiB limit), the rest is the stream.
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;
use meshperf_agent::engine::peer::{answer_hello, read_line, tag};
use meshperf_protocol::params::Kind;
use meshperf_protocol::peer::{
    key_hex, parse_key, PeerDone, PeerHello, PeerReply, UdpBound, UdpRrRequesterLine,
    UdpRrResponderLine, UdpSetup, UdpStreamReceiverLine, UdpStreamSenderLine, KEY_LEN, MAX_LINE,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::io::{self, BufReader, Read};

/// A peer that sends `data` in pieces of `piece` bytes, each followed by a
/// read that would block.
struct Dribble<'a> {
    data: &'a [u8],
    piece: usize,
    blocked: bool,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.blocked && !self.data.is_empty() {
            self.blocked = false;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.piece).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.blocked = true;
        Ok(n)
    }
}

const KEY: [u8; KEY_LEN] = *b"0123456789abcdef";

/// A line that decodes as `T` re-encodes to one that decodes the same.
fn line_as<T: Serialize + DeserializeOwned + PartialEq + Debug>(line: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<T>(line) {
        let text = serde_json::to_vec(&v).expect("a line is JSON");
        let back: T = serde_json::from_slice(&text).expect("a re-encoded line decodes");
        assert_eq!(back, v);
    }
}

fn check_line(line: &[u8]) {
    line_as::<PeerHello>(line);
    line_as::<PeerReply>(line);
    line_as::<PeerDone>(line);
    line_as::<UdpSetup>(line);
    line_as::<UdpBound>(line);
    line_as::<UdpStreamSenderLine>(line);
    line_as::<UdpStreamReceiverLine>(line);
    line_as::<UdpRrRequesterLine>(line);
    line_as::<UdpRrResponderLine>(line);
    if let Ok(s) = serde_json::from_slice::<UdpSetup>(line) {
        if let Some(t) = s.token() {
            assert_eq!(UdpSetup::new(s.udp_port, t).token(), Some(t));
        }
    }
    for kind in [Kind::TcpStream, Kind::UdpRr] {
        let reply = answer_hello(line, &KEY, kind);
        assert_eq!(reply.ok, reply.code.is_none());
        if reply.ok {
            let h: PeerHello = serde_json::from_slice(line).expect("an accepted hello decodes");
            // The tag is hex of the HMAC bytes: either case spells them.
            assert!(
                h.mac.eq_ignore_ascii_case(&tag(&KEY, &h.signed())),
                "{:?} accepted",
                h.mac
            );
            assert_eq!(h.kind, kind);
        }
    }
    if let Ok(s) = std::str::from_utf8(line) {
        if let Some(k) = parse_key(s) {
            assert_eq!(parse_key(&key_hex(&k)), Some(k));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [piece, times, rest @ ..] = data else {
        return;
    };
    let piece = 1 + *piece as usize * 16;
    let stream: Vec<u8> = rest.repeat(1 + (*times as usize % 24));
    let mut r = BufReader::with_capacity(
        1024,
        Dribble {
            data: &stream,
            piece,
            blocked: false,
        },
    );
    let (mut partial, mut at) = (Vec::new(), 0usize);
    loop {
        match read_line(&mut r, &mut partial) {
            Ok(Some(line)) => {
                // The next line of the stream, whole, without its newline.
                assert!(line.len() <= MAX_LINE);
                assert_eq!(&stream[at..at + line.len()], &line[..]);
                assert_eq!(stream[at + line.len()], b'\n');
                at += line.len() + 1;
                check_line(&line);
            }
            Ok(None) => {} // would block: call again, as the poll loop does
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                // Only at the end, with no newline in what is left.
                assert!(!stream[at..].contains(&b'\n'));
                assert_eq!(&stream[at..], &partial[..]);
                break;
            }
            Err(e) => {
                assert_eq!(e.kind(), io::ErrorKind::InvalidData);
                // Only a line longer than the limit.
                let end = (at + MAX_LINE + 1).min(stream.len());
                assert!(!stream[at..end].contains(&b'\n') && end - at > MAX_LINE);
                break;
            }
        }
    }
});
