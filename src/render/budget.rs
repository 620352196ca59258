//! Work budgets for the engines the render stage runs on untrusted input: the ApplicationSet
//! template engine and the Helm renderer. The caller makes a [`Budget`] for one
//! unit of rendering (one ApplicationSet: all its generators, parameter sets, fields and
//! `templatePatch`) and passes it into every engine call, so the cost of one unit cannot
//! multiply with its fields or parameter sets. Work is counted in steps, never in time, so
//! the same input stops at the same place on every machine.
//!
//! A run as a whole is bounded too: [`RunMeter`] is what every unit's budget adds to. Units
//! render in parallel, so which unit crosses the run's limit first depends on timing; a unit
//! stopped by the meter ([`Exhausted::Run`]) is therefore only a hint to its caller, which
//! decides in a fixed order (see [`Ledger`]) and renders again what the hint cut.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Steps one ApplicationSet may take: generators, every templated field of every parameter
/// set, and `templatePatch`.
pub const UNIT_STEPS: u64 = 10_000_000;
/// Steps all the ApplicationSets of a run may take together.
pub const RUN_STEPS: u64 = 40_000_000;
/// Steps a budget counts before it adds them to the run's meter: few atomic operations, and
/// the meter overshoots by at most this much per thread.
const FLUSH_STEPS: u64 = 1 << 14;

/// Why a budget stopped the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhausted {
    /// The unit's own allowance ran out: deterministic.
    Unit,
    /// The run's meter ran out while units were rendering in parallel: depends on timing,
    /// so the caller must not report it as such.
    Run,
}

/// Work all the units of a run share.
#[derive(Debug)]
pub struct RunMeter {
    used: AtomicU64,
    limit: u64,
}

impl RunMeter {
    pub fn new(limit: u64) -> Arc<RunMeter> {
        Arc::new(RunMeter {
            used: AtomicU64::new(0),
            limit,
        })
    }

    fn add(&self, steps: u64) -> bool {
        let before = self.used.fetch_add(steps, Ordering::Relaxed);
        before.saturating_add(steps) <= self.limit
    }
}

