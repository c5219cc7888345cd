//! The part of a POSIX shell the fake device needs: command lines arrive from adb as one string
//! (`adb shell input text 'a b'` sends `input text 'a b'`), so they are split into words the way
//! mksh does — single quotes, double quotes, backslash escapes, `$NAME` and `$?` — and into
//! lists (`;`, `&&`, `||`, newlines), pipelines (`|`) and redirections (`>`, `>>`, `<`,
//! `2>&1`). Globs, `$(…)`, functions and control flow are not part of it.

/// A piece of a word: literal text, or a parameter to expand when the command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    Parameter(String),
}

/// One word before expansion.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Word {
    pub(crate) pieces: Vec<Piece>,
    /// Some of it was quoted, so it stays a word even when it expands to nothing.
    pub(crate) quoted: bool,
}

impl Word {
    fn push_char(&mut self, c: char) {
        if let Some(Piece::Text(text)) = self.pieces.last_mut() {
            text.push(c);
        } else {
            self.pieces.push(Piece::Text(c.to_string()));
        }
    }

    /// The word with its parameters replaced by `lookup`'s values.
    pub(crate) fn expand(&self, lookup: &dyn Fn(&str) -> String) -> String {
        self.pieces
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.clone(),
                Piece::Parameter(name) => lookup(name),
            })
            .collect()
    }

    /// The literal text, when the word has no parameters.
    fn literal(&self) -> Option<String> {
        let mut text = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(part) => text.push_str(part),
                Piece::Parameter(_) => return None,
            }
        }
        Some(text)
    }
}

/// A redirection of one simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `[fd]> file` or `[fd]>> file`.
    Output { fd: u32, target: Word, append: bool },
    /// `[fd]< file`.
    Input { target: Word },
    /// `fd>&to` (as in `2>&1`).
    Duplicate { fd: u32, to: u32 },
}

/// A command with its arguments and redirections.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SimpleCommand {
    pub(crate) words: Vec<Word>,
    pub(crate) redirects: Vec<Redirect>,
}

/// Commands joined by `|`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Pipeline {
    pub(crate) commands: Vec<SimpleCommand>,
}

/// How a pipeline is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Joint {
    /// `;`, `&` or a newline: always run.
    Always,
    /// `&&`: run when the last status was 0.
    IfSuccess,
    /// `||`: run when the last status was not 0.
    IfFailure,
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Script {
    pub(crate) pipelines: Vec<(Joint, Pipeline)>,
}

