//! A `.properties` reader with the semantics of `java.util.Properties.load`.
//!
//! # Format
//!
//! ```text
//! # comment            ! also a comment
//! key = value          key: value          key value
//! long.value = first \
//!              second            (continued; leading blanks of the next line are dropped)
//! escaped\ key\=x = tab\there \u00e9
//! ```
//!
//! * Lines end at `\n`, `\r` or `\r\n`. Blank lines and lines whose first non-blank character
//!   is `#` or `!` are skipped (blank = space, tab, form feed); a comment line never continues.
//! * A line ending in an odd number of backslashes continues on the next line; an empty next
//!   line ends the entry, and a backslash at the very end of the input is dropped.
//! * The key ends at the first unescaped `=`, `:` or blank. Blanks around the separator are
//!   skipped and one `=` or `:` may follow blanks; the value keeps trailing blanks.
//! * Escapes: `\t \n \r \f`, `\uXXXX` (exactly four hex digits), and `\x` → `x` for any other
//!   character (so `\=`, `\:`, `\ `, `\\`, `\#`).
//! * The last occurrence of a duplicate key wins.
//!
//! # References
//!
//! `java.util.Properties.load(Reader)` in the JDK documentation, and its `LineReader`.

use std::collections::HashMap;

use crate::error::{ConfigError, Result};

/// One key/value pair and the line where its (logical) line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// The unescaped key.
    pub key: String,
    /// The unescaped value (trailing blanks kept, as Java does).
    pub value: String,
    /// 1-based line number where the entry starts.
    pub line: usize,
    /// The value as written, when config providers resolved placeholders in it: what may be
    /// shown instead of [`Property::value`].
    pub written: Option<String>,
}

/// The parsed contents of a `.properties` file, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<Property>,
    index: HashMap<String, usize>,
}

impl Properties {
    /// Parses `.properties` text.
    ///
    /// # Errors
    ///
    /// [`ConfigError::MalformedEscape`] for a `\u` escape without four hex digits or one that
    /// leaves an unpaired surrogate.
    pub fn parse(text: &str) -> Result<Self> {
        let mut props = Properties::default();
        let lines = physical_lines(text);
        let mut next = 0;
        while next < lines.len() {
            let (line, raw) = lines[next];
            next += 1;
            let start = raw.trim_start_matches(is_blank);
            if start.is_empty() || start.starts_with(['#', '!']) {
                continue;
            }
            let mut logical = start.to_owned();
            while ends_with_odd_backslashes(&logical) {
                logical.pop();
                let Some(&(_, continued)) = lines.get(next) else {
                    break;
                };
                next += 1;
                logical.push_str(continued.trim_start_matches(is_blank));
            }
            let (key, value) = split_key_value(&logical);
            let key = unescape(key, line)?;
            // A password with a broken escape must not be echoed in the error.
            let value = unescape(value, line).map_err(|error| match error {
                ConfigError::MalformedEscape { line, .. } if crate::secret::is_secret_key(&key) => {
                    ConfigError::MalformedEscape {
                        line,
                        text: format!("{key} = [hidden]"),
                    }
                }
                other => other,
            })?;
            props.insert(Property {
                key,
                value,
                line,
                written: None,
            });
        }
        Ok(props)
    }

    /// The entry for `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Property> {
        self.index.get(key).map(|&i| &self.entries[i])
    }

    /// All entries, in the order their keys first appear.
    pub fn iter(&self) -> std::slice::Iter<'_, Property> {
        self.entries.iter()
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the file defines no key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn insert(&mut self, property: Property) {
        match self.index.get(&property.key) {
            Some(&i) => self.entries[i] = property,
            None => {
                let _ = self.index.insert(property.key.clone(), self.entries.len());
                self.entries.push(property);
            }
        }
    }
}

impl<'a> IntoIterator for &'a Properties {
    type Item = &'a Property;
    type IntoIter = std::slice::Iter<'a, Property>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Java's "white space" for properties files: space, tab and form feed.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// Splits on `\n`, `\r` and `\r\n`, numbering lines from 1.
fn physical_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        lines.push((lines.len() + 1, &rest[..end]));
        let terminator = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = rest.get(end + terminator..).unwrap_or("");
    }
    lines
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// Splits a logical line into raw (still escaped) key and value, like `Properties.load0`.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    let mut value_start = line.len();
    let mut has_separator = false;
    for (i, c) in line.char_indices() {
        if !escaped && (c == '=' || c == ':' || is_blank(c)) {
            key_end = i;
            value_start = i + c.len_utf8();
            has_separator = c == '=' || c == ':';
            break;
        }
        escaped = c == '\\' && !escaped;
    }
    let mut value = &line[value_start..];
    loop {
        value = value.trim_start_matches(is_blank);
        match value.strip_prefix(['=', ':']) {
            Some(after) if !has_separator => {
                has_separator = true;
                value = after;
            }
            _ => break,
        }
    }
    (&line[..key_end], value)
}

