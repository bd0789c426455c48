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
            xml(&self.name),
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
                xml(&c.class),
                xml(&c.name)
            )?;
            if let Some(x) = &c.failure {
                write!(
                    f,
                    "\n      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    xml(&x.message),
                    xml(&x.kind),
                    xml(&x.text)
                )?;
            }
            if let Some(why) = &c.skipped {
                write!(f, "\n      <skipped message=\"{}\"/>", xml(why))?;
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

/// `s` as XML text or attribute: the five entities escaped, and the
/// control characters XML 1.0 forbids replaced.
pub(crate) fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => {
                out.push_str("&#xFFFD;")
            }
            c => out.push(c),
        }
    }
    out
}
