//! Where a stream test side's data threads run: how many worker threads
//! (`threads`; by default one per stream up to the CPUs the agent may use)
//! and on which CPUs (`cpus` for the driving side, `server_cpus` for the
//! serving side, as iperf3 `-A`). The CPUs an agent may use are its
//! affinity when it started (`sched_getaffinity`, what `taskset` and a
//! container's cpuset set), read once by [`init`] on the control thread.
//!
//! A side whose data threads are pinned keeps everything else off their
//! CPUs while it runs ([`Aside`]): its own thread (progress, samples; the
//! probe loops and watchdogs it starts inherit its mask) and the agent's
//! control loop move to the agent's other CPUs, and back when the side
//! ends. An agent with no other CPU leaves them where they are.
//!
//! The checks here are the agent's: a list naming a CPU the agent may not
//! use, or more threads than it has CPUs, is refused in one line naming the
//! parameter before any traffic ([`plan`], called by `prepare`/`start`).

use super::error::Refusal;
use meshperf_protocol::msg::{ErrorCode, Role};
use meshperf_protocol::params::StreamParams;
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

static ALLOWED: OnceLock<Vec<usize>> = OnceLock::new();
/// The control loop's thread id (0: not known, [`init`] was not called).
static CONTROL: AtomicI32 = AtomicI32::new(0);
/// CPUs pinned by the sides running now, once per side that pinned them.
static PINNED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A thread id, as the affinity calls take it.
#[cfg(target_os = "linux")]
type Tid = libc::pid_t;
#[cfg(not(target_os = "linux"))]
type Tid = i32;

#[cfg(target_os = "linux")]
fn tid() -> Tid {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as Tid }
}

