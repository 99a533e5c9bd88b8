//! `sasl.jaas.config`: one JAAS login module entry, as Kafka's `JaasConfig` reads it:
//!
//! ```text
//! org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="…";
//! ```
//!
//! Values may be quoted with `"` or `'` (with `\` escapes) or bare words; `//` and `/* */`
//! comments are skipped. Error messages give positions, never tokens: a misplaced token may be
//! part of a password.

/// The parsed entry.
pub(crate) struct JaasEntry {
    /// The login module class.
    pub module: String,
    /// Options in order: `(name, value)`.
    pub options: Vec<(String, String)>,
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    Semicolon,
}

/// Splits `text` into tokens with their character offsets.
fn tokens(text: &str) -> Result<Vec<(usize, Token)>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = i;
            i += 2;
            loop {
                if i + 1 >= chars.len() {
                    return Err(format!("the comment at character {} is not closed", start + 1));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else if c == '=' {
            tokens.push((i, Token::Equals));
            i += 1;
        } else if c == ';' {
            tokens.push((i, Token::Semicolon));
            i += 1;
        } else if c == '"' || c == '\'' {
            let start = i;
            let mut value = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(format!("the quoted value at character {} is not closed", start + 1)),
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        let escaped = *chars
                            .get(i + 1)
                            .ok_or_else(|| format!("the quoted value at character {} is not closed", start + 1))?;
                        value.push(match escaped {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            other => other,
                        });
                        i += 2;
                    }
                    Some(&other) => {
                        value.push(other);
                        i += 1;
                    }
                }
            }
            tokens.push((start, Token::Quoted(value)));
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !matches!(chars[i], '=' | ';' | '"' | '\'') {
                i += 1;
            }
            tokens.push((start, Token::Word(chars[start..i].iter().collect())));
        }
    }
    Ok(tokens)
}

/// Parses a `sasl.jaas.config` value holding exactly one login module entry.
pub(crate) fn parse_jaas_config(text: &str) -> Result<JaasEntry, String> {
    let tokens = tokens(text)?;
    let mut iter = tokens.into_iter().peekable();
    let at = |position: usize| format!("at character {}", position + 1);
    let module = match iter.next() {
        Some((_, Token::Word(module))) => module,
        Some((p, _)) => return Err(format!("expected a login module class name {}", at(p))),
        None => return Err("is empty; expected `<LoginModule> required username=\"…\" password=\"…\";`".into()),
    };
    match iter.next() {
        Some((_, Token::Word(flag)))
            if ["required", "requisite", "sufficient", "optional"]
                .iter()
                .any(|f| f.eq_ignore_ascii_case(&flag)) => {}
        Some((p, _)) => {
            return Err(format!(
                "expected a control flag (required, requisite, sufficient or optional) {}",
                at(p)
            ))
        }
        None => return Err("expected a control flag (e.g. `required`) after the login module".into()),
    }
    let mut options = Vec::new();
    loop {
        match iter.next() {
            Some((_, Token::Semicolon)) => break,
            Some((p, Token::Word(name))) => {
                match iter.next() {
                    Some((_, Token::Equals)) => {}
                    _ => return Err(format!("expected `=` after the option name {}", at(p))),
                }
                match iter.next() {
                    Some((_, Token::Word(value) | Token::Quoted(value))) => options.push((name, value)),
                    _ => return Err(format!("expected a value for the option {}", at(p))),
                }
            }
            Some((p, _)) => return Err(format!("expected an option name or `;` {}", at(p))),
            None => return Err("the login module entry does not end with `;`".into()),
        }
    }
    if iter.peek().is_some() {
        return Err("holds more than one login module entry; Kafka clients take exactly one".into());
    }
    Ok(JaasEntry { module, options })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_style_entries() {
        let entry = parse_jaas_config(
            "org.apache.kafka.common.security.scram.ScramLoginModule required\n  username=\"alice\"\n  \
             password='p@ss;w=rd \\\"x\\\"' /* comment */ tokenauth=true;",
        )
        .unwrap();
        assert_eq!(entry.module, "org.apache.kafka.common.security.scram.ScramLoginModule");
        assert_eq!(
            entry.options,
            vec![
                ("username".to_string(), "alice".to_string()),
                ("password".to_string(), "p@ss;w=rd \"x\"".to_string()),
                ("tokenauth".to_string(), "true".to_string()),
            ]
        );
        let entry = parse_jaas_config("x.PlainLoginModule REQUIRED username = bob password = \"\" ;").unwrap();
        assert_eq!(entry.options[1], ("password".into(), String::new()));
    }

    #[test]
    fn errors_give_positions_not_values() {
        let cases = [
            ("", "is empty"),
            ("x.PlainLoginModule", "control flag"),
            ("x.PlainLoginModule maybe;", "control flag"),
            ("x.PlainLoginModule required username=\"a\"", "does not end with `;`"),
            ("x.PlainLoginModule required password=\"hunter2", "not closed"),
            ("x.PlainLoginModule required password=hunter2 secret;", "expected `=`"),
            ("x.PlainLoginModule required password=;", "expected a value"),
            ("x.A required; y.B required;", "more than one"),
        ];
        for (text, expected) in cases {
            let err = parse_jaas_config(text).err().unwrap_or_else(|| panic!("{text} parsed"));
            assert!(err.contains(expected), "{text}: {err}");
            assert!(!err.contains("hunter2") && !err.contains("secret"), "{err}");
        }
    }
}
