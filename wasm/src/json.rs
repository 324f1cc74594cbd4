//! JSON text to `serde_json::Value`, as `serde_json::from_str::<Value>` reads
//! it (same values, key order, duplicate keys, number types and refusals),
//! in a few KB of wasm: serde_json's parser with `float_roundtrip` is about
//! 45 KB of generic code and tables. Numbers with a fraction or exponent go
//! through `str::parse::<f64>`, which is correctly rounded, as
//! `float_roundtrip` is, so every float comes back bit for bit.

use serde_json::{Map, Number, Value};

/// Deepest nesting accepted (serde_json's recursion limit).
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

/// Parses `text` as one JSON value (surrounding whitespace allowed). The
/// error says what and where, on one line.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let v = p.value(0).map_err(|e| p.err(e))?;
    p.ws();
    if p.pos < p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        let done = &self.s[..self.pos.min(self.s.len())];
        let line = done.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = done.len() - done.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        format!("{what} at line {line} column {col}")
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn lit(&mut self, word: &[u8], v: Value) -> Result<Value, &'static str> {
        if self.s[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err("expected value")
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, &'static str> {
        self.ws();
        let c = self.peek().ok_or("EOF while parsing a value")?;
        if matches!(c, b'[' | b'{') && depth + 1 >= MAX_DEPTH {
            return Err("recursion limit exceeded");
        }
        match c {
            b'n' => self.lit(b"null", Value::Null),
            b't' => self.lit(b"true", Value::Bool(true)),
            b'f' => self.lit(b"false", Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => self.number(),
            b'[' => {
                self.pos += 1;
                let mut a = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Value::Array(a));
                }
                loop {
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Value::Array(a));
                        }
                        None => return Err("EOF while parsing a list"),
                        _ => return Err("expected `,` or `]`"),
                    }
                }
            }
            b'{' => {
                self.pos += 1;
                let mut o = Map::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Value::Object(o));
                }
                loop {
                    self.ws();
                    match self.peek() {
                        Some(b'"') => {}
                        None => return Err("EOF while parsing an object"),
                        _ => return Err("key must be a string"),
                    }
                    let k = self.string()?;
                    self.ws();
                    match self.peek() {
                        Some(b':') => self.pos += 1,
                        None => return Err("EOF while parsing an object"),
                        _ => return Err("expected `:`"),
                    }
                    let v = self.value(depth + 1)?;
                    o.insert(k, v);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Value::Object(o));
                        }
                        None => return Err("EOF while parsing an object"),
                        _ => return Err("expected `,` or `}`"),
                    }
                }
            }
            _ => Err("expected value"),
        }
    }

    fn hex4(&mut self) -> Result<u32, &'static str> {
        let h = self
            .s
            .get(self.pos..self.pos + 4)
            .ok_or("EOF while parsing a string")?;
        let mut v = 0;
        for &c in h {
            let d = (c as char).to_digit(16).ok_or("invalid escape")?;
            v = v * 16 + d;
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, &'static str> {
        self.pos += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            let start = self.pos;
            while let Some(&c) = self.s.get(self.pos) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.extend_from_slice(&self.s[start..self.pos]);
            match self.peek().ok_or("EOF while parsing a string")? {
                b'"' => {
                    self.pos += 1;
                    // Only whole UTF-8 sequences were copied (the input is a
                    // str and escapes push chars).
                    return String::from_utf8(out).map_err(|_| "invalid unicode code point");
                }
                b'\\' => {
                    self.pos += 1;
                    let e = self.peek().ok_or("EOF while parsing a string")?;
                    self.pos += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if !self.s[self.pos..].starts_with(b"\\u") {
                                    return Err("lone leading surrogate in hex escape");
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err("lone leading surrogate in hex escape");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(code).ok_or("lone trailing surrogate in hex escape")?
                        }
                        _ => return Err("invalid escape"),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                _ => {
                    return Err("control character (\\u0000-\\u001F) found while parsing a string")
                }
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, &'static str> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.digits() {
            0 => return Err("invalid number"),
            n if n > 1 && self.s[int_start] == b'0' => return Err("invalid number"),
            _ => {}
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err("invalid number");
            }
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err("invalid number");
            }
            float = true;
        }
        // ASCII only, so a str.
        let text = std::str::from_utf8(&self.s[start..self.pos]).map_err(|_| "invalid number")?;
        if !float {
            let digits = &text[usize::from(negative)..];
            if let Ok(n) = digits.parse::<u64>() {
                if !negative {
                    return Ok(Value::from(n));
                }
                // serde_json: a negative that is not an i64 < 0 (so -0 too)
                // becomes a float.
                let neg = (n as i64).wrapping_neg();
                if neg < 0 && n <= 1 << 63 {
                    return Ok(Value::from(neg));
                }
            }
        }
        let f: f64 = text.parse().map_err(|_| "invalid number")?;
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or("number out of range")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(text: &str) {
        let ours = parse(text);
        let theirs = serde_json::from_str::<Value>(text);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{text}");
                assert_eq!(a.to_string(), b.to_string(), "{text}");
                // Number types too (u64 / i64 / f64 decide the link tags).
                for (x, y) in leaves(a).iter().zip(leaves(b)) {
                    if let (Value::Number(x), Value::Number(y)) = (x, &y) {
                        assert_eq!(
                            (x.as_u64(), x.as_i64(), x.as_f64().map(f64::to_bits)),
                            (y.as_u64(), y.as_i64(), y.as_f64().map(f64::to_bits)),
                            "{text}"
                        );
                        assert_eq!(x.is_f64(), y.is_f64(), "{text}");
                    }
                }
            }
            (Err(_), Err(_)) => {}
            _ => panic!("{text}: ours {ours:?}, serde_json {theirs:?}"),
        }
    }

    fn leaves(v: &Value) -> Vec<Value> {
        match v {
            Value::Array(a) => a.iter().flat_map(leaves).collect(),
            Value::Object(o) => o.values().flat_map(leaves).collect(),
            x => vec![x.clone()],
        }
    }

    #[test]
    fn reads_what_serde_json_reads() {
        for t in [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "-0.0",
            "1",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "-1.5e-3",
            "1E400",
            "-1e400",
            "1e-400",
            "0.1",
            "0.30000000000000004",
            "2.2250738585072014e-308",
            "4.9e-324",
            "1.7976931348623157e308",
            "123456789012345678901234567890",
            "9007199254740993",
            "9007199254740993.0",
            "0.1e1",
            "1e+2",
            "1.",
            ".5",
            "01",
            "-",
            "+1",
            "1e",
            "1e+",
            "-01",
            "00",
            "0x10",
            "NaN",
            "Infinity",
            r#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83dx""#,
            r#""\ud83d\u0041""#,
            r#""\x""#,
            r#""\u12""#,
            "\"a\u{1}\"",
            "\"grüße 😀\"",
            "\"abc",
            "[]",
            "[ ]",
            "[1,2 ,3]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[",
            "[1",
            "{}",
            "{ }",
            r#"{"a":1,"b":[{"c":null}],"a":2}"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{1:2}"#,
            r#"{"a":1"#,
            r#"{"a""#,
            "{",
            "",
            "   ",
            "1 2",
            "nul",
            "truex",
            "[true false]",
            r#"{"z":1,"y":{"x":[1.25,-7,"s"]}}"#,
        ] {
            same(t);
        }
        same(&("[".repeat(127) + &"]".repeat(127)));
        same(&("[".repeat(128) + &"]".repeat(128)));
        same(&("[".repeat(200) + &"]".repeat(200)));
        // Floats from a generator, written the way JS and serde_json write them.
        let mut x = 0x9E3779B97F4A7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_finite() {
                same(&serde_json::to_string(&f).unwrap());
                same(&format!("{f:e}"));
                same(&format!("{:.17}", f * 1e-300));
            }
        }
        assert!(parse("[1,\n  x]").unwrap_err().contains("at line 2 column"));
    }
}
