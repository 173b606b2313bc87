//! The ADO.NET form, `key=value` pairs split by `;`: the splitter, the quoting rules, and the printer.

use super::draft::Draft;
use super::keys::{self, KEYS};
use super::{ConnectionOptions, invalid};
use crate::error::Result;

/// What `Display` prints instead of the API key.
const REDACTED: &str = "***";

/// Reads every pair of `text` into a draft, rejecting unknown and repeated keys.
pub(super) fn parse(text: &str) -> Result<Draft> {
    let mut draft = Draft::default();
    for (raw_key, value) in split_pairs(text)? {
        let key = keys::by_ado_name(raw_key).ok_or_else(|| {
            let known: Vec<_> = KEYS.iter().map(|key| key.name).collect();
            invalid(format!(
                "unknown connection-string key '{raw_key}' (known keys: {})",
                known.join(", ")
            ))
        })?;
        draft.set(key, key.name, value)?;
    }
    Ok(draft)
}

/// Splits `text` into `(key, value)` pairs: keys trimmed, unquoted values trimmed, quoted values unescaped.
/// Empty pairs are skipped.
fn split_pairs(text: &str) -> Result<Vec<(&str, String)>> {
    let mut pairs = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some(stop) = rest.find(['=', ';']) else {
            check_empty_pair(rest)?;
            break;
        };
        if rest[stop..].starts_with(';') {
            check_empty_pair(&rest[..stop])?;
            rest = &rest[stop + 1..];
            continue;
        }
        let key = rest[..stop].trim();
        if key.is_empty() {
            return Err(invalid(format!("pair {} has no key before its '='", pairs.len() + 1)));
        }
        let after_equals = &rest[stop + 1..];
        let value_start = after_equals.trim_start();
        let (value, next) = match value_start.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                let (value, after_quote) = read_quoted(&value_start[1..], quote)
                    .ok_or_else(|| invalid(format!("the quoted value of '{key}' has no closing {quote}")))?;
                let (tail, next) = split_at_semicolon(after_quote);
                if !tail.trim().is_empty() {
                    // The tail is not shown: it may be part of a secret.
                    return Err(invalid(format!(
                        "unexpected text after the closing quote of '{key}' (only white space may come before the next ';')"
                    )));
                }
                (value, next)
            }
            _ => {
                let (value, next) = split_at_semicolon(after_equals);
                (value.trim().to_owned(), next)
            }
        };
        pairs.push((key, value));
        rest = next;
    }
    Ok(pairs)
}

/// Text between two `;` without an `=` must be white space.
fn check_empty_pair(text: &str) -> Result<()> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    // Someone who forgot the `=` after `Api Key` typed the key right behind it: do not repeat it.
    let normalized = text.split_whitespace().collect::<String>().to_ascii_lowercase();
    if normalized.starts_with("apikey") {
        return Err(invalid(
            "a pair starting with 'Api Key' has no '=' (its text is not shown because it may hold the key)",
        ));
    }
    Err(invalid(format!("'{text}' is not a key=value pair: it has no '='")))
}

/// `(before the first ';', after it)`; the second part is empty when there is no `;`.
fn split_at_semicolon(text: &str) -> (&str, &str) {
    match text.split_once(';') {
        Some((before, after)) => (before, after),
        None => (text, ""),
    }
}

/// Reads a quoted value whose opening `quote` has been consumed: a doubled quote stands for one. Returns the
/// value and the text after the closing quote, or `None` when the quote is never closed.
fn read_quoted(text: &str, quote: char) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if c != quote {
            value.push(c);
        } else if chars.next_if(|&(_, next)| next == quote).is_some() {
            value.push(quote);
        } else {
            return Some((value, &text[index + c.len_utf8()..]));
        }
    }
    None
}