/// Resolves escapes; Java strings are UTF-16, so `\u` escapes may form surrogate pairs.
fn unescape(raw: &str, line: usize) -> Result<String> {
    let malformed = || ConfigError::MalformedEscape {
        line,
        text: raw.to_owned(),
    };
    let mut units: Vec<u16> = Vec::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        let c = match c {
            '\\' => match chars.next() {
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() != 4 || !hex.chars().all(|h| h.is_ascii_hexdigit()) {
                        return Err(malformed());
                    }
                    units.push(u16::from_str_radix(&hex, 16).map_err(|_| malformed())?);
                    continue;
                }
                Some('t') => '\t',
                Some('n') => '\n',
                Some('r') => '\r',
                Some('f') => '\x0c',
                Some(other) => other,
                // Unreachable through `parse` (a trailing backslash continues the line), and Java
                // drops it as well.
                None => continue,
            },
            plain => plain,
        };
        let mut buf = [0u16; 2];
        units.extend_from_slice(c.encode_utf16(&mut buf));
    }
    String::from_utf16(&units).map_err(|_| malformed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String, usize)> {
        Properties::parse(text)
            .unwrap()
            .iter()
            .map(|p| (p.key.clone(), p.value.clone(), p.line))
            .collect()
    }

    fn kv(key: &str, value: &str, line: usize) -> (String, String, usize) {
        (key.to_owned(), value.to_owned(), line)
    }

    #[test]
    fn separators_and_blanks() {
        assert_eq!(
            parse("a=1\nb: 2\nc 3\n  d   =   4  \ne\tf\ng\x0c:h\ni\nj = = k\nl :m"),
            vec![
                kv("a", "1", 1),
                kv("b", "2", 2),
                kv("c", "3", 3),
                kv("d", "4  ", 4),
                kv("e", "f", 5),
                kv("g", "h", 6),
                kv("i", "", 7),
                kv("j", "= k", 8),
                kv("l", "m", 9),
            ]
        );
    }

    #[test]
    fn comments_and_blank_lines() {
        assert_eq!(
            parse("# c\n! c\n   # indented\n\n \t \nx=1 # not a comment\n"),
            vec![kv("x", "1 # not a comment", 6)]
        );
    }

    #[test]
    fn continuation_drops_leading_blanks_of_next_line() {
        assert_eq!(
            parse("topics = a, \\\n      b, \\\n\t c\nnext=1"),
            vec![kv("topics", "a, b, c", 1), kv("next", "1", 4)]
        );
    }

    #[test]
    fn even_backslashes_do_not_continue() {
        assert_eq!(parse("a=x\\\\\nb=y"), vec![kv("a", "x\\", 1), kv("b", "y", 2)]);
    }

    #[test]
    fn empty_continuation_line_ends_entry_and_comment_lines_never_continue() {
        assert_eq!(
            parse("a=x\\\n\nb=y\n#c\\\nd=z"),
            vec![kv("a", "x", 1), kv("b", "y", 3), kv("d", "z", 5)]
        );
    }

    #[test]
    fn continued_line_starting_with_hash_is_not_a_comment() {
        assert_eq!(parse("a=x\\\n  #y"), vec![kv("a", "x#y", 1)]);
    }

    #[test]
    fn trailing_backslash_at_end_of_input_is_dropped() {
        assert_eq!(parse("a=x\\"), vec![kv("a", "x", 1)]);
    }

    #[test]
    fn line_terminators() {
        assert_eq!(
            parse("a=1\r\nb=2\rc=3\nd=\\\r\n  4"),
            vec![kv("a", "1", 1), kv("b", "2", 2), kv("c", "3", 3), kv("d", "4", 4)]
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(
            parse(r"k\=e\:y\ x = v\tw\nx\ry\fz\u00e9\u0041\\\q\#"),
            vec![kv("k=e:y x", "v\tw\nx\ry\x0cz\u{e9}A\\q#", 1)]
        );
        assert_eq!(parse(r"smile=\ud83d\ude00"), vec![kv("smile", "\u{1f600}", 1)]);
        assert_eq!(parse(r"v=\ leading"), vec![kv("v", " leading", 1)]);
    }

    #[test]
    fn last_duplicate_wins() {
        let props = Properties::parse("a=1\nb=2\na=3").unwrap();
        assert_eq!(props.len(), 2);
        let a = props.get("a").unwrap();
        assert_eq!((a.value.as_str(), a.line), ("3", 3));
        assert!(props.get("c").is_none());
    }

    #[test]
    fn malformed_unicode_escape() {
        for text in ["x=1\n\nbad=\\u12", "x=1\n\nbad=\\u12g4", "x=1\n\nbad=\\ud83d"] {
            let err = Properties::parse(text).unwrap_err();
            assert!(matches!(err, ConfigError::MalformedEscape { line: 3, .. }), "{err:?}");
        }
        let err = Properties::parse("A.ssl.key.password = hunter\\u12")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("A.ssl.key.password = [hidden]") && !err.contains("hunter"),
            "{err}"
        );
        assert_eq!(
            Properties::parse("a\\u12=1").unwrap_err().to_string(),
            "line 1: malformed \\uXXXX escape in `a\\u12`; write exactly four hex digits after \\u (a surrogate pair needs two escapes)"
        );
    }

    #[test]
    fn empty_input() {
        assert!(Properties::parse("").unwrap().is_empty());
        assert!(Properties::parse("\n\n# only\n").unwrap().is_empty());
    }
}
