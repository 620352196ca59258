//! Go's `path` package: slash-separated and lexical, unlike `std::path`.

/// Go's `path.Clean` (slash-separated, lexical).
pub(super) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| *last != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

pub(super) fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_string();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

pub(super) fn path_dir(p: &str) -> String {
    let dir = p.rfind('/').and_then(|i| p.get(..=i)).unwrap_or("");
    path_clean(dir)
}

pub(super) fn path_ext(p: &str) -> String {
    let last = p.rsplit('/').next().unwrap_or(p);
    last.rfind('.')
        .and_then(|i| last.get(i..))
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use crate::render::template::testing::check;

    #[test]
    fn paths() {
        check(&[
            (
                "{{ base \"a/b/c.yaml\" }} {{ dir \"a/b/c.yaml\" }} {{ ext \"a/b/c.yaml\" }}",
                Ok("c.yaml a/b .yaml"),
            ),
            (
                "{{ clean \"a//b/../c/.\" }} {{ base \"/\" }} {{ dir \"x\" }} {{ clean \"/../a\" }}",
                Ok("a/c / . /a"),
            ),
        ]);
    }
}
