//! How far a controller's steps have got, on stderr: a bar on a terminal,
//! a plain `progress:` line every 2 s otherwise. `meshperf run`'s output
//! holds one; `meshperf monitor` shows its rounds with one of its own.

use std::io::{IsTerminal, Write};
use std::time::Instant;

pub struct Progress {
    tty: bool,
    total: usize,
    done: usize,
    last_plain: Instant,
}

impl Progress {
    /// Progress over `total` steps (or pairs).
    pub fn new(total: usize) -> Self {
        Progress {
            tty: std::io::stderr().is_terminal(),
            total,
            done: 0,
            last_plain: Instant::now(),
        }
    }

    /// The running step is `f` done (0 to 1).
    pub fn progress(&mut self, f: f64) {
        let overall = (self.done as f64 + f) / self.total.max(1) as f64;
        if self.tty {
            let w = 30;
            let fill = (overall * w as f64).round() as usize;
            eprint!(
                "\r[{}{}] {:5.1}%  step {}/{}",
                "#".repeat(fill.min(w)),
                " ".repeat(w - fill.min(w)),
                overall * 100.0,
                self.done + 1,
                self.total
            );
            let _ = std::io::stderr().flush();
        } else if self.last_plain.elapsed().as_secs() >= 2 {
            self.last_plain = Instant::now();
            eprintln!(
                "progress: step {}/{} {:.0}%",
                self.done + 1,
                self.total,
                f * 100.0
            );
        }
    }

    /// One more step has ended (clears a progress bar).
    pub fn step_done(&mut self) {
        self.done += 1;
        self.finish();
    }

    pub fn done(&self) -> usize {
        self.done
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// Clears a progress bar.
    pub fn finish(&mut self) {
        if self.tty {
            eprint!("\r{}\r", " ".repeat(60));
        }
    }
}
