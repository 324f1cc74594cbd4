//! Permalinks: a whole result (plan, agents, steps with their parameters,
//! summaries and raw samples) packed into the URL fragment `#r=...`, so a
//! result opens anywhere the static page is served, with no backend. The web
//! app reaches this through `permalink_encode`/`permalink_decode`;
//! `meshperf run` calls it natively to print its last line.
//!
//! # Format (link format 2)
//!
//! ```text
//! link  = "mp" base64url(version body)        no padding; trailing bits must be zero
//! version = 0x01                              one byte, read before anything else
//! body  = zlib(value series*)                 RFC 1950 (deflate + Adler-32), level 10
//! ```
//! * `value` is the result JSON with every step's `samples` taken out, in a
//!   compact binary JSON: a tag byte then `0` null, `1` false, `2` true,
//!   `3` unsigned integer (LEB128 varint), `4` negative integer (varint of
//!   `-n - 1`), `5` f64 (8 bytes LE, exact), `6` string (varint length, UTF-8),
//!   `7` array (varint count, items), `8` object (varint count, key string
//!   without tag, value). Key order is kept.
//!   A step's `summary` that equals its primary side (`sides.client` of a
//!   request/response step, the receiving side of a stream) is left out and
//!   restored from that side on decoding (format 2; format 1 links carry it
//!   twice and still open).
//! * Then, for each step in order, its raw samples: varint series count, and
//!   per series `role` (0 client, 1 server), `kind` (the sample frame's kind
//!   byte), varint `stream`, varint `n`, a mode byte and `n` values. Mode 0:
//!   varint `base` (the minimum) then each `value - base` as a varint (for
//!   jittery values such as RTTs). Mode 1: delta coding, the first value and
//!   then each difference to the previous one, zigzag-mapped, as varints (for
//!   time-like monotonic series). The encoder keeps the shorter of the two.
//! * Times (`rtt_ns`, `send_time_ns`, `arrival_ns`) are stored in units of
//!   100 ns, rounded to the nearest: a decoded time equals the original
//!   rounded to 100 ns. Bytes, counts, sequence numbers and every other
//!   series are lossless. Summaries are carried exactly (f64 bits).
//!
//! 10 000 loopback RTT samples take about 15 KB of link. A link that would
//! pass [`HARD_LIMIT`] characters carries, instead of each raw series with
//! more than [`HIST_MIN_VALUES`] values, a fixed-width histogram of it
//! (1 us bins for times, wider when the range needs more than
//! [`HIST_MAX_BINS`] bins; then every series, then at most
//! [`HIST_COARSE_BINS`] bins, until it fits; first of all only the series of
//! TCP's own view, sample kinds from 40, so a long tcp_stream keeps its
//! bytes per interval raw) in the step's `histograms`, and the decoded result
//! says `"samples_replaced": true` so the page can say so and offer the JSON
//! file. Decoding checks the tag, the version (a newer one asks for a newer
//! meshperf), the base64 text, the zlib checksum and every length, and then
//! upgrades the result through [`crate::result::upgrade`], so links
//! from older result versions still open.

use crate::frame::SampleKind;
use crate::intervals::whole_intervals;
use crate::msg::Role;
use crate::params::Kind;
use crate::result::{self, primary_role, ResultError, RunResult, Series, SeriesHistogram};
use serde_json::{Map, Number, Value};
use thiserror::Error;

