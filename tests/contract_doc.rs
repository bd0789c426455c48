//! The contract ships inside the project (issue 46 item 5): docs/contract.md
//! names every invariant the binary judges, `ctxgate contract` prints it
//! byte for byte, both packages carry the same copy, and the README and
//! contract-notes count the invariants as the binary does.

use std::path::Path;
use std::process::Command;

use ctxgate::invariant::Invariant;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The names in the first column of the Markdown table that follows
/// `heading` (up to the next `## `).
fn table_names(doc: &str, heading: &str) -> Vec<String> {
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let section = &doc[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(name, _)| name.to_string()))
        .collect()
}

#[test]
fn ctxgate_contract_prints_the_document_in_the_repository() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .arg("contract")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc = read("docs/contract.md");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), doc);
}

#[test]
fn the_packages_ship_the_same_contract() {
    let doc = read("docs/contract.md");
    for copy in ["python/src/ctxgate/CONTRACT.md", "js/CONTRACT.md"] {
        assert!(
            read(copy) == doc,
            "{copy} differs from docs/contract.md: run python3 python/sync.py"
        );
    }
    assert!(
        read("js/package.json").contains("\"CONTRACT.md\""),
        "npm files list lacks CONTRACT.md"
    );
}

#[test]
fn the_contract_names_every_invariant_the_binary_judges() {
    let doc = read("docs/contract.md");
    let mut listed = table_names(&doc, "## 5. Invariants");
    let mut known: Vec<String> = Invariant::ALL
        .iter()
        .map(|i| i.name().to_string())
        .collect();
    listed.sort();
    known.sort();
    assert_eq!(listed, known, "§5's table and Invariant::ALL disagree");
    for ext in Invariant::EXTENSIONS {
        assert!(
            doc.contains(&format!("`{}`", ext.name())),
            "extension {} not in the contract",
            ext.name()
        );
    }
    #[cfg(feature = "agent")]
    {
        let agent = table_names(&doc, "## 9. Agent mode");
        let known: Vec<String> = ctxgate::agent::invariants::AgentInvariant::ALL
            .iter()
            .map(|i| i.name().to_string())
            .collect();
        assert_eq!(agent, known, "§9's table and AgentInvariant::ALL disagree");
    }
}

#[test]
fn readme_and_notes_count_the_invariants_as_the_binary_does() {
    let n = Invariant::ALL.len();
    let words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
    ];
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("all {n} invariants")),
        "README does not say all {n} invariants"
    );
    for wrong in (10..20).filter(|&k| k != n) {
        assert!(
            !readme.contains(&format!("{wrong} invariants")),
            "README counts {wrong} invariants"
        );
    }
    for doc in [
        "docs/contract-notes.md",
        "docs/contract.md",
        "docs/architecture.md",
    ] {
        let text = read(doc).to_lowercase();
        for (k, word) in words.iter().enumerate().skip(10) {
            if k != n {
                assert!(
                    !text.contains(&format!("§5's {word}"))
                        && !text.contains(&format!("these {word}")),
                    "{doc} counts SPEC §5's invariants as {word}"
                );
            }
        }
        assert!(
            !text.contains("shared/spec") && !text.contains("shared/seeds"),
            "{doc} links outside the repository"
        );
    }
}
