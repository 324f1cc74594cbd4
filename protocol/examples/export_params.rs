//! Writes the kinds' parameter tables (`protocol/src/params/spec.rs`) as the
//! TypeScript module the web app's form is built from, with the other
//! tables the page shares with the agent: the agent's limits
//! (`params/limits.rs`), the SI prefixes (`units.rs`) and the cancel grace
//! (`driver.rs`):
//!
//! ```text
//! cargo run -q -p meshperf-protocol --example export_params -- web/src/lib/generated/params.ts
//! ```
//!
//! Without an argument it prints the module. With one it writes the file only
//! when its text changes (so a running Vite dev server does not reload for
//! nothing). scripts/build.sh and web/package.json's `params` script run it
//! before anything reads the module; the file is generated, never committed.

use meshperf_protocol::params::{DefaultValue, Kind, Max, Min, ParamSpec, LIMITS};
use serde_json::{json, Map, Value};
use std::fmt::Write;

const HEAD: &str = "\
// Generated from protocol/src/params/spec.rs by protocol/examples/export_params.rs
// (npm run params -w web). Do not edit: change the Rust table and build again.

export type ParamType = 'size' | 'int' | 'float' | 'bool' | 'enum' | 'text' | 'rate';

export interface ParamSpec {
  name: string;
  type: ParamType;
  /** What the field means, with its unit. */
  label: string;
  /** The agent's value when the plan does not give one (absent: not set, or `derived`). */
  default?: number | boolean | string;
  /** How the agent works the value out when the plan does not give one. */
  derived?: string;
  /** Pre-filled value of a new plan (sent unless cleared). */
  initial?: string;
  options?: string[];
  /** Smallest value the agents accept (above it, not at it, with `minExclusive`). */
  min?: number;
  minExclusive?: boolean;
  /** Largest value the agents accept, whatever their limits. */
  max?: number;
  /** The agents' limit that is the largest value they accept. */
  maxLimit?: LimitName;
  /** Shown under \"more options\". */
  advanced?: boolean;
  /** Only over IP (hidden for unix_* kinds). */
  tcp?: boolean;
  /** Given instead of this other parameter (the agents refuse both): the form offers one or the other. */
  insteadOf?: string;
}
";

/// One entry as the TypeScript `ParamSpec` above, leaving out what is unset.
fn entry(s: &ParamSpec) -> Value {
    let mut o = Map::new();
    let mut set = |key: &str, v: Value| o.insert(key.into(), v);
    set("name", json!(s.name));
    set("type", json!(s.ty.name()));
    set("label", json!(s.label));
    match s.default {
        DefaultValue::Unset => None,
        DefaultValue::Num(n) => set("default", json!(n)),
        DefaultValue::Bool(b) => set("default", json!(b)),
        DefaultValue::Word(w) => set("default", json!(w)),
        DefaultValue::Derived(how) => set("derived", json!(how)),
    };
    if let Some(i) = s.initial {
        set("initial", json!(i));
    }
    if !s.options.is_empty() {
        set("options", json!(s.options));
    }
    match s.min {
        None => None,
        Some(Min::AtLeast(n)) => set("min", json!(n)),
        Some(Min::Above(n)) => {
            set("min", json!(n));
            set("minExclusive", json!(true))
        }
        Some(Min::AtLeastMilli(n)) => set("min", json!(n as f64 / 1000.0)),
    };
    match s.max {
        None => None,
        Some(Max::At(n)) => set("max", json!(n)),
        Some(Max::Limit(l)) => set("maxLimit", json!(l.name())),
    };
    if s.advanced {
        set("advanced", json!(true));
    }
    if s.tcp_only {
        set("tcp", json!(true));
    }
    if let Some(o) = s.instead_of {
        set("insteadOf", json!(o));
    }
    Value::Object(o)
}

