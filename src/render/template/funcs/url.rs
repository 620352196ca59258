//! Sprig's `urlParse` and `urlJoin` (`url.go` of Sprig v3.3.0), with the parts of Go's
//! `net/url` they use: `Parse`, `Hostname`, `Userinfo.String` and `URL.String`.

use super::{arity, map_arg, str_arg};
use crate::render::template::format::go_quote;
use crate::render::template::value::Val;
use serde_json::{Map, Value};

pub(super) fn call_url<'a>(name: &str, args: &[Val<'a>]) -> Result<Option<Val<'a>>, String> {
    let val = match name {
        "urlParse" => {
            arity(args, 1)?;
            let raw = str_arg(args, 0)?;
            let u = parse(raw)
                .map_err(|e| format!("unable to parse url: parse {}: {e}", go_quote(raw)))?;
            let mut map = Map::new();
            let hostname = hostname(&u.host);
            for (key, value) in [
                ("scheme", u.scheme),
                ("host", u.host),
                ("hostname", hostname),
                ("path", u.path),
                ("query", u.query),
                ("opaque", u.opaque),
                ("fragment", u.fragment),
                ("userinfo", u.user.map(|u| u.escaped()).unwrap_or_default()),
            ] {
                map.insert(key.to_string(), Value::String(value));
            }
            Val::new(Value::Object(map))
        }
        "urlJoin" => {
            arity(args, 1)?;
            let dict = map_arg(args, 0)?;
            let field = |key: &str| -> Result<String, String> {
                match dict.and_then(|d| d.get(key)) {
                    None => Ok(String::new()),
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(other) => Err(format!(
                        "unable to parse {key} key, must be of type string, but {} found",
                        super::dicts::kind_name(Some(other))
                    )),
                }
            };
            let (scheme, host, path) = (field("scheme")?, field("host")?, field("path")?);
            let (query, opaque, fragment) = (field("query")?, field("opaque")?, field("fragment")?);
            let userinfo = field("userinfo")?;
            let user = if userinfo.is_empty() {
                None
            } else {
                let probe = format!("proto://{userinfo}@host");
                let parsed = parse(&probe).map_err(|e| {
                    format!(
                        "unable to parse userinfo in dict: parse {}: {e}",
                        go_quote(&probe)
                    )
                })?;
                parsed.user
            };
            let u = Url {
                scheme,
                opaque,
                user,
                host,
                path,
                query,
                fragment,
            };
            Val::str(u.to_string())
        }
        _ => return Ok(None),
    };
    Ok(Some(val))
}

#[derive(Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<User>,
    host: String,
    path: String,
    query: String,
    fragment: String,
}

struct User {
    name: String,
    password: Option<String>,
}

impl User {
    fn escaped(&self) -> String {
        let mut s = escape(&self.name, Mode::UserPassword);
        if let Some(p) = &self.password {
            s.push(':');
            s.push_str(&escape(p, Mode::UserPassword));
        }
        s
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    Fragment,
}

/// `net/url`'s `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Mode::Host {
        return !matches!(
            c,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        );
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            _ => false,
        },
        b'!' | b'(' | b')' | b'*' if mode == Mode::Fragment => false,
        _ => true,
    }
}

fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if should_escape(b, mode) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

