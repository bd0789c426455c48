//! Which of an agent's tools reads a file, and how to call it (SPEC §9,
//! `--tool NAME:ARG[=TEMPLATE]`).
//!
//! A model turn asks the agent to read files ctxgate wrote, through a tool
//! the request advertises. A declared tool wins; else the defaults know
//! the usual names: a *read* tool (`read_file`, `read`, `Read`, `view`, …)
//! gets the file's absolute path in its path-like argument (`path`,
//! `file_path`, `filePath`, `absolute_path`, … as its schema names it),
//! and a *shell* tool (`bash`, `shell`, `run_shell_command`, …) gets
//! `cat PATH` in its command argument (as an argv array when its schema
//! says `array`). In a template, `{path}` is the file's absolute path and
//! `{file}` its name in the workspace (the agent's working directory); in
//! a command line each is one shell word, quoted when it must be.

use serde_json::Value;

use super::dialect::Tool;

/// A declared tool: `NAME:ARG[=TEMPLATE]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub arg: String,
    /// `{path}` by default.
    pub template: String,
}

impl std::str::FromStr for ToolSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<ToolSpec, String> {
        let (name, rest) = s.split_once(':').ok_or_else(|| {
            format!("--tool {s:?}: expected NAME:ARG[=TEMPLATE], e.g. read_file:path or bash:command='cat {{path}}'")
        })?;
        let (arg, template) = match rest.split_once('=') {
            Some((arg, t)) => (arg, t.to_owned()),
            None => (rest, "{path}".to_owned()),
        };
        if name.is_empty() || arg.is_empty() {
            return Err(format!(
                "--tool {s:?}: the tool's name and its argument must not be empty"
            ));
        }
        if !template.contains("{path}") && !template.contains("{file}") {
            return Err(format!(
                "--tool {s:?}: the template names no file: put {{path}} (absolute) or {{file}} (in the workspace) in it"
            ));
        }
        Ok(ToolSpec {
            name: name.to_owned(),
            arg: arg.to_owned(),
            template,
        })
    }
}

/// A tool bound to reading files: its name and how its arguments are made.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub tool: String,
    pub arg: String,
    pub template: String,
    /// The argument is an argv array (the template's words).
    pub array: bool,
    /// The tool runs a command line (a shell tool, or a declared template
    /// with more than the path in it).
    pub shell: bool,
}

/// A word as a POSIX shell reads it back: quoted when it needs to be.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl Binding {
    /// The call's arguments for reading the workspace file `file`, whose
    /// absolute path is `path`.
    pub fn arguments(&self, path: &str, file: &str) -> Value {
        // In a command line (a shell tool's string) the path is one word,
        // quoted when it has to be; in an argv array or a read tool's
        // argument it is the path as it is.
        let (path, file) = if self.shell && !self.array {
            (shell_word(path), shell_word(file))
        } else {
            (path.to_owned(), file.to_owned())
        };
        let fill = |t: &str| t.replace("{path}", &path).replace("{file}", &file);
        let value = if self.array {
            let words =
                shell_words::split(&self.template).unwrap_or_else(|_| vec![self.template.clone()]);
            Value::Array(words.iter().map(|w| Value::String(fill(w))).collect())
        } else {
            Value::String(fill(&self.template))
        };
        let mut args = serde_json::Map::new();
        args.insert(self.arg.clone(), value);
        Value::Object(args)
    }
}

/// Names of tools that read a file, lower-cased.
const READ_TOOLS: [&str; 12] = [
    "read_file",
    "read",
    "readfile",
    "view",
    "view_file",
    "cat",
    "file_read",
    "read_text_file",
    "open_file",
    "get_file_contents",
    "read_file_content",
    "fs_read",
];

/// A read tool's path argument, as schemas name it.
const PATH_ARGS: [&str; 9] = [
    "path",
    "file_path",
    "filePath",
    "absolute_path",
    "filename",
    "file",
    "target_file",
    "relative_path",
    "filepath",
];

/// Names of tools that run a shell command, lower-cased.
const SHELL_TOOLS: [&str; 11] = [
    "bash",
    "shell",
    "run_shell_command",
    "execute_command",
    "exec_command",
    "run_command",
    "terminal",
    "sh",
    "execute",
    "run_terminal_cmd",
    "local_shell",
];

/// A shell tool's command argument.
const COMMAND_ARGS: [&str; 4] = ["command", "cmd", "commands", "script"];