/// The text every link starts with.
pub const TAG: &str = "mp";
/// The link format version this build writes (and the newest it reads).
pub const LINK_VERSION: u8 = 2;
/// Longest link (characters after `#r=`) before raw samples give way to histograms.
pub const HARD_LIMIT: usize = 60_000;
/// Series up to this many values stay raw even in a histogram link.
pub const HIST_MIN_VALUES: usize = 256;
/// Most bins of a replacement histogram.
pub const HIST_MAX_BINS: u64 = 2_000;
/// Most bins when even [`HIST_MAX_BINS`] does not fit (a long sweep).
pub const HIST_COARSE_BINS: u64 = 200;
/// Time resolution of the link, in ns.
pub const TIME_RESOLUTION_NS: u64 = 100;
/// Raw attempts above this many values go straight to histograms (they could
/// not fit in [`HARD_LIMIT`] anyway, and compressing them costs time).
const RAW_MAX_VALUES: usize = 400_000;
/// Most bytes a link may inflate to (a corrupt link must not exhaust memory).
const MAX_BODY: usize = 256 << 20;
/// Deepest JSON nesting a link may carry.
const MAX_DEPTH: usize = 64;

/// Why a link cannot be made or read. Every message is one line.
#[derive(Debug, Error, PartialEq)]
pub enum PermalinkError {
    /// The text does not start with [`TAG`].
    #[error("not a meshperf result link (it should start with \"{TAG}\" after #r=)")]
    Tag,
    /// Made by a newer meshperf.
    #[error("this link was made by a newer meshperf (link format {0}; this build reads up to {LINK_VERSION}): open it with a newer meshperf")]
    TooNew(u8),
    /// Not valid base64url, truncated, failed its checksum, or inconsistent.
    #[error("this link is damaged or cut short ({0}): copy the whole link again")]
    Corrupt(String),
    /// The result inside (or given to encode) is not a result this build reads.
    #[error("{0}")]
    Result(#[from] ResultError),
    /// Even with histograms the result does not fit.
    #[error("this result is too large for a link even with histograms instead of raw samples ({0} KB): share the JSON file instead")]
    TooLarge(usize),
}

fn corrupt(what: impl Into<String>) -> PermalinkError {
    PermalinkError::Corrupt(what.into())
}

// The JSON entry points (the wasm facade's) read and write the protocol's
// typed `RunResult` with serde, as `meshperf run` and the tests do: one
// decoder of results for every caller, and the same link bytes.

/// Encodes the result JSON `text` (any result version) as link text.
pub fn encode_json(text: &str) -> Result<String, PermalinkError> {
    encode(&result::load(text)?)
}

/// Decodes link text into the current result JSON.
pub fn decode_json(text: &str) -> Result<String, PermalinkError> {
    // Through a Value, as links are written (`encode_exact`): the same text
    // as `to_string`, with one serialiser of results in the wasm module.
    Ok(serde_json::to_value(decode(text)?)
        .expect("a RunResult is always JSON")
        .to_string())
}

/// Encodes `r` as link text (without the `#r=`): raw samples when they fit in
/// [`HARD_LIMIT`], else histograms for the large series.
pub fn encode(r: &RunResult) -> Result<String, PermalinkError> {
    encode_reporting(r).map(|(text, _)| text)
}

/// Like [`encode`], and says whether histograms replaced raw samples.
pub fn encode_reporting(r: &RunResult) -> Result<(String, bool), PermalinkError> {
    let values: usize = r
        .steps
        .iter()
        .flat_map(|s| &s.samples)
        .map(|s| s.values.len())
        .sum();
    if values <= RAW_MAX_VALUES {
        let text = encode_exact(r);
        if text.len() <= HARD_LIMIT {
            return Ok((text, false));
        }
    }
    // TCP's own view (issue 43) gives way first, keeping every other
    // series raw; then larger series first, then every series, then
    // coarser bins.
    let tiers = [
        (HIST_MIN_VALUES, HIST_MAX_BINS, true),
        (HIST_MIN_VALUES, HIST_MAX_BINS, false),
        (0, HIST_MAX_BINS, false),
        (0, HIST_COARSE_BINS, false),
    ];
    for (i, &(min, bins, view_only)) in tiers.iter().enumerate() {
        let mut t = r.clone();
        if view_only {
            // Only the TCP_INFO view's series (kinds from 40) in histograms.
            for s in &mut t.steps {
                s.samples
                    .retain(|x| (x.kind as u8) < 40 || x.values.len() <= min);
            }
            let mut h = replace_samples(&only_view(r), min, bins);
            for (step, mut hs) in t.steps.iter_mut().zip(
                h.steps
                    .iter_mut()
                    .map(|x| std::mem::take(&mut x.histograms)),
            ) {
                step.histograms.append(&mut hs);
            }
            t.samples_replaced |= h.samples_replaced;
            let text = encode_exact(&t);
            if text.len() <= HARD_LIMIT {
                return Ok((text, true));
            }
            continue;
        }
        let text = encode_exact(&replace_samples(r, min, bins));
        if text.len() <= HARD_LIMIT {
            return Ok((text, true));
        }
        if i + 1 == tiers.len() {
            return Err(PermalinkError::TooLarge(text.len().div_ceil(1024)));
        }
    }
    unreachable!("the loop returns on its last pass")
}

/// The side whose summary is a step's own `summary` ("client" or "server").
fn primary_side(step: &Map<String, Value>) -> Option<&'static str> {
    let kind = step.get("kind")?.as_str().and_then(Kind::from_name)?;
    let params = step.get("params")?.as_object()?;
    Some(primary_role(kind, params).name())
}

