use crate::model::Object;
use crate::rules::{rule, Cx, Sink};
use crate::yaml::typing;

rule! {
    id: "appset-template-patch-go-syntax",
    category: Schema,
    severity: Warning,
    fix: None,
    summary: "A templatePatch written in Go template syntax while goTemplate is off: the controller leaves those tags as text",
    check: Check::Object(check),
}

fn check(cx: &Cx, obj: &Object, out: &mut Sink) {
    if !obj.is_argocd("ApplicationSet") {
        return;
    }
    let Some(spec) = obj.spec().filter(|s| s.is_map()) else {
        return;
    };
    let Some(patch) = spec.get("templatePatch") else {
        return;
    };
    let Some(text) = patch.as_str() else {
        return;
    };
    // fasttemplate only when goTemplate is absent or false; a templated value is unknown.
    let go = match spec.get("goTemplate") {
        None => Some(false),
        Some(n) if n.is_null() => Some(false),
        Some(n) => n.as_scalar().and_then(typing::as_bool),
    };
    if go != Some(false) {
        return;
    }
    let tags = go_tags(text);
    let Some(&(first, _)) = tags.first() else {
        return;
    };
    let span = cx.span_in(patch, first, 0);
    let more = match tags.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let f = out.report(
        span,
        format!("`{first}`{more} is Go template syntax, but goTemplate is not true: the controller renders templatePatch with fasttemplate, which leaves the tag as written, so the patch fails to parse (RenderTemplateParamsError, no Applications generated) or puts the literal text into every Application"),
    );
    f.label("not evaluated without goTemplate")
        .help("set `goTemplate: true` (and `goTemplateOptions: [\"missingkey=error\"]`) on the ApplicationSet, and write the template's other parameters Go-style (`{{.name}}`, `{{.path.basename}}`)");
    if let Some(e) = spec.entry("goTemplate") {
        f.also(e.value.span, "goTemplate is false");
    }
}

/// Tags fasttemplate cannot substitute because they are Go template actions: they start
/// with `.`, `$` or a trim marker, or hold a space, pipe or parenthesis (a function call, an
/// `if`/`range`/`end`). A fasttemplate parameter name is one word (`path.basename`, `name`).
fn go_tags(text: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find("{{") {
        let start = at + open;
        let Some(close) = text[start + 2..].find("}}") else {
            break;
        };
        let end = start + 2 + close + 2;
        let inner = &text[start + 2..end - 2];
        let t = inner.trim();
        let go = inner.starts_with('-')
            || inner.ends_with('-')
            || t.starts_with(['.', '$'])
            || t.starts_with("/*")
            || t.contains(|c: char| c.is_whitespace() || c == '|' || c == '(');
        if go && !t.is_empty() {
            out.push((&text[start..end], start));
        }
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::go_tags;

    #[test]
    fn go_syntax_tags() {
        let tags = |s| go_tags(s).into_iter().map(|(t, _)| t).collect::<Vec<_>>();
        assert_eq!(tags("name: '{{name}}'"), Vec::<&str>::new());
        assert_eq!(tags("name: '{{ path.basename }}'"), Vec::<&str>::new());
        assert_eq!(tags("a: {{.name}}"), vec!["{{.name}}"]);
        assert_eq!(
            tags("{{- if .auto }}\nx: 1\n{{- end }}"),
            vec!["{{- if .auto }}", "{{- end }}"]
        );
        assert_eq!(tags("v: '{{ name | upper }}'"), vec!["{{ name | upper }}"]);
        assert_eq!(tags("v: '{{ $x }}'"), vec!["{{ $x }}"]);
    }
}
