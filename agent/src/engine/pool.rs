//! The worker pool under every kind that spreads over threads (neper's
//! thread.c): a side's connections or flows are dealt to the workers of
//! its [`Placement`] in turn, each worker a named thread (so `top -H` and
//! /proc/PID/task tell them apart) counted in the side's CPU figures and
//! pinned to its CPU when the placement lists CPUs; the side's own thread
//! ticks about every 20 ms meanwhile (progress, samples). Used by the bulk
//! workers ([`super::bulk`], `stream-w{N}`), the many-flow request/response
//! kinds (`flow-w{N}`) and `udp_stream` (`udp-w{N}`).

use super::cpu;
use super::placement::{self, Placement};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

/// How often the side's thread calls its `tick` while the workers run.
const TICK: Duration = Duration::from_millis(20);

/// Deals `items` to `workers` threads (at least one, at most one per
/// item): item `i` goes to worker `i % workers`, each worker's in order.
pub fn deal<T>(items: Vec<T>, workers: usize) -> Vec<Vec<T>> {
    let w = workers.clamp(1, items.len().max(1));
    let mut groups: Vec<Vec<T>> = (0..w).map(|_| Vec::new()).collect();
    for (i, t) in items.into_iter().enumerate() {
        groups[i % w].push(t);
    }
    groups
}

/// Runs `work(w, group, pinned)` on a thread `{name}-w{w}` for every
/// group of `items` dealt to the workers of `place` ([`deal`]); `pinned`
/// says whether the thread could be put on its CPU (`Err` names the CPU
/// and why not; `Ok` when the placement lists none). Calls `tick` about
/// every 20 ms from this thread until all are done. The results in group
/// order, each `Err` where its worker panicked; `Err` where the OS did not
/// start a thread (those started run to their end first).
pub fn run<T: Send, R: Send>(
    name: &str,
    place: &Placement,
    items: Vec<T>,
    work: impl Fn(usize, Vec<T>, Result<(), String>) -> R + Sync,
    mut tick: impl FnMut(),
) -> io::Result<Vec<thread::Result<R>>> {
    let groups = deal(items, place.workers);
    let workers = groups.len() as u64;
    let finished = AtomicU64::new(0);
    // The side's CPU figures count the workers too.
    let meter = cpu::current();
    thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(w, g)| {
                let (finished, work, meter) = (&finished, &work, meter.as_deref());
                let cpu = place.cpu_of(w);
                thread::Builder::new()
                    .name(format!("{name}-w{w}"))
                    .spawn_scoped(scope, move || {
                        let _cpu = cpu::Worker::count(meter);
                        let pinned = cpu.map_or(Ok(()), |c| {
                            placement::pin(c).map_err(|e| format!("cannot run on CPU {c}: {e}"))
                        });
                        let r = work(w, g, pinned);
                        finished.fetch_add(1, Ordering::Release);
                        r
                    })
            })
            .collect::<io::Result<_>>()?;
        while finished.load(Ordering::Acquire) < workers {
            thread::sleep(TICK);
            tick();
        }
        Ok(handles.into_iter().map(|h| h.join()).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_go_to_the_workers_in_turn() {
        let groups = |flows: usize, workers| deal((0..flows).collect::<Vec<_>>(), workers);
        assert_eq!(groups(5, 2), vec![vec![0, 2, 4], vec![1, 3]]);
        assert_eq!(groups(2, 8), vec![vec![0], vec![1]]);
        let g = groups(1000, 3);
        assert_eq!(g.iter().map(Vec::len).sum::<usize>(), 1000);
    }
}
