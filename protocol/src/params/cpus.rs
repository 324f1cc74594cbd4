//! CPU lists (`cpus`, `server_cpus`): where a side's data threads run, as
//! `taskset -c` and iperf3 `-A` write them. Read from a whole number (`1`,
//! what `meshperf run --set cpus=1` sends), a text list of numbers and
//! ranges (`"0,2-3"`), or a JSON array of numbers. Which CPUs exist is the
//! agent's to say (its affinity); this only reads the list.
//!
//! An agent reads lists on its control loop, so reading one costs time in
//! its length only: the CPUs named are marked in a bit set of
//! [`CPU_SETSIZE`] bits (a range marks at most that many), and a list
//! longer than [`CPU_LIST_CHARS`] bytes or [`CPU_LIST_ITEMS`] numbers
//! is refused before it is read (a `"0-1023"` repeated over 68 KiB took
//! 5.1 s of the control loop before, every other session waiting).

use super::{ParamError, Reader};
use serde_json::Value;

/// Linux's CPU_SETSIZE: the highest CPU number a list may name, plus one.
pub const CPU_SETSIZE: u32 = 1024;

/// The longest text list read, in bytes: about twice every CPU up to
/// [`CPU_SETSIZE`] written singly with a comma and a space (`0, 1, ...,
/// 1023` is 5 030).
pub const CPU_LIST_CHARS: usize = 10240;

/// The most numbers a JSON array list may hold (each CPU up to four times).
pub const CPU_LIST_ITEMS: usize = 4 * CPU_SETSIZE as usize;

/// What of a refused value a message shows: its first 40 characters.
const SHOWN_CHARS: usize = 40;

impl Reader<'_> {
    /// A CPU list, in the order given, each CPU once; `None` when absent.
    pub(crate) fn cpu_list(&mut self, name: &'static str) -> Result<Option<Vec<u32>>, ParamError> {
        let Some(v) = self.raw(name) else {
            return Ok(None);
        };
        parse_cpu_list(v).map(Some).map_err(|m| {
            ParamError::new(
                name,
                format!(
                    "{m}: give CPU numbers as taskset -c does (1, 0,2-3), got {}",
                    shown(v)
                ),
            )
        })
    }
}

/// `v` as JSON, cut to its first [`SHOWN_CHARS`] characters (`...` and the
/// whole length after a cut one), so a refusal stays one short line.
fn shown(v: &Value) -> String {
    let all = v.to_string();
    match all.char_indices().nth(SHOWN_CHARS) {
        None => all,
        Some((at, _)) => format!("{}... ({} characters)", &all[..at], all.chars().count()),
    }
}

/// The CPUs named so far: a bit set, and the order they came in.
struct Named {
    bits: [u64; CPU_SETSIZE as usize / 64],
    order: Vec<u32>,
}

impl Named {
    fn add(&mut self, c: u64) -> Result<(), String> {
        if c >= CPU_SETSIZE as u64 {
            return Err(format!(
                "CPU {c} is beyond the highest CPU number ({})",
                CPU_SETSIZE - 1
            ));
        }
        let (word, bit) = (c as usize / 64, 1u64 << (c % 64));
        if self.bits[word] & bit == 0 {
            self.bits[word] |= bit;
            self.order.push(c as u32);
        }
        Ok(())
    }
}

