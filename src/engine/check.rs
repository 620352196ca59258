//! Checking: every rule over the rendered graph, the graph rules and the per-object rules
//! taken in turn by every thread.

use super::*;

/// Every rule that runs, on every unit the run lints.
pub(super) fn check(cx: &Cx, graph: &Graph) -> Vec<Finding> {
    let lint: Vec<usize> = (0..graph.units.len())
        .filter(|&u| graph.units[u].lint)
        .collect();
    // The graph rules, and the per-object rules on every unit in chunks after them, taken in
    // turn by every thread: a few graph rules are long single tasks, and one that a thread
    // took up last would keep it busy after the others had run out of work. All of it is
    // sorted afterwards, so the scheduling does not show.
    // A policy goes over the units in order on one thread, like a graph rule: what its run
    // budget covers is then the same whatever the thread count.
    let rules: Vec<&'static Rule> = rules::all().into_iter().filter(|r| cx.runs(r.id)).collect();
    let graph_rules: Vec<&'static Rule> = rules
        .iter()
        .copied()
        .filter(|r| matches!(r.check, Check::Graph(_) | Check::Policy(_)))
        .collect();
    let object_rules: Vec<(&'static Rule, CheckFn)> = rules
        .iter()
        .filter_map(|&r| match r.check {
            Check::Object(check) => Some((r, check)),
            _ => None,
        })
        .collect();
    // The repository's policies share the run's budget; a trusted config's each have their
    // own, which nothing the repository adds can shrink.
    let shared = graph_rules
        .iter()
        .filter(|r| matches!(r.check, Check::Policy(p) if !p.trusted))
        .count();
    let budget = rules::custom::budget_per_policy(shared);
    let chunks: Vec<&[usize]> = lint.chunks(UNITS_PER_TASK).collect();
    let mut rule_findings = in_turn(graph_rules.len() + chunks.len(), |task| {
        match graph_rules.get(task) {
            Some(&rule) => run_graph_rule(cx, graph, rule, &lint, budget),
            None => chunks[task - graph_rules.len()]
                .iter()
                .flat_map(|&u| run_rules(cx, graph, &object_rules, u))
                .collect(),
        }
    });
    let graph_findings: Vec<Vec<Finding>> = rule_findings.drain(..graph_rules.len()).collect();
    let mut findings: Vec<Finding> = rule_findings.into_iter().flatten().collect();
    findings.extend(graph_findings.into_iter().flatten());
    findings
}

fn run_rules(
    cx: &Cx,
    graph: &Graph,
    rules: &[(&'static Rule, CheckFn)],
    unit: usize,
) -> Vec<Finding> {
    let obj = &graph.units[unit].obj;
    let mut out = Vec::new();
    for &(rule, check) in rules {
        let mut sink = Sink::new(rule);
        check(cx, obj, &mut sink);
        for mut f in sink.finish() {
            f.about(unit, obj);
            f.applications = graph.app_names(unit);
            out.push(f);
        }
    }
    out
}

/// `budget`: what each of the repository's policies may spend in the run.
fn run_graph_rule(
    cx: &Cx,
    graph: &Graph,
    rule: &'static Rule,
    lint: &[usize],
    budget: u64,
) -> Vec<Finding> {
    let mut sink = Sink::new(rule);
    match rule.check {
        Check::Graph(check) => check(cx, graph, &mut sink),
        Check::Policy(policy) => {
            policy.check(cx, graph, lint, policy.run_budget(budget), &mut sink)
        }
        Check::Parse | Check::Object(_) => {}
    }
    sink.finish()
}

/// Units whose per-object rules one task runs: small enough that the last task ends soon
/// after the others.
const UNITS_PER_TASK: usize = 64;

/// Runs tasks `0..n` on the threads of the pool, each thread taking the lowest task no
/// thread has taken yet, and returns the results in task order. Long tasks put first then
/// start first, and short ones at the end fill in around them, which rayon's halving of a
/// range does not promise. The tasks must not use rayon themselves: a thread waiting inside
/// one could take up the queue there, and its own long task would wait under the rest.
fn in_turn<T: Send>(n: usize, task: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = (0..rayon::current_num_threads())
        .into_par_iter()
        .with_max_len(1)
        .flat_map_iter(|_| {
            // A thread that arrives after the queue has run dry takes nothing.
            std::iter::from_fn(|| {
                let i = next.fetch_add(1, Ordering::Relaxed);
                (i < n).then(|| (i, task(i)))
            })
        })
        .collect();
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}