/// `net/url`'s `unescape` (never with `+` as a space here).
fn unescape(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b.get(i) {
            Some(b'%') => {
                let hex = s
                    .get(i + 1..i + 3)
                    .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
                let Some(hex) = hex else {
                    let bad = s.get(i..(i + 3).min(s.len())).unwrap_or("%");
                    return Err(format!("invalid URL escape {}", go_quote(bad)));
                };
                out.push(u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
                i += 3;
            }
            Some(&c) => {
                out.push(c);
                i += 1;
            }
            None => break,
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `url.Parse`, for the common shapes; errors read as Go's.
fn parse(raw: &str) -> Result<Url, String> {
    let (before, fragment) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    if before.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    let mut u = Url::default();
    if let Some(f) = fragment {
        u.fragment = unescape(f)?;
    }
    if before == "*" {
        u.path = "*".to_string();
        return Ok(u);
    }
    let mut rest = before;
    if let Some((scheme, after)) = split_scheme(before)? {
        u.scheme = scheme.to_ascii_lowercase();
        rest = after;
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = rest.get(..rest.len() - 1).unwrap_or("");
    } else if let Some((r, q)) = rest.split_once('?') {
        u.query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest.to_string();
            return Ok(u);
        }
        if rest.split('/').next().is_some_and(|seg| seg.contains(':')) {
            return Err("first path segment in URL cannot contain colon".to_string());
        }
    }
    if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = rest.get(2..).unwrap_or("");
        let (authority, path) = match after.find('/') {
            Some(i) => (after.get(..i).unwrap_or(""), after.get(i..).unwrap_or("")),
            None => (after, ""),
        };
        let (userinfo, host) = match authority.rfind('@') {
            Some(i) => (
                Some(authority.get(..i).unwrap_or("")),
                authority.get(i + 1..).unwrap_or(""),
            ),
            None => (None, authority),
        };
        u.host = parse_host(host)?;
        if let Some(info) = userinfo {
            u.user = Some(match info.split_once(':') {
                Some((name, password)) => User {
                    name: unescape(name)?,
                    password: Some(unescape(password)?),
                },
                None => User {
                    name: unescape(info)?,
                    password: None,
                },
            });
        }
        rest = path;
    }
    u.path = unescape(rest)?;
    Ok(u)
}

/// `getScheme`: letters, then letters, digits, `+`, `-` or `.`, then a colon.
fn split_scheme(raw: &str) -> Result<Option<(&str, &str)>, String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".to_string()),
            ':' => {
                return Ok(Some((
                    raw.get(..i).unwrap_or(""),
                    raw.get(i + 1..).unwrap_or(""),
                )))
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// `parseHost`: a port must be digits.
fn parse_host(host: &str) -> Result<String, String> {
    let port_start = if host.starts_with('[') {
        let close = host
            .rfind(']')
            .ok_or_else(|| "missing ']' in host".to_string())?;
        let after = host.get(close + 1..).unwrap_or("");
        if !after.is_empty() && !after.starts_with(':') {
            return Err(format!("invalid port {} after host", go_quote(after)));
        }
        Some(close + 1).filter(|_| !after.is_empty())
    } else {
        host.rfind(':')
    };
    if let Some(i) = port_start {
        let port = host.get(i..).unwrap_or("");
        if !port.bytes().skip(1).all(|b| b.is_ascii_digit()) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape(host)
}

/// `URL.Hostname`: without the port and the brackets of an IPv6 address.
fn hostname(host: &str) -> String {
    let without_port = if host.starts_with('[') {
        host.find(']').and_then(|i| host.get(1..i)).unwrap_or(host)
    } else {
        host.rfind(':').and_then(|i| host.get(..i)).unwrap_or(host)
    };
    without_port.to_string()
}

impl std::fmt::Display for Url {
    /// `URL.String`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some(user) = &self.user {
                    out.push_str(&user.escaped());
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Mode::Host));
            }
            let path = escape(&self.path, Mode::Path);
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().is_some_and(|s| s.contains(':')) {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if !self.query.is_empty() {
            out.push('?');
            out.push_str(&self.query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&escape(&self.fragment, Mode::Fragment));
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn url_functions() {
        check(&[
            (
                "{{ $u := urlParse \"https://user:p%40ss@example.com:8443/a%20b/c?x=1&y=2#frag\" }}{{ $u.scheme }}|{{ $u.host }}|{{ $u.hostname }}|{{ $u.path }}|{{ $u.query }}|{{ $u.fragment }}|{{ $u.userinfo }}|{{ $u.opaque }}|",
                Ok("https|example.com:8443|example.com|/a b/c|x=1&y=2|frag|user:p%40ss||"),
            ),
            (
                "{{ (urlParse \"mailto:a@b.c\").opaque }} {{ (urlParse \"/just/path\").path }} {{ (urlParse \"rel/p\").path }}",
                Ok("a@b.c /just/path rel/p"),
            ),
            (
                "{{ urlParse \"[::1]\" }}",
                Err("first path segment in URL cannot contain colon"),
            ),
            (
                "{{ urlParse \"http://h:x/\" }}",
                Err("unable to parse url: parse \"http://h:x/\": invalid port \":x\" after host"),
            ),
            (
                "{{ urlParse \"a:b/c\" | toJson }}",
                Ok(r#"{"fragment":"","host":"","hostname":"","opaque":"b/c","path":"","query":"","scheme":"a","userinfo":""}"#),
            ),
            (
                "{{ urlJoin (dict \"scheme\" \"https\" \"host\" \"example.com\" \"path\" \"/a b\" \"query\" \"q=1\" \"fragment\" \"f g\" \"userinfo\" \"u:p\") }}",
                Ok("https://u:p@example.com/a%20b?q=1#f%20g"),
            ),
            (
                "{{ urlJoin (dict \"host\" \"h\" \"path\" \"p\") }} {{ urlJoin (dict \"path\" \"a:b\") }}",
                Ok("//h/p ./a:b"),
            ),
            (
                "{{ urlJoin (dict \"host\" 1) }}",
                Err("unable to parse host key, must be of type string, but int found"),
            ),
        ]);
    }
}