#[cfg(target_os = "linux")]
/// The CPUs thread `tid` may run on (0: the calling thread).
fn get(tid: Tid) -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(tid, size, &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let n = meshperf_protocol::params::CPU_SETSIZE as usize;
    Ok((0..n)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

#[cfg(target_os = "linux")]
/// Lets thread `tid` (0: the calling thread) run on `cpus` only.
fn set(tid: Tid, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: as in `get`; CPU_SET stays within the set (every CPU number
    // is below CPU_SETSIZE: it came from `get` or a checked list).
    let mut s: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        unsafe { libc::CPU_SET(c, &mut s) };
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_setaffinity(tid, size, &s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Off Linux no thread is pinned (`cpus` and `server_cpus` are refused
/// before any traffic, [`crate::platform::linux_only`]): the agent may use
/// every CPU it counts.
#[cfg(not(target_os = "linux"))]
fn tid() -> Tid {
    0
}

#[cfg(not(target_os = "linux"))]
fn get(_tid: Tid) -> io::Result<Vec<usize>> {
    Err(crate::platform::unsupported("cpus", "CPU pinning"))
}

#[cfg(not(target_os = "linux"))]
fn set(_tid: Tid, _cpus: &[usize]) -> io::Result<()> {
    Err(crate::platform::unsupported("cpus", "CPU pinning"))
}

/// Records the CPUs the agent may use and that the calling thread is the
/// control loop's (the agent calls this once, first thing).
pub fn init() {
    allowed();
    CONTROL.store(tid(), Ordering::Relaxed);
}

/// The CPUs this agent may use (its affinity when first asked).
pub fn allowed() -> &'static [usize] {
    ALLOWED.get_or_init(|| match get(0) {
        Ok(v) if !v.is_empty() => v,
        _ => (0..crate::sysinfo::cores() as usize).collect(),
    })
}

/// CPU numbers as `taskset -c` prints them: `0-3,6`.
pub fn list_text(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => sorted[i].to_string(),
            _ => format!("{}-{}", sorted[i], sorted[j]),
        });
        i = j + 1;
    }
    parts.join(",")
}

/// How one side's streams run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Worker threads (at least 1, at most one per connection).
    pub workers: usize,
    /// Worker `w` runs on `cpus[w % cpus.len()]`; empty: not pinned.
    pub cpus: Vec<usize>,
}

impl Placement {
    /// The placement of a side with `connections` data connections, from
    /// `threads` and its CPU list (`name` = `cpus` or `server_cpus`),
    /// within the CPUs in `allowed`; a refusal names the parameter.
    pub fn of(
        threads: Option<u32>,
        (name, list): (&str, Option<&[u32]>),
        connections: usize,
        allowed: &[usize],
    ) -> Result<Placement, String> {
        let mine = || list_text(allowed);
        if let Some(t) = threads.filter(|&t| t as usize > allowed.len()) {
            return Err(format!(
                "threads: {t} is more than the {} CPUs this agent may use ({}); give at most {}",
                allowed.len(),
                mine(),
                allowed.len()
            ));
        }
        let cpus: Vec<usize> = list
            .unwrap_or_default()
            .iter()
            .map(|&c| c as usize)
            .collect();
        if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
            return Err(format!(
                "{name}: CPU {c} is not one this agent may use (its CPUs: {}); list CPUs from those",
                mine()
            ));
        }
        let cpu_count = if cpus.is_empty() {
            allowed.len()
        } else {
            cpus.len()
        };
        let workers = threads
            .map_or(cpu_count, |t| t as usize)
            .clamp(1, connections.max(1));
        Ok(Placement { workers, cpus })
    }

    /// The default: one worker per connection up to the agent's CPUs,
    /// unpinned (`latency_under_load`'s load).
    pub fn spread(connections: usize) -> Placement {
        Placement {
            workers: allowed().len().clamp(1, connections.max(1)),
            cpus: Vec::new(),
        }
    }

    /// The CPU of worker `w`, if the workers are pinned.
    /// `workers` threads, on no CPU in particular.
    pub fn unpinned(workers: usize) -> Placement {
        Placement {
            workers,
            cpus: Vec::new(),
        }
    }

    pub fn cpu_of(&self, w: usize) -> Option<usize> {
        (!self.cpus.is_empty()).then(|| self.cpus[w % self.cpus.len()])
    }

    /// Keeps this side's other threads and the control loop off the
    /// pinned CPUs until the guard drops (nothing when not pinned).
    pub fn aside(&self) -> Aside {
        Aside::new(&self.cpus)
    }
}

/// The placement of `role`'s side of a stream test with parameters `p` and
/// `connections` data connections, checked against this agent's CPUs
/// (before any traffic).
pub fn plan(p: &StreamParams, role: Role, connections: usize) -> Result<Placement, Refusal> {
    checked(p.threads, p.cpus_of(role == Role::Server), connections)
}

/// The placement of a side with `connections` data flows from its
/// `threads` and CPU list (`udp_stream`'s, and [`plan`]'s), checked
/// against this agent's CPUs.
pub fn checked(
    threads: Option<u32>,
    list: (&str, Option<&[u32]>),
    connections: usize,
) -> Result<Placement, Refusal> {
    Placement::of(threads, list, connections, allowed()).map_err(|m| (ErrorCode::BadParams, m))
}

