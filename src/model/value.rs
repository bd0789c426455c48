//! JSON values as the contract compares and spells them (SPEC §5).
//!
//! *Equality is by JSON value*: numbers by mathematical value (`1.50` =
//! `1.5` = `15e-1`, `1` = `1.0`, `-0` = `0`), object members regardless of
//! order, strings and arrays exactly — as JSON Schema's `const` and jq
//! compare. A subject may re-serialise numbers the way its JSON library
//! does, and no invariant fails for that alone: [`same_value`].
//!
//! Byte sizes are measured on JSON text, so where a number's spelling
//! could move a size the harness writes only **portable** numbers, the ones
//! every mainstream JSON library (Python's `json`, JavaScript's `JSON`,
//! Elixir's Jason, Go's `encoding/json`, serde_json) reads and writes back
//! byte for byte ([`is_portable`]):
//!
//! - integers within ±2^53, written without sign for zero (`0`, never `-0`);
//! - non-integral decimals with 0.01 ≤ |x| < 10^15, in shortest round-trip
//!   form, without exponent (`653.5`, never `653.50` or `6.535e2`).
//!
//! Everything else (`1.50`, `1.0`, `1e5`, `-0`, 2^64, `1e400`, `0.00001`) is
//! spelled differently by different libraries — Python writes `1.0` and
//! `1e-05`, JavaScript `1` and `0.00001`, Jason `1.0e-5` — or loses its value
//! (2^64 in JavaScript, `1e400` anywhere but an arbitrary-precision reader).
//! [`spellings`] gives what Python and JavaScript write for a number, which
//! the estimate floor uses to stay a floor whatever the subject's library.
//!
//! What this module does not do: decide which subjects get non-portable
//! numbers (the generator's `exotic_numbers_percent`, driven by a subject's
//! `"numbers": "exact"` hello) or measure whole bodies (`body`).

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// 2^53: the largest magnitude below which every integer is exact in an
/// IEEE-754 double (JavaScript's `Number.MAX_SAFE_INTEGER` is 2^53 − 1).
pub const MAX_PORTABLE_INTEGER: u64 = 1 << 53;

/// True when `a` and `b` are the same JSON value: numbers by mathematical
/// value, object members regardless of order, strings and arrays exactly.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => same_members(x, y),
        _ => false,
    }
}

/// The same members, whatever their order (keys are unique in a `Map`).
pub fn same_members(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
}

/// True when two JSON numbers have the same mathematical value, however
/// they are spelled. Exact: no conversion to floating point.
pub fn same_number(a: &Number, b: &Number) -> bool {
    let (x, y) = (a.as_str(), b.as_str());
    x == y || Decimal::parse(x) == Decimal::parse(y)
}

/// Compare two JSON numbers by mathematical value.
pub fn compare_numbers(a: &Number, b: &Number) -> Ordering {
    Decimal::parse(a.as_str()).cmp(&Decimal::parse(b.as_str()))
}

/// True when every mainstream JSON library writes `n` back exactly as it
/// is written here (see the module docs for the two forms).
pub fn is_portable(n: &Number) -> bool {
    let text = n.as_str();
    if is_integer_literal(text) {
        return text != "-0"
            && Decimal::parse(text).integer_magnitude_at_most(MAX_PORTABLE_INTEGER);
    }
    if text.contains(['e', 'E']) {
        return false;
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x.fract() != 0.0 => {
            let m = x.abs();
            (0.01..1e15).contains(&m) && ryu::Buffer::new().format_finite(x) == text
        }
        _ => false,
    }
}

/// Every number in `v` is portable.
pub fn all_portable(v: &Value) -> bool {
    match v {
        Value::Number(n) => is_portable(n),
        Value::Array(a) => a.iter().all(all_portable),
        Value::Object(o) => o.values().all(all_portable),
        _ => true,
    }
}

/// The portable spelling of `n`'s value, if its value has one: `1.50` →
/// `1.5`, `1e5` → `100000`, `-0` → `0`, `12.0` → `12`. `None` for values no
/// spelling makes portable (2^64, `1e400`, `0.00001`, `0.1000000000000000001`).
pub fn portable(n: &Number) -> Option<Number> {
    if is_portable(n) {
        return Some(n.clone());
    }
    let d = Decimal::parse(n.as_str());
    if let Some(i) = d.to_integer(MAX_PORTABLE_INTEGER) {
        return Some(Number::from(i));
    }
    let x: f64 = n.as_str().parse().ok()?;
    // Only when the double is exactly the decimal written: no value changes.
    let shortest = ryu::Buffer::new().format_finite(x).to_owned();
    let candidate: Number = serde_json::from_str(&shortest).ok()?;
    (Decimal::parse(&shortest) == d && is_portable(&candidate)).then_some(candidate)
}

