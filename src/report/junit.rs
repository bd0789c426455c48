//! JUnit XML, written once for every report: a run's `<testsuite>` (one
//! `<testcase>` per invariant and fault kind), a suite's (one per
//! fixture), and the `<testsuites>` document that holds them. CI systems
//! read it: a `<failure>` fails the job, a `<skipped>` is shown as such,
//! `<system-out>` is a note beside a case.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite, XmlString};
use std::fmt;
use std::time::Duration;

/// One `<testsuite>`: its name, its cases and, for a run, its seconds.
pub struct Suite {
    pub name: String,
    pub seconds: Option<f64>,
    pub cases: Vec<Case>,
}

/// One `<testcase>`: passed unless it has a failure or a skip; `out` is a
/// note written beside it either way.
pub struct Case {
    pub class: String,
    pub name: String,
    pub failure: Option<Failure>,
    pub skipped: Option<String>,
    pub out: Option<String>,
}

/// A `<failure>`: its one-line message, its type and its text.
pub struct Failure {
    pub message: String,
    pub kind: String,
    pub text: String,
}

impl Case {
    /// A case named `name` of class `class` that passed.
    pub fn new(class: &str, name: &str) -> Case {
        Case {
            class: class.to_owned(),
            name: name.to_owned(),
            failure: None,
            skipped: None,
            out: None,
        }
    }

    /// The same case, failed.
    pub fn failed(mut self, kind: &str, message: &str, text: &str) -> Case {
        self.failure = Some(Failure {
            message: message.to_owned(),
            kind: kind.to_owned(),
            text: text.to_owned(),
        });
        self
    }
}

impl Suite {
    /// How many cases failed.
    pub fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.failure.is_some()).count()
    }
}

impl Suite {
    /// The suite in quick-junit's model, every string through [`text`] or
    /// [`attr`]. A case both failed and skipped is written failed (a
    /// `<testcase>` has one status).
    fn to_junit(&self) -> TestSuite {
        let mut suite = TestSuite::new(attr(&self.name));
        if let Some(t) = self
            .seconds
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
        {
            suite.set_time(t);
        }
        for c in &self.cases {
            let status = match (&c.failure, &c.skipped) {
                (Some(x), _) => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    st.set_message(attr(&x.message))
                        .set_type(attr(&x.kind))
                        .set_description(text(&x.text));
                    st
                }
                (None, Some(why)) => {
                    let mut st = TestCaseStatus::skipped();
                    st.set_message(attr(why));
                    st
                }
                (None, None) => TestCaseStatus::success(),
            };
            let mut case = TestCase::new(attr(&c.name), status);
            case.set_classname(attr(&c.class));
            if let Some(out) = &c.out {
                case.set_system_out(text(out));
            }
            suite.add_test_case(case);
        }
        suite
    }
}

impl fmt::Display for Suite {
    /// The [`document`] of this one suite.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&document(std::slice::from_ref(self)))
    }
}

/// The `<testsuites>` document of `suites`, written by quick-junit and
/// made safe for a terminal or a CI log by `text`, `attr` and
/// `unmark`, the one path from a [`Suite`] to the document.
pub fn document(suites: &[Suite]) -> String {
    let mut report = Report::unnamed();
    report.add_test_suites(suites.iter().map(Suite::to_junit));
    // Serialising into memory has no I/O to fail.
    let written = report
        .to_string()
        .expect("quick-junit writes a report to a String");
    unmark(&written)
}

/// What stands for a character reference until the document is written:
/// U+FDD0, a noncharacter (Unicode keeps them for a program's internal
/// use), followed by the referenced character moved up by [`SHIFT`]. One
/// in the given text is itself carried as a reference, so every mark in
/// quick-junit's output is one of ours.
const MARK: char = '\u{fdd0}';
const SHIFT: u32 = 0x1_0000;

