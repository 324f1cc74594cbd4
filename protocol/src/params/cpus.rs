//! CPU lists (`cpus`, `server_cpus`): where a side's data threads run, as
//! `taskset -c` and iperf3 `-A` write them. Read from a whole number (`1`,
//! what `meshperf run --set cpus=1` sends), a text list of numbers and
//! ranges (`"0,2-3"`), or a JSON array of numbers. Which CPUs exist is the
//! agent's to say (its affinity); this only reads the list.

use super::{ParamError, Reader};
use serde_json::Value;

/// Linux's CPU_SETSIZE: the highest CPU number a list may name, plus one.
pub const CPU_SETSIZE: u32 = 1024;

impl Reader<'_> {
    /// A CPU list, in the order given, each CPU once; `None` when absent.
    pub(crate) fn cpu_list(&mut self, name: &'static str) -> Result<Option<Vec<u32>>, ParamError> {
        let Some(v) = self.raw(name) else {
            return Ok(None);
        };
        parse_cpu_list(v).map(Some).map_err(|m| {
            ParamError::new(
                name,
                format!("{m}: give CPU numbers as taskset -c does (1, 0,2-3), got {v}"),
            )
        })
    }
}

/// The CPUs `v` names, each once, in the order given.
pub fn parse_cpu_list(v: &Value) -> Result<Vec<u32>, String> {
    let mut out: Vec<u32> = Vec::new();
    let mut add = |c: u64| -> Result<(), String> {
        if c >= CPU_SETSIZE as u64 {
            return Err(format!(
                "CPU {c} is beyond the highest CPU number ({})",
                CPU_SETSIZE - 1
            ));
        }
        if !out.contains(&(c as u32)) {
            out.push(c as u32);
        }
        Ok(())
    };
    let number = |t: &str| -> Result<u64, String> {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("{:?} is not a CPU number", t.trim()))
    };
    match v {
        Value::Number(n) => add(n
            .as_u64()
            .ok_or_else(|| format!("{n} is not a CPU number"))?)?,
        Value::Array(a) => {
            for x in a {
                add(x
                    .as_u64()
                    .ok_or_else(|| format!("{x} is not a CPU number"))?)?;
            }
        }
        Value::String(s) => {
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
                            add(c)?;
                        }
                    }
                    None => add(number(part)?)?,
                }
            }
        }
        _ => return Err("not a CPU list".into()),
    }
    if out.is_empty() {
        return Err("an empty list".into());
    }
    Ok(out)
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
}
