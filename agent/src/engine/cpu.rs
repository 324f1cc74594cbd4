//! CPU use of a test side, the `cpu` key of every summary
//! ([`CpuSummary`]): user and system time of the side's threads, and the
//! whole host's utilisation over the same interval.
//!
//! Every test side runs on a thread of its own (`serve::control` spawns it
//! and calls [`enter`] first). Threads the side starts for the test (the
//! stream workers of [`super::bulk`], the probe loops of
//! `latency_under_load`) count themselves with [`Worker`]: getrusage
//! (RUSAGE_THREAD) tells only the calling thread's times, so each thread
//! reads its own before it ends. The interval starts again when the side is
//! connected to its peer ([`begin`], from `Limit::begin`) and ends when the
//! side reports ([`finish`], from `TestCtx::report`). The host's times come
//! from the first line of /proc/stat.
//!
//! Watchdog threads (parked, woken at deadlines) are not counted.

use meshperf_protocol::summary::CpuSummary;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// User and system CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Times {
    pub user: Duration,
    pub system: Duration,
}

impl Times {
    /// The calling thread's times so far (zero if GetThreadTimes fails).
    #[cfg(windows)]
    pub fn thread() -> Times {
        use windows_sys::Win32::Foundation::FILETIME;
        use windows_sys::Win32::System::Threading::{GetCurrentThread, GetThreadTimes};
        let zero = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut c, mut e, mut k, mut u) = (zero, zero, zero, zero);
        // SAFETY: the pseudo-handle of the calling thread; four valid FILETIMEs.
        if unsafe { GetThreadTimes(GetCurrentThread(), &mut c, &mut e, &mut k, &mut u) } == 0 {
            return Times::default();
        }
        // 100 ns units.
        let d = |t: FILETIME| {
            Duration::from_nanos((((t.dwHighDateTime as u64) << 32) | t.dwLowDateTime as u64) * 100)
        };
        Times {
            user: d(u),
            system: d(k),
        }
    }

    /// No per-thread times here (macOS has no RUSAGE_THREAD): zero.
    #[cfg(not(any(target_os = "linux", windows)))]
    pub fn thread() -> Times {
        Times::default()
    }

    /// The calling thread's times so far (zero if getrusage fails).
    #[cfg(target_os = "linux")]
    pub fn thread() -> Times {
        // SAFETY: rusage is plain data; getrusage fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return Times::default();
        }
        let d = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        Times {
            user: d(ru.ru_utime),
            system: d(ru.ru_stime),
        }
    }

    fn since(self, earlier: Times) -> Times {
        Times {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    fn add(&mut self, t: Times) {
        self.user += t.user;
        self.system += t.system;
    }
}

/// The host's CPU times from /proc/stat: the `cpu` line (all CPUs, in
/// clock ticks) and the number of `cpuN` lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostTimes {
    /// user + nice (guest time is inside these already).
    pub user: u64,
    /// system + irq + softirq.
    pub system: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Every tick of the first eight fields (user to steal).
    pub total: u64,
    pub cpus: u32,
}

