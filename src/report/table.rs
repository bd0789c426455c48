//! One table type for the text and Markdown reports: columns with a head,
//! rows of cells, and an optional last column of marks (`FAIL`, `❌`). In
//! text the first column is padded on the right and the others on the
//! left, each to its width; in Markdown the first column is aligned left
//! and the others right.

use std::fmt::Write as _;

/// A column: its head, its width in text, and how many spaces come before
/// it there (none before the first).
pub(crate) type Column<'a> = (&'a str, usize, usize);

pub(crate) struct Table<'a> {
    pub columns: Vec<Column<'a>>,
    /// Rows end in a mark (text: after two spaces, even when empty).
    pub marked: bool,
    pub rows: Vec<(Vec<String>, String)>,
}

impl<'a> Table<'a> {
    pub fn new(columns: Vec<Column<'a>>, marked: bool) -> Table<'a> {
        Table {
            columns,
            marked,
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>, mark: &str) {
        self.rows.push((cells, mark.to_owned()));
    }

    fn text_line(&self, out: &mut String, cells: impl Iterator<Item = String>) {
        for (i, (cell, &(_, width, gap))) in cells.zip(&self.columns).enumerate() {
            let _ = match i {
                0 => write!(out, "{cell:<width$}"),
                _ => write!(out, "{:gap$}{cell:>width$}", ""),
            };
        }
    }

    /// The table as text: the heads, then a line a row.
    pub fn text(&self, out: &mut String) {
        self.text_line(out, self.columns.iter().map(|c| c.0.to_owned()));
        out.push('\n');
        for (cells, mark) in &self.rows {
            self.text_line(out, cells.iter().cloned());
            if self.marked {
                let _ = write!(out, "  {mark}");
            }
            out.push('\n');
        }
    }

    /// The table in Markdown.
    pub fn markdown(&self, out: &mut String) {
        let mark = |s: &str| {
            if self.marked {
                format!(" {s} |")
            } else {
                String::new()
            }
        };
        let heads: Vec<&str> = self.columns.iter().map(|c| c.0).collect();
        let _ = write!(out, "| {} |{}\n|---|", heads.join(" | "), mark(""));
        out.push_str(&"---:|".repeat(heads.len() - 1));
        let _ = writeln!(out, "{}", if self.marked { "---|" } else { "" });
        for (cells, m) in &self.rows {
            let _ = writeln!(out, "| {} |{}", cells.join(" | "), mark(m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_pads_and_markdown_aligns() {
        let mut t = Table::new(vec![("name", 6, 0), ("n", 4, 1), ("m", 3, 2)], true);
        t.row(vec!["ab".into(), "1".into(), "22".into()], "FAIL");
        t.row(vec!["c".into(), "10".into(), "3".into()], "");
        let mut text = String::new();
        t.text(&mut text);
        assert_eq!(
            text,
            "name      n    m\nab        1   22  FAIL\nc        10    3  \n"
        );
        let mut md = String::new();
        t.markdown(&mut md);
        assert_eq!(
            md,
            "| name | n | m |  |\n|---|---:|---:|---|\n| ab | 1 | 22 | FAIL |\n| c | 10 | 3 |  |\n"
        );
        let mut plain = Table::new(vec![("a", 1, 0), ("b", 1, 1)], false);
        plain.row(vec!["x".into(), "y".into()], "");
        let mut md = String::new();
        plain.markdown(&mut md);
        assert_eq!(md, "| a | b |\n|---|---:|\n| x | y |\n");
    }
}
