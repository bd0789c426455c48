//! JUnit XML, written once for every report: a run's `<testsuite>` (one
//! `<testcase>` per invariant and fault kind), a suite's (one per
//! fixture), and the `<testsuites>` document that holds them. CI systems
//! read it: a `<failure>` fails the job, a `<skipped>` is shown as such,
//! `<system-out>` is a note beside a case.

use std::fmt::{self, Write as _};

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

impl fmt::Display for Suite {
    /// The `<testsuite>` element.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let skipped = self.cases.iter().filter(|c| c.skipped.is_some()).count();
        write!(
            f,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{skipped}\"",
            attr(&self.name),
            self.cases.len(),
            self.failures()
        )?;
        if let Some(s) = self.seconds {
            write!(f, " time=\"{s:.3}\"")?;
        }
        writeln!(f, ">")?;
        for c in &self.cases {
            write!(
                f,
                "    <testcase classname=\"{}\" name=\"{}\">",
                attr(&c.class),
                attr(&c.name)
            )?;
            if let Some(x) = &c.failure {
                write!(
                    f,
                    "\n      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    attr(&x.message),
                    attr(&x.kind),
                    xml(&x.text)
                )?;
            }
            if let Some(why) = &c.skipped {
                write!(f, "\n      <skipped message=\"{}\"/>", attr(why))?;
            }
            if let Some(out) = &c.out {
                write!(f, "\n      <system-out>{}</system-out>", xml(out))?;
            }
            if c.failure.is_some() || c.skipped.is_some() || c.out.is_some() {
                f.write_str("\n    ")?;
            }
            f.write_str("</testcase>\n")?;
        }
        f.write_str("  </testsuite>\n")
    }
}

/// The `<testsuites>` document of `suites`.
pub fn document(suites: &[Suite]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for s in suites {
        let _ = write!(out, "{s}");
    }
    out.push_str("</testsuites>\n");
    out
}

/// The XML sink: `s` as XML text or attribute value, which a parser reads
/// back as `s` and which is safe in a terminal or a CI log when the
/// document is printed. The five entities are escaped; `\n` is kept in
/// text (a failure's lines) and a character reference in an attribute
/// (where a parser would read a raw one as a space), `\r` a reference
/// everywhere; the other [`is_control`] characters XML allows (DEL, C1,
/// bidirectional controls) are references, and the C0 controls XML 1.0
/// forbids, even as references, are shown as `\u{…}` escapes. No line of
/// the value can begin a workflow command: a `::` that would begin one
/// has its first colon written `&#58;`, and the second `#` of each `##[`
/// or `##vso[` is `&#35;` — each reads back as itself.
///
/// [`is_control`]: crate::model::text::is_control
pub(crate) fn xml(s: &str) -> String {
    use crate::model::text::{command_at_start, command_mark_at, is_control};
    let mut out = String::with_capacity(s.len());
    let mut colon = command_at_start(s);
    for (i, c) in s.char_indices() {
        if c == '\n' {
            colon = command_at_start(&s[i + 1..]).map(|at| i + 1 + at);
        }
        let mark = i > 0 && command_mark_at(s, i - 1);
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            ':' if colon == Some(i) => out.push_str("&#58;"),
            '#' if mark => out.push_str("&#35;"),
            c if ((c as u32) < 0x20 && c != '\r') || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c if is_control(c) => out.push_str(&format!("&#x{:x};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// [`xml`] for an attribute value: a newline and a tab are references too.
fn attr(s: &str) -> String {
    xml(s).replace('\n', "&#10;").replace('\t', "&#9;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the XML sink writes reads back as what it was given (but the
    /// C0 controls XML cannot hold), and no line of it is a workflow
    /// command or holds a control character.
    #[test]
    fn xml_is_safe_in_a_log_and_exact_where_xml_allows() {
        let hostile = "a<b>&\"c'\n  ::error::forged\r\n##[error]x \u{9b}\u{202e} \u{1b}[2J";
        let text = xml(hostile);
        assert_eq!(
            text,
            "a&lt;b&gt;&amp;&quot;c&apos;\n  &#58;:error::forged&#xd;\n#&#35;[error]x &#x9b;&#x202e; \\u{1b}[2J"
        );
        assert_eq!(crate::model::text::for_log(&text), text);
        assert_eq!(attr("a\n\tb"), "a&#10;&#9;b");
        assert_eq!(xml("::x"), "&#58;:x");
    }
}
