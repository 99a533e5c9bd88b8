//! YAML documents as trees of nodes that remember their line, so that a message about a
//! Strimzi resource can say where in the file the field is. yaml-rust2's own `Yaml` values
//! drop the lines; its parser's events carry them.
//!
//! Scalars keep their text as written: every value ends up as the text of a Kafka setting, so
//! `100`, `true` and `1.0` are read as `"100"`, `"true"` and `"1.0"`, what Strimzi passes on.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A node of a document and the line (from 1) where it is named: its key's line for a
/// mapping's value, its own first line otherwise.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) line: usize,
    pub(crate) value: Value,
}

/// What a node holds.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// `~`, `null` or nothing.
    Null,
    /// A string, number or boolean, as written.
    Scalar(String),
    Sequence(Vec<Node>),
    /// Entries in the order written; keys are scalars.
    Mapping(Vec<(String, Node)>),
}

/// Reads every document of `text`.
///
/// # Errors
///
/// The parser's message (with line and column) for text that is not YAML, or a message for a
/// mapping key that is not a scalar.
pub(crate) fn load(text: &str) -> Result<Vec<Node>, String> {
    let mut loader = Loader::default();
    Parser::new_from_str(text)
        .load(&mut loader, true)
        .map_err(|e| e.to_string())?;
    match loader.error {
        Some(error) => Err(error),
        None => Ok(loader.documents),
    }
}

/// A collection being read.
#[derive(Debug)]
enum Open {
    Sequence {
        node: Node,
        anchor: usize,
    },
    Mapping {
        node: Node,
        anchor: usize,
        /// The key read, waiting for its value, with its line.
        key: Option<(String, usize)>,
    },
}

#[derive(Debug, Default)]
struct Loader {
    documents: Vec<Node>,
    open: Vec<Open>,
    /// Anchored nodes (`&name`), by the parser's anchor id, for aliases (`*name`).
    anchors: HashMap<usize, Node>,
    error: Option<String>,
}

impl Loader {
    /// Adds a finished node to the collection being read, or as a document.
    fn add(&mut self, mut node: Node, anchor: usize) {
        if anchor > 0 {
            let _ = self.anchors.insert(anchor, node.clone());
        }
        match self.open.last_mut() {
            None => self.documents.push(node),
            Some(Open::Sequence { node: parent, .. }) => {
                if let Value::Sequence(items) = &mut parent.value {
                    items.push(node);
                }
            }
            Some(Open::Mapping { node: parent, key, .. }) => match key.take() {
                Some((key, line)) => {
                    node.line = line;
                    if let Value::Mapping(entries) = &mut parent.value {
                        entries.push((key, node));
                    }
                }
                None => match node.value {
                    Value::Scalar(text) => *key = Some((text, node.line)),
                    Value::Null => *key = Some((String::new(), node.line)),
                    _ => {
                        let _ = self.error.get_or_insert_with(|| {
                            format!("line {}: a mapping key that is not a plain value", node.line)
                        });
                    }
                },
            },
        }
    }
}

impl MarkedEventReceiver for Loader {
    fn on_event(&mut self, event: Event, mark: Marker) {
        let line = mark.line();
        match event {
            Event::Scalar(text, style, anchor, _) => {
                let null = style == TScalarStyle::Plain && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL");
                let value = if null { Value::Null } else { Value::Scalar(text) };
                self.add(Node { line, value }, anchor);
            }
            Event::SequenceStart(anchor, _) => self.open.push(Open::Sequence {
                node: Node {
                    line,
                    value: Value::Sequence(Vec::new()),
                },
                anchor,
            }),
            Event::MappingStart(anchor, _) => self.open.push(Open::Mapping {
                node: Node {
                    line,
                    value: Value::Mapping(Vec::new()),
                },
                anchor,
                key: None,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(Open::Sequence { node, anchor } | Open::Mapping { node, anchor, .. }) = self.open.pop() {
                    self.add(node, anchor);
                }
            }
            Event::Alias(anchor) => {
                let node = self.anchors.get(&anchor).cloned().unwrap_or(Node {
                    line,
                    value: Value::Null,
                });
                self.add(Node { line, ..node }, 0);
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(node: &Node) -> &str {
        match &node.value {
            Value::Scalar(s) => s,
            other => panic!("not a scalar: {other:?}"),
        }
    }

    #[test]
    fn nodes_keep_their_lines_and_text() {
        let docs = load("a: 1\nb:\n  - x: &v 1.0\n    y: *v\n  - ~\nc: \"\"\n---\nkind: K\n").unwrap();
        assert_eq!(docs.len(), 2);
        let Value::Mapping(top) = &docs[0].value else { panic!() };
        assert_eq!((top[0].0.as_str(), text(&top[0].1), top[0].1.line), ("a", "1", 1));
        let Value::Sequence(items) = &top[1].1.value else {
            panic!()
        };
        assert_eq!(top[1].1.line, 2);
        let Value::Mapping(first) = &items[0].value else {
            panic!()
        };
        assert_eq!((text(&first[0].1), first[0].1.line), ("1.0", 3));
        assert_eq!(
            (text(&first[1].1), first[1].1.line),
            ("1.0", 4),
            "an alias has its anchor's value"
        );
        assert!(matches!(items[1].value, Value::Null));
        assert_eq!(text(&top[2].1), "", "a quoted empty string is not null");
    }

    #[test]
    fn not_yaml_is_an_error_with_its_place() {
        let error = load("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(error.contains("line"), "{error}");
        assert!(load("? [1, 2]\n: x\n").unwrap_err().contains("not a plain value"));
    }
}
