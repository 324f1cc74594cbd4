//! Many flows (`flows` of `tcp_rr` and `tcp_crr`, neper's model): a
//! side's concurrent connections spread over worker threads (`threads`,
//! by default one per flow up to the CPUs the agent may use), each worker
//! with its own mio `Poll`, named `flow-w{N}` so `top -H` tells them apart
//! (the threads are the engine's worker pool, [`super::pool`], unpinned).
//! This module owns what both kinds share: the checks before any traffic
//! (threads within the agent's CPUs, descriptors within RLIMIT_NOFILE) and
//! the samples the workers hand to the side's thread, which sends them on
//! in order of hand-over, every sample exactly once.

use super::error::Refusal;
use super::placement::{self, Placement};
use meshperf_protocol::msg::ErrorCode;
use std::sync::Mutex;

/// Descriptors left for everything else the agent holds during a test
/// (control connections, listeners, the poll instances of the workers,
/// and the few connections a tcp_crr serving side may hold beyond its
/// flows, `crr::SPARE_CONNS`).
#[cfg(target_os = "linux")]
const FD_SPARE: u64 = 64;

/// How many worker threads a side of `flows` flows runs (`threads`, else
/// one per flow up to the CPUs this agent may use), checked before any
/// traffic: more threads than CPUs is refused naming `threads`, more
/// descriptors than RLIMIT_NOFILE allows in one line saying so.
pub fn workers(flows: u32, threads: Option<u32>) -> Result<usize, Refusal> {
    let p = Placement::of(
        threads,
        ("cpus", None),
        flows as usize,
        placement::allowed(),
    )
    .map_err(|m| (ErrorCode::BadParams, m))?;
    descriptors(flows as u64)?;
    Ok(p.workers)
}

/// Off Linux no descriptor limit is read (Windows has none like
/// RLIMIT_NOFILE): a connection that cannot be made says so.
#[cfg(not(target_os = "linux"))]
fn descriptors(_more: u64) -> Result<(), Refusal> {
    Ok(())
}

/// Whether this process may open `more` descriptors beside those open
/// now; raises the soft RLIMIT_NOFILE up to the hard one when that is
/// enough (as Go's runtime does at start: the soft 1024 is there for
/// select(2), which the agent does not use).
#[cfg(target_os = "linux")]
fn descriptors(more: u64) -> Result<(), Refusal> {
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let need = open + more + FD_SPARE;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // unknown: the connections will say it if they fail
    }
    if need <= lim.rlim_cur {
        return Ok(());
    }
    if need <= lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above; raising the soft limit up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err((
        ErrorCode::BadParams,
        format!(
            "flows: {more} connections need {need} descriptors with the {open} this agent holds \
             and {FD_SPARE} spare, above its limit of {} (RLIMIT_NOFILE); raise it (ulimit -n, \
             LimitNOFILE=) or ask fewer flows",
            lim.rlim_max
        ),
    ))
}

/// Samples the workers hand over: one or two series kept aligned (the
/// same index is the same transaction), and the running count.
#[derive(Default)]
pub struct Collected {
    pub series: Mutex<[Vec<u64>; 2]>,
}

impl Collected {
    /// Appends a worker's batch (`b` empty for a one-series kind) and
    /// empties it.
    pub fn hand_over(&self, a: &mut Vec<u64>, b: &mut Vec<u64>) {
        if a.is_empty() {
            return;
        }
        let mut s = self.series.lock().expect("samples lock");
        s[0].append(a);
        s[1].append(b);
    }

    /// Samples handed over so far.
    pub fn len(&self) -> usize {
        self.series.lock().expect("samples lock")[0].len()
    }

    /// Whether no sample has been handed over yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `send(from, a, b)` with the samples from index `from` on
    /// (those not sent yet) and moves `from` past them.
    pub fn drain(&self, from: &mut usize, mut send: impl FnMut(usize, &[u64], &[u64])) {
        let s = self.series.lock().expect("samples lock");
        if *from < s[0].len() {
            let b = if s[1].is_empty() {
                &[][..]
            } else {
                &s[1][*from..]
            };
            send(*from, &s[0][*from..], b);
            *from = s[0].len();
        }
    }

    pub fn take(self) -> [Vec<u64>; 2] {
        self.series.into_inner().expect("samples lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_within_the_limit_pass_and_beyond_it_are_refused() {
        assert!(descriptors(10).is_ok());
        let e = descriptors(u32::MAX as u64 * 4).unwrap_err();
        assert!(
            e.1.starts_with("flows: ") && e.1.contains("RLIMIT_NOFILE"),
            "{}",
            e.1
        );
    }
}