/// Respell every number of `v` in its portable form where its value has
/// one; returns how many numbers had none (and were left as they were).
pub fn make_portable(v: &mut Value) -> usize {
    match v {
        Value::Number(n) => match portable(n) {
            Some(p) => {
                *n = p;
                0
            }
            None => 1,
        },
        Value::Array(a) => a.iter_mut().map(make_portable).sum(),
        Value::Object(o) => o.values_mut().map(make_portable).sum(),
        _ => 0,
    }
}

/// [`make_portable`] over every JSON value a history holds: call
/// arguments, extra fields of messages and calls. Returns how many numbers
/// had no portable spelling.
pub fn make_messages_portable(msgs: &mut [super::Message]) -> usize {
    let mut left = 0;
    for m in msgs {
        left += m.extra.values_mut().map(make_portable).sum::<usize>();
        for c in m.tool_calls.iter_mut().flatten() {
            if !all_portable(&c.arguments) {
                let mut args = (*c.arguments).clone();
                left += make_portable(&mut args);
                c.arguments = std::sync::Arc::new(args);
            }
            left += c.extra.values_mut().map(make_portable).sum::<usize>();
        }
    }
    left
}

/// How two mainstream libraries write a number read from JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spellings {
    /// Python's `json.dumps(json.loads(text))`: integers as integers, every
    /// other number as a float's `repr` (`1.0`, `1e-05`, `1e+16`,
    /// `Infinity` for what overflows).
    pub python: String,
    /// JavaScript's `JSON.stringify(JSON.parse(text))`: a double's
    /// `Number.prototype.toString` (`1`, `0.00001`, `1e+21`, `null` for
    /// what overflows).
    pub javascript: String,
}

/// What Python and JavaScript write for the number `n`.
pub fn spellings(n: &Number) -> Spellings {
    let text = n.as_str();
    let python = if is_integer_literal(text) {
        Decimal::parse(text).integer_text()
    } else {
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() => python_repr(x),
            _ if text.starts_with('-') => "-Infinity".into(),
            _ => "Infinity".into(),
        }
    };
    let javascript = match text.parse::<f64>() {
        Ok(x) if x.is_finite() => javascript_string(x),
        _ => "null".into(),
    };
    Spellings { python, javascript }
}

/// The fewest bytes a mainstream library writes `n` in: the shorter of its
/// spelling here, Python's and JavaScript's. Equal to the spelling's length
/// for a portable number.
pub fn shortest_spelling_len(n: &Number) -> u64 {
    let written = n.as_str().len();
    if is_portable(n) {
        return written as u64;
    }
    let s = spellings(n);
    written.min(s.python.len()).min(s.javascript.len()) as u64
}

/// A JSON integer literal: an optional `-` and digits, nothing else.
fn is_integer_literal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Python's `repr` of a finite float: shortest round-trip digits, decimal
/// notation when the decimal exponent is in [-4, 16), else `d.ddde±XX`.
fn python_repr(x: f64) -> String {
    let d = Decimal::parse(ryu::Buffer::new().format_finite(x));
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if d.digits.is_empty() {
        return format!("{sign}0.0");
    }
    let exp = d.exp - 1; // scientific exponent: d.ddd × 10^exp
    if (-4..16).contains(&exp) {
        let mut s = d.positional();
        if !s.contains('.') {
            s.push_str(".0");
        }
        return format!("{sign}{s}");
    }
    let mantissa = mantissa(&d.digits);
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{mantissa}e{esign}{:02}", exp.unsigned_abs())
}