/// The sink for a string quick-junit writes as XML text (a failure's text,
/// a `<system-out>`): a parser reads it back as `s`, and it is safe in a
/// terminal or a CI log when the document is printed. quick-junit escapes
/// `&`, `<` and `>` (and quotes in attributes), but it strips ANSI
/// sequences and every C0 control but `\n` (tabs and `\r` too), which
/// would change the text, and writes the rest as it is. So here `\r`,
/// `\t` and the other [`is_control`] characters XML allows (DEL, C1,
/// bidirectional controls) are carried as marks that [`unmark`] makes
/// character references, and the C0 controls XML 1.0 forbids, even as
/// references, are shown as `\u{…}` escapes (as are U+FFFE and U+FFFF).
/// `\n` is kept. No line of the value can begin a workflow command: a
/// `::` that would begin one has its first colon carried as a reference,
/// and so has the second `#` of each `##[` or `##vso[` — each reads back
/// as itself.
///
/// [`is_control`]: crate::model::text::is_control
fn text(s: &str) -> XmlString {
    XmlString::new(carry(s, false))
}

/// [`text`] for an attribute value — a name: a suite's, a test case's, a
/// class's — on one line as every other report form shows it
/// ([`one_line`](crate::model::one_line): a newline, a carriage return or
/// a bidirectional control as a visible `\u{…}`), since a CI page shows
/// a name parsed, where a reference would be the character again.
fn attr(s: &str) -> XmlString {
    XmlString::new(carry(&crate::model::one_line(s), true))
}

fn carry(s: &str, attr: bool) -> String {
    use crate::model::text::{command_at_start, command_mark_at, is_control};
    let mut out = String::with_capacity(s.len());
    let reference = |out: &mut String, c: char| {
        out.push(MARK);
        out.push(char::from_u32(c as u32 + SHIFT).unwrap_or(char::REPLACEMENT_CHARACTER));
    };
    let mut colon = command_at_start(s);
    for (i, c) in s.char_indices() {
        if c == '\n' {
            colon = command_at_start(&s[i + 1..]).map(|at| i + 1 + at);
        }
        let mark = i > 0 && command_mark_at(s, i - 1);
        match c {
            '\n' if !attr => out.push(c),
            ':' if colon == Some(i) => reference(&mut out, c),
            '#' if mark => reference(&mut out, c),
            '\n' | '\t' | '\r' | MARK => reference(&mut out, c),
            c if (c as u32) < 0x20 || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c if is_control(c) => reference(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// quick-junit's output with each mark [`carry`] left written as the
/// character reference it stands for.
fn unmark(written: &str) -> String {
    let mut out = String::with_capacity(written.len());
    let mut chars = written.chars();
    while let Some(c) = chars.next() {
        match c {
            MARK => {
                let c = chars.next().map_or(0, |c| (c as u32).saturating_sub(SHIFT));
                out.push_str(&format!("&#x{c:x};"));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sinks write reads back as what they were given (but the
    /// C0 controls XML cannot hold), quick-junit's own stripping has
    /// nothing left to strip, and no line of the document is a workflow
    /// command or holds a control character.
    #[test]
    fn sinks_are_safe_in_a_log_and_exact_where_xml_allows() {
        let hostile =
            "a<b>&\"c'\n  ::error::forged\r\n##[error]x \u{9b}\u{202e}\t\u{fdd0} \u{1b}[2J";
        for in_attr in [false, true] {
            let carried = carry(hostile, in_attr);
            assert_eq!(XmlString::new(&carried).as_str(), carried);
        }
        let case = Case::new("c::x", hostile).failed("k", hostile, hostile);
        let doc = document(&[Suite {
            name: "::s".into(),
            seconds: Some(1.5),
            cases: vec![case],
        }]);
        let want = "a&lt;b&gt;&amp;&quot;c&apos;\n  &#x3a;:error::forged&#xd;\n#&#x23;[error]x &#x9b;&#x202e;&#x9;&#xfdd0; \\u{1b}[2J";
        assert!(doc.contains(&format!(">{want}</failure>")), "{doc}");
        // A name is on one line, its controls visible escapes, as the
        // other report forms show it: parsed, it holds none.
        let attr_form = "a&lt;b&gt;&amp;&quot;c&apos;\\u{a}  ::error::forged\\u{d}\\u{a}#&#x23;[error]x \\u{9b}\\u{202e}\\u{9}&#xfdd0; \\u{1b}[2J";
        assert!(doc.contains(&format!("name=\"{attr_form}\"")), "{doc}");
        assert!(doc.contains("time=\"1.500\""), "{doc}");
        assert_eq!(crate::model::text::for_log(&doc), doc);
    }
}