/// The CPUs `v` names, each once, in the order given.
pub fn parse_cpu_list(v: &Value) -> Result<Vec<u32>, String> {
    let mut named = Named {
        bits: [0; CPU_SETSIZE as usize / 64],
        order: Vec::new(),
    };
    let number = |t: &str| -> Result<u64, String> {
        let t = t.trim();
        t.parse::<u64>().map_err(|_| {
            let mut shown: String = t.chars().take(SHOWN_CHARS).collect();
            if shown.len() < t.len() {
                shown += "...";
            }
            format!("{shown:?} is not a CPU number")
        })
    };
    match v {
        Value::Number(n) => named.add(
            n.as_u64()
                .ok_or_else(|| format!("{n} is not a CPU number"))?,
        )?,
        Value::Array(a) => {
            if a.len() > CPU_LIST_ITEMS {
                return Err(format!(
                    "a list of {} numbers is longer than the {CPU_LIST_ITEMS} an agent reads",
                    a.len()
                ));
            }
            for x in a {
                named.add(
                    x.as_u64()
                        .ok_or_else(|| format!("{} is not a CPU number", shown(x)))?,
                )?;
            }
        }
        Value::String(s) => {
            if s.len() > CPU_LIST_CHARS {
                return Err(format!(
                    "a list of {} bytes is longer than the {CPU_LIST_CHARS} an agent reads",
                    s.len()
                ));
            }
            for part in s.split(',') {
                match part.split_once('-') {
                    Some((lo, hi)) => {
                        let (lo, hi) = (number(lo)?, number(hi)?);
                        if lo > hi {
                            return Err(format!("the range {lo}-{hi} runs backwards"));
                        }
                        if hi >= CPU_SETSIZE as u64 {
                            return Err(format!(
                                "CPU {hi} is beyond the highest CPU number ({})",
                                CPU_SETSIZE - 1
                            ));
                        }
                        for c in lo..=hi {
                            named.add(c)?;
                        }
                    }
                    None => named.add(number(part)?)?,
                }
            }
        }
        _ => return Err("not a CPU list".into()),
    }
    if named.order.is_empty() {
        return Err("an empty list".into());
    }
    Ok(named.order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_read_as_taskset_writes_them() {
        assert_eq!(parse_cpu_list(&json!(1)).unwrap(), [1]);
        assert_eq!(parse_cpu_list(&json!("0,2-4")).unwrap(), [0, 2, 3, 4]);
        assert_eq!(parse_cpu_list(&json!(" 3 , 1")).unwrap(), [3, 1]);
        assert_eq!(parse_cpu_list(&json!([1, 0, 1])).unwrap(), [1, 0]);
        assert_eq!(parse_cpu_list(&json!("1-1")).unwrap(), [1]);
        for bad in [
            json!(""),
            json!("a"),
            json!("3-1"),
            json!("1,"),
            json!("-1"),
            json!(-1),
            json!(1.5),
            json!(1024),
            json!("0-5000"),
            json!([]),
            json!(true),
        ] {
            assert!(parse_cpu_list(&bad).is_err(), "{bad}");
        }
    }

    /// Issue 40 finding 4: a list's cost is its length, which is bounded.
    /// A 1 MiB list (text or array) is refused at once, in one short line
    /// without the list; the costliest list within the bound (ranges of
    /// every CPU, over and over) is read quickly. Before, a 68 KiB list of
    /// "0-1023" took 5.1 s and a 1 MiB one about 77 s: the bound here
    /// (500 ms, for a 2-core machine busy with builds) is far from both,
    /// and far above the few milliseconds these take.
    #[test]
    fn long_lists_are_refused_at_once_and_the_longest_read_is_quick() {
        use std::time::{Duration, Instant};
        let big = "0-1023,".repeat((1 << 20) / 7);
        let t0 = Instant::now();
        let e = parse_cpu_list(&json!(big)).unwrap_err();
        let took = t0.elapsed();
        assert!(
            e.starts_with(&format!(
                "a list of {} bytes is longer than the 10240",
                big.len()
            )),
            "{e}"
        );
        assert!(took < Duration::from_millis(500), "{took:?}");
        let many = json!(vec![0u32; 1 << 18]);
        let t0 = Instant::now();
        let e = parse_cpu_list(&many).unwrap_err();
        assert!(e.contains("longer than the 4096"), "{e}");
        assert!(
            t0.elapsed() < Duration::from_millis(500),
            "{:?}",
            t0.elapsed()
        );
        // Within the bounds: every range names all 1024 CPUs again.
        let longest = "0-1023,".repeat(CPU_LIST_CHARS / 7);
        let longest = longest.trim_end_matches(',');
        assert!(longest.len() <= CPU_LIST_CHARS);
        let t0 = Instant::now();
        let all = parse_cpu_list(&json!(longest)).unwrap();
        let took = t0.elapsed();
        assert_eq!(all, (0..1024).collect::<Vec<u32>>());
        assert!(took < Duration::from_millis(500), "{took:?}");
        let t0 = Instant::now();
        let all = parse_cpu_list(&json!(vec![1023u32; CPU_LIST_ITEMS])).unwrap();
        assert_eq!(all, [1023]);
        assert!(
            t0.elapsed() < Duration::from_millis(500),
            "{:?}",
            t0.elapsed()
        );
        // Every CPU written singly, with spaces, is within the bound.
        let singly = (0..1024)
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        assert_eq!(parse_cpu_list(&json!(singly)).unwrap().len(), 1024);
    }

    /// A refusal through the parameter reader shows at most the start of
    /// what it was given.
    #[test]
    fn a_refusal_shows_the_start_of_a_long_value() {
        let long = format!("x{}", "1".repeat(5000));
        let e = parse_cpu_list(&json!(long)).unwrap_err();
        assert!(
            e.len() < 100 && e.ends_with("...\" is not a CPU number"),
            "{e}"
        );
        assert_eq!(shown(&json!("0,1")), "\"0,1\"");
        let s = shown(&json!("é".repeat(100)));
        assert!(
            s.starts_with("\"ééé") && s.ends_with("... (102 characters)"),
            "{s}"
        );
    }
}