/// JavaScript's `Number.prototype.toString` of a finite double (ECMA-262
/// Number::toString): positional for 10^-7 ≤ |x| < 10^21, else `de±X`.
fn javascript_string(x: f64) -> String {
    let d = Decimal::parse(ryu::Buffer::new().format_finite(x));
    if d.digits.is_empty() {
        return "0".into(); // -0 too
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let n = d.exp; // x = 0.digits × 10^n
    if (-5..=21).contains(&n) {
        return format!("{sign}{}", d.positional());
    }
    let esign = if n - 1 < 0 { '-' } else { '+' };
    format!(
        "{sign}{}e{esign}{}",
        mantissa(&d.digits),
        (n - 1).unsigned_abs()
    )
}

/// `d` or `d.ddd` from significant digits.
fn mantissa(digits: &[u8]) -> String {
    let mut s = String::with_capacity(digits.len() + 1);
    s.push(digits[0] as char);
    if digits.len() > 1 {
        s.push('.');
        s.extend(digits[1..].iter().map(|&b| b as char));
    }
    s
}

/// A decimal number in canonical form: `±0.d₁d₂…dₖ × 10^exp`, with no
/// leading or trailing zero digits; zero has no digits and no sign. Two
/// spellings denote the same value exactly when their `Decimal`s are equal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exp: i128,
}

impl Decimal {
    /// Read JSON number text (also accepts what `ryu` writes). Text that is
    /// not a number reads as whatever its digits say: this is only ever
    /// given serde_json's validated numbers.
    fn parse(text: &str) -> Decimal {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        // Huge exponents saturate: no real history holds 10^(10^38).
        let e: i128 =
            exponent
                .trim_start_matches('+')
                .parse()
                .unwrap_or(if exponent.starts_with('-') {
                    i128::MIN / 4
                } else if exponent.is_empty() {
                    0
                } else {
                    i128::MAX / 4
                });
        let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
        let mut exp = e.saturating_add(int.len() as i128);
        let lead = digits.iter().take_while(|&&b| b == b'0').count();
        digits.drain(..lead);
        exp = exp.saturating_sub(lead as i128);
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        if digits.is_empty() {
            return Decimal {
                negative: false,
                digits,
                exp: 0,
            };
        }
        Decimal {
            negative,
            digits,
            exp,
        }
    }

    /// The value as an integer, when it is one and its magnitude is at most `max`.
    fn to_integer(&self, max: u64) -> Option<i64> {
        if self.digits.is_empty() {
            return Some(0);
        }
        let k = self.digits.len() as i128;
        if self.exp < k || self.exp > 20 {
            return None; // a fraction, or too many digits
        }
        let mut m: u128 = 0;
        for i in 0..self.exp {
            let d = self.digits.get(i as usize).map_or(0, |b| b - b'0');
            m = m * 10 + d as u128;
        }
        if m > max as u128 {
            return None;
        }
        let m = m as i64;
        Some(if self.negative { -m } else { m })
    }

    fn integer_magnitude_at_most(&self, max: u64) -> bool {
        self.to_integer(max).is_some()
    }

    /// Python's `int` text of an integer literal (`-0` → `0`).
    fn integer_text(&self) -> String {
        if self.digits.is_empty() {
            return "0".into();
        }
        let sign = if self.negative { "-" } else { "" };
        format!("{sign}{}", self.positional())
    }

