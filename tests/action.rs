//! The GitHub Action's shell steps, run as GitHub runs them, with hostile
//! inputs (issue 25, item 2): `tests/action/emulate.py` substitutes every
//! `${{ expression }}` as GitHub does, runs each `run:` with `bash -eo
//! pipefail` and stub `cargo`/`ctxgate` binaries, and fails when an input
//! ran as code, reached ctxgate as anything but one literal argument, or
//! printed a workflow command of its own. The emulator is shown to catch
//! the injection it exists for: a copy of action.yml with one expression
//! inside a `run:` fails it.

use std::path::Path;
use std::process::Command;

fn emulate(action: &Path) -> (i32, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(Path::new(root).join("tests/action/emulate.py"))
        .arg(action)
        .arg(root)
        .output()
        .expect("python3 runs (with PyYAML: pip install pyyaml)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("No module named 'yaml'"),
        "the action's emulator needs PyYAML: pip install pyyaml\n{text}"
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn every_input_reaches_the_actions_scripts_as_data_never_as_code() {
    let action = Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml");
    let (code, text) = emulate(&action);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("nothing ran as code"), "{text}");
    assert!(
        text.contains("artifact-name") && text.contains("subject"),
        "{text}"
    );
}

#[test]
fn the_emulator_catches_an_expression_pasted_into_a_script() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let yml = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let anchor = "      run: |\n";
    let at = yml.rfind(anchor).expect("a multi-line run: step") + anchor.len();
    let vulnerable = format!(
        "{}        echo \"the ${{{{ inputs.artifact-name }}}} artifact\"\n{}",
        &yml[..at],
        &yml[at..]
    );
    let dir = std::env::temp_dir().join(format!("ctxgate-action-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("action.yml");
    std::fs::write(&path, vulnerable).unwrap();
    let (code, text) = emulate(&path);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("is pasted into the script"), "{text}");
    assert!(
        text.contains("an input ran as shell code: created inputs.artifact-name"),
        "{text}"
    );
}