/// Encodes `r` as it is, whatever the length.
pub fn encode_exact(r: &RunResult) -> String {
    // The JSON part: `r` as a value without its samples (they follow in
    // binary). Their empty lists are removed from each step as before, so the
    // keys keep the order (and the link the bytes) of earlier builds.
    let mut bare = r.clone();
    bare.steps.iter_mut().for_each(|s| s.samples = Vec::new());
    let mut v = serde_json::to_value(&bare).expect("a RunResult is always JSON");
    if let Some(steps) = v.get_mut("steps").and_then(Value::as_array_mut) {
        for s in steps {
            if let Some(o) = s.as_object_mut() {
                o.remove("samples");
                // Format 2: a summary that is its primary side's is carried once.
                let side = primary_side(o).and_then(|p| o.get("sides")?.get(p));
                if side.is_some_and(|x| !x.is_null() && Some(x) == o.get("summary")) {
                    o.remove("summary");
                }
            }
        }
    }
    let mut body = Vec::new();
    put_value(&mut body, &v);
    for s in &r.steps {
        put_varint(&mut body, s.samples.len() as u64);
        for x in &s.samples {
            put_series(&mut body, x);
        }
    }
    let mut bytes = vec![LINK_VERSION];
    bytes.extend(miniz_oxide::deflate::compress_to_vec_zlib(&body, 10));
    let mut text = String::with_capacity(TAG.len() + bytes.len() * 4 / 3 + 4);
    text.push_str(TAG);
    base64url_encode(&bytes, &mut text);
    text
}

/// Decodes link text (the part after `#r=`; a whole URL is accepted too).
pub fn decode(text: &str) -> Result<RunResult, PermalinkError> {
    let text = text.trim();
    let text = text.rsplit_once("#r=").map_or(text, |(_, t)| t);
    let b64 = text.strip_prefix(TAG).ok_or(PermalinkError::Tag)?;
    let bytes = base64url_decode(b64)?;
    let (&version, zbody) = bytes.split_first().ok_or_else(|| corrupt("empty"))?;
    if version > LINK_VERSION {
        return Err(PermalinkError::TooNew(version));
    }
    if version == 0 {
        return Err(corrupt("unknown link format 0"));
    }
    let body = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(zbody, MAX_BODY)
        .map_err(|e| corrupt(format!("compressed data: {}", inflate_text(e.status))))?;
    let mut rd = Reader { buf: &body, pos: 0 };
    let mut v = rd.value(0)?;
    let steps = v
        .get_mut("steps")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| corrupt("no steps"))?;
    let mut samples = Vec::with_capacity(steps.len());
    for s in steps {
        let n = rd.count()?;
        let mut series = Vec::with_capacity(n);
        for _ in 0..n {
            series.push(rd.series()?);
        }
        samples.push(series);
        let o = s
            .as_object_mut()
            .ok_or_else(|| corrupt("a step is not an object"))?;
        // The series go in below, typed; whatever the value says is dropped.
        o.insert("samples".into(), Value::Array(Vec::new()));
        if version >= 2 && !o.contains_key("summary") {
            let side = primary_side(o)
                .and_then(|p| o.get("sides")?.get(p))
                .cloned();
            o.insert("summary".into(), side.unwrap_or(Value::Null));
        }
    }
    if rd.pos != body.len() {
        return Err(corrupt("trailing data"));
    }
    result::upgrade(&mut v)?;
    let mut r: RunResult = serde_json::from_value(v)
        .map_err(|e| PermalinkError::Result(ResultError::Parse(e.to_string())))?;
    for (step, series) in r.steps.iter_mut().zip(samples) {
        step.samples = series;
    }
    Ok(r)
}

