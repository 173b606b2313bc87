//! The tokens of SQL text as SQLite's tokenizer reads them (white space and comments, quoted
//! runs, words, Tcl-style parameters), and the statement-completeness machine that decides where
//! a statement ends.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Semi,
    Space,
    Word,
    Quoted,
    Other,
}

/// The states of SQLite's statement-completeness machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Between statements.
    Start,
    /// Inside an ordinary statement.
    Normal,
    /// After a leading `EXPLAIN`.
    Explain,
    /// After a leading `CREATE` (and `TEMP`).
    Create,
    /// Inside a trigger body, where `;` does not end the statement.
    Trigger,
    /// After a `;` inside a trigger body.
    TriggerSemi,
    /// After `; END` inside a trigger body.
    TriggerEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    Explain,
    Create,
    Temp,
    Trigger,
    End,
    None,
}

impl State {
    /// The state after `token` (with `keyword`, when the token is a word).
    pub(super) fn after(self, token: Token, keyword: Keyword) -> Self {
        use State::*;
        match (self, token) {
            (_, Token::Space) => self,
            (Trigger | TriggerSemi, Token::Semi) => TriggerSemi,
            (_, Token::Semi) => Start,
            (Start, _) => match keyword {
                Keyword::Explain => Explain,
                Keyword::Create => Create,
                _ => Normal,
            },
            (Normal, _) => Normal,
            (Explain, _) => match keyword {
                Keyword::None => Explain,
                Keyword::Create => Create,
                _ => Normal,
            },
            (Create, _) => match keyword {
                Keyword::Temp => Create,
                Keyword::Trigger => Trigger,
                _ => Normal,
            },
            (TriggerSemi, _) if keyword == Keyword::End => TriggerEnd,
            (Trigger | TriggerSemi | TriggerEnd, _) => Trigger,
        }
    }
}

/// Tokens of SQL text, with the state machine's keywords recognised.
#[derive(Debug, Clone)]
pub(super) struct Tokens<'a> {
    pub(super) sql: &'a str,
    pub(super) pos: usize,
}

impl Tokens<'_> {
    /// The next token and where it starts.
    pub(super) fn next(&mut self) -> Option<(Token, usize)> {
        let bytes = self.sql.as_bytes();
        let start = self.pos;
        let &first = bytes.get(start)?;
        let end = match first {
            b';' => start + 1,
            // SQLite's tokenizer starts white space only at ' ', \t, \n, \f or \r, but goes on through
            // \v as well: `; \vEND` is `; END` to SQLite, so the state machine must see it that way.
            b if b.is_ascii_whitespace() => {
                start + bytes[start..].iter().take_while(|&&b| is_space_continuation(b)).count()
            }
            // As in SQLite, the comment stops before its newline, which starts a run of white space.
            b'-' if bytes.get(start + 1) == Some(&b'-') => bytes[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| start + n),
            b'/' if bytes.get(start + 1) == Some(&b'*') => self.sql[start + 2..]
                .find("*/")
                .map_or(bytes.len(), |n| start + 2 + n + 2),
            b'\'' | b'"' | b'`' => closing(bytes, start, first),
            b'[' => bytes[start..]
                .iter()
                .position(|&b| b == b']')
                .map_or(bytes.len(), |n| start + n + 1),
            b'$' | b'@' | b':' | b'#' => parameter_end(bytes, start),
            b if is_word_byte(b) => start + bytes[start..].iter().take_while(|&&b| is_word_byte(b)).count(),
            _ => start + self.sql[start..].chars().next().map_or(1, char::len_utf8),
        };
        self.pos = end;
        let token = match first {
            b';' => Token::Semi,
            b if b.is_ascii_whitespace() => Token::Space,
            b'-' | b'/' if end - start >= 2 && matches!(&bytes[start..start + 2], b"--" | b"/*") => Token::Space,
            b'\'' | b'"' | b'`' | b'[' => Token::Quoted,
            b'$' | b'@' | b':' | b'#' => Token::Other,
            b if is_word_byte(b) => Token::Word,
            _ => Token::Other,
        };
        Some((token, start))
    }
}

/// The end of a quoted run starting at `start` (a doubled quote stands for itself).
pub(super) fn closing(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// The end of a parameter starting at `start` (`$`, `@`, `:` or `#`), read as SQLite's tokenizer reads it:
/// a name that may contain `::` and may end in a Tcl-style `(...)` suffix, which runs to `)`, white space
/// or the end whatever it holds, `;` included (`@a(x;y)` is one token).
pub(super) fn parameter_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    let mut named = false;
    while let Some(&b) = bytes.get(i) {
        if is_word_byte(b) {
            named = true;
            i += 1;
        } else if b == b'(' && named {
            i += 1 + bytes[i + 1..]
                .iter()
                .take_while(|&&b| b != b')' && b != 0 && !is_space_continuation(b))
                .count();
            if bytes.get(i) == Some(&b')') {
                i += 1;
            }
            break;
        } else if b == b':' && bytes.get(i + 1) == Some(&b':') {
            i += 2;
        } else {
            break;
        }
    }
    i
}

/// The bytes SQLite's tokenizer reads as white space once a run of it has started.
pub(super) fn is_space_continuation(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0x0b
}

pub(super) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

pub(super) fn keyword(word: &str) -> Keyword {
    let is = |k: &str| word.eq_ignore_ascii_case(k);
    if is("EXPLAIN") {
        Keyword::Explain
    } else if is("CREATE") {
        Keyword::Create
    } else if is("TEMP") || is("TEMPORARY") {
        Keyword::Temp
    } else if is("TRIGGER") {
        Keyword::Trigger
    } else if is("END") {
        Keyword::End
    } else {
        Keyword::None
    }
}

/// The words (keywords and bare identifiers) of one statement, skipping everything else.
pub(super) struct Words<'a> {
    pub(super) tokens: Tokens<'a>,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while let Some((token, at)) = self.tokens.next() {
            if token == Token::Word {
                return Some(&self.tokens.sql[at..self.tokens.pos]);
            }
        }
        None
    }
}
