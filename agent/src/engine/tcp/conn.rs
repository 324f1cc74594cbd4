//! What the connection-per-transaction loops of `tcp_crr` share, one flow
//! ([`super::crr`]) or many ([`super::crr_flows`]): errno names, the line
//! that ends a test whose ports or descriptors ran out, and the driving
//! side's tally of its transactions.

use crate::engine::ctx::{done_fraction, TestCtx};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::params::CrrParams;
use std::collections::BTreeMap;
use std::io;
use std::time::Instant;

/// A progress event: `attempts` connects tried, `done` transactions completed.
pub fn progress(ctx: &TestCtx, p: &CrrParams, start: Instant, attempts: u64, done: u64) {
    let elapsed = start.elapsed().as_secs_f64();
    let fraction = done_fraction(p.count.map(|c| (attempts, c)), elapsed, p.duration_s);
    ctx.progress(elapsed, done * (p.req_bytes + p.resp_bytes), fraction);
}

/// The errno's symbolic name (`ECONNREFUSED`), as the summary counts it.
pub fn errno_name(e: &io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return match e.kind() {
            io::ErrorKind::UnexpectedEof => "EOF".into(),
            io::ErrorKind::TimedOut => "ETIMEDOUT".into(),
            k => format!("{k:?}"),
        };
    };
    let name = match n {
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENETDOWN => "ENETDOWN",
        libc::EHOSTDOWN => "EHOSTDOWN",
        libc::EPIPE => "EPIPE",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOBUFS => "ENOBUFS",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EAGAIN => "EAGAIN",
        libc::EINVAL => "EINVAL",
        _ => return format!("errno {n}"),
    };
    name.into()
}

/// The line that ends a test whose ephemeral ports or descriptors ran out.
pub fn exhausted(e: &io::Error, done: u64) -> Option<String> {
    match e.raw_os_error()? {
        libc::EADDRNOTAVAIL => {
            let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
                .map(|r| r.split_whitespace().collect::<Vec<_>>().join("-"))
                .unwrap_or_else(|_| "unknown".into());
            Some(format!(
                "ephemeral ports ran out after {done} transactions: connect() gave EADDRNOTAVAIL \
                 (net.ipv4.ip_local_port_range is {range}; a port this host closed first waits \
                 60 s in TIME_WAIT): widen the range, run a shorter test, or wait a minute"
            ))
        }
        libc::EMFILE | libc::ENFILE => Some(format!(
            "file descriptors ran out after {done} transactions ({}): raise the agent's \
             descriptor limit (ulimit -n, LimitNOFILE=)",
            errno_name(e)
        )),
        _ => None,
    }
}

/// What the driving side keeps of its transactions.
#[derive(Default)]
pub struct Tally {
    pub connect_ns: Vec<u64>,
    pub txn_ns: Vec<u64>,
    pub attempts: u64,
    pub connect_failures: BTreeMap<String, u64>,
    pub txn_failures: BTreeMap<String, u64>,
    /// Samples sent so far (the same for both series).
    pub flushed: usize,
}

impl Tally {
    pub fn flush(&mut self, ctx: &TestCtx) {
        let from = self.flushed;
        if from == self.txn_ns.len() {
            return;
        }
        for (kind, v) in [
            (SampleKind::ConnectNs, &self.connect_ns),
            (SampleKind::RttNs, &self.txn_ns),
        ] {
            ctx.sink.samples_from(
                kind,
                ctx.role,
                ctx.test_id,
                ctx.step,
                0,
                from as u32,
                &v[from..],
            );
        }
        self.flushed = self.txn_ns.len();
    }
}

/// What the driving side's loops hand back: the tally, the time from the
/// first connect to the end of the last transaction, why it ended early,
/// the first connection's options, and with several flows their figures.
pub struct Driven {
    pub tally: Tally,
    pub seconds: f64,
    pub note: Option<String>,
    pub applied: Option<crate::engine::sockopt::Applied>,
    pub flows: Option<meshperf_protocol::summary::FlowFigures>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_are_the_symbols() {
        let e = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(errno_name(&e), "ECONNREFUSED");
        let e = io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        assert_eq!(errno_name(&e), "EADDRNOTAVAIL");
        assert!(exhausted(&e, 7).unwrap().contains("after 7 transactions"));
        assert_eq!(errno_name(&io::ErrorKind::UnexpectedEof.into()), "EOF");
        assert_eq!(
            errno_name(&io::Error::from_raw_os_error(4095)),
            "errno 4095"
        );
    }
}
