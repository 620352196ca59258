#!/usr/bin/env python3
"""Measures the offline kustomize renderer against `kubectl kustomize` on real repositories.

    scripts/kustomize-real.py [--bin PATH] [--jobs N] [--show CLASS] [--list FILE] REPO...

Every directory below each REPO that holds a `kustomization.yaml`, `kustomization.yml` or
`Kustomization` is built twice: by `kubectl kustomize DIR` and by `gitops-lint render DIR`
(`--bin`, default `target/release/gitops-lint`, else `target/debug/gitops-lint`). Both
outputs are read as multisets of objects and the directory is put in one class:

    identical      both built, the same objects
    different      both built, the objects differ (the first differing path is printed)
    only-we-fail   kubectl built it, we printed nothing or reported a kustomize error
    only-kubectl-fails  we built something without reporting a problem, kubectl refused it
    both-fail      neither built it, or kubectl refused it and we reported a problem
    skipped-network  the build (or a kustomization it includes) needs the network: remote
                   resources or generator files, Helm charts, plugins; counted, not run

kubectl is given a proxy that cannot be reached, so nothing leaves the machine. The figures
printed at the end are the ones to compare between two versions of the renderer; the fidelity
is identical / (identical + different). `--show different` prints each differing directory
with its first difference (`--show all` every non-identical one). `--list FILE` writes one line
per directory: class, directory, detail. `--cache DIR` keeps kubectl's outputs between runs
(`--kubectl-only` just fills it).

Requires Python 3 with PyYAML.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import yaml

KFILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
LIMIT = 60
NO_NET = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
}
# Fields whose presence means the build runs something or fetches something.
NETWORK_FIELDS = ("helmCharts", "helmChartInflationGenerator", "generators", "transformers", "validators")


class Loader(yaml.SafeLoader):
    """YAML as kustomize prints it: timestamps stay strings (Go's YAML keeps them so)."""


Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def is_remote(s):
    return (
        "://" in s
        or s.startswith(("git@", "git::", "github.com/", "gitlab.com/", "bitbucket.org/"))
        or "?ref=" in s
        or "?version=" in s
    )


def kfile(d):
    for name in KFILES:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def needs_network(d, seen, depth=0):
    """Whether building `d` needs the network or runs a plugin, following local includes."""
    if depth > 50 or d in seen:
        return False
    seen.add(d)
    f = kfile(d)
    if f is None:
        return False
    try:
        with open(f, encoding="utf-8", errors="replace") as fh:
            k = yaml.load(fh, Loader=Loader)
    except Exception:
        return False
    if not isinstance(k, dict):
        return False
    if any(k.get(x) for x in NETWORK_FIELDS):
        return True
    for field in ("configMapGenerator", "secretGenerator"):
        for g in k.get(field) or []:
            if isinstance(g, dict):
                for src in (g.get("files") or []) + (g.get("envs") or []) + [g.get("env") or ""]:
                    if isinstance(src, str) and "://" in src:
                        return True
    for field in ("resources", "bases", "components"):
        for item in k.get(field) or []:
            if not isinstance(item, str):
                continue
            if is_remote(item):
                return True
            sub = os.path.normpath(os.path.join(d, item))
            if os.path.isdir(sub) and needs_network(sub, seen, depth + 1):
                return True
    return False


def run(cmd, cwd):
    try:
        p = subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=LIMIT,
            env={**os.environ, **NO_NET},
            stdin=subprocess.DEVNULL,
        )
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -1, "", "timeout"


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def identity(o):
    if not isinstance(o, dict):
        return repr(o)
    m = o.get("metadata") or {}
    if not isinstance(m, dict):
        m = {}
    return f"{o.get('apiVersion')} {o.get('kind')} {m.get('namespace') or ''}/{m.get('name')}"