/// A command line the shell cannot parse; the message is mksh's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error: {0}")]
pub struct ShellSyntaxError(String);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Semicolon,
    And,
    Or,
    Pipe,
    /// `>`/`>>`/`<` with the descriptor written before it (`2>`).
    RedirectOut {
        fd: u32,
        append: bool,
    },
    RedirectIn,
    Duplicate {
        fd: u32,
        to: u32,
    },
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn tokenize(line: &str) -> Result<Vec<Token>, ShellSyntaxError> {
    let chars: Vec<char> = line.chars().collect();
    let mut tokens = Vec::new();
    let mut word = Word::default();
    // A word exists once anything (even `''`) was written for it.
    let mut in_word = false;
    let mut i = 0;
    let finish = |tokens: &mut Vec<Token>, word: &mut Word, in_word: &mut bool| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                finish(&mut tokens, &mut word, &mut in_word);
                i += 1;
            }
            '\n' => {
                finish(&mut tokens, &mut word, &mut in_word);
                tokens.push(Token::Semicolon);
                i += 1;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                in_word = true;
                word.quoted = true;
                i += 1;
                let start = i;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                if i >= chars.len() {
                    return Err(ShellSyntaxError("unterminated quoted string".into()));
                }
                for c in &chars[start..i] {
                    word.push_char(*c);
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                word.quoted = true;
                i += 1;
                loop {
                    let Some(&c) = chars.get(i) else {
                        return Err(ShellSyntaxError("unterminated quoted string".into()));
                    };
                    match c {
                        '"' => {
                            i += 1;
                            break;
                        }
                        '\\' => match chars.get(i + 1) {
                            Some(&next @ ('$' | '`' | '"' | '\\')) => {
                                word.push_char(next);
                                i += 2;
                            }
                            Some('\n') => i += 2,
                            _ => {
                                word.push_char('\\');
                                i += 1;
                            }
                        },
                        '$' => i = parameter(&chars, i, &mut word),
                        _ => {
                            word.push_char(c);
                            i += 1;
                        }
                    }
                }
            }
            '\\' => {
                match chars.get(i + 1) {
                    // A backslash before a newline joins the lines.
                    Some('\n') => {}
                    Some(&next) => {
                        in_word = true;
                        word.quoted = true;
                        word.push_char(next);
                    }
                    None => {
                        in_word = true;
                        word.push_char('\\');
                    }
                }
                i += 2;
            }
            '$' => {
                in_word = true;
                i = parameter(&chars, i, &mut word);
            }
            ';' => {
                finish(&mut tokens, &mut word, &mut in_word);
                tokens.push(Token::Semicolon);
                i += 1;
            }
            '&' => {
                finish(&mut tokens, &mut word, &mut in_word);
                if chars.get(i + 1) == Some(&'&') {
                    tokens.push(Token::And);
                    i += 2;
                } else {
                    // A background job runs to completion here, like a `;`.
                    tokens.push(Token::Semicolon);
                    i += 1;
                }
            }
            '|' => {
                finish(&mut tokens, &mut word, &mut in_word);
                if chars.get(i + 1) == Some(&'|') {
                    tokens.push(Token::Or);
                    i += 2;
                } else {
                    tokens.push(Token::Pipe);
                    i += 1;
                }
            }
            '>' | '<' => {
                // Digits written right before the operator name the descriptor (`2>`).
                let fd = match word.literal() {
                    Some(digits)
                        if in_word
                            && !digits.is_empty()
                            && digits.chars().all(|d| d.is_ascii_digit()) =>
                    {
                        in_word = false;
                        word = Word::default();
                        digits.parse().unwrap_or(1)
                    }
                    _ => {
                        finish(&mut tokens, &mut word, &mut in_word);
                        if c == '>' { 1 } else { 0 }
                    }
                };
                if c == '<' {
                    tokens.push(Token::RedirectIn);
                    i += 1;
                } else if chars.get(i + 1) == Some(&'>') {
                    tokens.push(Token::RedirectOut { fd, append: true });
                    i += 2;
                } else if chars.get(i + 1) == Some(&'&') {
                    let start = i + 2;
                    let mut end = start;
                    while end < chars.len() && chars[end].is_ascii_digit() {
                        end += 1;
                    }
                    let to: String = chars[start..end].iter().collect();
                    let to = to
                        .parse()
                        .map_err(|_| ShellSyntaxError("bad file descriptor".into()))?;
                    tokens.push(Token::Duplicate { fd, to });
                    i = end;
                } else {
                    tokens.push(Token::RedirectOut { fd, append: false });
                    i += 1;
                }
            }
            '(' | ')' | '`' => {
                return Err(ShellSyntaxError(format!("'{c}' unexpected")));
            }
            _ => {
                in_word = true;
                word.push_char(c);
                i += 1;
            }
        }
    }
    finish(&mut tokens, &mut word, &mut in_word);
    Ok(tokens)
}

/// Reads `$NAME`, `${NAME}` or `$?` at `chars[start]` (the `$`) into `word`; returns the index
/// after it. A `$` that starts no parameter is literal, as in sh.
fn parameter(chars: &[char], start: usize, word: &mut Word) -> usize {
    let mut i = start + 1;
    match chars.get(i) {
        Some('?' | '$' | '#') => {
            word.pieces.push(Piece::Parameter(chars[i].to_string()));
            i + 1
        }
        Some('{') => {
            let name_start = i + 1;
            let mut end = name_start;
            while end < chars.len() && chars[end] != '}' {
                end += 1;
            }
            if end >= chars.len() {
                word.push_char('$');
                return start + 1;
            }
            word.pieces
                .push(Piece::Parameter(chars[name_start..end].iter().collect()));
            end + 1
        }
        Some(&c) if is_name_char(c) && !c.is_ascii_digit() => {
            while i < chars.len() && is_name_char(chars[i]) {
                i += 1;
            }
            word.pieces
                .push(Piece::Parameter(chars[start + 1..i].iter().collect()));
            i
        }
        _ => {
            word.push_char('$');
            start + 1
        }
    }
}