/// [`Placement::aside`] for `role`'s side of `p` (nothing when its
/// placement pins nothing, or was refused: `prepare` and `start` refuse it
/// before the side runs).
pub fn aside_for(p: &StreamParams, role: Role, connections: usize) -> Aside {
    match plan(p, role, connections) {
        Ok(pl) => pl.aside(),
        Err(_) => Aside { cpus: Vec::new() },
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) -> io::Result<()> {
    set(0, &[cpu])
}

/// While it lives, the calling thread and the control loop run on the
/// agent's CPUs that no running side has pinned (see the module doc).
pub struct Aside {
    cpus: Vec<usize>,
}

impl Aside {
    fn new(pinned: &[usize]) -> Aside {
        if pinned.is_empty() {
            return Aside { cpus: Vec::new() };
        }
        let mut all = PINNED.lock().unwrap_or_else(|e| e.into_inner());
        all.extend_from_slice(pinned);
        if let Some(rest) = unpinned(&all) {
            let _ = set(0, &rest);
        }
        move_control(&all);
        Aside {
            cpus: pinned.to_vec(),
        }
    }
}

impl Drop for Aside {
    fn drop(&mut self) {
        if self.cpus.is_empty() {
            return;
        }
        let mut all = PINNED.lock().unwrap_or_else(|e| e.into_inner());
        for c in &self.cpus {
            if let Some(i) = all.iter().position(|x| x == c) {
                all.swap_remove(i);
            }
        }
        move_control(&all);
    }
}

/// The agent's CPUs outside `pinned`; `None` when there are none.
fn unpinned(pinned: &[usize]) -> Option<Vec<usize>> {
    let rest: Vec<usize> = allowed()
        .iter()
        .copied()
        .filter(|c| !pinned.contains(c))
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// Puts the control loop on the CPUs outside `pinned` (all the agent's
/// when none is pinned, or every one is).
fn move_control(pinned: &[usize]) {
    let control = CONTROL.load(Ordering::Relaxed);
    if control != 0 {
        let cpus = unpinned(pinned).unwrap_or_else(|| allowed().to_vec());
        let _ = set(control, &cpus);
    }
}

/// The CPUs thread `tid` of this process may run on (tests).
pub fn of_thread(tid: Tid) -> io::Result<Vec<usize>> {
    get(tid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_default_to_one_per_stream_up_to_the_cpus() {
        let all = [0, 1, 2, 3];
        let of = |t, l: Option<&[u32]>, n| Placement::of(t, ("cpus", l), n, &all);
        assert_eq!(of(None, None, 1).unwrap().workers, 1);
        assert_eq!(of(None, None, 8).unwrap().workers, 4);
        assert_eq!(of(None, Some(&[1, 3][..]), 8).unwrap().workers, 2);
        assert_eq!(of(Some(2), None, 8).unwrap().workers, 2);
        assert_eq!(of(Some(4), None, 2).unwrap().workers, 2, "no idle workers");
        let p = of(Some(3), Some(&[3, 1][..]), 8).unwrap();
        assert_eq!(p.cpus, [3, 1]);
        assert_eq!(
            (p.cpu_of(0), p.cpu_of(1), p.cpu_of(2)),
            (Some(3), Some(1), Some(3))
        );
        assert_eq!(of(None, None, 8).unwrap().cpu_of(0), None);
    }

    #[test]
    fn more_threads_than_cpus_or_a_foreign_cpu_is_refused_naming_it() {
        let all = [0, 1, 2, 5];
        let e = Placement::of(Some(5), ("cpus", None), 8, &all).unwrap_err();
        assert_eq!(
            e,
            "threads: 5 is more than the 4 CPUs this agent may use (0-2,5); give at most 4"
        );
        let e = Placement::of(None, ("server_cpus", Some(&[1, 3][..])), 8, &all).unwrap_err();
        assert_eq!(
            e,
            "server_cpus: CPU 3 is not one this agent may use (its CPUs: 0-2,5); list CPUs from those"
        );
    }

    #[test]
    fn the_agent_cpus_are_its_affinity_and_a_thread_can_be_pinned() {
        let all = allowed();
        assert!(!all.is_empty());
        // SAFETY: sysconf has no preconditions.
        let conf = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as usize;
        assert!(all.iter().all(|&c| c < conf.max(1)), "{all:?}");
        let cpu = *all.last().unwrap();
        std::thread::spawn(move || {
            pin(cpu).unwrap();
            assert_eq!(of_thread(0).unwrap(), [cpu]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn cpu_lists_print_as_taskset_does() {
        assert_eq!(list_text(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(list_text(&[5, 1]), "1,5");
        assert_eq!(list_text(&[]), "");
    }
}