fn inflate_text(s: miniz_oxide::inflate::TINFLStatus) -> &'static str {
    use miniz_oxide::inflate::TINFLStatus::*;
    match s {
        FailedCannotMakeProgress | NeedsMoreInput => "incomplete",
        Adler32Mismatch => "checksum mismatch",
        HasMoreOutput => "too large",
        _ => "invalid",
    }
}

/// Kinds whose values are ns times, stored at [`TIME_RESOLUTION_NS`].
fn is_time(kind: SampleKind) -> bool {
    matches!(
        kind,
        SampleKind::RttNs
            | SampleKind::SendTimeNs
            | SampleKind::ArrivalNs
            | SampleKind::PeerRecvNs
            | SampleKind::PeerSendNs
            | SampleKind::ConnectNs
    )
}

/// `ns` rounded to the nearest [`TIME_RESOLUTION_NS`], in those units.
fn to_ticks(ns: u64) -> u64 {
    ns / TIME_RESOLUTION_NS + u64::from(ns % TIME_RESOLUTION_NS >= TIME_RESOLUTION_NS / 2)
}

/// `ns` as the link keeps it (rounded to 100 ns); what [`decode`] gives back.
pub fn round_time(ns: u64) -> u64 {
    to_ticks(ns) * TIME_RESOLUTION_NS
}

/// `r` with only the TCP_INFO view's series (sample kinds from 40).
fn only_view(r: &RunResult) -> RunResult {
    let mut r = r.clone();
    for s in &mut r.steps {
        s.samples.retain(|x| (x.kind as u8) >= 40);
        s.histograms.clear();
    }
    r
}

/// `r` with every series of more than `min` values replaced by its histogram
/// of at most `bins` bins. A stream step's bytes per interval count only the
/// intervals every stream spent whole inside its data movement
/// ([`crate::intervals::whole_intervals`], the page's rule for the raw
/// series): a partial first or last one is not the path's rate.
fn replace_samples(r: &RunResult, min: usize, bins: u64) -> RunResult {
    let mut r = r.clone();
    let mut replaced = false;
    for s in &mut r.steps {
        let windows: Vec<(Role, (usize, usize))> =
            if matches!(s.kind, Kind::TcpStream | Kind::UnixStream) {
                [Role::Client, Role::Server]
                    .into_iter()
                    .filter_map(|role| {
                        let iv: Vec<&Series> = s
                            .samples
                            .iter()
                            .filter(|x| x.role == role && x.kind == SampleKind::IntervalBytes)
                            .collect();
                        let n = iv.iter().map(|x| x.values.len()).max()?;
                        let ids: Vec<u16> = iv.iter().map(|x| x.stream).collect();
                        Some((role, whole_intervals(s, role, &ids, n)))
                    })
                    .collect()
            } else {
                Vec::new()
            };
        let (big, keep): (Vec<Series>, Vec<Series>) = std::mem::take(&mut s.samples)
            .into_iter()
            .partition(|x| x.values.len() > min);
        s.samples = keep;
        replaced |= !big.is_empty();
        s.histograms.extend(big.iter().map(|x| {
            let window = windows
                .iter()
                .find(|w| w.0 == x.role && x.kind == SampleKind::IntervalBytes);
            match window {
                Some(&(_, (from, to))) => {
                    let len = x.values.len();
                    let whole = &x.values[from.min(len)..to.min(len)];
                    SeriesHistogram {
                        left_out: Some((len - whole.len()) as u64),
                        ..histogram_within(x, whole, bins)
                    }
                }
                None => histogram_within(x, &x.values, bins),
            }
        }));
    }
    r.samples_replaced |= replaced;
    r
}

