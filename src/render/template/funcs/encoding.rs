//! Sprig's encodings: JSON, YAML, base64 and SHA-256 (the last two through the `base64` and
//! `sha2` crates, with Go's messages); paths are dispatched here too.

use super::math::call_math;
use super::paths::{path_base, path_clean, path_dir, path_ext};
use super::{arity, nth, str_arg, str_fn};
use crate::render::template::json::{to_json, JsonStyle};
use crate::render::template::value::{Budget, Val};
use crate::render::template::yaml::to_yaml;
use serde_json::Value;

pub(super) fn call_encoding<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
    let json = |escape_html, pretty| -> Result<Val<'a>, String> {
        arity(args, 1)?;
        to_json(
            nth(args, 0)?.nonnull(),
            JsonStyle {
                escape_html,
                pretty,
            },
        )
        .map(Val::str)
    };
    match name {
        "toJson" | "mustToJson" => json(true, false),
        "toRawJson" | "mustToRawJson" => json(false, false),
        "toPrettyJson" | "mustToPrettyJson" => json(true, true),
        "toYaml" => {
            arity(args, 1)?;
            to_yaml(nth(args, 0)?.nonnull()).map(Val::str)
        }
        "fromJson" => {
            arity(args, 1)?;
            // Sprig ignores parse errors and yields nil.
            Ok(Val::new(
                serde_json::from_str(str_arg(args, 0)?).unwrap_or(Value::Null),
            ))
        }
        "b64enc" => str_fn(args, |s| b64_encode(&crate::render::template::go_bytes(s))),
        "b64dec" => str_fn(args, |s| match b64_decode(s) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(msg) => msg, // Sprig returns the error text as the result.
        }),
        "sha256sum" => str_fn(args, |s| sha256_hex(&crate::render::template::go_bytes(s))),
        "base" => str_fn(args, path_base),
        "dir" => str_fn(args, path_dir),
        "ext" => str_fn(args, path_ext),
        "clean" => str_fn(args, path_clean),
        "isAbs" => {
            arity(args, 1)?;
            Ok(Val::bool(str_arg(args, 0)?.starts_with('/')))
        }
        _ => call_math(name, args, budget),
    }
}

fn b64_encode(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn b64_decode(s: &str) -> Result<Vec<u8>, String> {
    use base64::DecodeError as E;
    use base64::Engine;
    // Sprig prints Go's message for bad input.
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| {
            let at = match e {
                E::InvalidByte(at, _) | E::InvalidLastSymbol(at, _) => at,
                E::InvalidLength(len) => len,
                E::InvalidPadding => s.len(),
            };
            format!("illegal base64 data at input byte {at}")
        })
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{b64_decode, b64_encode, sha256_hex};
    use crate::render::template::testing::check;

    #[test]
    fn encodings() {
        check(&[
            ("{{ toJson .labels }}", Ok(r#"{"team":"core","tier":"web"}"#)),
            (
                "{{ toJson \"<a&b>\" }} {{ toRawJson \"<a>\" }} {{ toJson .big }}",
                Ok(r#""\u003ca\u0026b\u003e" "<a>" 1000000"#),
            ),
            (
                "{{ toPrettyJson (dict \"a\" (list 1) \"b\" (dict)) }}",
                Ok("{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}"),
            ),
            (
                "{{ toYaml (dict \"name\" \"x\" \"on\" \"yes\" \"list\" (list \"a\" (dict \"k\" 1)) \"text\" \"l1\\nl2\" \"e\" (list)) }}",
                Ok("e: []\nlist:\n- a\n- k: 1\nname: x\n\"on\": \"yes\"\ntext: |-\n  l1\n  l2"),
            ),
            (
                "{{ toYaml \"a: b\" }}|{{ toYaml \"123\" }}|{{ toYaml 1.5 }}",
                Ok("'a: b'|\"123\"|1.5"),
            ),
            (
                // A block scalar at the root is indented like one under a key.
                "{{ toYaml \"l1\\nl2\" }}|{{ toYaml (list \"a\\nb\\n\") }}",
                Ok("|-\n  l1\n  l2|- |\n  a\n  b"),
            ),
            (
                "{{ b64enc \"hello\" }} {{ b64dec \"aGVsbG8=\" }} {{ b64dec \"%%\" }}",
                Ok("aGVsbG8= hello illegal base64 data at input byte 0"),
            ),
            (
                "{{ sha256sum \"\" }}",
                Ok("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ),
            (
                "{{ sha256sum \"abc\" }}",
                Ok("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ),
            (
                "{{ (fromJson \"{\\\"a\\\": [1]}\").a }} {{ fromJson \"bad\" }}",
                Ok("[1] <no value>"),
            ),
        ]);
        let two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(
            sha256_hex(two_blocks.as_bytes()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        for text in ["", "a", "ab", "abc", "abcd", "\u{e9}t\u{e9}"] {
            assert_eq!(
                b64_decode(&b64_encode(text.as_bytes())),
                Ok(text.as_bytes().to_vec())
            );
        }
    }
}