/// The work one unit may do.
#[derive(Debug, Default)]
pub struct Budget {
    used: u64,
    limit: u64,
    exhausted: Option<Exhausted>,
    /// Whether the limit is what the run had left, less than a unit's own.
    cut: bool,
    run: Option<Arc<RunMeter>>,
    /// Steps not yet added to `run`.
    pending: u64,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget {
            limit,
            ..Budget::default()
        }
    }

    /// A budget that also stops when the run's meter runs out.
    pub fn metered(limit: u64, run: Arc<RunMeter>) -> Budget {
        // Units that start once the run is spent stop at once, not after their first flush.
        let spent = run.used.load(Ordering::Relaxed) > run.limit;
        Budget {
            run: Some(run),
            exhausted: spent.then_some(Exhausted::Run),
            ..Budget::new(limit)
        }
    }

    /// Adds what is not yet on the run's meter to it.
    pub fn flush(&mut self) {
        if let Some(run) = &self.run {
            run.add(std::mem::take(&mut self.pending));
        }
    }

    /// Whether this budget ran out because the run's did.
    pub fn run_spent(&self) -> bool {
        match self.exhausted {
            Some(Exhausted::Run) => true,
            Some(Exhausted::Unit) => self.cut,
            None => false,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Steps charged so far (past the limit by at most the last charge).
    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn exhausted(&self) -> Option<Exhausted> {
        self.exhausted
    }

    /// Counts `steps` of work; once it fails, every later charge fails too.
    pub fn charge(&mut self, steps: u64) -> Result<(), Exhausted> {
        if let Some(e) = self.exhausted {
            return Err(e);
        }
        self.used = self.used.saturating_add(steps);
        if self.used > self.limit {
            return Err(*self.exhausted.insert(Exhausted::Unit));
        }
        if let Some(run) = &self.run {
            self.pending = self.pending.saturating_add(steps);
            if self.pending >= FLUSH_STEPS {
                let ok = run.add(std::mem::take(&mut self.pending));
                if !ok {
                    return Err(*self.exhausted.insert(Exhausted::Run));
                }
            }
        }
        Ok(())
    }

    /// Counts the work of handling `bytes` bytes (copying, scanning, parsing).
    pub fn charge_bytes(&mut self, bytes: usize) -> Result<(), Exhausted> {
        let steps = u64::try_from(bytes / BYTES_PER_STEP).unwrap_or(u64::MAX);
        self.charge(steps.saturating_add(1))
    }
}

/// A run's budget spent unit after unit in a fixed order (file order, path order), whatever
/// order the units were rendered in: each unit may spend what the run has left, up to a unit's
/// own limit. Units rendered in parallel under a [`RunMeter`] are checked against it with
/// [`Ledger::accepts`]; one it refuses is rendered again with [`Ledger::budget`].
#[derive(Debug, Clone, Copy)]
pub struct Ledger {
    unit: u64,
    run: u64,
    spent: u64,
}

impl Ledger {
    pub fn new(unit: u64, run: u64) -> Ledger {
        Ledger {
            unit,
            run,
            spent: 0,
        }
    }

    /// What the next unit may spend.
    pub fn allowance(&self) -> u64 {
        self.unit.min(self.run.saturating_sub(self.spent))
    }

    /// The next unit's budget.
    pub fn budget(&self) -> Budget {
        let limit = self.allowance();
        Budget {
            cut: limit < self.unit,
            ..Budget::new(limit)
        }
    }

    /// Whether a unit rendered ahead under the run's meter did the work the next unit would
    /// do with its allowance: it finished within it, or stopped at the same limit.
    pub fn accepts(&self, done: &Budget) -> bool {
        let allowance = self.allowance();
        match done.exhausted() {
            None => done.used() <= allowance,
            Some(Exhausted::Unit) => allowance == done.limit(),
            Some(Exhausted::Run) => false,
        }
    }

    /// Charges the next unit's work.
    pub fn spend(&mut self, used: u64) {
        self.spent = self.spent.saturating_add(used.min(self.allowance()));
    }

    /// What the run has left.
    pub fn left(&self) -> u64 {
        self.run.saturating_sub(self.spent)
    }

    /// Whether the run has nothing left.
    pub fn spent(&self) -> bool {
        self.allowance() == 0
    }
}

/// Bytes handled per step: copying 64 bytes costs about as much as one step of evaluation.
pub const BYTES_PER_STEP: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_stops_at_its_limit_and_stays_stopped() {
        let mut b = Budget::new(10);
        assert_eq!(b.charge(10), Ok(()));
        assert_eq!(b.charge(1), Err(Exhausted::Unit));
        assert_eq!(b.charge(0), Err(Exhausted::Unit));
        assert_eq!(b.exhausted(), Some(Exhausted::Unit));
    }

    #[test]
    fn the_run_meter_stops_every_budget_that_shares_it() {
        let run = RunMeter::new(FLUSH_STEPS);
        let mut a = Budget::metered(u64::MAX, run.clone());
        let mut b = Budget::metered(u64::MAX, run);
        assert_eq!(a.charge(FLUSH_STEPS), Ok(()));
        assert_eq!(b.charge(FLUSH_STEPS), Err(Exhausted::Run));
    }

    #[test]
    fn allowances_shrink_to_nothing_as_the_run_spends() {
        let mut ledger = Ledger::new(UNIT_STEPS, RUN_STEPS);
        assert_eq!(ledger.allowance(), UNIT_STEPS);
        for _ in 0..3 {
            ledger.spend(UNIT_STEPS);
        }
        ledger.spend(UNIT_STEPS - 5);
        assert_eq!(ledger.allowance(), 5);
        assert!(ledger.budget().limit() == 5 && !ledger.spent());
        ledger.spend(10);
        assert_eq!(ledger.allowance(), 0);
        assert!(ledger.spent());
    }

    #[test]
    fn work_done_ahead_stands_only_where_the_allowance_would_have_done_the_same() {
        let mut ledger = Ledger::new(100, 150);
        let mut finished = Budget::new(100);
        finished.charge(60).unwrap();
        assert!(ledger.accepts(&finished));
        let mut stopped = Budget::new(100);
        assert!(stopped.charge(101).is_err());
        assert!(ledger.accepts(&stopped));
        ledger.spend(100);
        assert!(!ledger.accepts(&finished) && !ledger.accepts(&stopped));
    }
}
