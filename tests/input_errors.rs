//! Bad input is an error value with a kind (STYLE habit 7): every class of
//! bad input a user can hand ctxgate maps to its `InputErrorKind`, and
//! tests match the kind, never the wording (which stays free to improve).

use std::io::Read;
use std::path::Path;

use ctxgate::error::InputErrorKind as K;
use ctxgate::fixture::Fixture;
use ctxgate::{Config, Document};

fn doc_kind(text: &[u8]) -> K {
    Document::parse(text, None).unwrap_err().kind
}

#[test]
fn every_class_of_bad_history_has_its_kind() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let cases: [(&[u8], K); 10] = [
        (b"", K::Empty),
        (b"  \n", K::Empty),
        (b"[{\"role\":\"user\",\"content\":\"\xff\"}]", K::Utf8),
        (b"[{\"role\":", K::Syntax),
        (b"[{\"role\" \"user\"}]", K::Syntax),
        (deep.as_bytes(), K::TooDeep),
        (b"42", K::Shape),
        (b"[{\"role\":\"bot\"}]", K::Shape),
        (b"[{\"role\":\"user\",\"content\":7}]", K::Shape),
        (
            b"[{\"role\":\"tool\",\"toolCallId\":\"x\",\"content\":\"\"}]",
            K::IllFormed,
        ),
    ];
    for (text, kind) in cases {
        assert_eq!(doc_kind(text), kind, "{}", String::from_utf8_lossy(text));
    }
    let twice = br#"[{"role":"assistant","toolCalls":[{"id":"a","name":"f","arguments":{}}]},
        {"role":"tool","toolCallId":"a"},{"role":"tool","toolCallId":"a"}]"#;
    let e = Document::parse(twice, None).unwrap_err();
    assert_eq!((e.kind, e.message), (K::IllFormed, Some(2)));
}

#[test]
fn configs_fixtures_and_files_have_theirs() {
    assert_eq!(Config::from_json(b"").unwrap_err().kind, K::Empty);
    assert_eq!(
        Config::from_json(br#"{"contextWindo": 5}"#)
            .unwrap_err()
            .kind,
        K::Config
    );
    assert_eq!(
        Config::from_json(br#"{"threshold": 2}"#).unwrap_err().kind,
        K::Config
    );
    assert_eq!(Config::from_json(b"{").unwrap_err().kind, K::Syntax);
    let fixture = |v: serde_json::Value| Fixture::from_json(v).unwrap_err().kind;
    assert_eq!(fixture(serde_json::json!({"name": "x"})), K::Fixture);
    assert_eq!(
        fixture(serde_json::json!({"ctxgate": 1, "messages": [], "invariants": ["nope"]})),
        K::Fixture
    );
    assert_eq!(
        fixture(serde_json::json!({"ctxgate": 1, "messages": [{"role": "bot"}]})),
        K::Shape
    );
    let missing = Path::new("/nonexistent/ctxgate/history.json");
    assert_eq!(
        ctxgate::input::read_file(missing, "it", 10)
            .unwrap_err()
            .kind,
        K::Io
    );
    assert_eq!(
        ctxgate::input::read_document(missing, None, 10)
            .unwrap_err()
            .kind,
        K::Io
    );
    let zeros = std::io::repeat(b' ').take(100);
    assert_eq!(
        ctxgate::input::read_all(zeros, "it", 10).unwrap_err().kind,
        K::TooLarge
    );
}

/// A history read from a file (parsed as it is read) gives the same error
/// as the same bytes parsed whole: kind, message index and words.
#[test]
fn a_file_read_as_a_stream_errs_as_the_bytes_do() {
    let dir = std::env::temp_dir().join(format!("ctxgate-input-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let texts: [&[u8]; 4] = [
        b"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":",
        b"[{\"role\":\"user\"},{\"role\":\"bot\"}]",
        b"[{\"role\":\"user\",\"content\":\"\xfe\"}]",
        b"",
    ];
    for (i, text) in texts.iter().enumerate() {
        let path = dir.join(format!("h{i}.json"));
        std::fs::write(&path, text).unwrap();
        let from_file = ctxgate::input::read_document(&path, None, 1 << 20).unwrap_err();
        let from_bytes = Document::parse(text, None).unwrap_err();
        assert_eq!(from_file.kind, from_bytes.kind, "case {i}");
        assert_eq!(from_file.message, from_bytes.message, "case {i}");
        assert_eq!(from_file.problem, from_bytes.problem, "case {i}");
        assert_eq!(from_file.file.as_deref(), Some(path.to_str().unwrap()));
    }
}
