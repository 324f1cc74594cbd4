//! One home for pacing: how a sender spaces its messages, for every kind.
//!
//! * Waits: a thread that waits for a deadline sleeps to [`SPIN`] before
//!   it and spins the rest, because timer wake-ups arrive late
//!   ([`sleep_until`]: tcp_rr and unix_rr requests by `wait_us`;
//!   [`sleep_until_or_cancel`]: udp_rr's; [`poll_timeout`]: the bulk
//!   workers' write schedule, the many-flow tcp_rr workers, udp_stream's
//!   threads of several flows; [`nap`]: a udp_stream sender alone on its
//!   thread).
//! * Stream writes by `wait_us` or `rate` ([`write_wait`]) and the kernel's
//!   own pacing of a TCP sender ([`socket_rate`], [`PACING_HEADROOM`]).
//! * `udp_stream`'s schedules: [`Pacer`] by `wait_us`, [`Bucket`] (a token
//!   bucket) by `rate`, and the floor the agent's UDP rate cap puts under
//!   them ([`floor_gap_ns`]).
//! * The agent's UDP rate cap on request/response datagrams ([`RateCap`]).
//!
//! Stream rate: each stream writes its messages on a schedule at its share of the
//! rate ([`write_wait`]), and the kernel paces the segments of each sending
//! TCP connection at that share (SO_MAX_PACING_RATE), so they leave evenly
//! rather than a message at a time. Linux paces TCP itself since 4.13 (an
//! hrtimer per socket, no `fq` qdisc needed), so this holds on any qdisc,
//! loopback's `noqueue` included (the integration test
//! `tcp_stream_rate_is_paced_by_the_kernel_and_the_warm_up_left_out`
//! measures the rate).

use meshperf_protocol::params::{Limits, StreamParams};
use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Time before a deadline that is spun rather than slept.
pub const SPIN: Duration = Duration::from_micros(250);
/// A wait shorter than this is spun whole (a sleep would end past it).
const SPIN_BELOW: Duration = Duration::from_micros(300);

