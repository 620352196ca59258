//! Sprig's defaults and flow: `default`, `empty`, `coalesce`, `ternary`, `fail`.

use super::collections::call_collections;
use super::{arity, bool_arg, min_arity, nth, str_arg};
use crate::render::template::value::{truth, Budget, Val};
use serde_json::Value;

pub(super) fn call_flow<'a>(
    name: &str,
    args: &[Val<'a>],
    budget: &mut Budget,
) -> Result<Val<'a>, String> {
    match name {
        "default" => {
            min_arity(args, 1)?;
            match args.get(1) {
                Some(given) if truth(given) => Ok(given.clone()),
                _ => nth(args, 0).cloned(),
            }
        }
        "empty" => {
            arity(args, 1)?;
            Ok(Val::bool(!truth(nth(args, 0)?)))
        }
        "coalesce" => Ok(args
            .iter()
            .find(|v| truth(v))
            .cloned()
            .unwrap_or_else(|| Val::new(Value::Null))),
        "ternary" => {
            arity(args, 3)?;
            nth(args, if bool_arg(args, 2)? { 0 } else { 1 }).cloned()
        }
        "fail" => {
            arity(args, 1)?;
            Err(str_arg(args, 0)?.to_string())
        }
        _ => call_collections(name, args, budget),
    }
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn default_and_friends() {
        check(&[
            ("{{ .nope | default \"x\" }}", Ok("x")),
            (
                "{{ default \"x\" .empty }}|{{ default \"x\" .env }}",
                Ok("x|prod"),
            ),
            ("{{ empty .empty }} {{ empty .labels }}", Ok("true false")),
            ("{{ coalesce .nope .empty .env }}", Ok("prod")),
            ("{{ ternary \"y\" \"n\" .enabled }}", Ok("y")),
            ("{{ fail \"boom\" }}", Err("error calling fail: boom")),
        ]);
    }
}
