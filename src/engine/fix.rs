//! Fixing: rounds of non-overlapping fixes, each applied in memory and linted again until
//! nothing changes.

use super::*;

/// How many lint-and-fix rounds `--fix` runs at most. Fixes that meet in one place wait for
/// the next round; a handful of rounds settles every fix we have.
const FIX_ROUNDS: usize = 8;

/// Lints, applies the chosen fixes in memory, and lints again until nothing fixable is left.
/// Returns the outcome of the last lint (what remains) and the changes, not yet written.
pub fn fix(
    opts: &Options,
    unsafe_fixes: bool,
) -> Result<(Outcome, crate::fix::apply::Fixed), String> {
    use crate::fix::apply::{self, Change, Fixed};
    let mut opts = opts.clone();
    let mut overlay: HashMap<PathBuf, String> = HashMap::default();
    let mut changes: BTreeMap<PathBuf, Change> = BTreeMap::new();
    let mut fixed = Fixed::default();
    // Fixes that break their file even alone: reported once, never tried again.
    let mut refused: Vec<(PathBuf, &'static str, String)> = Vec::new();
    let mut round = 0;
    loop {
        opts.overlay = Arc::new(overlay.clone());
        let outcome = run(&opts)?;
        if round == FIX_ROUNDS {
            fixed.problems.push(format!(
                "fixes did not settle after {FIX_ROUNDS} rounds; the rest are left as findings"
            ));
            fixed.changes = changes.into_values().collect();
            return Ok((outcome, fixed));
        }
        let key = |f: &Finding, fix: &crate::fix::Fix| {
            (
                outcome.sources.get(fix.file()).path.clone(),
                f.rule.id,
                format!("{:?} {}", f.object, fix.message),
            )
        };
        // Fixes in files `--fix` may not write were dropped by `run`.
        let editable = |f: &Finding, fix: &crate::fix::Fix| !refused.contains(&key(f, fix));
        let round_plan = plan(&outcome.findings, unsafe_fixes, &editable);
        let mut progressed = false;
        for (file, fixes) in &round_plan.files {
            let source = outcome.sources.get(*file);
            // One at a time, so that a fix that breaks the file does not take the others
            // with it; it waits for the next round, or is refused if it breaks the file alone.
            let mut accepted: Vec<&crate::fix::Fix> = Vec::new();
            let mut cured: Vec<&'static str> = Vec::new();
            let mut after = source.text.clone();
            for (f, fix) in fixes {
                if accepted.iter().any(|a| a.edits == fix.edits) {
                    cured.push(f.rule.id);
                    continue;
                }
                let mut trial = accepted.clone();
                trial.push(fix);
                let text = apply::rewrite(&source.text, &trial);
                match apply::check(&source.text, &text) {
                    Ok(()) => {
                        accepted = trial;
                        cured.push(f.rule.id);
                        after = text;
                    }
                    Err(e) => {
                        if apply::check(&source.text, &apply::rewrite(&source.text, &[fix]))
                            .is_err()
                        {
                            fixed.problems.push(format!(
                                "{}: the {} fix would leave the file unreadable ({e}); not applied",
                                source.path.display(),
                                f.rule.id
                            ));
                            refused.push(key(f, fix));
                        }
                    }
                }
            }
            if after == source.text {
                continue;
            }
            let change = changes
                .entry(source.path.clone())
                .or_insert_with(|| Change {
                    path: source.path.clone(),
                    before: source.text.clone(),
                    after: String::new(),
                    before_shown: outcome.redacted_text(*file),
                    fixed: Vec::new(),
                });
            change.after = after.clone();
            change.fixed.extend(cured);
            overlay.insert(source.path.clone(), after);
            progressed = true;
        }
        if !progressed {
            fixed.changes = changes.into_values().collect();
            return Ok((outcome, fixed));
        }
        round += 1;
    }
}

/// The fixes chosen for one round, per file, with the findings they cure.
pub struct Round<'a> {
    pub files: BTreeMap<FileId, Vec<(&'a Finding, &'a Fix)>>,
}

/// Picks the fixes to apply now. Findings come in report order. A fix waits for the next
/// round, when it is recomputed on the new text, if its edits touch one already picked or if
/// another fix on the same object was picked: two cures of one Application (say, a renamed
/// `selfheal` and a missing `selfHeal`) can each be right alone and wrong together.
pub fn plan<'a>(
    findings: &'a [Finding],
    unsafe_fixes: bool,
    editable: &dyn Fn(&Finding, &Fix) -> bool,
) -> Round<'a> {
    let mut files: BTreeMap<FileId, Vec<(&Finding, &Fix)>> = BTreeMap::new();
    let mut objects: Vec<(FileId, &crate::finding::ObjectRef, &Fix)> = Vec::new();
    // Safe fixes first: a respelt key must win over an unsafe fix that adds the key anew.
    let mut order: Vec<(&Finding, &Fix)> = findings
        .iter()
        .filter_map(|f| Some((f, f.fix.as_ref()?)))
        .filter(|(_, fix)| unsafe_fixes || fix.applicability == Applicability::Safe)
        .collect();
    order.sort_by_key(|(_, fix)| fix.applicability);
    for (f, fix) in order {
        if !editable(f, fix) {
            continue;
        }
        let picked = files.entry(fix.file()).or_default();
        // The same cure found twice (one template, many rendered apps) is applied once.
        if picked.iter().any(|(_, p)| p.edits == fix.edits) {
            picked.push((f, fix));
            continue;
        }
        let clash = picked
            .iter()
            .flat_map(|(_, p)| &p.edits)
            .any(|a| fix.edits.iter().any(|b| touches(a, b)));
        let busy = f.object.as_ref().is_some_and(|o| {
            objects
                .iter()
                .any(|(file, other, _)| *file == fix.file() && *other == o)
        });
        if !clash && !busy {
            picked.push((f, fix));
            if let Some(o) = &f.object {
                objects.push((fix.file(), o, fix));
            }
        }
    }
    Round { files }
}

/// Edits that overlap or meet: their order would be a guess.
fn touches(a: &Edit, b: &Edit) -> bool {
    a.span.start <= b.span.end && b.span.start <= a.span.end
}