def first_diff(path, a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                return f"{path}/{k}: only in kubectl: {short(a[k])}"
            if k not in a:
                return f"{path}/{k}: only in ours: {short(b[k])}"
            d = first_diff(f"{path}/{k}", a[k], b[k])
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(f"{path}/{i}", x, y)
            if d:
                return d
        if len(a) != len(b):
            return f"{path}: kubectl has {len(a)} items, ours {len(b)}"
        return None
    if canon(a) != canon(b):
        return f"{path}: kubectl={short(a)} ours={short(b)}"
    return None


def short(v, width=140):
    t = canon(v)
    return t if len(t) <= width else t[:width] + "..."


def compare(kube, ours):
    """None when the multisets are equal, else the first difference found."""
    ka = sorted(kube, key=canon)
    oa = sorted(ours, key=canon)
    if [canon(x) for x in ka] == [canon(x) for x in oa]:
        return None
    kid = {}
    for o in kube:
        kid.setdefault(identity(o), []).append(o)
    oid = {}
    for o in ours:
        oid.setdefault(identity(o), []).append(o)
    for i in sorted(set(kid) | set(oid)):
        if i not in oid:
            return f"object only in kubectl: {i}"
        if i not in kid:
            return f"object only in ours: {i}"
        a, b = kid[i], oid[i]
        if len(a) != len(b):
            return f"{i}: kubectl has {len(a)}, ours {len(b)}"
        for x, y in zip(sorted(a, key=canon), sorted(b, key=canon)):
            d = first_diff("", x, y)
            if d:
                return f"{i}: {d}"
    return "same objects, different multiplicity"


def kubectl(d, cache):
    """`kubectl kustomize d`, kept in `cache` (a directory) when given: its output depends on
    the repository only, not on the renderer measured."""
    if not cache:
        return run(["kubectl", "kustomize", d], None)
    key = os.path.join(cache, hashlib.sha256(d.encode()).hexdigest() + ".json")
    try:
        with open(key, encoding="utf-8") as fh:
            return tuple(json.load(fh))
    except (OSError, ValueError):
        pass
    got = run(["kubectl", "kustomize", d], None)
    with open(key, "w", encoding="utf-8") as fh:
        json.dump(got, fh)
    return got


def classify(d, binary, cache):
    if needs_network(d, set()):
        return "skipped-network", ""
    kc, kout, kerr = kubectl(d, cache)
    if binary is None:
        return "kubectl-only", ""
    oc, oout, oerr = run([binary, "render", d], None)
    kube = None
    if kc == 0:
        try:
            kube = [x for x in yaml.load_all(kout, Loader=Loader) if x is not None]
        except Exception as e:  # noqa: BLE001 - kubectl printed something PyYAML cannot read
            return "both-fail", f"kubectl output unreadable: {e}"
    ours = None
    if oc == 0:
        try:
            ours = json.loads(oout)
        except ValueError as e:
            ours = None
            oerr = f"invalid JSON: {e}"
    # Problems printed (never notes) mean we reported the build as one kustomize refuses.
    errs = [l for l in oerr.splitlines() if l.strip()]
    if ours == [] and errs:
        ours = None
    if kube is None and (ours is None or errs):
        return "both-fail", (kerr.strip().splitlines() or [""])[-1]
    if kube is None:
        return "only-kubectl-fails", (kerr.strip().splitlines() or [""])[-1]
    if ours is None:
        return "only-we-fail", (oerr.strip().splitlines() or [""])[0]
    diff = compare(kube, ours)
    if diff is None:
        return "identical", ""
    return "different", diff


def dirs(repo):
    out = []
    for root, subdirs, files in os.walk(repo):
        subdirs[:] = sorted(s for s in subdirs if s != ".git")
        if any(f in files for f in KFILES):
            out.append(root)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repos", nargs="+")
    ap.add_argument("--bin")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", choices=["different", "all", "none"], default="different")
    ap.add_argument("--list")
    ap.add_argument("--cache", help="directory keeping kubectl's output between runs")
    ap.add_argument("--kubectl-only", action="store_true", help="only fill the cache")
    args = ap.parse_args()
    binary = args.bin
    if not binary:
        for c in ("target/release/gitops-lint", "target/debug/gitops-lint"):
            if os.path.isfile(c):
                binary = c
                break
    if args.kubectl_only:
        binary = None
    elif not binary:
        sys.exit("no gitops-lint binary: build it, or pass --bin")
    else:
        binary = os.path.abspath(binary)
    if args.cache:
        os.makedirs(args.cache, exist_ok=True)
    todo = [d for r in args.repos for d in dirs(os.path.abspath(r))]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda d: (d, *classify(d, binary, args.cache)), todo))
    counts = {}
    for d, cls, detail in results:
        counts[cls] = counts.get(cls, 0) + 1
        if args.show == "all" and cls != "identical" or args.show == "different" and cls == "different":
            print(f"{cls}: {d}\n    {detail}")
    if args.list:
        with open(args.list, "w", encoding="utf-8") as fh:
            for d, cls, detail in results:
                fh.write(f"{cls}\t{d}\t{detail}\n")
    print()
    for cls in ("kubectl-only", "identical", "different", "only-we-fail", "only-kubectl-fails", "both-fail", "skipped-network"):
        print(f"{cls:20} {counts.get(cls, 0)}")
    both = counts.get("identical", 0) + counts.get("different", 0)
    if both:
        print(f"{'fidelity':20} {100.0 * counts.get('identical', 0) / both:.1f}% of {both}")


if __name__ == "__main__":
    main()