/// Sleeps until `due`, spinning the last stretch (timer wake-ups arrive
/// up to ~200 us late).
pub fn sleep_until(due: Instant) {
    loop {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        if left > SPIN_BELOW {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// How often a long wait looks at its cancel ([`sleep_until_or_cancel`]).
const CANCEL_SLICE: Duration = Duration::from_millis(20);

/// [`sleep_until`] in slices of [`CANCEL_SLICE`] while more than that is
/// left, so a cancel is seen within one: false when `cancel` was set.
pub fn sleep_until_or_cancel(due: Instant, cancel: &AtomicBool) -> bool {
    while due.saturating_duration_since(Instant::now()) > CANCEL_SLICE {
        if cancel.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(CANCEL_SLICE);
    }
    sleep_until(due);
    true
}

/// One step of a wait for `due` by a loop that looks at other things in
/// between (a cancel): sleeps as [`poll_timeout`] allows, at most `most`,
/// or spins once when `due` is too close to sleep.
pub fn nap(due: Instant, most: Duration) {
    let t = poll_timeout(due, most);
    if t.is_zero() {
        std::hint::spin_loop();
    } else {
        std::thread::sleep(t);
    }
}

/// How long a poll may sleep, at most `most`, before `due`: zero (spin)
/// when it is under [`SPIN_BELOW`] away, else until [`SPIN`] before it.
pub fn poll_timeout(due: Instant, most: Duration) -> Duration {
    let left = due.saturating_duration_since(Instant::now());
    if left < SPIN_BELOW {
        Duration::ZERO
    } else {
        (left - SPIN).min(most)
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

/// Off Linux there is no kernel pacing: `rate` is refused before any
/// traffic ([`crate::platform::linux_only`]).
#[cfg(not(target_os = "linux"))]
pub fn socket_rate<S>(_s: &S, _bits_per_second: f64) -> io::Result<f64> {
    Err(crate::platform::unsupported(
        "rate",
        "kernel pacing, SO_MAX_PACING_RATE",
    ))
}

/// Sets SO_MAX_PACING_RATE on a sending connection to `bits_per_second`
/// and returns the rate the kernel holds (bits per second).
#[cfg(target_os = "linux")]
pub fn socket_rate(s: &impl AsRawFd, bits_per_second: f64) -> io::Result<f64> {
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

/// The agent's UDP rate cap (`--max-udp-rate`, bits per second of payload)
/// on the datagrams a request/response test sends, both ends: a token
/// bucket refilled at the cap and holding at most 64 KiB, so replies (which
/// a plan may make far larger than their requests) never leave faster than
/// the operator allowed, whatever the plan asked. A paced udp_stream keeps
/// its own floor on the gap between datagrams ([`floor_gap_ns`]).
pub struct RateCap {
    bytes_per_s: f64,
    tokens: f64,
    last: Instant,
    /// How long sends waited for the cap in all.
    pub waited: Duration,
}

const RATE_CAP_BURST: f64 = 65536.0;

impl RateCap {
    /// The cap of `limits`, if the operator set one.
    pub fn new(limits: &Limits) -> Option<RateCap> {
        let bits = limits.max_udp_bits_per_second?;
        Some(RateCap {
            bytes_per_s: bits / 8.0,
            tokens: RATE_CAP_BURST,
            last: Instant::now(),
            waited: Duration::ZERO,
        })
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let gained = now.duration_since(self.last).as_secs_f64() * self.bytes_per_s;
        self.tokens = (self.tokens + gained).min(RATE_CAP_BURST);
        self.last = now;
    }

    /// Waits until `bytes` more may leave, and takes them.
    pub fn take(&mut self, bytes: usize) {
        self.refill();
        let need = bytes as f64 - self.tokens;
        if need > 0.0 {
            let wait = Duration::from_secs_f64(need / self.bytes_per_s);
            // What the send really waited: a sleep on a busy host ends
            // late, and the tokens that lateness earns shorten the next
            // wait, so a sum of the asked waits would come out short.
            let t0 = Instant::now();
            std::thread::sleep(wait);
            self.waited += t0.elapsed();
            self.refill();
        }
        self.tokens -= bytes as f64;
    }
}

/// Microseconds a [`RateCap`] made sends wait (0 without a cap).
pub fn capped_us(cap: &Option<RateCap>) -> f64 {
    cap.as_ref().map_or(0.0, |c| c.waited.as_secs_f64() * 1e6)
}

/// A late sender catches up by shortening each gap by at most this share of
/// the wait (and at most 4 us): see [`Pacer`].
const CATCH_UP: f64 = 0.2;
/// Schedule debt (ns) a late sender pays back; beyond it the schedule slips.
const DEBT_LIMIT: f64 = 1e6;

/// The paced sender's schedule: datagram `k` is due at `k * wait` (plus
/// any slip), an absolute deadline, so late wake-ups never accumulate. A
/// sender that fell behind (preempted, or a late timer) does not burst the
/// missed datagrams out back to back: each gap shrinks by at most
/// [`CATCH_UP`] of the wait (at most 4 us), so up to [`DEBT_LIMIT`] of debt
/// is paid back over the following datagrams and every gap but the stall
/// itself stays close to `wait`. A longer stall (a CI host once held the
/// sender for 28 ms) is not paid back: the schedule slips by the excess,
/// counted in `schedule_slips` and `schedule_slipped_us`, so what follows
/// keeps the asked spacing instead of a burst at a rate the test did not
/// ask for, and the lower send rate shows it.
pub struct Pacer {
    wait_ns: f64,
    /// No gap is shorter ([`floor_gap_ns`]).
    floor_ns: f64,
    pub slip_ns: f64,
    /// Stalls the schedule slipped for (a slip that goes on over several
    /// datagrams, while the sender gets back to speed, counts once).
    pub slips: u64,
    slipping: bool,
}

impl Pacer {
    pub fn new(wait_ns: f64, floor_ns: f64) -> Self {
        Pacer {
            wait_ns,
            floor_ns,
            slip_ns: 0.0,
            slips: 0,
            slipping: false,
        }
    }

    /// When datagram `k` (0-based) may leave, given that datagram `k - 1`
    /// left at `sent_ns`.
    pub fn next(&mut self, sent_ns: f64, k: u64) -> f64 {
        let mut deadline = k as f64 * self.wait_ns + self.slip_ns;
        let excess = sent_ns + self.wait_ns - deadline - DEBT_LIMIT;
        if excess > 0.0 {
            self.slip_ns += excess;
            deadline += excess;
            self.slips += u64::from(!self.slipping);
        }
        self.slipping = excess > 0.0;
        let shrink = (self.wait_ns * CATCH_UP).min(4_000.0);
        deadline.max(sent_ns + (self.wait_ns - shrink).max(self.floor_ns))
    }
}

/// Longest stall a sender by `rate` makes up for: what fell due while it
/// was held up leaves at once when it runs again, up to this much (and
/// [`BUCKET_BYTES`]); the rest slips (counted in `schedule_slips`,
/// `schedule_slipped_us`).
const BUCKET_DEPTH_NS: f64 = 50e6;

/// Most payload a sender by `rate` holds due at once: a small burst, an
/// eighth of the 8 MiB receive buffer a receiver asks for. By time alone a
/// rate the host cannot reach holds far more (50 ms at 1000G is 4.5
/// billion 1400-byte datagrams, which the sender once went on sending
/// after its `duration_s`, 21 s more until the agent's count limit), and
/// after a stall at a high rate it can reach, tens of megabytes would
/// leave back to back, more than a receive buffer holds.
const BUCKET_BYTES: f64 = (1 << 20) as f64;

/// The schedule of a sender by `rate` (iperf3 `-b`): a token bucket. The
/// `k`-th datagram falls due at `k * wait` (plus any slip) and every call
/// sends all that are due, so a wake-up that comes late (up to ~200 us on
/// these VMs, milliseconds on a loaded host) costs no rate: the datagrams
/// it held up leave together. What a stall longer than
/// [`BUCKET_DEPTH_NS`] (or [`BUCKET_BYTES`] of datagrams) held up is not
/// sent, nor at a rate the host cannot reach what falls due faster than it
/// sends. Under the agent's UDP rate cap nothing leaves faster than the
/// cap: one datagram per `floor` instead.
pub struct Bucket {
    wait_ns: f64,
    floor_ns: f64,
    /// Datagrams the bucket holds.
    depth: u64,
    pub slip_ns: f64,
    pub slips: u64,
    slipping: bool,
    /// When the last datagram left (ns from the start).
    pub last_ns: f64,
}

impl Bucket {
    pub fn new(wait_ns: f64, floor_ns: f64, pkt_bytes: u64) -> Self {
        let most = (BUCKET_DEPTH_NS / wait_ns).min(BUCKET_BYTES / pkt_bytes as f64);
        Bucket {
            wait_ns,
            floor_ns,
            depth: most.ceil().max(1.0) as u64,
            slip_ns: 0.0,
            slips: 0,
            slipping: false,
            last_ns: f64::NEG_INFINITY,
        }
    }

    /// How many datagrams may leave at `t` (ns from the start) when `k`
    /// have left, or when the next one falls due.
    pub fn due(&mut self, t: f64, k: u64) -> Result<u64, f64> {
        let capped = self.floor_ns > 0.0;
        if capped && t < self.last_ns + self.floor_ns {
            return Err(self.last_ns + self.floor_ns);
        }
        let owed = ((t - self.slip_ns) / self.wait_ns).floor() as u64 + 1;
        if owed <= k {
            return Err(k as f64 * self.wait_ns + self.slip_ns);
        }
        let mut n = owed - k;
        let over = n > self.depth;
        if over {
            self.slip_ns += (n - self.depth) as f64 * self.wait_ns;
            self.slips += u64::from(!self.slipping);
            n = self.depth;
        }
        self.slipping = over;
        Ok(if capped { 1 } else { n })
    }
}

/// The shortest gap a late sender of `pkt_bytes` datagrams, one of
/// `streams` paced alike, may use: never so short that the payload of all
/// of them outruns the agent's UDP rate limit (which the wait itself
/// respects).
pub fn floor_gap_ns(pkt_bytes: u64, streams: u32, max_bits_per_second: Option<f64>) -> f64 {
    max_bits_per_second.map_or(0.0, |max| {
        pkt_bytes as f64 * 8.0 * streams.max(1) as f64 / max * 1e9
    })
}

#[cfg(test)]
mod tests {
    use super::socket_rate;
    use super::{floor_gap_ns, Bucket, Pacer};
    use meshperf_protocol::params::{Limits, UdpStreamParams};
    use serde_json::json;

    /// Simulates a sender whose datagram 10 is stalled by `stall_ns`;
    /// returns the gaps between send times and the pacer.
    fn gaps_floor(wait_ns: f64, stall_ns: f64, n: u64, floor_ns: f64) -> (Vec<f64>, Pacer) {
        let mut p = Pacer::new(wait_ns, floor_ns);
        let (mut t, mut next, mut out) = (0.0f64, 0.0f64, Vec::new());
        for k in 0..n {
            let sent = next.max(t) + if k == 10 { stall_ns } else { 0.0 };
            if k > 0 {
                out.push(sent - t);
            }
            t = sent;
            next = p.next(sent, k + 1);
        }
        (out, p)
    }

    fn gaps(wait_ns: f64, stall_ns: f64, n: u64) -> Vec<f64> {
        gaps_floor(wait_ns, stall_ns, n, 0.0).0
    }

    /// A sender by rate that wakes `late_ns` after each due time, `n` calls.
    fn bucket_run(wait_ns: f64, floor_ns: f64, late_ns: f64, until_ns: f64) -> (Vec<f64>, Bucket) {
        let mut b = Bucket::new(wait_ns, floor_ns, 1400);
        let (mut t, mut k, mut sent) = (0.0f64, 0u64, Vec::new());
        while t < until_ns {
            match b.due(t, k) {
                Ok(n) => {
                    sent.extend(std::iter::repeat(t).take(n as usize));
                    k += n;
                    b.last_ns = t;
                }
                Err(at) => t = at + late_ns,
            }
        }
        (sent, b)
    }

    #[test]
    fn late_wake_ups_cost_a_sender_by_rate_no_datagrams() {
        // Every wake-up 1.5 ms late at one datagram per 560 us (20 Mbit/s
        // of 1400 B): the rate holds, in bursts of what fell due.
        let (sent, b) = bucket_run(560e3, 0.0, 1.5e6, 1e9);
        let on_time = (1e9f64 / 560e3).ceil();
        assert!(
            (sent.len() as f64 - on_time).abs() <= 3.0,
            "{} of {on_time}",
            sent.len()
        );
        assert_eq!(b.slips, 0);
        // A stall past the bucket's depth slips.
        let mut b = Bucket::new(560e3, 0.0, 1400);
        assert_eq!(b.due(0.0, 0), Ok(1));
        let n = b.due(100e6, 1).unwrap();
        assert_eq!(n, (50e6f64 / 560e3).ceil() as u64);
        assert_eq!(b.slips, 1);
        assert!(b.slip_ns > 49e6, "{}", b.slip_ns);
    }

    #[test]
    fn at_a_rate_the_host_cannot_reach_the_bucket_holds_one_small_burst() {
        // 1000G of 1400 B (a datagram due every 0.0112 ns), sent 32 per
        // 40 us for 1 s: what is due stays one burst of at most 1 MiB.
        let wait = 1400.0 * 8.0 / 1e12 * 1e9;
        let mut b = Bucket::new(wait, 0.0, 1400);
        let most = (1u64 << 20).div_ceil(1400);
        let (mut t, mut k, mut calls) = (0.0f64, 0u64, 0);
        while t < 1e9 {
            let n = b.due(t, k).unwrap();
            assert!(n <= most, "{n} due at {t} ns");
            k += n.min(32);
            b.last_ns = t;
            t += 40e3;
            calls += 1;
        }
        assert!(b.due(t, k).unwrap() <= most);
        // All but the first call (one due at 0) sent a full batch.
        assert_eq!(k, 1 + (calls - 1) * 32);
        // One slip that went on the whole time, by nearly all of it.
        assert_eq!(b.slips, 1);
        assert!(b.slip_ns > 0.99e9, "{}", b.slip_ns);
        // At 1 Gbit/s a stall is made up to 1 MiB, not 50 ms (6.25 MB).
        let mut b = Bucket::new(11.2e3, 0.0, 1400);
        assert_eq!(b.due(0.0, 0), Ok(1));
        assert_eq!(b.due(100e6, 1), Ok(most));
    }

    #[test]
    fn a_sender_by_rate_catches_up_no_faster_than_the_agent_cap() {
        // Due every 560 us, the cap allows one per 112 us.
        let (sent, _) = bucket_run(560e3, 112e3, 1.5e6, 0.5e9);
        let gaps: Vec<f64> = sent.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g >= 112e3 - 1e-6), "{:?}", &gaps[..10]);
    }

    #[test]
    fn on_schedule_the_gaps_are_the_wait() {
        assert!(gaps(20e3, 0.0, 100).iter().all(|&g| g == 20e3));
    }

    #[test]
    fn a_stall_is_paid_back_with_gaps_at_most_4_us_short() {
        let g = gaps(20e3, 200e3, 400);
        assert_eq!(g[9], 220e3, "the stall itself");
        // 200 us of debt, 4 us per datagram: 50 gaps of 16 us, then on time.
        assert!(
            g[10..60].iter().all(|&x| (x - 16e3).abs() < 1e-6),
            "{:?}",
            &g[10..60]
        );
        assert!(g[60..].iter().all(|&x| x == 20e3), "{:?}", &g[58..64]);
        let total: f64 = g.iter().sum();
        assert!((total - 399.0 * 20e3).abs() < 1e-6, "the mean rate holds");
    }

    #[test]
    fn a_stall_over_1_ms_slips_the_schedule_and_never_bursts() {
        // 28 ms behind: 1 ms is paid back at 4 us a datagram, the rest slips.
        let (g, p) = gaps_floor(20e3, 28e6, 2000, 0.0);
        assert!(
            g[10..].iter().all(|&x| x >= 16e3 - 1e-6),
            "{:?}",
            &g[10..20]
        );
        assert_eq!(p.slips, 1);
        assert!((p.slip_ns - 27e6).abs() < 1.0, "{}", p.slip_ns);
        // 250 short gaps pay back the 1 ms; then the asked spacing.
        assert!(g[10..260].iter().all(|&x| (x - 16e3).abs() < 1e-6));
        assert!(g[260..].iter().all(|&x| x == 20e3));
        let late = g.iter().sum::<f64>() - 1999.0 * 20e3;
        assert!(
            (late - 27e6).abs() < 1.0,
            "the send time shows the slip: {late}"
        );
    }

    #[test]
    fn a_slip_that_goes_on_for_a_few_datagrams_counts_once() {
        // 5 ms stall before datagram 10, then datagram 11 leaves 10 us past
        // its time as the thread gets back to speed: one stall, one slip.
        let mut p = Pacer::new(20e3, 0.0);
        let mut next = 0.0;
        for k in 0..100u64 {
            let late = match k {
                10 => 5e6,
                11 => 10e3,
                _ => 0.0,
            };
            next = p.next(next + late, k + 1);
        }
        assert_eq!(p.slips, 1);
        assert!(p.slip_ns > 4e6, "{}", p.slip_ns);
    }

    #[test]
    fn the_catch_up_floor_respects_the_agent_udp_rate_limit() {
        let limits = Limits {
            max_udp_bits_per_second: Some(100e6),
            ..Limits::default()
        };
        // 1400 B every 114 us is 98 Mbit/s; a gap 4 us short would pass 100.
        let p =
            UdpStreamParams::parse(&json!({"pkt_bytes": 1400, "wait_us": 114}), &limits).unwrap();
        let floor = floor_gap_ns(p.pkt_bytes, p.streams, limits.max_udp_bits_per_second);
        assert!((floor - 112e3).abs() < 1e-6, "{floor}");
        assert_eq!(floor_gap_ns(p.pkt_bytes, 1, None), 0.0);
        // Four streams paced alike share the limit: each keeps 4 x the gap.
        let four = floor_gap_ns(1400, 4, limits.max_udp_bits_per_second);
        assert!((four - 448e3).abs() < 1e-6, "{four}");
        let (g, _) = gaps_floor(114e3, 500e3, 1000, floor);
        assert!(g.iter().all(|&x| x >= 112e3 - 1e-6));
        let fastest = g.iter().cloned().fold(f64::MAX, f64::min);
        assert!(
            (fastest - 112e3).abs() < 1e-3,
            "catches up at the limit: {fastest}"
        );
    }
    #[test]
    fn the_kernel_holds_the_pacing_rate_asked() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(socket_rate(&c, 50e6).unwrap(), 50e6);
        // Above 4 GB/s: the 64-bit form.
        assert_eq!(socket_rate(&c, 80e9).unwrap(), 80e9);
    }
}
