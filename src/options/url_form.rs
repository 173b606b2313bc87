//! The URL form: `shardlite:` for a local file, `shardlite+http(s):` and `shardlite+grpc(s):` for a daemon,
//! the other keys in the query.
//!
//! The structure of these URLs is simple enough to split by hand, and doing so keeps file paths exactly as
//! written: a general URL parser would remove `.` and `..` segments from `shardlite:///a/../b.db`. The
//! endpoint itself is checked and normalised by the `url` crate, and query values are encoded with its
//! `form_urlencoded`. Decoding is strict: `%` must be followed by two hex digits and the bytes must be UTF-8.

use super::draft::Draft;
use super::keys::{self, KEYS, KeySpec};
use super::{Destination, invalid};
use crate::error::Result;
use crate::map::Transport;
use crate::options::ConnectionOptions;

/// The scheme of a local file.
const DIRECT_SCHEME: &str = "shardlite";

/// `(scheme, endpoint scheme, transport)` of the remote forms.
const REMOTE_SCHEMES: [(&str, &str, Transport); 4] = [
    ("shardlite+http", "http", Transport::Http),
    ("shardlite+https", "https", Transport::Http),
    ("shardlite+grpc", "http", Transport::Grpc),
    ("shardlite+grpcs", "https", Transport::Grpc),
];

/// Whether `text` is meant as the URL form: it starts with `shardlite:` or `shardlite+`, in any case.
pub(super) fn is_url_form(text: &str) -> bool {
    ["shardlite:", "shardlite+"].iter().any(|prefix| {
        text.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    })
}

/// Reads a URL-form connection string into a draft.
pub(super) fn parse(text: &str) -> Result<Draft> {
    if text.contains('#') {
        return Err(invalid(
            "a fragment ('#…') is not allowed in a shardlite URL; write a '#' as %23",
        ));
    }
    let (scheme, rest) = text
        .split_once(':')
        .ok_or_else(|| invalid("a shardlite URL needs a ':' after its scheme, as in shardlite:///path/master.db"))?;
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut draft = Draft::default();
    if scheme.eq_ignore_ascii_case(DIRECT_SCHEME) {
        let path = match location.strip_prefix("//") {
            Some(after_slashes) => {
                let (host, path) = after_slashes
                    .find('/')
                    .map_or((after_slashes, ""), |i| after_slashes.split_at(i));
                if !host.is_empty() {
                    return Err(invalid(format!(
                        "the shardlite: URL form names a local file and takes no host ('{host}'): write \
                         shardlite:///absolute/path.db or shardlite:relative/path.db, or shardlite+http://host:port \
                         for a daemon"
                    )));
                }
                path
            }
            None => location,
        };
        let path = percent_decode(path, false)
            .ok_or_else(|| invalid("the 'Data Source' path of the URL is not valid percent-encoded UTF-8"))?;
        draft.data_source = Some(path);
    } else if let Some((_, endpoint_scheme, transport)) = REMOTE_SCHEMES
        .iter()
        .find(|(name, _, _)| name.eq_ignore_ascii_case(scheme))
    {
        let authority_and_path = location.strip_prefix("//").ok_or_else(|| {
            invalid(format!(
                "a {scheme}: URL names a daemon: write {scheme}://host:port (the 'Endpoint' is missing)"
            ))
        })?;
        draft.endpoint = Some(format!("{endpoint_scheme}://{authority_and_path}"));
        draft.transport = Some(*transport);
    } else {
        let known: Vec<_> = std::iter::once(DIRECT_SCHEME)
            .chain(REMOTE_SCHEMES.iter().map(|s| s.0))
            .collect();
        return Err(invalid(format!(
            "unknown URL scheme '{scheme}' (known schemes: {})",
            known.join(", ")
        )));
    }
    for parameter in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = parameter.split_once('=').ok_or_else(|| {
            if parameter.to_ascii_lowercase().starts_with("api") {
                invalid("a URL query parameter starting with 'api' has no '=' (it is not shown: it may hold the key)")
            } else {
                invalid(format!("URL query parameter '{parameter}' has no '='"))
            }
        })?;
        let name = percent_decode(raw_name, true)
            .ok_or_else(|| invalid(format!("URL query key '{raw_name}' is not valid percent-encoded UTF-8")))?;
        let key = keys::by_url_name(&name).ok_or_else(|| {
            let known: Vec<_> = query_keys().map(|key| key.url_name).collect();
            invalid(format!(
                "unknown URL query key '{name}' (known keys: {})",
                known.join(", ")
            ))
        })?;
        if !key.in_url_query {
            return Err(invalid(format!(
                "'{name}' is not a URL query key: the scheme and path of the URL give it"
            )));
        }
        let value = percent_decode(raw_value, true).ok_or_else(|| {
            invalid(format!(
                "the value of URL query key '{name}' is not valid percent-encoded UTF-8"
            ))
        })?;
        draft.set(key, key.url_name, value)?;
    }
    Ok(draft)
}

/// The keys that travel in the query.
fn query_keys() -> impl Iterator<Item = &'static KeySpec> {
    KEYS.iter().filter(|key| key.in_url_query)
}

