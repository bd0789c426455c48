//! Untrusted text through every sink (issue 44 §1): a subject's hello and
//! faults, a fixture's file name and fields, a report being merged — each
//! with terminal escapes, newlines that would begin a GitHub workflow
//! command (`::error::…`), Markdown and HTML that would forge a heading, a
//! link or an element. Whatever path the text takes, no output line of
//! stdout, stderr, a Markdown or a JUnit report may begin a workflow
//! command or carry a control character; Markdown may open no element of
//! the text's, XML must parse.

mod common;

use common::process::{ctxgate, TempDir};

/// What every test's text holds: ESC and BEL (a terminal title, a cleared
/// screen), a newline then a workflow command, the legacy `##[` form,
/// HTML, a Markdown link and heading, a table's bar.
const HOSTILE: &str = "evil\u{1b}]0;owned\u{7}\u{1b}[2J\n::error title=ok::all invariants held\r\n##[warning]forged <details open><script>x</script> [click](http://evil.example) | cell\n# FORGED\u{85}\u{202e}";

/// Fails the test when `text` (one sink's output) holds a control
/// character other than newline and tab, or a line that a CI runner reads
/// as a workflow command.
#[track_caller]
fn safe_for_log(sink: &str, text: &str) {
    for (n, line) in text.split('\n').enumerate() {
        let bad = line
            .chars()
            .find(|&c| (c.is_control() && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c));
        assert!(
            bad.is_none(),
            "{sink}, line {n}: a control character {bad:?}: {line:?}"
        );
        let trimmed = line.trim_start();
        assert!(
            !trimmed.starts_with("::"),
            "{sink}, line {n} begins a workflow command: {line:?}"
        );
        assert!(
            !line.contains("##["),
            "{sink}, line {n} holds a legacy command: {line:?}"
        );
    }
}

/// Fails the test when the Markdown `md` holds an element, a link or a
/// heading that came from the hostile text.
#[track_caller]
fn safe_markdown(md: &str) {
    safe_for_log("markdown", md);
    for forged in ["<details open>", "<script>", "[click](http", "\n# FORGED"] {
        assert!(!md.contains(forged), "markdown holds {forged:?}:\n{md}");
    }
}

/// A Python subject whose hello name and version, and whose fault on the
/// first compact, carry `HOSTILE`.
fn hostile_subject(dir: &TempDir) -> String {
    let script = format!(
        r#"import json, sys
H = {hostile}
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "hello":
        print(json.dumps({{"op": "hello", "protocol": 1, "name": H, "version": H, "ops": ["compact"]}}), flush=True)
    else:
        sys.stderr.write(H + "\n")
        print(json.dumps({{"id": r["id"], "error": {{"kind": H, "message": H}}}}), flush=True)
"#,
        hostile = serde_json::to_string(HOSTILE).unwrap()
    );
    let path = dir.file("subject.py", script);
    format!("python3 {path}")
}

