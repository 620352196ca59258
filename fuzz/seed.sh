#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from fixtures/: every YAML file for lint_file, every fixture
# directory (packed as `@@ path` sections, see fuzz/src/lib.rs) for render_repo.
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../fixtures
mkdir -p corpus/lint_file corpus/render_repo corpus/expand_appset corpus/render_template

find "$fixtures" -type f \( -name '*.yaml' -o -name '*.yml' \) -print0 |
  while IFS= read -r -d '' f; do
    cp "$f" "corpus/lint_file/$(sha1sum <"$f" | cut -c1-16)"
  done

find "$fixtures" -mindepth 1 -type d -print0 |
  while IFS= read -r -d '' d; do
    mapfile -t files < <(cd "$d" && find . -type f \( -name '*.yaml' -o -name '*.yml' \
      -o -name '*.json' -o -name '*.env' -o -name '*.properties' \) | sort)
    # Only small repositories with something to render.
    if [ "${#files[@]}" -lt 2 ] || [ "${#files[@]}" -gt 24 ]; then continue; fi
    out=$(mktemp)
    for f in "${files[@]}"; do
      printf '@@ %s\n' "${f#./}" >>"$out"
      sed -e '$a\' "$d/$f" >>"$out"
    done
    mv "$out" "corpus/render_repo/$(sha1sum <"$out" | cut -c1-16)"
  done

# expand_appset: flags, two list sizes, the element value, then templated annotations (see
# fuzz/src/lib.rs). Heavy functions in a 32x32 matrix reach the ApplicationSet's budget.
seed() { printf "$1" >"corpus/expand_appset/$2"; }
seed '\x01\x03\x04v\n{{x}}-{{y}}\n{{i}}' fasttemplate
seed '\x00\x20\x20v\n{{ .x | upper }}\n{{ range splitList "," (repeat 999 "a,") }}{{ sha256sum $.y }}{{ end }}' matrix-heavy
seed '\x02\x05\x05v\n{{ .missing }}\n{{ nope }}\n{{ regexMatch "a" .x }}' errors
seed '\x04\x10\x08v\n{{ .x }}-{{ .y }}\n{{ toJson . }}' merge

# render_template: one template string each, over the fixed parameters of fuzz/src/lib.rs.
tseed() { printf '%s' "$1" >"corpus/render_template/$2"; }
tseed '{{ .path.basename }}-{{ index .path.segments 0 }}' fields
tseed '{{ range $i, $s := .path.segments }}{{ if $i }}{{ break }}{{ end }}{{ $s | upper }}{{ end }}' range
tseed '{{ printf "%05.2f|%-4s|%q" .ratio .name .labels }} {{ toYaml .labels }} {{ toJson . }}' formats
tseed '{{ with .nothing }}x{{ else with .labels }}{{ keys . | join "," }}{{ end }}{{ .nope }}' missing
tseed '{{ $l := list }}{{ range 150 }}{{ $l = list $l }}{{ end }}{{ $l }}' deep
tseed '{{ slugify 7 false (normalize .name) }} {{ b64dec (b64enc "x") }} {{ sha256sum "" }}' functions

# A chain of kustomizations past the nesting cap, for the fuzzer to mutate from.
chain=$(mktemp)
for i in $(seq 0 149); do
  printf '@@ k%d/kustomization.yaml\nresources:\n- ../k%d\n' "$i" "$((i + 1))" >>"$chain"
done
printf '@@ k150/kustomization.yaml\nresources:\n- cm.yaml\n@@ k150/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n' >>"$chain"
mv "$chain" "corpus/render_repo/$(sha1sum <"$chain" | cut -c1-16)"

echo "lint_file: $(ls corpus/lint_file | wc -l) inputs, render_repo: $(ls corpus/render_repo | wc -l) inputs, expand_appset: $(ls corpus/expand_appset | wc -l) inputs, render_template: $(ls corpus/render_template | wc -l) inputs"
