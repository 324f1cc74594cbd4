//! `meshperf run`'s text for a `path` step (the driving side's summary,
//! which holds both directions): the hops each way side by side, the path
//! MTU each way, and the marks that did not arrive as sent.

use meshperf_protocol::summary::{PathDirection, PathHop, PathSummary};
use std::fmt::Write;

/// A hop's cell: who answered (its name first where looked up; `*`
/// silent), `(peer)`, its MTU and note.
fn who(h: &PathHop) -> String {
    let mut s = match (&h.addr, &h.name) {
        (Some(a), Some(n)) => format!("{n} ({a})"),
        (Some(a), None) => a.clone(),
        (None, _) => "* (silent)".into(),
    };
    for a in &h.also {
        let _ = write!(s, " / {a}");
    }
    if h.peer {
        s.push_str(" (peer)");
    }
    if let Some(m) = h.mtu {
        let _ = write!(s, " mtu {m}");
    }
    if let Some(n) = &h.note {
        let _ = write!(s, " [{n}]");
    }
    if h.unverified > 0 {
        let _ = write!(s, " ({} unverified ICMP", h.unverified);
        if !h.unverified_from.is_empty() {
            let _ = write!(s, " from {}", h.unverified_from.join(", "));
        }
        s.push(')');
    }
    s
}

/// The median RTT in ms, and the probes lost.
fn figures(h: &PathHop) -> (String, String) {
    let mut r = h.rtt_us.clone();
    r.sort_by(f64::total_cmp);
    let rtt = match r.len() {
        0 => "-".into(),
        n => format!("{:.3}", r[n / 2] / 1000.0),
    };
    (rtt, format!("{}/{}", h.sent - h.answered, h.sent))
}

fn end(d: &PathDirection) -> String {
    match (d.end.as_str(), d.peer_hop) {
        ("peer", Some(h)) => format!("peer at hop {h}"),
        ("max_hops", _) => format!(
            "max hops reached ({}) before the peer",
            d.hops.last().map_or(0, |h| h.ttl)
        ),
        ("silence", _) => format!(
            "ended in silence after hop {}: nothing past it answered",
            d.hops.iter().rev().find(|h| !h.silent).map_or(0, |h| h.ttl)
        ),
        ("unreachable", _) => "a hop said the peer is unreachable".into(),
        ("time_limit", _) => "stopped at the agent's duration limit".into(),
        (e, _) => e.to_string(),
    }
}

fn mtu_line(name: &str, d: &PathDirection) -> Option<String> {
    let m = d.mtu.as_ref()?;
    let mut s = format!(
        "path MTU {name}: {} bytes (interface {})",
        m.bytes.map_or("-".into(), |b| b.to_string()),
        m.local
    );
    if let Some(by) = &m.lowered_by {
        let at = m.lowered_at.map_or("a hop".into(), |h| format!("hop {h}"));
        let _ = write!(s, ", lowered at {at} ({by})");
    }
    if let Some(above) = m.black_hole_above {
        let after = m
            .black_hole_after
            .map_or("somewhere on the path".into(), |h| format!("after hop {h}"));
        let _ = write!(
            s,
            "; BLACK HOLE: datagrams above {above} bytes vanish with no ICMP {after}"
        );
    }
    Some(s)
}

fn mark_lines(name: &str, d: &PathDirection, out: &mut String) {
    if d.marks.is_empty() {
        return;
    }
    let kept = d.marks.iter().filter(|m| m.verdict == "kept").count();
    let _ = writeln!(out, "marks {name}: {kept} of {} kept", d.marks.len());
    for m in d.marks.iter().filter(|m| m.verdict != "kept") {
        let got = match (m.got_dscp, m.got_ecn) {
            (Some(g), Some(e)) => format!(" -> DSCP {g} ECN {e}"),
            _ => String::new(),
        };
        let at = match (m.changed_at, &m.changed_by) {
            (Some(h), Some(a)) => format!(", changed at hop {h} ({a}) or the link before it"),
            (Some(h), None) => format!(", changed at hop {h} or the link before it"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  DSCP {} ECN {}{got}: {} ({}/{} arrived){at}",
            m.dscp, m.ecn, m.verdict, m.received, m.sent
        );
    }
}

/// The text; `None` when the summary is not a driving side's `path`.
pub fn text(summary: &serde_json::Value) -> Option<String> {
    let s: PathSummary = serde_json::from_value(summary.clone()).ok()?;
    let (f, b) = (&s.forth, &s.back);
    let mut out = String::new();
    let _ = writeln!(out, "forth {} -> {}: {}", f.from, f.to, end(f));
    let _ = writeln!(out, "back  {} -> {}: {}", b.from, b.to, end(b));
    if s.asymmetric {
        let _ = writeln!(
            out,
            "ASYMMETRIC: {} hops forth, {} back",
            f.peer_hop.unwrap_or(0),
            b.peer_hop.unwrap_or(0)
        );
    }
    let w = f
        .hops
        .iter()
        .map(|h| who(h).len())
        .max()
        .unwrap_or(0)
        .max(12);
    let _ = writeln!(
        out,
        "{:>3}  {:<w$} {:>9} {:>5}   {:<24} {:>9} {:>5}",
        "hop", "forth", "rtt ms", "lost", "back", "rtt ms", "lost"
    );
    let n = f.hops.len().max(b.hops.len());
    for i in 0..n {
        let cell = |d: &PathDirection| match d.hops.get(i) {
            Some(h) => {
                let (r, l) = figures(h);
                (who(h), r, l, h.ttl)
            }
            None => (String::new(), String::new(), String::new(), 0),
        };
        let (fw, fr, fl, ft) = cell(f);
        let (bw, br, bl, bt) = cell(b);
        let _ = writeln!(
            out,
            "{:>3}  {fw:<w$} {fr:>9} {fl:>5}   {bw:<24} {br:>9} {bl:>5}",
            ft.max(bt)
        );
    }
    for (name, d) in [("forth", f), ("back", b)] {
        if let Some(l) = mtu_line(name, d) {
            let _ = writeln!(out, "{l}");
        }
    }
    for (name, d) in [("forth", f), ("back", b)] {
        mark_lines(name, d, &mut out);
    }
    for (name, d) in [("forth", f), ("back", b)] {
        if d.unverified_icmp > 0 {
            let _ = writeln!(
                out,
                "unverified ICMP {name}: {}, whose quote does not show a probe of this test: not taken as answers",
                d.unverified_icmp
            );
        }
    }
    Some(out)
}