/// Prints the URL form, secrets included, query keys in a fixed order.
pub(super) fn print(options: &ConnectionOptions) -> String {
    let mut out = match &options.target {
        Destination::Unset => format!("{DIRECT_SCHEME}:"),
        Destination::DataSource(path) if path.starts_with('/') => format!("{DIRECT_SCHEME}://{}", encode_path(path)),
        Destination::DataSource(path) => format!("{DIRECT_SCHEME}:{}", encode_path(path)),
        Destination::Endpoint { endpoint, transport } => {
            let (endpoint_scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
            match REMOTE_SCHEMES
                .iter()
                .find(|(_, e, t)| *e == endpoint_scheme && t == transport)
            {
                Some((scheme, _, _)) => format!("{scheme}://{rest}"),
                // Not valid options (validate says why); print something that parsing refuses too.
                None => format!("shardlite+{}://{rest}", transport.as_str()),
            }
        }
    };
    let settings = query_keys().filter_map(|key| (key.print)(options).map(|value| (key, value)));
    for (index, (key, value)) in settings.enumerate() {
        out.push(if index == 0 { '?' } else { '&' });
        out.push_str(key.url_name);
        out.push('=');
        out.extend(::url::form_urlencoded::byte_serialize(value.as_bytes()));
    }
    out
}

/// Percent-encodes a file path, leaving ASCII letters, digits, `-._~` and the separators `/` and `:` as they
/// are, so that common paths stay readable.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/:".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (and `+` as a space when `plus_as_space`). `None` when an escape is malformed or
/// the bytes are not UTF-8.
fn percent_decode(text: &str, plus_as_space: bool) -> Option<String> {
    fn hex(byte: u8) -> Option<u8> {
        char::from(byte).to_digit(16).and_then(|d| u8::try_from(d).ok())
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'%' => {
                let high = hex(*bytes.get(i + 1)?)?;
                let low = hex(*bytes.get(i + 2)?)?;
                out.push(high << 4 | low);
                i += 3;
            }
            b'+' if plus_as_space => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_url_form_by_its_scheme() {
        for text in [
            "shardlite:a.db",
            "SHARDLITE:///a.db",
            "shardlite+grpc://h",
            "Shardlite+x:",
        ] {
            assert!(is_url_form(text), "{text}");
        }
        for text in ["Data Source=a.db", "shardlite", "shard:", "", "é"] {
            assert!(!is_url_form(text), "{text}");
        }
    }

    #[test]
    fn percent_decoding_is_strict() {
        assert_eq!(percent_decode("a%20b+c%2B", true).as_deref(), Some("a b c+"));
        assert_eq!(percent_decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%C3%A9", false).as_deref(), Some("é"));
        assert_eq!(percent_decode("é", false).as_deref(), Some("é"));
        for bad in ["%", "%2", "%zz", "%FF", "%C3"] {
            assert_eq!(percent_decode(bad, true), None, "{bad}");
        }
    }

    #[test]
    fn paths_encode_and_decode_exactly() {
        for path in [
            "/a/../b.db",
            "rel/./x.db",
            "//server/share/m.db",
            "C:\\dir\\m.db",
            " sp ace?#%+&=;é",
            ":memory:",
        ] {
            let encoded = encode_path(path);
            assert!(encoded.bytes().all(|b| b.is_ascii_graphic()), "{encoded}");
            assert!(!encoded.contains(['?', '#']), "{encoded}");
            assert_eq!(percent_decode(&encoded, false).as_deref(), Some(path));
        }
    }

    #[test]
    fn data_source_paths_keep_dot_segments() {
        let draft = parse("shardlite:///srv/../m.db").unwrap();
        assert_eq!(draft.data_source.as_deref(), Some("/srv/../m.db"));
        let draft = parse("shardlite:../m.db").unwrap();
        assert_eq!(draft.data_source.as_deref(), Some("../m.db"));
        let draft = parse("shardlite:/single/slash.db").unwrap();
        assert_eq!(draft.data_source.as_deref(), Some("/single/slash.db"));
    }

    #[test]
    fn remote_schemes_choose_endpoint_scheme_and_transport() {
        for (url, endpoint, transport) in [
            ("shardlite+http://h:1", "http://h:1", Transport::Http),
            ("shardlite+https://h:1/base", "https://h:1/base", Transport::Http),
            ("shardlite+grpc://h:1", "http://h:1", Transport::Grpc),
            ("SHARDLITE+GRPCS://h:1", "https://h:1", Transport::Grpc),
        ] {
            let draft = parse(url).unwrap();
            assert_eq!(draft.endpoint.as_deref(), Some(endpoint), "{url}");
            assert_eq!(draft.transport, Some(transport), "{url}");
        }
    }

    #[test]
    fn malformed_urls_are_refused() {
        for bad in [
            "shardlite://host/m.db",
            "shardlite:///m.db#frag",
            "shardlite+http:h:1",
            "shardlite+ftp://h",
            "shardlite+http",
            "shardlite:///m.db?shard_key",
            "shardlite:///m.db?data_source=x",
            "shardlite:///m.db?transport=http",
            "shardlite:///m%zz.db",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