/// A histogram of a whole series: 1 us (or 1 unit) bins, widened along
/// 1-2-5 steps until at most [`HIST_MAX_BINS`] bins span min..max.
pub fn histogram_of(s: &Series) -> SeriesHistogram {
    histogram_within(s, &s.values, HIST_MAX_BINS)
}

/// A histogram of `values` (all or some of `s`'s) with at most `max_bins` bins.
fn histogram_within(s: &Series, values: &[u64], max_bins: u64) -> SeriesHistogram {
    let min = values.iter().copied().min().unwrap_or(0);
    let max = values.iter().copied().max().unwrap_or(0);
    let mut width: u64 = if is_time(s.kind) { 1_000 } else { 1 };
    let mut k = 0;
    while max / width - min / width >= max_bins {
        width = match k % 3 {
            1 => width / 2 * 5,
            _ => width.saturating_mul(2),
        };
        k += 1;
    }
    let low = min / width * width;
    let mut counts = vec![
        0u64;
        if values.is_empty() {
            0
        } else {
            ((max - low) / width + 1) as usize
        }
    ];
    for &v in values {
        counts[((v - low) / width) as usize] += 1;
    }
    SeriesHistogram {
        role: s.role,
        kind: s.kind,
        stream: s.stream,
        n: values.len() as u64,
        low,
        bin_width: width,
        counts,
        left_out: None,
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(1 + u8::from(*b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(3);
                put_varint(out, u);
            } else if let Some(i) = n.as_i64() {
                out.push(4);
                put_varint(out, !(i as u64));
            } else {
                out.push(5);
                out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(6);
            put_str(out, s);
        }
        Value::Array(a) => {
            out.push(7);
            put_varint(out, a.len() as u64);
            a.iter().for_each(|x| put_value(out, x));
        }
        Value::Object(o) => {
            out.push(8);
            put_varint(out, o.len() as u64);
            for (k, x) in o {
                put_str(out, k);
                put_value(out, x);
            }
        }
    }
}

fn put_series(out: &mut Vec<u8>, s: &Series) {
    out.push(match s.role {
        Role::Client => 0,
        Role::Server => 1,
    });
    out.push(s.kind as u8);
    put_varint(out, u64::from(s.stream));
    put_varint(out, s.values.len() as u64);
    let ticks: Vec<u64> = if is_time(s.kind) {
        s.values.iter().map(|&v| to_ticks(v)).collect()
    } else {
        s.values.clone()
    };
    let base = ticks.iter().copied().min().unwrap_or(0);
    let mut plain = Vec::new();
    put_varint(&mut plain, base);
    ticks.iter().for_each(|&t| put_varint(&mut plain, t - base));
    let mut delta = Vec::new();
    let mut prev = 0u64;
    for &t in &ticks {
        let d = t.wrapping_sub(prev) as i64;
        put_varint(&mut delta, ((d << 1) ^ (d >> 63)) as u64);
        prev = t;
    }
    if delta.len() < plain.len() {
        out.push(1);
        out.extend(delta);
    } else {
        out.push(0);
        out.extend(plain);
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, PermalinkError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| corrupt("ends early"))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, PermalinkError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                break;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(corrupt("bad number"))
    }

    /// A count of items that each take at least one byte.
    fn count(&mut self) -> Result<usize, PermalinkError> {
        let n = self.varint()?;
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(corrupt("bad length"));
        }
        Ok(n as usize)
    }

    fn str(&mut self) -> Result<String, PermalinkError> {
        let n = self.count()?;
        let s = std::str::from_utf8(&self.buf[self.pos..self.pos + n])
            .map_err(|_| corrupt("bad text"))?;
        self.pos += n;
        Ok(s.to_string())
    }

    fn value(&mut self, depth: usize) -> Result<Value, PermalinkError> {
        if depth > MAX_DEPTH {
            return Err(corrupt("nested too deeply"));
        }
        Ok(match self.byte()? {
            0 => Value::Null,
            1 => Value::Bool(false),
            2 => Value::Bool(true),
            3 => Value::from(self.varint()?),
            4 => {
                let u = self.varint()?;
                if u > i64::MAX as u64 {
                    return Err(corrupt("bad number"));
                }
                Value::from(!(u as i64))
            }
            5 => {
                let end = self.pos + 8;
                let b = self
                    .buf
                    .get(self.pos..end)
                    .ok_or_else(|| corrupt("ends early"))?;
                self.pos = end;
                let f = f64::from_le_bytes(b.try_into().expect("8 bytes"));
                Value::Number(Number::from_f64(f).ok_or_else(|| corrupt("bad number"))?)
            }
            6 => Value::String(self.str()?),
            7 => {
                let n = self.count()?;
                let mut a = Vec::with_capacity(n);
                for _ in 0..n {
                    a.push(self.value(depth + 1)?);
                }
                Value::Array(a)
            }
            8 => {
                let n = self.count()?;
                let mut o = Map::new();
                for _ in 0..n {
                    let k = self.str()?;
                    o.insert(k, self.value(depth + 1)?);
                }
                Value::Object(o)
            }
            t => return Err(corrupt(format!("unknown value tag {t}"))),
        })
    }

    fn series(&mut self) -> Result<Series, PermalinkError> {
        let role = match self.byte()? {
            0 => Role::Client,
            1 => Role::Server,
            _ => return Err(corrupt("bad role")),
        };
        let kind = SampleKind::from_u8(self.byte()?).ok_or_else(|| corrupt("bad sample kind"))?;
        let stream = u16::try_from(self.varint()?).map_err(|_| corrupt("bad stream"))?;
        let n = self.count()?;
        let mode = self.byte()?;
        let mut values = Vec::with_capacity(n);
        match mode {
            0 => {
                let base = self.varint()?;
                for _ in 0..n {
                    let v = self.varint()?.checked_add(base);
                    values.push(v.ok_or_else(|| corrupt("bad value"))?);
                }
            }
            1 => {
                let mut prev = 0u64;
                for _ in 0..n {
                    let z = self.varint()?;
                    let d = (z >> 1) as i64 ^ -((z & 1) as i64);
                    prev = prev.wrapping_add(d as u64);
                    values.push(prev);
                }
            }
            m => return Err(corrupt(format!("unknown series mode {m}"))),
        }
        if is_time(kind) {
            for v in &mut values {
                *v = v
                    .checked_mul(TIME_RESOLUTION_NS)
                    .ok_or_else(|| corrupt("bad time"))?;
            }
        }
        Ok(Series {
            role,
            kind,
            stream,
            values,
        })
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url_encode(bytes: &[u8], out: &mut String) {
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..=c.len() {
            out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
}

fn base64url_decode(text: &str) -> Result<Vec<u8>, PermalinkError> {
    if text.len() % 4 == 1 {
        return Err(corrupt("impossible length"));
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, c) in text.bytes().enumerate() {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => {
                return Err(corrupt(format!(
                    "character {:?} at {}",
                    char::from(c),
                    i + TAG.len()
                )))
            }
        };
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if acc != 0 {
        return Err(corrupt("bad last character"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