fn module() -> String {
    let mut out = String::from(HEAD);
    // The agent's limits (protocol/src/params/limits.rs): the names a
    // parameter's `maxLimit` takes, and what the agent cards show.
    let names: Vec<String> = LIMITS.iter().map(|l| format!("'{}'", l.name)).collect();
    writeln!(
        out,
        "\n/** One of the serving agent's limits (its `hello` carries them). */\nexport type LimitName = {};",
        names.join(" | ")
    )
    .unwrap();
    out.push_str(
        "\n/** One of the agent's limits: its name in `hello`, the agent's flag (absent: fixed), what it counts and what it bounds. */\n\
         export interface LimitSpec {\n  name: LimitName;\n  flag?: string;\n  unit: 'bytes' | 's' | 'count' | 'bit/s';\n  what: string;\n}\n\
         \n/** Every limit, in the order the page lists them (protocol/src/params/limits.rs `LIMITS`). */\n\
         export const LIMITS: readonly LimitSpec[] = [\n",
    );
    for l in LIMITS {
        let mut o = Map::new();
        o.insert("name".into(), json!(l.name));
        if let Some(f) = l.flag {
            o.insert("flag".into(), json!(f));
        }
        o.insert("unit".into(), json!(l.unit.name()));
        o.insert("what".into(), json!(l.what));
        writeln!(out, "  {},", Value::Object(o)).unwrap();
    }
    out.push_str("];\n");
    // The SI prefixes (protocol/src/units.rs): rates' k, M, G.
    out.push_str(
        "\n/** SI prefixes, largest first: factor and prefix (rates' k, M, G: powers of 1000; protocol/src/units.rs). */\n\
         export const SI_PREFIXES: readonly { div: number; prefix: string }[] = [\n",
    );
    for (div, prefix) in meshperf_protocol::units::SI_PREFIXES {
        writeln!(out, "  {},", json!({"div": div, "prefix": prefix})).unwrap();
    }
    out.push_str("];\n");
    writeln!(
        out,
        "\n/** The control protocol versions this build speaks, lowest and highest (protocol/src/lib.rs). */\nexport const PROTOCOL_VERSION = {};\nexport const PROTOCOL_MAX = {};\n\n/** A duration reads in µs below this many µs, in ms from it (protocol/src/units.rs `MS_FROM_US`). */\nexport const MS_FROM_US = {};",
        meshperf_protocol::PROTOCOL_VERSION,
        meshperf_protocol::PROTOCOL_MAX,
        meshperf_protocol::units::MS_FROM_US
    )
    .unwrap();
    writeln!(
        out,
        "\n/** Seconds a cancelled step waits for its agents to confirm (protocol/src/driver.rs `CANCEL_GRACE_S`). */\nexport const CANCEL_GRACE_S = {};",
        meshperf_protocol::driver::CANCEL_GRACE_S
    )
    .unwrap();
    // One array per table; kinds that share a table (the unix kinds) share it.
    let mut written: Vec<(&'static [ParamSpec], &'static str)> = Vec::new();
    for kind in Kind::ALL {
        let table = kind.params();
        if written.iter().any(|(t, _)| std::ptr::eq(*t, table)) {
            continue;
        }
        writeln!(out, "\nconst {}: ParamSpec[] = [", kind.name()).unwrap();
        for s in table {
            writeln!(out, "  {},", entry(s)).unwrap();
        }
        out.push_str("];\n");
        written.push((table, kind.name()));
    }
    out.push_str("\n/** Every kind's label and parameters, in the order the page shows them. */\n");
    out.push_str(
        "export const TABLE: Record<string, { label: string; params: ParamSpec[] }> = {\n",
    );
    for kind in Kind::ALL {
        let (_, var) = written
            .iter()
            .find(|(t, _)| std::ptr::eq(*t, kind.params()))
            .unwrap();
        writeln!(
            out,
            "  {}: {{ label: {}, params: {var} }},",
            kind.name(),
            json!(kind.label())
        )
        .unwrap();
    }
    out.push_str("};\n");
    // The seeds' record headings (protocol/src/seedline.rs): a side's
    // `line` with as many fields is shown under them.
    out.push_str("\n/** The heading of the seed record a kind's summary `line` may be (its `; `-separated field names). */\n");
    out.push_str("export const SEED_HEADINGS: Record<string, string> = {\n");
    for kind in Kind::ALL {
        if let Some(h) = meshperf_protocol::seedline::heading(kind) {
            writeln!(out, "  {}: {},", kind.name(), json!(h)).unwrap();
        }
    }
    out.push_str("};\n");
    out
}

fn main() {
    let text = module();
    let Some(path) = std::env::args_os().nth(1) else {
        print!("{text}");
        return;
    };
    let path = std::path::PathBuf::from(path);
    if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
        return;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