/// Bind a file-reading tool among those a request advertises.
pub fn bind(declared: &[ToolSpec], advertised: &[Tool]) -> Result<Binding, String> {
    if !declared.is_empty() {
        return declared
            .iter()
            .find_map(|spec| {
                let tool = advertised.iter().find(|t| t.name == spec.name)?;
                Some(Binding {
                    tool: spec.name.clone(),
                    arg: spec.arg.clone(),
                    template: spec.template.clone(),
                    array: property_type(&tool.schema, &spec.arg) == Some("array"),
                    shell: spec.template != "{path}" && spec.template != "{file}",
                })
            })
            .ok_or_else(|| {
                format!(
                    "the request advertises {}, and none is a declared --tool ({})",
                    names(advertised),
                    declared
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
    }
    let read = advertised.iter().find_map(|t| {
        let lower = t.name.to_ascii_lowercase();
        let known = READ_TOOLS.contains(&lower.as_str());
        let arg = PATH_ARGS.iter().find(|a| has_property(&t.schema, a));
        match (known, arg) {
            (_, Some(arg)) if known || lower.contains("read") => Some((t, arg.to_string())),
            (true, None) if properties(&t.schema).is_none() => Some((t, "path".to_owned())),
            _ => None,
        }
    });
    if let Some((t, arg)) = read {
        return Ok(Binding {
            tool: t.name.clone(),
            arg,
            template: "{path}".into(),
            array: false,
            shell: false,
        });
    }
    let shell = advertised.iter().find_map(|t| {
        let lower = t.name.to_ascii_lowercase();
        if !SHELL_TOOLS.contains(&lower.as_str()) {
            return None;
        }
        let arg = COMMAND_ARGS
            .iter()
            .find(|a| has_property(&t.schema, a))
            .map(|a| a.to_string())
            .or_else(|| {
                properties(&t.schema)
                    .is_none()
                    .then(|| "command".to_owned())
            })?;
        Some((t, arg))
    });
    if let Some((t, arg)) = shell {
        let array = property_type(&t.schema, &arg) == Some("array");
        return Ok(Binding {
            tool: t.name.clone(),
            arg,
            template: "cat {path}".into(),
            array,
            shell: true,
        });
    }
    Err(format!(
        "the request advertises {}, and none is a tool ctxgate knows to read a file: name one with --tool NAME:ARG (e.g. --tool read_file:path, --tool bash:command='cat {{path}}')",
        names(advertised)
    ))
}

fn names(tools: &[Tool]) -> String {
    if tools.is_empty() {
        return "no tools".into();
    }
    // Each name cut to 80 bytes: an agent's tool name is its own text, of
    // any length (one of 60 KB filled 120 KB of stderr).
    let shown: Vec<String> = tools
        .iter()
        .take(12)
        .map(|t| {
            let cut = crate::model::truncate_utf8(&t.name, 80);
            let more = if cut.len() < t.name.len() { "…" } else { "" };
            format!("{}{more}", crate::model::one_line(cut))
        })
        .collect();
    let more = tools.len().saturating_sub(12);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("the tools {}{more}", shown.join(", "))
}

fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn has_property(schema: &Value, name: &str) -> bool {
    properties(schema).is_some_and(|p| p.contains_key(name))
}

fn property_type<'a>(schema: &'a Value, name: &str) -> Option<&'a str> {
    properties(schema)?.get(name)?.get("type")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, props: Value) -> Tool {
        Tool {
            name: name.into(),
            schema: json!({"type": "object", "properties": props}),
        }
    }

    #[test]
    fn declared_tools_parse_and_refuse_what_names_no_file() {
        let t: ToolSpec = "bash:command=cat {file}".parse().unwrap();
        assert_eq!((t.name.as_str(), t.arg.as_str()), ("bash", "command"));
        assert_eq!(
            "read_file:path".parse::<ToolSpec>().unwrap().template,
            "{path}"
        );
        for bad in ["read_file", ":path", "x:", "bash:command=ls"] {
            assert!(bad.parse::<ToolSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_prefer_a_read_tool_and_take_its_schemas_argument() {
        let tools = [
            tool("bash", json!({"command": {"type": "string"}})),
            tool(
                "Read",
                json!({"file_path": {"type": "string"}, "offset": {}}),
            ),
        ];
        let b = bind(&[], &tools).unwrap();
        assert_eq!((b.tool.as_str(), b.arg.as_str()), ("Read", "file_path"));
        assert_eq!(
            b.arguments("/w/t000-0.txt", "t000-0.txt"),
            json!({"file_path": "/w/t000-0.txt"})
        );
    }

    #[test]
    fn a_shell_tool_cats_the_file_as_text_or_argv() {
        let b = bind(&[], &[tool("shell", json!({"command": {"type": "array"}}))]).unwrap();
        assert_eq!(
            b.arguments("/w/f", "f"),
            json!({"command": ["cat", "/w/f"]})
        );
        let b = bind(&[], &[tool("bash", json!({"command": {"type": "string"}}))]).unwrap();
        assert_eq!(b.arguments("/w/f", "f"), json!({"command": "cat /w/f"}));
        assert_eq!(
            b.arguments("/it's here/f", "f"),
            json!({"command": "cat '/it'\\''s here/f'"})
        );
    }

    #[test]
    fn nothing_to_read_with_is_an_error_naming_the_tools() {
        let e = bind(&[], &[tool("write_file", json!({"path": {}}))]).unwrap_err();
        assert!(e.contains("write_file") && e.contains("--tool"), "{e}");
        let spec: ToolSpec = "cat_it:p".parse().unwrap();
        let e = bind(&[spec], &[tool("read_file", json!({"path": {}}))]).unwrap_err();
        assert!(e.contains("cat_it"), "{e}");
    }
}