impl HostTimes {
    /// /proc/stat now (None where it cannot be read).
    pub fn read() -> Option<HostTimes> {
        HostTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Parses /proc/stat: `cpu  user nice system idle iowait irq softirq
    /// steal guest guest_nice` (kernels before 2.6.33 have fewer fields;
    /// missing ones count 0), then one `cpuN` line per CPU.
    pub fn parse(text: &str) -> Option<HostTimes> {
        let mut lines = text.lines();
        let mut f = lines.next()?.split_ascii_whitespace();
        if f.next()? != "cpu" {
            return None;
        }
        let v: Vec<u64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
        if v.len() < 4 {
            return None;
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let cpus = lines
            .take_while(|l| l.starts_with("cpu"))
            .filter(|l| l[3..].starts_with(|c: char| c.is_ascii_digit()))
            .count() as u32;
        Some(HostTimes {
            user: at(0) + at(1),
            system: at(2) + at(5) + at(6),
            idle: at(3) + at(4),
            total: v.iter().sum(),
            cpus,
        })
    }

    /// Busy, user and system time since `earlier` as percents of all CPUs'
    /// time; None when no tick passed.
    pub fn percent_since(&self, earlier: &HostTimes) -> Option<(f64, f64, f64)> {
        let total = self.total.checked_sub(earlier.total).filter(|&t| t > 0)? as f64;
        let pct = |now: u64, then: u64| now.saturating_sub(then) as f64 * 100.0 / total;
        let idle = pct(self.idle, earlier.idle).min(100.0);
        Some((
            100.0 - idle,
            pct(self.user, earlier.user).min(100.0),
            pct(self.system, earlier.system).min(100.0),
        ))
    }
}

/// What one test side has used so far.
pub struct Meter {
    state: Mutex<State>,
}

struct State {
    wall: Instant,
    host: Option<HostTimes>,
    /// The side's own thread's times at the start.
    own: Times,
    begun: bool,
    /// Times of the worker threads that have ended.
    workers: Times,
    threads: u32,
}

impl Meter {
    fn new() -> Meter {
        Meter {
            state: Mutex::new(State {
                wall: Instant::now(),
                host: HostTimes::read(),
                own: Times::thread(),
                begun: false,
                workers: Times::default(),
                threads: 0,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Meter>>> = const { RefCell::new(None) };
}

/// Starts measuring the test side that runs on the calling thread.
pub fn enter() {
    CURRENT.with(|c| *c.borrow_mut() = Some(Arc::new(Meter::new())));
}

/// The meter of the side running on the calling thread (None on threads
/// that are no test side's own).
pub fn current() -> Option<Arc<Meter>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The side is connected to its peer: its interval starts now (the first
/// call only: `latency_under_load` connects twice).
pub fn begin() {
    if let Some(m) = current() {
        let mut s = m.state();
        if !s.begun {
            s.begun = true;
            s.wall = Instant::now();
            s.host = HostTimes::read();
            s.own = Times::thread();
        }
    }
}

/// The side's figures from its start (or [`begin`]) to now; None on a
/// thread without a meter.
pub fn finish() -> Option<CpuSummary> {
    let m = current()?;
    let s = m.state();
    let seconds = s.wall.elapsed().as_secs_f64();
    let mut t = Times::thread().since(s.own);
    t.add(s.workers);
    let (user, system) = (t.user.as_secs_f64(), t.system.as_secs_f64());
    let now = HostTimes::read();
    let host = s.host.zip(now).and_then(|(a, b)| b.percent_since(&a));
    Some(CpuSummary {
        seconds,
        user_seconds: user,
        system_seconds: system,
        threads: 1 + s.threads,
        percent: if seconds > 0.0 {
            (user + system) / seconds * 100.0
        } else {
            0.0
        },
        host_percent: host.map(|h| h.0),
        host_user_percent: host.map(|h| h.1),
        host_system_percent: host.map(|h| h.2),
        host_cpus: now.map_or(0, |h| h.cpus),
    })
}

/// Counts the calling thread, started for a test side, into that side's
/// figures when dropped (before the thread ends).
pub struct Worker<'a> {
    meter: Option<&'a Meter>,
    start: Times,
}

impl<'a> Worker<'a> {
    pub fn count(meter: Option<&'a Meter>) -> Worker<'a> {
        Worker {
            meter,
            start: if meter.is_some() {
                Times::thread()
            } else {
                Times::default()
            },
        }
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        if let Some(m) = self.meter {
            let used = Times::thread().since(self.start);
            let mut s = m.state();
            s.workers.add(used);
            s.threads += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps the calling thread busy until it has used `d` of CPU (however
    /// long that takes on a loaded machine).
    fn spin(d: Duration) {
        let t0 = Times::thread();
        let mut x = 0u64;
        loop {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            let t = Times::thread().since(t0);
            if t.user + t.system >= d {
                break;
            }
        }
    }

    /// utime + stime of the calling thread from /proc/thread-self/stat, in
    /// clock ticks (fields 14 and 15; the name in parentheses may hold
    /// spaces, so count from the last ')').
    fn proc_thread_ticks() -> u64 {
        let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let rest = &s[s.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_ascii_whitespace().collect();
        // `rest` starts at field 3 (state).
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    #[test]
    fn proc_stat_is_parsed_field_by_field() {
        let text = "cpu  100 20 30 400 50 6 7 8 9 1\ncpu0 50 10 15 200 25 3 3 4 4 0\ncpu1 50 10 15 200 25 3 4 4 5 1\nintr 5 0\ncpufreq x\n";
        let a = HostTimes::parse(text).unwrap();
        assert_eq!(
            a,
            HostTimes {
                user: 120,
                system: 43,
                idle: 450,
                total: 621,
                cpus: 2
            }
        );
        let b = HostTimes {
            user: 170,
            system: 93,
            idle: 550,
            total: 821,
            cpus: 2,
        };
        assert_eq!(b.percent_since(&a), Some((50.0, 25.0, 25.0)));
        assert_eq!(a.percent_since(&a), None, "no tick passed");
        assert_eq!(HostTimes::parse("intr 1 2\n"), None);
        assert_eq!(HostTimes::parse("cpu 1 2 x 4\n"), None);
    }

    #[test]
    fn real_proc_stat_counts_the_online_cpus_and_a_busy_thread() {
        let a = HostTimes::read().expect("/proc/stat");
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        assert_eq!(a.cpus as i64, online, "{a:?}");
        assert!(a.user + a.system + a.idle <= a.total && a.total > 0);
        let t0 = Instant::now();
        spin(Duration::from_millis(120));
        let b = HostTimes::read().unwrap();
        let wall = t0.elapsed().as_secs_f64();
        let (busy, user, system) = b.percent_since(&a).expect("ticks passed");
        // This thread alone kept the host busy 0.12 s of `wall` x `cpus`
        // (less a tick at either end), whatever else the machine did.
        let floor = (0.12 - 0.02) / (wall * a.cpus as f64) * 100.0;
        assert!(
            (floor..=100.0).contains(&busy),
            "busy {busy} < {floor}, {a:?} {b:?}"
        );
        assert!(user + system <= busy + 1e-9, "{user} + {system} > {busy}");
    }

    #[test]
    fn thread_times_match_proc_thread_self_and_count_workers() {
        std::thread::spawn(|| {
            enter();
            let t0 = Instant::now();
            spin(Duration::from_millis(150));
            let own = Times::thread();
            let ticks = proc_thread_ticks();
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
            let busy = (own.user + own.system).as_secs_f64();
            // Both come from the kernel's precise runtime, split by ticks;
            // /proc truncates to whole ticks.
            assert!(
                (busy - ticks as f64 / hz).abs() <= 2.0 / hz,
                "getrusage {busy} s, /proc {ticks} ticks"
            );
            assert!(busy >= 0.15 && busy <= t0.elapsed().as_secs_f64(), "{busy}");
            // Two workers use 100 ms of CPU each; the side's own thread waits.
            begin();
            let m = current().unwrap();
            std::thread::scope(|s| {
                for _ in 0..2 {
                    let m = Some(&*m);
                    s.spawn(move || {
                        let _w = Worker::count(m);
                        spin(Duration::from_millis(100));
                    });
                }
            });
            let c = finish().unwrap();
            let used = c.user_seconds + c.system_seconds;
            assert_eq!(c.threads, 3);
            assert!(used >= 0.2, "{c:?}");
            assert!(used <= c.seconds * 3.0, "{c:?}");
            assert!((c.percent - used / c.seconds * 100.0).abs() < 1e-6);
            let h = c.host_percent.expect("host figures");
            assert!((0.0..=100.0).contains(&h), "{c:?}");
        })
        .join()
        .unwrap();
        assert!(
            finish().is_none(),
            "no meter on a thread that did not enter"
        );
    }
}