#[test]
fn a_hostile_subjects_name_and_faults_reach_no_sink_raw() {
    let dir = TempDir::new("hostile-text-subject");
    let subject = hostile_subject(&dir);
    let md = dir.join("report.md");
    let xml = dir.join("report.xml");
    let out = ctxgate(&[
        "check",
        "--subject",
        &subject,
        "--cases",
        "5",
        "--seed",
        "1",
        "--save",
        &dir.join("fixtures"),
        "--also-report",
        &format!("markdown={md}"),
        "--also-report",
        &format!("junit={xml}"),
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    safe_for_log("stdout", &out.stdout);
    safe_for_log("stderr", &out.stderr);
    // The name is there, escaped: not dropped.
    assert!(out.stdout.contains("evil\\u{1b}"), "{}", out.stdout);
    safe_markdown(&std::fs::read_to_string(&md).unwrap());
    let junit = std::fs::read_to_string(&xml).unwrap();
    safe_for_log("junit", &junit);
    assert!(!junit.contains("<script>"), "{junit}");
    // It parses, and the class (the subject's name, which the report puts
    // on one line) reads back as the report gave it to the writer.
    let values = read_junit(&junit);
    let class = "ctxgate.evil\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{a}::error title=ok::all";
    assert!(values.iter().any(|v| v.starts_with(class)), "{values:#?}");
    // A saved fixture is safe to `cat` (its text escaped where it holds
    // controls: `fixture::tests`).
    for entry in std::fs::read_dir(dir.join("fixtures")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        safe_for_log(&path.display().to_string(), &text);
    }
}

/// Every attribute value and every element's text of the JUnit document
/// `doc`, as an XML parser reads them (quick-xml, the parser quick-junit
/// writes with); the test fails if `doc` is not well-formed.
fn read_junit(doc: &str) -> Vec<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(doc);
    let (mut values, mut text) = (Vec::new(), String::new());
    let flush = |text: &mut String, values: &mut Vec<String>| {
        if !text.trim().is_empty() {
            values.push(std::mem::take(text));
        }
        text.clear();
    };
    loop {
        match reader.read_event().expect("the JUnit document parses") {
            Event::Start(e) | Event::Empty(e) => {
                flush(&mut text, &mut values);
                for a in e.attributes() {
                    let a = a.expect("an attribute parses");
                    // Normalised as XML 1.0 says: a raw newline or tab
                    // would read back as a space, a reference as itself.
                    let value = a.normalized_value(quick_xml::XmlVersion::Explicit1_0);
                    values.push(value.expect("a value unescapes").into_owned());
                }
            }
            Event::End(_) => flush(&mut text, &mut values),
            Event::Text(t) => text.push_str(&t.xml10_content().unwrap()),
            Event::GeneralRef(r) => {
                let r = format!("&{};", r.decode().unwrap());
                text.push_str(&quick_xml::escape::unescape(&r).expect("a known reference"));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    values
}

/// The JUnit writer (`report::junit`, quick-junit underneath) given text
/// with ESC, a newline then `::error::`, `##[`, `]]>`, `<`, `&`, a lone C0
/// control, DEL, C1, a bidirectional control, a tab and `\r\n`, as a
/// subject name, a fixture name, a failure's message and text, a skip and a
/// note: an XML parser reads back every text as it was, but the controls
/// XML 1.0 cannot hold, shown as `\u{…}`, and every attribute on one line
/// as the other forms show it; no line of the document begins a workflow
/// command or holds a control character.
#[test]
fn a_hostile_junit_document_reads_back_as_its_text() {
    use ctxgate::report::junit::{document, Case, Suite};
    let hostile = "subj\u{1b}[31m\n::error::forged\n##[warning]x ##vso[task.complete] ]]> <a b=\"c\"> & d\u{1}\u{7f}\u{85}\u{202e}\te\r\n \u{a0}::warning::y";
    let shown = hostile
        .replace('\u{1b}', "\\u{1b}")
        .replace('\u{1}', "\\u{1}");
    let mut skipped = Case::new(hostile, hostile);
    skipped.skipped = Some(hostile.to_owned());
    let mut noted = Case::new(hostile, hostile);
    noted.out = Some(hostile.to_owned());
    let doc = document(&[Suite {
        name: hostile.to_owned(),
        seconds: Some(0.25),
        cases: vec![
            Case::new(hostile, hostile).failed(hostile, hostile, hostile),
            skipped,
            noted,
        ],
    }]);
    safe_for_log("junit", &doc);
    let values = read_junit(&doc);
    let read: Vec<&String> = values.iter().filter(|v| v.contains("subj")).collect();
    // The suite's name; each case's name and class; the failure's message,
    // type and text; the skip's message; the note.
    assert_eq!(read.len(), 1 + 3 * 2 + 3 + 1 + 1, "{doc}");
    // Texts read back as they were; names and messages (attributes) on
    // one line, every control a visible escape, as the other forms show
    // them — a CI page shows them parsed.
    let texts = read.iter().filter(|v| **v == &shown).count();
    let names = read
        .iter()
        .filter(|v| ***v == ctxgate::model::one_line(hostile))
        .count();
    assert_eq!((texts, names), (2, 10), "{doc}");
    assert!(
        doc.contains("<testsuites tests=\"3\" skipped=\"1\" failures=\"1\""),
        "{doc}"
    );
    assert!(doc.contains("time=\"0.250\""), "{doc}");
}

/// The warning on an unclaimed `--invariants` name and the error on a
/// `--claim` the subject cannot be judged on (issue 46) name the subject:
/// its hostile name reaches stderr escaped.
#[test]
fn a_hostile_name_in_a_claims_warning_or_error_is_escaped() {
    let dir = TempDir::new("hostile-text-claims");
    let subject = hostile_subject(&dir);
    let save = dir.join("fixtures");
    let base = [
        "check",
        "--subject",
        &subject,
        "--cases",
        "2",
        "--seed",
        "1",
        "--save",
        &save,
    ];
    let warned = ctxgate(
        &[
            &base[..],
            &["--invariants", "estimate-monotone,tool-pairing"],
        ]
        .concat(),
    );
    assert!(
        warned
            .stderr
            .contains("warning: --invariants names estimate-monotone"),
        "{}",
        warned.stderr
    );
    let refused = ctxgate(&[&base[..], &["--claim", "estimate-monotone"]].concat());
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(
        refused
            .stderr
            .contains("--claim estimate-monotone: the subject"),
        "{}",
        refused.stderr
    );
    for out in [&warned, &refused] {
        safe_for_log("stderr", &out.stderr);
        assert!(out.stderr.contains("evil\\u{1b}"), "{}", out.stderr);
    }
}

#[test]
fn fixture_file_names_and_fields_are_escaped_in_replay_and_in_a_suite() {
    let dir = TempDir::new("hostile-text-fixtures");
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let fixture = serde_json::json!({"ctxgate": 1, "name": HOSTILE, "see": HOSTILE,
        "found": HOSTILE, "op": "compact", "invariants": ["tool-pairing"],
        "messages": [{"role": "user", "content": "hi"}]});
    // File names may hold anything but `/` and NUL.
    for name in [
        "a\n## FORGED heading\n::error::forged.json",
        "b <details open> [x](evil.example).json",
        "c \u{1b}[2J\u{7}.json",
    ] {
        std::fs::write(suite.join(name), fixture.to_string()).unwrap();
    }
    let replay = ctxgate(&["replay", suite.to_str().unwrap()]);
    assert_eq!(replay.code, 0, "{}", replay.all());
    safe_for_log("replay stdout", &replay.stdout);
    safe_for_log("replay stderr", &replay.stderr);
    assert!(!replay.stdout.contains("\n## FORGED"), "{}", replay.stdout);

    let md = dir.join("suite.md");
    let out = ctxgate(&[
        "check",
        "--cases",
        "20",
        "--seed",
        "1",
        "--with-suite",
        suite.to_str().unwrap(),
        "--save",
        &dir.join("fixtures"),
        "--also-report",
        &format!("markdown={md}"),
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    safe_for_log("check stdout", &out.stdout);
    safe_for_log("check stderr", &out.stderr);
    safe_markdown(&std::fs::read_to_string(&md).unwrap());
}

/// The two shards of seed 3's 20 cases, as JSON reports in `dir`.
fn shards(dir: &TempDir) -> [String; 2] {
    [1, 2].map(|k| {
        let out = ctxgate(&[
            "check",
            "--cases",
            "20",
            "--seed",
            "3",
            "--shard",
            &format!("{k}/2"),
            "--report",
            "json",
            "--save",
            &dir.join("fixtures"),
        ]);
        assert_eq!(out.code, 0, "{}", out.all());
        dir.file(&format!("shard{k}.json"), &out.stdout)
    })
}

fn edit(path: &str, f: impl Fn(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, v.to_string()).unwrap();
}

#[test]
fn a_merged_reports_subject_is_escaped_in_every_form() {
    let dir = TempDir::new("hostile-text-merge");
    let [a, b] = shards(&dir);
    for p in [&a, &b] {
        edit(p, |v| v["subject"]["name"] = HOSTILE.into());
    }
    for form in ["human", "markdown", "junit"] {
        let out = ctxgate(&["report", "merge", &a, &b, "--report", form]);
        assert_eq!(out.code, 0, "{form}: {}", out.all());
        safe_for_log(form, &out.stdout);
        safe_for_log(form, &out.stderr);
        if form == "markdown" {
            safe_markdown(&out.stdout);
        }
    }
}

#[test]
fn merge_refuses_a_case_rerun_alone_and_reports_of_another_version() {
    let dir = TempDir::new("hostile-text-merge-refusals");
    let [a, b] = shards(&dir);
    // `check --case N` is no shard: alone or with others, it is refused.
    let one = ctxgate(&[
        "check",
        "--case",
        "4",
        "--seed",
        "3",
        "--report",
        "json",
        "--save",
        &dir.join("f"),
    ]);
    let one = dir.file("case4.json", &one.stdout);
    for set in [vec![one.as_str()], vec![a.as_str(), one.as_str()]] {
        let mut args = vec!["report", "merge"];
        args.extend(&set);
        let out = ctxgate(&args);
        assert_eq!(out.code, 2, "{set:?}: {}", out.all());
        out.stderr_has("rerun alone");
    }
    // A report of another ctxgate (a hostile version string, too).
    edit(&b, |v| {
        v["ctxgateVersion"] = format!("0.0.1{HOSTILE}").into()
    });
    let out = ctxgate(&["report", "merge", &a, &b]);
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("written by ctxgate 0.0.1");
    safe_for_log("stderr", &out.stderr);
    edit(&b, |v| {
        v.as_object_mut().unwrap().remove("ctxgateVersion");
    });
    let out = ctxgate(&["report", "merge", &a, &b]);
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("too old to record its version");
}