    /// The magnitude in positional notation (`653.5`, `0.001`, `1000`).
    fn positional(&self) -> String {
        let digits: String = self.digits.iter().map(|&b| b as char).collect();
        let k = self.digits.len() as i128;
        if self.exp <= 0 {
            format!("0.{}{digits}", "0".repeat((-self.exp) as usize))
        } else if self.exp >= k {
            format!("{digits}{}", "0".repeat((self.exp - k) as usize))
        } else {
            let (a, b) = digits.split_at(self.exp as usize);
            format!("{a}.{b}")
        }
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let sign = |d: &Decimal| match (d.digits.is_empty(), d.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        };
        let (a, b) = (sign(self), sign(other));
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitude = self
            .exp
            .cmp(&other.exp)
            .then_with(|| self.digits.cmp(&other.digits));
        if a < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(text: &str) -> Number {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn numbers_compare_by_value() {
        let same = [
            ("1.50", "1.5"),
            ("1.5", "15e-1"),
            ("1", "1.0"),
            ("-0", "0"),
            ("0.0", "0e10"),
            ("100", "1E2"),
            ("1e+2", "100.000"),
            ("18446744073709551616", "1.8446744073709551616e19"),
            ("-653.50", "-6535e-1"),
        ];
        for (a, b) in same {
            assert!(same_number(&num(a), &num(b)), "{a} = {b}");
        }
        let different = [
            ("1.5", "1.51"),
            ("1", "-1"),
            ("18446744073709551616", "18446744073709551617"),
            ("1e400", "1e401"),
            ("0.1", "0.10000000000000001"),
            ("10", "1"),
        ];
        for (a, b) in different {
            assert!(!same_number(&num(a), &num(b)), "{a} ≠ {b}");
        }
        assert_eq!(compare_numbers(&num("-2"), &num("1")), Ordering::Less);
        assert_eq!(compare_numbers(&num("-2"), &num("-10")), Ordering::Greater);
        assert_eq!(
            compare_numbers(&num("0.5"), &num("0.05")),
            Ordering::Greater
        );
        assert_eq!(compare_numbers(&num("99"), &num("1e2")), Ordering::Less);
    }

    #[test]
    fn values_compare_members_regardless_of_order() {
        let a = json!({"x": [1, {"y": 2.50, "z": null}], "s": "é"});
        let b: Value =
            serde_json::from_str(r#"{"s": "é", "x": [1.0, {"z": null, "y": 2.5}]}"#).unwrap();
        assert!(same_value(&a, &b));
        assert!(!same_value(&a, &json!({"x": [1, {"y": 2.5}], "s": "é"})));
        assert!(!same_value(&json!([1, 2]), &json!([2, 1])));
        assert!(!same_value(&json!("1"), &json!(1)));
        assert!(!same_value(&json!({"a": null}), &json!({})));
    }

    #[test]
    fn portable_numbers_are_the_common_ground() {
        for t in [
            "0",
            "-1",
            "9007199254740992",
            "653.5",
            "0.01",
            "-0.7",
            "123456789012345.6",
        ] {
            assert!(is_portable(&num(t)), "{t}");
        }
        for t in [
            "-0",
            "1.50",
            "1.0",
            "1e5",
            "9007199254740993",
            "18446744073709551616",
            "0.001",
            "0.00001",
            "1e400",
            "1000000000000000.5",
            "0.1000000000000000001",
        ] {
            assert!(!is_portable(&num(t)), "{t}");
        }
    }

    #[test]
    fn portable_spellings_keep_the_value() {
        let cases = [
            ("1.50", Some("1.5")),
            ("1e5", Some("100000")),
            ("-0", Some("0")),
            ("12.0", Some("12")),
            ("-0.0", Some("0")),
            ("6535e-1", Some("653.5")),
            ("18446744073709551616", None),
            ("1e400", None),
            ("0.00001", None),
            ("0.1000000000000000001", None),
        ];
        for (t, want) in cases {
            let got = portable(&num(t)).map(|n| n.to_string());
            assert_eq!(got.as_deref(), want, "{t}");
        }
        let mut v = json!({"a": [num("1.50"), num("1e400")], "b": num("-0")});
        assert_eq!(make_portable(&mut v), 1);
        assert_eq!(v.to_string(), r#"{"a":[1.5,1e+400],"b":0}"#);
    }

    #[test]
    fn python_and_javascript_spellings() {
        // (text, Python's json.dumps(json.loads(text)), JavaScript's JSON.stringify(JSON.parse(text)))
        let cases = [
            ("653.50", "653.5", "653.5"),
            ("1.0", "1.0", "1"),
            ("1", "1", "1"),
            ("-0", "0", "0"),
            ("-0.0", "-0.0", "0"),
            ("0.00001", "1e-05", "0.00001"),
            ("0.0000001", "1e-07", "1e-7"),
            ("0.0001", "0.0001", "0.0001"),
            ("1e5", "100000.0", "100000"),
            ("1e16", "1e+16", "10000000000000000"),
            ("1e21", "1e+21", "1e+21"),
            ("123e20", "1.23e+22", "1.23e+22"),
            (
                "18446744073709551616",
                "18446744073709551616",
                "18446744073709552000",
            ),
            ("1e400", "Infinity", "null"),
            ("-1e400", "-Infinity", "null"),
            ("1.5e-10", "1.5e-10", "1.5e-10"),
            ("5e-324", "5e-324", "5e-324"),
        ];
        for (t, py, js) in cases {
            let s = spellings(&num(t));
            assert_eq!(s.python, py, "python {t}");
            assert_eq!(s.javascript, js, "javascript {t}");
        }
        assert_eq!(shortest_spelling_len(&num("653.50")), 5);
        assert_eq!(shortest_spelling_len(&num("1.0")), 1);
        assert_eq!(shortest_spelling_len(&num("1e400")), 4);
        assert_eq!(shortest_spelling_len(&num("653.5")), 5);
    }
}