/// Parses a command line into pipelines.
pub(crate) fn parse(line: &str) -> Result<Script, ShellSyntaxError> {
    let mut script = Script::default();
    let mut joint = Joint::Always;
    let mut pipeline = Pipeline::default();
    let mut command = SimpleCommand::default();
    let mut tokens = tokenize(line)?.into_iter().peekable();
    let unexpected = |what: &str| ShellSyntaxError(format!("'{what}' unexpected"));
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) => command.words.push(word),
            Token::RedirectOut { fd, append } => match tokens.next() {
                Some(Token::Word(target)) => {
                    command
                        .redirects
                        .push(Redirect::Output { fd, target, append })
                }
                _ => return Err(unexpected("newline")),
            },
            Token::RedirectIn => match tokens.next() {
                Some(Token::Word(target)) => command.redirects.push(Redirect::Input { target }),
                _ => return Err(unexpected("newline")),
            },
            Token::Duplicate { fd, to } => command.redirects.push(Redirect::Duplicate { fd, to }),
            Token::Pipe => {
                if command.words.is_empty() {
                    return Err(unexpected("|"));
                }
                pipeline.commands.push(std::mem::take(&mut command));
            }
            Token::Semicolon | Token::And | Token::Or => {
                let empty = command.words.is_empty() && command.redirects.is_empty();
                if empty && !pipeline.commands.is_empty() {
                    return Err(unexpected("newline"));
                }
                if !empty {
                    pipeline.commands.push(std::mem::take(&mut command));
                }
                if pipeline.commands.is_empty() {
                    // `;` alone (or a blank line) is fine; `&&` with nothing before is not.
                    match token {
                        Token::Semicolon => continue,
                        Token::And => return Err(unexpected("&&")),
                        _ => return Err(unexpected("||")),
                    }
                }
                script
                    .pipelines
                    .push((joint, std::mem::take(&mut pipeline)));
                joint = match token {
                    Token::And => Joint::IfSuccess,
                    Token::Or => Joint::IfFailure,
                    _ => Joint::Always,
                };
            }
        }
    }
    if !command.words.is_empty() || !command.redirects.is_empty() {
        pipeline.commands.push(command);
    } else if !pipeline.commands.is_empty() || joint != Joint::Always {
        return Err(unexpected("newline"));
    }
    if !pipeline.commands.is_empty() {
        script.pipelines.push((joint, pipeline));
    }
    Ok(script)
}

/// Splits one command line into words the way the device's shell does (quotes and
/// backslashes; parameters expand to nothing), for tests that check what a client sent.
pub fn split_words(line: &str) -> Result<Vec<String>, ShellSyntaxError> {
    Ok(tokenize(line)?
        .into_iter()
        .filter_map(|token| match token {
            Token::Word(word) => {
                let text = word.expand(&|_| String::new());
                // An unquoted word that expands to nothing is no word, as in sh.
                (!text.is_empty() || word.quoted).then_some(text)
            }
            _ => None,
        })
        .collect())
}

/// Quotes `word` for the device's shell, so that [`split_words`] gives it back.
pub fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        split_words(line).expect("parses")
    }

    #[test]
    fn quotes_and_backslashes_make_one_word() {
        assert_eq!(words("input text 'a b'"), ["input", "text", "a b"]);
        assert_eq!(words(r"input text a\ b"), ["input", "text", "a b"]);
        assert_eq!(words(r#"input text "a b""#), ["input", "text", "a b"]);
        assert_eq!(
            words(r#"echo "a\"b" 'c\d' e''f"#),
            ["echo", "a\"b", r"c\d", "ef"]
        );
        assert_eq!(words("echo ''"), ["echo", ""]);
        assert_eq!(words("echo $UNSET x"), ["echo", "x"]);
        assert_eq!(words(r#"echo "x\ny""#), ["echo", r"x\ny"]);
    }

    #[test]
    fn lists_pipes_and_redirections_parse() {
        let script = parse("a 1 && b 2>/dev/null | c; d || e 2>&1 >>out").expect("parses");
        let shape: Vec<(Joint, usize)> = script
            .pipelines
            .iter()
            .map(|(joint, pipeline)| (*joint, pipeline.commands.len()))
            .collect();
        assert_eq!(
            shape,
            [
                (Joint::Always, 1),
                (Joint::IfSuccess, 2),
                (Joint::Always, 1),
                (Joint::IfFailure, 1)
            ]
        );
        let last = &script.pipelines[3].1.commands[0];
        assert_eq!(last.redirects[0], Redirect::Duplicate { fd: 2, to: 1 });
        assert!(matches!(
            &last.redirects[1],
            Redirect::Output {
                fd: 1,
                append: true,
                ..
            }
        ));
    }

    #[test]
    fn broken_lines_are_syntax_errors() {
        assert!(parse("echo 'a").is_err());
        assert!(parse("a &&").is_err());
        assert!(parse("| a").is_err());
        assert!(parse("echo (x)").is_err());
        assert_eq!(parse("").map(|s| s.pipelines.len()), Ok(0));
        assert_eq!(parse(" ; ").map(|s| s.pipelines.len()), Ok(0));
    }

    proptest::proptest! {
        #[test]
        fn any_word_survives_quoting(word in ".*") {
            proptest::prop_assert_eq!(words(&format!("x {}", quote(&word))), vec!["x".to_owned(), word]);
        }

        #[test]
        fn splitting_never_panics(line in ".*") {
            let _ = parse(&line);
        }
    }

    #[test]
    fn quoting_round_trips() {
        for word in ["plain", "a b", "it's", "", "$HOME", "é ü"] {
            assert_eq!(words(&format!("x {}", quote(word))), ["x", word]);
        }
    }
}