/// Quotes `value` when it would not read back unchanged bare: when it is empty, has surrounding white space,
/// contains `;`, or starts with a quote. `"` is used unless the value contains `"` but no `'`.
fn quote_if_needed(value: &str) -> String {
    let needs_quotes =
        value.is_empty() || value.trim() != value || value.contains(';') || value.starts_with(['"', '\'']);
    if !needs_quotes {
        return value.to_owned();
    }
    let quote = if value.contains('"') && !value.contains('\'') {
        '\''
    } else {
        '"'
    };
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push(quote);
    for c in value.chars() {
        if c == quote {
            quoted.push(quote);
        }
        quoted.push(c);
    }
    quoted.push(quote);
    quoted
}

/// Prints the ADO.NET form, canonical key spellings, in a fixed order; with `redact`, secrets are `***`.
pub(super) fn print(options: &ConnectionOptions, redact: bool) -> String {
    let mut pairs = Vec::new();
    for key in KEYS {
        if let Some(value) = (key.print)(options) {
            let value = if redact && key.secret { REDACTED } else { &value };
            pairs.push(format!("{}={}", key.name, quote_if_needed(value)));
        }
    }
    pairs.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn pairs(text: &str) -> Vec<(String, String)> {
        split_pairs(text)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    fn pair(key: &str, value: &str) -> (String, String) {
        (key.to_owned(), value.to_owned())
    }

    fn split_error(text: &str) -> String {
        match split_pairs(text) {
            Err(Error::ConnectionString { reason }) => reason,
            other => panic!("expected an error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn splits_trims_and_skips_empty_pairs() {
        assert_eq!(pairs(" a = 1 ;; b=2 ; ;"), [pair("a", "1"), pair("b", "2")]);
        assert_eq!(pairs(""), Vec::<(String, String)>::new());
        assert_eq!(pairs(" ; ;"), Vec::<(String, String)>::new());
        assert_eq!(pairs("a="), [pair("a", "")]);
    }

    #[test]
    fn unquoted_values_keep_equals_signs_and_inner_quotes() {
        assert_eq!(
            pairs("Api Key=c2VjcmV0==;x=a'b\"c"),
            [pair("Api Key", "c2VjcmV0=="), pair("x", "a'b\"c")]
        );
    }

    #[test]
    fn quoted_values_keep_separators_spaces_and_doubled_quotes() {
        assert_eq!(
            pairs(r#"a=" x;y=z ";b='it''s';c="say ""hi""""#),
            [pair("a", " x;y=z "), pair("b", "it's"), pair("c", r#"say "hi""#),]
        );
        assert_eq!(pairs(r#"a = "q" ; b='"'"#), [pair("a", "q"), pair("b", "\"")]);
        assert_eq!(pairs("a=''"), [pair("a", "")]);
    }

    #[test]
    fn malformed_pairs_are_errors_that_say_where() {
        assert!(split_error("a=1;oops;b=2").contains("'oops'"));
        assert!(split_error("a=1;oops").contains("'oops'"));
        assert!(split_error("=1").contains("no key"));
        let unterminated = split_error("Shard Key=\"abc;Data Source=x");
        assert!(unterminated.contains("'Shard Key'"), "{unterminated}");
        let trailing = split_error("Api Key=\"abc\"secret;b=1");
        assert!(trailing.contains("'Api Key'"), "{trailing}");
        assert!(!trailing.contains("secret"), "{trailing}");
    }

    #[test]
    fn a_forgotten_equals_after_api_key_does_not_echo_the_key() {
        let text = split_error("Endpoint=http://h;Api Key c2VjcmV0");
        assert!(!text.contains("c2VjcmV0"), "{text}");
        assert!(text.contains("Api Key"), "{text}");
    }

    #[test]
    fn quoting_is_minimal_and_reads_back() {
        for (value, printed) in [
            ("plain", "plain"),
            ("a=b", "a=b"),
            ("in'ner", "in'ner"),
            ("", "\"\""),
            (" x", "\" x\""),
            ("a;b", "\"a;b\""),
            ("\"q", "'\"q'"),
            ("'q", "\"'q\""),
            ("'\"", "\"'\"\"\""),
        ] {
            assert_eq!(quote_if_needed(value), printed, "{value:?}");
            let text = format!("k={printed}");
            assert_eq!(pairs(&text), [pair("k", value)], "{text:?}");
        }
    }
}
