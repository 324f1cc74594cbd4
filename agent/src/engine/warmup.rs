//! What `omit_s` (iperf3's `-O`) and `rate` (iperf3's `-b`) do to a stream
//! test's sides, in one place for `tcp_stream` and `unix_stream`.
//!
//! Warm-up: the first seconds of a time-bounded test (slow start, buffers
//! filling) are left out of the figures but not out of the raw samples.
//! Interval samples start at the side's start and are `interval_ms` long,
//! so the warm-up is taken as whole intervals: `omit_s` rounded up to one.
//!
//! Rate: each stream writes its messages on a schedule at its share of the
//! rate ([`write_wait`]), and the kernel paces the segments of each sending
//! TCP connection at that share (SO_MAX_PACING_RATE), so they leave evenly
//! rather than a message at a time. Linux paces TCP itself since 4.13 (an
//! hrtimer per socket, no `fq` qdisc needed), so this holds on any qdisc,
//! loopback's `noqueue` included (kernel 6.18 here; the integration test
//! `tcp_stream_rate_is_paced_by_the_kernel_and_the_warm_up_left_out`
//! measures the rate).

use super::bulk::Outcome;
use meshperf_protocol::params::StreamParams;
use meshperf_protocol::summary::StreamSummary;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// What the warm-up took out of a side's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Omitted {
    /// Its length: whole intervals.
    pub seconds: f64,
    /// Intervals of every stream's samples it covers.
    pub intervals: u64,
    /// Bytes it moved, all streams.
    pub bytes: u64,
}

/// Takes the warm-up out of `outs`' figures: each stream's bytes of its
/// first intervals, and that time from its offsets, so its rate is that of
/// the rest. Read and write calls go in proportion to the bytes (the calls
/// are not counted per interval). `intervals` (the raw samples) stay whole.
pub fn omit(outs: &mut [Outcome], omit_s: f64, interval: Duration) -> Omitted {
    let n = (omit_s / interval.as_secs_f64() - 1e-9).ceil().max(0.0) as usize;
    let cut = interval * n as u32;
    let mut bytes = 0;
    for o in outs.iter_mut() {
        let early: u64 = o.intervals.iter().take(n).sum();
        if o.bytes > 0 {
            let kept = (o.bytes - early) as f64 / o.bytes as f64;
            o.ops = (o.ops as f64 * kept).round() as u64;
        }
        o.bytes -= early;
        bytes += early;
        o.first = o.first.saturating_sub(cut);
        o.last = o.last.saturating_sub(cut);
    }
    Omitted {
        seconds: cut.as_secs_f64(),
        intervals: n as u64,
        bytes,
    }
}

/// Notes the warm-up in a side's summary.
pub fn note(s: &mut StreamSummary, o: Option<Omitted>) {
    if let Some(o) = o {
        s.omitted_s = Some(o.seconds);
        s.omitted_intervals = Some(o.intervals);
        s.omitted_bytes = Some(o.bytes);
    }
}

/// The time between one stream's writes: `wait_us`, or with `rate` at
/// least a message at the stream's share of it. The writes follow an
/// absolute schedule (`bulk.rs`), so a late wake-up costs no rate. The
/// kernel's pacing alone is not enough: the writes would fill the send
/// buffer (megabytes, autotuned), which drains at the rate after the test's
/// time is up, and the receiver's time would run on by that much.
pub fn write_wait(p: &StreamParams) -> Duration {
    // The protocol's, so the wait the agent keeps is the one its
    // parameters were checked with (`StreamParams::write_wait_us`).
    Duration::from_secs_f64(p.write_wait_us() / 1e6)
}

/// The kernel paces a connection this much above its share of the rate:
/// the write schedule sets the rate, and a stream whose writes fell behind
/// (a late wake-up writes what fell due at once) catches up instead of
/// leaving a backlog in the send buffer that drains after the test's time
/// (at exactly the share, one 100 ms stall of a loaded host here kept the
/// receiver busy 90 ms past the end).
pub const PACING_HEADROOM: f64 = 1.2;

/// Sets SO_MAX_PACING_RATE on a sending connection to `bits_per_second`
/// and returns the rate the kernel holds (bits per second).
pub fn pace(s: &impl AsRawFd, bits_per_second: f64) -> io::Result<f64> {
    // Bytes per second, as the kernel takes it; at least 1 (0 stops it).
    let bytes: u64 = ((bits_per_second / 8.0).round() as u64).max(1);
    let fd = s.as_raw_fd();
    let len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `bytes` and `got` are valid u64s for the lengths given.
    unsafe {
        if libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            &bytes as *const u64 as *const libc::c_void,
            len,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        let mut got: u64 = 0;
        let mut got_len = len;
        if libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            &mut got as *mut u64 as *mut libc::c_void,
            &mut got_len,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if got_len as usize == std::mem::size_of::<u32>() {
            got &= u32::MAX as u64;
        }
        Ok(got as f64 * 8.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_is_whole_intervals_out_of_the_figures_only() {
        let iv = Duration::from_millis(100);
        let mut outs = vec![Outcome {
            bytes: 1000,
            ops: 10,
            first: Duration::from_millis(5),
            last: Duration::from_millis(995),
            intervals: vec![100; 10],
            ..Outcome::default()
        }];
        // 0.25 s rounds up to 3 intervals.
        let o = omit(&mut outs, 0.25, iv);
        assert_eq!((o.intervals, o.bytes), (3, 300));
        assert!((o.seconds - 0.3).abs() < 1e-12);
        let s = &outs[0];
        assert_eq!((s.bytes, s.ops), (700, 7));
        assert_eq!(s.last, Duration::from_millis(695));
        assert_eq!(s.intervals.len(), 10, "the raw samples stay");
        // An exact multiple is not rounded up.
        let mut outs = vec![Outcome {
            bytes: 1000,
            intervals: vec![100; 10],
            ..Outcome::default()
        }];
        assert_eq!(
            omit(&mut outs, 1.0, Duration::from_millis(100)).intervals,
            10
        );
    }

    #[test]
    fn the_kernel_holds_the_pacing_rate_asked() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(pace(&c, 50e6).unwrap(), 50e6);
        // Above 4 GB/s: the 64-bit form.
        assert_eq!(pace(&c, 80e9).unwrap(), 80e9);
    }
}
